//! Per virtual host (`[[vhost]]`): plain-http requests redirected to https
//! (`https_redirect`), and `Strict-Transport-Security` on https responses
//! (`hsts`). Applied before routing, so static, proxied and FastCGI
//! responses alike carry it.

use std::rc::Rc;

use ringside_http::{Error, Exchange, HeaderLine, Method};

use crate::config::tls::TlsConfig;

pub struct HttpsPolicy {
    tls: TlsConfig,
    /// By vhost index: its HSTS header.
    hsts: Vec<Option<Rc<HeaderLine>>>,
    /// The port redirects name; `None` for 443, which URLs leave out.
    port: Option<u16>,
}

impl HttpsPolicy {
    /// The policy for `tls`, redirecting to `https_port` (the first TLS
    /// listener's); `None` when no vhost redirects or sets HSTS, so the
    /// request path pays nothing.
    pub fn new(tls: &TlsConfig, https_port: Option<u16>) -> Option<HttpsPolicy> {
        if !tls
            .vhosts
            .iter()
            .any(|v| v.https_redirect || v.hsts.is_some())
        {
            return None;
        }
        let hsts = tls
            .vhosts
            .iter()
            .map(|v| {
                v.hsts.as_ref().map(|h| {
                    Rc::new(HeaderLine {
                        name: b"Strict-Transport-Security".as_slice().into(),
                        value: h.as_bytes().into(),
                    })
                })
            })
            .collect();
        Some(HttpsPolicy {
            tls: tls.clone(),
            hsts,
            port: https_port.filter(|&p| p != 443),
        })
    }

    /// Runs before routing: answers a plain-http request for a redirecting
    /// vhost with a redirect (`Some`), or marks an https request of an HSTS
    /// vhost so that its response carries the header (`None`: go on).
    pub fn apply(&self, ex: &mut Exchange<'_>) -> Option<Result<(), Error>> {
        let host = host_only(ex.host()?)?;
        let index = self.tls.vhost_index(host)?;
        let found = &self.tls.vhosts[index];
        if ex.is_tls() {
            if let Some(line) = &self.hsts[index] {
                ex.add_header(line.clone());
            }
            return None;
        }
        if !found.https_redirect {
            return None;
        }
        let mut location = format!("https://{host}");
        if let Some(p) = self.port {
            location.push_str(&format!(":{p}"));
        }
        location.push_str(&String::from_utf8_lossy(ex.target()));
        // 301 as nginx's usual `return 301 https://...`; 308 keeps the
        // method and body of anything but GET and HEAD (RFC 9110 §15.4.9).
        let status = if matches!(ex.method(), Method::Get | Method::Head) {
            301
        } else {
            308
        };
        Some(ex.send(
            status,
            &[
                ("Location", location.as_bytes()),
                ("Content-Type", b"text/plain"),
            ],
            format!("{status} moved to {location}\n").as_bytes(),
        ))
    }
}

/// The host of a Host value, without its port (the parser has already
/// checked its syntax).
pub(super) fn host_only(h: &[u8]) -> Option<&str> {
    let h = std::str::from_utf8(h).ok()?;
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split_once(']').map(|(v6, _)| v6);
    }
    Some(h.split_once(':').map_or(h, |(name, _)| name))
}

#[cfg(test)]
mod tests {
    use super::host_only;

    #[test]
    fn host_only_drops_the_port() {
        for (given, want) in [
            (&b"a.example"[..], Some("a.example")),
            (b"a.example:8443", Some("a.example")),
            (b"[::1]:8443", Some("::1")),
            (b"[::1]", Some("::1")),
            (b"127.0.0.1:80", Some("127.0.0.1")),
            (b"\xff", None),
        ] {
            assert_eq!(host_only(given), want, "{given:?}");
        }
    }
}
