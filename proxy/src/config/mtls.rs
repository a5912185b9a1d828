//! Client certificates (mTLS) in the config: what a TLS listener asks of
//! its clients, and the routes that need a verified certificate.
//!
//! ```toml
//! [server]
//! listen = [
//!   { addr = "0.0.0.0:443", tls = { cert = "certs/site.pem", key = "certs/site.key", client_auth = "optional", client_ca = "certs/clients-ca.pem", client_crl = ["certs/clients-ca.crl"] } },
//! ]
//! # client_auth: "require" | "optional" (default: no certificate asked for)
//! # client_ca: PEM bundle of the CAs that sign client certificates (needed with client_auth)
//! # client_crl: PEM CRLs (optional)
//!
//! [[route]]
//! prefix = "/admin/"
//! require_client_cert = true  # 403 without a verified client certificate
//! ```
//!
//! `"require"` refuses a handshake without a certificate; `"optional"`
//! lets it in, and `require_client_cert` then refuses its requests to the
//! routes that need one. A certificate that does not verify (another CA,
//! expired, revoked) is refused in the handshake under either mode (see
//! `crate::tls::client_auth`). The verified certificate goes upstream in
//! RFC 9440's `Client-Cert` and `Client-Cert-Chain` fields, which are
//! removed from every client's request whatever the config says.
//!
//! Client certificates are set per listener: a `[[vhost]]`'s `tls` takes
//! none of these keys, since SNI picks a vhost's certificate within one
//! handshake whose verifier is the listener's.
//!
//! # Validation
//!
//! The CA bundle and the CRLs are read and parsed when the config is, and
//! read again when the listeners' rustls configs are built (each reload),
//! so a renewed CRL is taken by `ringside reload`. `client_ca` and
//! `client_crl` without `client_auth`, and `client_auth` without
//! `client_ca`, are errors; so is `require_client_cert` where no listener
//! asks for certificates (it would refuse every request).

use std::fmt::{self, Write};
use std::path::Path;

use toml::Spanned;

use super::cx::Cx;
use super::error::ConfigError;
use super::file::{CertSection, FileConfig};
use super::tls::{abs_path, CertAt, TlsConfig};
use crate::tls::certs::load_roots;
use crate::tls::client_auth::{load, mode_text, read_crls, ClientAuth, MODES};

/// The routes that need a verified client certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MtlsConfig {
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<bool>,
    /// The static routes that need one, by prefix.
    pub static_routes: Vec<String>,
}

impl MtlsConfig {
    pub fn static_route(&self, prefix: &str) -> bool {
        self.static_routes.iter().any(|p| p == prefix)
    }

    /// Whether any route needs a certificate.
    pub fn any(&self) -> bool {
        !self.static_routes.is_empty() || self.proxy_routes.contains(&true)
    }
}

/// Whether any TLS listener asks for client certificates.
pub fn any_client_auth(tls: &TlsConfig) -> bool {
    tls.listeners.iter().flatten().any(|p| p.client.is_some())
}

impl Cx<'_> {
    /// A `tls` table's `client_auth`, `client_ca` and `client_crl`, the
    /// files read and checked; errors at the value at fault.
    pub(super) fn client_auth(
        &self,
        c: &CertSection,
        at: CertAt,
        base: &Path,
    ) -> Result<Option<ClientAuth>, ConfigError> {
        let err = |part: &str, span, m: String| match at {
            CertAt::Listen => self.err(span, "[server] listen", format!("tls.{part}: {m}")),
            CertAt::Vhost => self.err(span, &format!("[[vhost]] tls.{part}"), m),
        };
        let str_span = |v: &Option<Spanned<String>>| v.as_ref().map(Spanned::span);
        let given = super::cx::first_given(&[
            ("client_auth", str_span(&c.client_auth)),
            ("client_ca", str_span(&c.client_ca)),
            ("client_crl", c.client_crl.as_ref().map(Spanned::span)),
        ]);
        if let (CertAt::Vhost, Some((k, span))) = (at, &given) {
            return Err(err(
                k,
                span.clone(),
                "only on a [server] listen entry's tls: client certificates are asked for in \
                 the handshake, by the listener, before a vhost's name counts"
                    .into(),
            ));
        }
        let Some(mode) = &c.client_auth else {
            return match given {
                Some((k, span)) => Err(err(k, span, "has no effect without client_auth".into())),
                None => Ok(None),
            };
        };
        let mode = {
            let got = mode.get_ref();
            MODES
                .iter()
                .find(|(n, _)| n == got)
                .map(|&(_, m)| m)
                .ok_or_else(|| {
                    err(
                        "client_auth",
                        mode.span(),
                        format!("expected \"require\" or \"optional\", got {got:?}"),
                    )
                })?
        };
        let Some(ca) = &c.client_ca else {
            return Err(err(
                "client_auth",
                c.client_auth.as_ref().map_or(0..0, Spanned::span),
                "needs client_ca, the PEM bundle of the CAs that sign client certificates".into(),
            ));
        };
        let ca_path = abs_path(base, ca.get_ref())
            .and_then(|p| load_roots(Some(&p)).map(|_| p))
            .map_err(|m| err("client_ca", ca.span(), m))?;
        let mut crls = Vec::new();
        for crl in c.client_crl.iter().flat_map(|l| l.get_ref()) {
            let path = abs_path(base, crl.get_ref())
                .and_then(|p| read_crls(&p).map(|_| p))
                .map_err(|m| err("client_crl", crl.span(), m))?;
            let checked = ClientAuth {
                mode,
                ca: ca_path.clone(),
                crls: vec![path.clone()],
            };
            load(&checked).map_err(|m| err("client_crl", crl.span(), m))?;
            crls.push(path);
        }
        Ok(Some(ClientAuth {
            mode,
            ca: ca_path,
            crls,
        }))
    }

    /// The routes' `require_client_cert`.
    pub(super) fn mtls(&self, f: &FileConfig, tls: &TlsConfig) -> Result<MtlsConfig, ConfigError> {
        let mut out = MtlsConfig::default();
        for r in &f.routes {
            let r = r.get_ref();
            let required = match &r.require_client_cert {
                Some(v) if *v.get_ref() && !any_client_auth(tls) => {
                    return Err(self.err(
                        v.span(),
                        "[[route]] require_client_cert",
                        "no [server] listen entry's tls has client_auth, so no request would \
                         have a client certificate"
                            .into(),
                    ))
                }
                Some(v) => *v.get_ref(),
                None => false,
            };
            match &r.upstream {
                Some(_) => out.proxy_routes.push(required),
                None if required => out.static_routes.push(r.prefix.get_ref().clone()),
                None => {}
            }
        }
        Ok(out)
    }
}

/// `, client_auth = "...", client_ca = "...", client_crl = [...]` for a
/// listener's `tls` table; nothing without client certificates.
pub fn write_keys(c: Option<&ClientAuth>) -> String {
    let Some(c) = c else { return String::new() };
    let quote = |p: &Path| toml::Value::String(p.to_string_lossy().into_owned()).to_string();
    let mut out = format!(
        ", client_auth = \"{}\", client_ca = {}",
        mode_text(c.mode),
        quote(&c.ca)
    );
    if !c.crls.is_empty() {
        let list: Vec<String> = c.crls.iter().map(|p| quote(p)).collect();
        let _ = write!(out, ", client_crl = [{}]", list.join(", "));
    }
    out
}

/// A route's `require_client_cert` line, where it is on.
pub fn write_route(out: &mut String, required: bool) -> fmt::Result {
    if required {
        writeln!(out, "require_client_cert = true")?;
    }
    Ok(())
}
