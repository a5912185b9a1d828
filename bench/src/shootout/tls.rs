//! The front ends' side of the `https`, `h2` and `h2c` scenarios: the
//! certificate every server gets, and what each server's config says to
//! listen that way (`deploy/bench/nginx-h2.conf`, `h2o-h2.conf` and
//! `haproxy-proxy-h2.cfg` take it as placeholders; ringside gets a
//! config file of its own). The origin behind the proxies stays plain
//! HTTP/1.1.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::def::Protocol;
use super::servers::Behind;

/// A self-signed certificate made once per shootout run.
#[derive(Clone, Debug)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Certificate and key in one file: HAProxy's `crt` takes them so.
    pub both: PathBuf,
}

impl Tls {
    /// RSA 2048, as most sites still serve; the client skips verification
    /// (`--insecure`), but the name and address are in the certificate so
    /// that a client given it as its CA (`--cacert`) may verify too.
    pub fn generate(dir: &Path) -> Result<Tls, String> {
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes"])
            .args(["-subj", "/CN=localhost", "-days", "2"])
            .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .map_err(|e| format!("cannot run openssl (apt-get install openssl): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "openssl req failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        let mut pem = read(&cert)?;
        pem.extend(read(&key)?);
        let both = dir.join("both.pem");
        std::fs::write(&both, pem).map_err(|e| format!("{}: {e}", both.display()))?;
        Ok(Tls { cert, key, both })
    }
}

fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A TOML string, quoted and escaped.
fn toml_str(p: &Path) -> String {
    toml::Value::String(text(p)).to_string()
}

fn need(protocol: Protocol, tls: Option<&Tls>) -> Result<Option<&Tls>, String> {
    match (protocol.tls(), tls) {
        (true, None) => Err(format!("{} needs a certificate", protocol.name())),
        (true, Some(t)) => Ok(Some(t)),
        (false, _) => Ok(None),
    }
}

fn only_static_or_proxy(protocol: Protocol) -> String {
    format!(
        "protocol {:?}: static and proxy scenarios only",
        protocol.name()
    )
}

/// ringside's config for a TLS listener: `--listen` would replace the
/// file's listen list, certificate and all, so everything is in the file.
/// HTTP/2 is on by default and offered first by ALPN; a client asking for
/// http/1.1 alone gets it. The admin listener is off so that it takes no
/// port of its own.
pub fn ringside_config(port: u16, behind: &Behind, tls: &Tls) -> Result<String, String> {
    let mut c = format!(
        "[server]\nlisten = [{{ addr = \"127.0.0.1:{port}\", tls = {{ cert = {}, key = {} }} }}]\n",
        toml_str(&tls.cert),
        toml_str(&tls.key)
    );
    let upstream = match behind {
        Behind::Files(root) => {
            c.push_str(&format!("root = {}\n", toml_str(root)));
            None
        }
        Behind::Http(up) => Some(up),
        Behind::FastCgi(..) => return Err("TLS front ends: static and proxy scenarios only".into()),
    };
    c.push_str("\n[admin]\nlisten = \"off\"\n");
    if let Some(up) = upstream {
        // What --upstream makes: the defaults, and a route for every path.
        c.push_str(&format!(
            "\n[upstream.origin]\nservers = [\"127.0.0.1:{up}\"]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"origin\"\n"
        ));
    }
    Ok(c)
}

/// The placeholders of `nginx-h2.conf`. nginx 1.22 says it on the listen
/// line: "ssl" alone is HTTP/1.1 over TLS (ALPN offers http/1.1 only),
/// "ssl http2" offers h2, and "http2" alone is h2c by prior knowledge.
pub fn nginx_vars(
    protocol: Protocol,
    tls: Option<&Tls>,
    behind: &Behind,
) -> Result<Vec<(&'static str, String)>, String> {
    let listen = match protocol {
        Protocol::Https => "ssl",
        Protocol::H2 => "ssl http2",
        Protocol::H2c => "http2",
        Protocol::Http => return Err("plain http uses nginx-{kind}.conf".into()),
    };
    let tls_lines = need(protocol, tls)?.map_or(String::new(), |t| {
        format!(
            "ssl_certificate {}; ssl_certificate_key {};",
            text(&t.cert),
            text(&t.key)
        )
    });
    let mut vars = vec![("LISTEN", listen.into()), ("TLS", tls_lines)];
    match behind {
        Behind::Files(root) => {
            vars.push(("SERVE", format!("root {};", text(root))));
            // The template declares the origin upstream either way; nginx
            // connects to it only when a location uses it, which none does.
            vars.push(("UPSTREAM_PORT", "1".into()));
        }
        Behind::Http(_) => vars.push((
            "SERVE",
            "location / { proxy_pass http://origin; proxy_http_version 1.1; \
             proxy_set_header Connection \"\"; }"
                .into(),
        )),
        Behind::FastCgi(..) => return Err(only_static_or_proxy(protocol)),
    }
    Ok(vars)
}

/// The placeholders of `h2o-h2.conf`: h2o serves h2c by prior knowledge on
/// a plain listener, and h2 and http/1.1 by ALPN on one with `ssl:`.
pub fn h2o_vars(
    protocol: Protocol,
    tls: Option<&Tls>,
    behind: &Behind,
) -> Result<Vec<(&'static str, String)>, String> {
    let ssl = need(protocol, tls)?.map_or(String::new(), |t| {
        format!(
            "  ssl:\n    certificate-file: {}\n    key-file: {}",
            text(&t.cert),
            text(&t.key)
        )
    });
    let serve = match behind {
        Behind::Files(root) => format!("file.dir: {}", text(root)),
        Behind::Http(up) => format!("proxy.reverse.url: http://127.0.0.1:{up}/"),
        Behind::FastCgi(..) => return Err(only_static_or_proxy(protocol)),
    };
    Ok(vec![("TLS", ssl), ("SERVE", serve)])
}

/// What follows the address on HAProxy's bind line in
/// `haproxy-proxy-h2.cfg`: TLS offers h2 and http/1.1 by ALPN, and
/// `proto h2` takes h2c by prior knowledge only.
pub fn haproxy_bind(protocol: Protocol, tls: Option<&Tls>) -> Result<String, String> {
    Ok(match (protocol, need(protocol, tls)?) {
        (Protocol::H2c, _) => "proto h2".into(),
        (_, Some(t)) => format!("ssl crt {} alpn h2,http/1.1", text(&t.both)),
        (_, None) => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls() -> Tls {
        Tls {
            cert: "/c/cert.pem".into(),
            key: "/c/key.pem".into(),
            both: "/c/both.pem".into(),
        }
    }

    #[test]
    fn ringside_gets_a_tls_listener_and_its_handler() {
        let c = ringside_config(8443, &Behind::Files("/srv/x".into()), &tls()).unwrap();
        assert_eq!(
            c,
            "[server]\nlisten = [{ addr = \"127.0.0.1:8443\", tls = { cert = \"/c/cert.pem\", \
             key = \"/c/key.pem\" } }]\nroot = \"/srv/x\"\n\n[admin]\nlisten = \"off\"\n"
        );
        let c = ringside_config(8443, &Behind::Http(9000), &tls()).unwrap();
        assert!(c.ends_with(
            "[upstream.origin]\nservers = [\"127.0.0.1:9000\"]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"origin\"\n"
        ));
        assert!(!c.contains("root"));
        // A quote in a path cannot end the string early.
        let odd = Behind::Files("/srv/a\"b".into());
        let c = ringside_config(1, &odd, &tls()).unwrap();
        assert!(c.contains(r#"root = '/srv/a"b'"#) || c.contains(r#"root = "/srv/a\"b""#));
    }

    #[test]
    fn each_server_listens_as_the_protocol_says() {
        let files = Behind::Files("/srv".into());
        let proxy = Behind::Http(9000);
        let cert = tls();
        let t = Some(&cert);
        let get = |v: &[(&str, String)], k: &str| {
            v.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let v = nginx_vars(Protocol::Https, t, &files).unwrap();
        assert_eq!(get(&v, "LISTEN"), "ssl");
        assert!(get(&v, "TLS").contains("ssl_certificate /c/cert.pem;"));
        assert_eq!(get(&v, "SERVE"), "root /srv;");
        let v = nginx_vars(Protocol::H2, t, &proxy).unwrap();
        assert_eq!(get(&v, "LISTEN"), "ssl http2");
        assert!(get(&v, "SERVE").contains("proxy_pass http://origin;"));
        let v = nginx_vars(Protocol::H2c, None, &files).unwrap();
        assert_eq!(
            (get(&v, "LISTEN"), get(&v, "TLS")),
            ("http2".into(), "".into())
        );

        let v = h2o_vars(Protocol::H2, t, &proxy).unwrap();
        assert!(get(&v, "TLS").starts_with("  ssl:\n    certificate-file: /c/cert.pem\n"));
        assert_eq!(
            get(&v, "SERVE"),
            "proxy.reverse.url: http://127.0.0.1:9000/"
        );
        assert_eq!(
            get(&h2o_vars(Protocol::H2c, None, &files).unwrap(), "TLS"),
            ""
        );

        assert_eq!(
            haproxy_bind(Protocol::H2, t).unwrap(),
            "ssl crt /c/both.pem alpn h2,http/1.1"
        );
        assert_eq!(haproxy_bind(Protocol::H2c, None).unwrap(), "proto h2");

        // TLS without a certificate is a mistake of the caller's.
        assert!(nginx_vars(Protocol::Https, None, &files).is_err());
        assert!(haproxy_bind(Protocol::H2, None).is_err());
        let fcgi = Behind::FastCgi(9000, "/php".into());
        assert!(h2o_vars(Protocol::H2c, None, &fcgi).is_err());
    }

    #[test]
    fn the_certificate_is_made_once_with_its_key() {
        let dir = super::super::procs::Scratch::new("tls-test");
        let t = Tls::generate(&dir.0).unwrap();
        let cert = std::fs::read_to_string(&t.cert).unwrap();
        let key = std::fs::read_to_string(&t.key).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        assert!(key.contains("PRIVATE KEY-----"), "{key}");
        assert_eq!(std::fs::read_to_string(&t.both).unwrap(), cert + &key);
    }
}
