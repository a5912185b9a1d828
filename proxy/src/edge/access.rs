//! `allow` and `deny` at the edge: after routing, on the route the
//! normalized path chose, so no spelling of a path reaches past them. The
//! rules that hold are the route's, else its virtual host's, else the
//! server's (`config::access`); a client they refuse gets 403.

use ringside_http::Exchange;

use super::router::Target;
use crate::config::access::{AccessConfig, Rules};
use crate::config::tls::TlsConfig;

pub struct Access {
    server: Rules,
    /// Host names to their `[[vhost]]` index.
    tls: TlsConfig,
    vhosts: Vec<Rules>,
    proxy_routes: Vec<Rules>,
    /// By `Target::Static` index: 0 is the root, which has no route.
    statics: Vec<Rules>,
}

impl Access {
    /// `None` when no level has rules, so requests are not checked at all.
    pub fn new(cfg: &AccessConfig, tls: &TlsConfig, static_prefixes: &[String]) -> Option<Access> {
        if cfg.is_empty() {
            return None;
        }
        let mut statics = vec![Rules::default()];
        for p in static_prefixes {
            statics.push(
                cfg.static_routes
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|(_, r)| r.clone())
                    .unwrap_or_default(),
            );
        }
        Some(Access {
            server: cfg.server.clone(),
            tls: tls.clone(),
            vhosts: cfg.vhosts.clone(),
            proxy_routes: cfg.proxy_routes.clone(),
            statics,
        })
    }

    /// The rules that hold for a request to `target` for `host`.
    fn rules(&self, host: Option<&[u8]>, target: Option<Target>) -> &Rules {
        let route = match target {
            Some(Target::Proxy(i)) => self.proxy_routes.get(i),
            Some(Target::Static(i)) => self.statics.get(i),
            Some(Target::NotFound) | None => None,
        };
        if let Some(r) = route.filter(|r| !r.is_empty()) {
            return r;
        }
        // The host as the router reads it: `a.example..` is `a.example`
        // here too, so no spelling of a name slips past its vhost's rules.
        let vhost = host
            .and_then(super::router::normalize_host)
            .and_then(|h| self.tls.vhost_index(&h))
            .and_then(|i| self.vhosts.get(i));
        match vhost {
            Some(r) if !r.is_empty() => r,
            _ => &self.server,
        }
    }

    /// Whether the client may have a request to `target` (`None`: a
    /// request no route takes, such as `OPTIONS *`) served.
    pub fn admits(&self, ex: &Exchange<'_>, target: Option<Target>) -> bool {
        let rules = self.rules(ex.host(), target);
        if rules.is_empty() {
            return true;
        }
        match ex.peer() {
            Ok(a) => rules.admits(a.ip()),
            Err(_) if ex.is_unix() => rules.admits_unix(),
            // No address to judge (a socket already gone): refused.
            Err(_) => false,
        }
    }

    #[cfg(test)]
    fn admits_ip(&self, host: Option<&[u8]>, target: Option<Target>, ip: std::net::IpAddr) -> bool {
        self.rules(host, target).admits(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::net::IpAddr;
    use std::path::Path;

    fn access(toml: &str) -> (Access, Config) {
        let dir = std::env::temp_dir();
        let cfg = Config::parse(
            &format!("[server]\nroot = {:?}\n{toml}", dir.display()),
            Path::new("/x/ringside.toml"),
        )
        .unwrap();
        let prefixes: Vec<String> = cfg
            .statics
            .routes
            .iter()
            .map(|r| r.prefix.clone())
            .collect();
        let a = Access::new(&cfg.access, &cfg.tls, &prefixes).expect("rules given");
        (a, cfg)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_innermost_level_with_rules_decides_alone() {
        let (a, _) = access(
            "deny = [\"10.0.0.0/8\"]\n\
             [[vhost]]\nnames = [\"a.example\"]\nallow = [\"10.1.0.0/16\"]\n\
             [upstream.u]\nservers = [\"127.0.0.1:9\"]\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"u\"\nallow = [\"10.1.2.3\"]\n\
             [[route]]\nprefix = \"/other/\"\nupstream = \"u\"\n\
             [[route]]\nprefix = \"/files/\"\nlisting = true\ndeny = [\"all\"]\n",
        );
        let (api, other) = (Some(Target::Proxy(0)), Some(Target::Proxy(1)));
        let files = Some(Target::Static(1));
        let a_host = Some(&b"a.example:8080"[..]);
        // The route's own rules, whatever the host.
        assert!(a.admits_ip(a_host, api, ip("10.1.2.3")));
        assert!(!a.admits_ip(a_host, api, ip("10.1.2.4")));
        assert!(!a.admits_ip(None, files, ip("192.0.2.1")));
        // A route without rules: the vhost's, else the server's.
        assert!(a.admits_ip(a_host, other, ip("10.1.9.9")));
        for spelling in [&b"A.Example"[..], b"a.example..", b"a.example.:443"] {
            assert!(
                !a.admits_ip(Some(spelling), other, ip("192.0.2.1")),
                "{spelling:?}"
            );
        }
        assert!(!a.admits_ip(a_host, other, ip("192.0.2.1")));
        assert!(!a.admits_ip(Some(b"b.example"), other, ip("10.1.9.9")));
        assert!(a.admits_ip(Some(b"b.example"), other, ip("192.0.2.1")));
        assert!(!a.admits_ip(None, Some(Target::Static(0)), ip("10.9.9.9")));
        assert!(!a.admits_ip(None, None, ip("10.9.9.9")));
    }

    #[test]
    fn no_rules_means_no_check() {
        let cfg = Config::parse(
            &format!("[server]\nroot = {:?}\n", std::env::temp_dir().display()),
            Path::new("/x/ringside.toml"),
        )
        .unwrap();
        assert!(Access::new(&cfg.access, &cfg.tls, &[]).is_none());
    }
}
