//! HTTP/3 for `--h3`: QUIC by quinn-proto, HTTP/3's framing and QPACK by
//! hand, all driven from one loop per core ([`crate::h3conn`]).
//!
//! Why quinn-proto: it is sans-I/O, so the bench's own loop owns the
//! sockets, the clock and the order of work, as it does for HTTP/1 and
//! HTTP/2, with no runtime of its own (quinn proper brings tokio, h3 on
//! top of it too); and its TLS is the rustls the bench already configures
//! (`crate::tls`: the same roots, `--insecure`, groups and session cache).
//! HTTP/3 itself is a thin layer for a client that sends GETs: a control
//! stream, a HEADERS frame per request, and a static-table QPACK, so it is
//! written here rather than taken from a crate built for a runtime.

pub mod frames;
pub mod qpack;
pub mod quic;
pub mod stream;
pub mod udp;

use std::sync::Arc;
use std::time::Duration;

use quinn_proto::crypto::rustls::{HandshakeData, QuicClientConfig};
use quinn_proto::{ClientConfig, Connection, EndpointConfig, IdleTimeout, TransportConfig, VarInt};

use crate::args::Config;
use crate::tls::TlsInfo;
use crate::url::Url;

/// A request's bytes on its stream, built once per URL: HEADERS with the
/// QPACK section, and a DATA frame for the body.
pub fn request(cfg: &Config, url: &Url, method: &str, body: Option<&[u8]>) -> Vec<u8> {
    let section = qpack::encode(&qpack::request_fields(cfg, url, method, body));
    frames::request(&section, body.unwrap_or_default())
}

/// Whether QUIC can run on this TLS configuration (it needs TLS 1.3's
/// AES-128-GCM for its Initial packets): said before the run starts.
pub fn check(tls: Arc<rustls::ClientConfig>) -> Result<(), String> {
    QuicClientConfig::try_from(tls)
        .map(|_| ())
        .map_err(|e| format!("--h3: {e} (QUIC needs TLS_AES_128_GCM_SHA256: check -Z)"))
}

/// A core's QUIC client: its rustls configuration (ALPN `h3`, TLS 1.3),
/// and transport limits that never hold the bench back: the response
/// windows wide, the idle timeout `-s`. The server may open its control
/// and QPACK streams (and a few unknown ones), no bidirectional stream.
pub fn client_config(
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<ClientConfig, String> {
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| format!("--h3: {e}"))?;
    let mut t = TransportConfig::default();
    let idle = IdleTimeout::try_from(timeout).unwrap_or_else(|_| VarInt::MAX.into());
    t.max_idle_timeout(Some(idle))
        .max_concurrent_bidi_streams(VarInt::from_u32(0))
        .max_concurrent_uni_streams(VarInt::from_u32(16))
        .stream_receive_window(VarInt::from_u32(16 << 20))
        .receive_window(VarInt::MAX)
        .datagram_receive_buffer_size(None);
    let mut c = ClientConfig::new(Arc::new(crypto));
    c.transport_config(Arc::new(t));
    Ok(c)
}

/// The client's endpoint settings. It takes datagrams as large as UDP
/// allows (`max_udp_payload_size` 65,527, RFC 9000's default, as ngtcp2's
/// client says, which h2load's and curl's HTTP/3 are, and as aioquic does
/// by saying nothing), not quinn's 1,472: the
/// server's path MTU discovery, not this client, then decides how large a
/// server's packets get, as a TCP sender's segments follow the route.
/// Every read takes up to 64 KiB ([`quic`]'s buffer), so any size fits.
pub fn endpoint_config() -> EndpointConfig {
    let mut e = EndpointConfig::default();
    e.max_udp_payload_size(65_527)
        .expect("65,527 is QUIC's largest payload");
    e
}

/// The ALPN protocol the server chose, once the handshake has it.
pub fn alpn(conn: &Connection) -> Option<Vec<u8>> {
    conn.crypto_session()
        .handshake_data()?
        .downcast::<HandshakeData>()
        .ok()?
        .protocol
}

/// What the report says of the first handshake. quinn-proto does not tell
/// the suite or the key-exchange group its rustls session negotiated, so
/// those stay empty; the protocol is TLS 1.3 by QUIC's definition.
pub fn tls_info(conn: &Connection, host: &str) -> TlsInfo {
    let key_bits = conn
        .crypto_session()
        .peer_identity()
        .and_then(|p| {
            p.downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
                .ok()
        })
        .and_then(|c| c.first().map(|c| crate::der::key_bits(c.as_ref())))
        .unwrap_or(0);
    TlsInfo {
        protocol: "TLSv1.3".into(),
        key_bits,
        server_name: host
            .parse::<std::net::IpAddr>()
            .is_err()
            .then(|| host.to_string()),
        alpn: alpn(conn).map(|p| String::from_utf8_lossy(&p).into_owned()),
        ..TlsInfo::default()
    }
}
