//! Client certificates on the request path: the routes with
//! `require_client_cert` refuse a request whose connection verified none
//! (403; a gRPC call gets PERMISSION_DENIED), and the access log names the
//! certificate's subject.
//!
//! The certificate is the connection's (rustls keeps the chain it verified
//! in the handshake), so nothing is stored per request; an edge without
//! client certificates anywhere in its config has no [`ClientCerts`] and
//! asks nothing.

use ringside_http::{Error, Exchange};

/// gRPC's PERMISSION_DENIED (gRPC status codes).
const PERMISSION_DENIED: u32 = 7;

pub struct ClientCerts {
    /// By route tag: whether the route needs a verified certificate.
    required: Vec<bool>,
}

impl ClientCerts {
    /// `None` where no listener asks for certificates and no route needs
    /// one. A route may need one where no listener asks (`--listen` put
    /// plain listeners in place of the config's): it refuses everything.
    pub fn new(any_client_auth: bool, required: Vec<bool>) -> Option<ClientCerts> {
        (any_client_auth || required.contains(&true)).then_some(ClientCerts { required })
    }

    /// Whether route `tag` refuses `ex`: it needs a certificate and the
    /// connection has none.
    pub fn refuses(&self, ex: &Exchange<'_>, tag: usize) -> bool {
        self.required.get(tag).copied().unwrap_or(false) && ex.client_certificates().is_none()
    }
}

/// The answer to a request [`ClientCerts::refuses`].
pub async fn refuse(ex: &mut Exchange<'_>, grpc: bool) -> Result<(), Error> {
    if grpc {
        let why = "a client certificate is required";
        return crate::upstream::grpc::answer(ex, PERMISSION_DENIED, why).await;
    }
    ex.send_status(403)
}

/// The subject of the connection's verified client certificate.
pub fn subject(ex: &Exchange<'_>) -> Option<String> {
    crate::tls::subject::subject(ex.client_certificates()?.first()?)
}
