//! Access control by client address: `allow` and `deny`, lists of CIDR
//! blocks, on `[server]`, on each `[[vhost]]` and on each `[[route]]`.
//!
//! Within one level the most specific block that holds the address
//! decides (a `/32` beats a `/8`, and between the same block in both lists
//! `deny` wins), so the order of the entries never matters; an address no
//! block holds is denied when the level allows anything, else admitted.
//! As nginx's `allow`/`deny`, the innermost level with rules decides
//! alone: a route's, else its vhost's, else the server's.

use std::fmt;
use std::net::IpAddr;

pub use ringside_runtime::cidr::Cidr;
use toml::Spanned;

use super::cx::Cx;
use super::error::ConfigError;
use super::file::FileConfig;

/// One level's `allow` and `deny`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    pub allow: Vec<Cidr>,
    pub deny: Vec<Cidr>,
    /// `"unix:"` in `allow` or `deny`: clients of a unix-socket listener.
    pub allow_unix: bool,
    pub deny_unix: bool,
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && !self.allow_unix && !self.deny_unix
    }

    /// Whether a client of a unix-socket listener (which has no address)
    /// may be served: `"unix:"` decides, else `"all"` (any /0 block), as
    /// nginx's `unix:` and `all` do; else as an address no block holds.
    pub fn admits_unix(&self) -> bool {
        let all = |list: &[Cidr]| list.iter().any(|c| c.prefix_len() == 0);
        if self.allow_unix || self.deny_unix {
            return self.allow_unix;
        }
        match (all(&self.allow), all(&self.deny)) {
            (_, true) => false,
            (true, false) => true,
            (false, false) => self.allow.is_empty(),
        }
    }

    /// Whether `ip` may be served. An IPv4 client on a dual-stack
    /// listener (`::ffff:a.b.c.d`) is matched as the IPv4 address it is.
    pub fn admits(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        let best = |list: &[Cidr]| {
            list.iter()
                .filter(|c| c.contains(ip))
                .map(|c| c.prefix_len())
                .max()
        };
        match (best(&self.allow), best(&self.deny)) {
            (Some(a), Some(d)) => a > d,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => self.allow.is_empty(),
        }
    }
}

/// The rules of every level, validated. Empty rules mean none were given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessConfig {
    pub server: Rules,
    /// By index in `TlsConfig::vhosts` (the file's order).
    pub vhosts: Vec<Rules>,
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Rules>,
    /// Static routes, by prefix.
    pub static_routes: Vec<(String, Rules)>,
}

impl AccessConfig {
    /// No rules anywhere: requests are not checked at all.
    pub fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.vhosts.iter().all(Rules::is_empty)
            && self.proxy_routes.iter().all(Rules::is_empty)
            && self.static_routes.iter().all(|(_, r)| r.is_empty())
    }
}

type List = Option<Spanned<Vec<Spanned<String>>>>;

impl Cx<'_> {
    pub(super) fn access(&self, f: &FileConfig) -> Result<AccessConfig, ConfigError> {
        let server = self.rules(&f.server.allow, &f.server.deny, "[server]")?;
        let mut vhosts = Vec::with_capacity(f.vhosts.len());
        for v in &f.vhosts {
            let v = v.get_ref();
            vhosts.push(self.rules(&v.allow, &v.deny, "[[vhost]]")?);
        }
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let rules = self.rules(&r.allow, &r.deny, "[[route]]")?;
            match &r.upstream {
                Some(_) => proxy_routes.push(rules),
                None if rules.is_empty() => {}
                None => static_routes.push((r.prefix.get_ref().clone(), rules)),
            }
        }
        Ok(AccessConfig {
            server,
            vhosts,
            proxy_routes,
            static_routes,
        })
    }

    fn rules(&self, allow: &List, deny: &List, section: &str) -> Result<Rules, ConfigError> {
        let mut rules = Rules::default();
        for (list, is_allow) in [(allow, true), (deny, false)] {
            let Some(list) = list else { continue };
            let key = format!("{section} {}", if is_allow { "allow" } else { "deny" });
            if list.get_ref().is_empty() {
                return Err(self.err(
                    list.span(),
                    &key,
                    "expected at least one address or CIDR block (leave the key out for none)"
                        .into(),
                ));
            }
            for entry in list.get_ref() {
                let blocks = self.check(entry, &key, |s| {
                    if s == "unix:" {
                        let (same, other) = if is_allow {
                            (rules.allow_unix, false)
                        } else {
                            (rules.deny_unix, rules.allow_unix)
                        };
                        if same {
                            return Err("unix: is listed twice".into());
                        }
                        if other {
                            return Err("unix: is in allow too; say which it is".into());
                        }
                        return Ok(None);
                    }
                    let blocks = Cidr::parse(s)
                        .map_err(|m| m.replace(" or \"all\"", ", \"all\" or \"unix:\""))?;
                    let same = if is_allow { &rules.allow } else { &rules.deny };
                    for b in &blocks {
                        if same.contains(b) {
                            return Err(format!("{b} is listed twice"));
                        }
                        if !is_allow && rules.allow.contains(b) {
                            return Err(format!("{b} is in allow too; say which it is"));
                        }
                    }
                    Ok(Some(blocks))
                })?;
                match (blocks, is_allow) {
                    (None, true) => rules.allow_unix = true,
                    (None, false) => rules.deny_unix = true,
                    (Some(b), true) => rules.allow.extend(b),
                    (Some(b), false) => rules.deny.extend(b),
                }
            }
        }
        Ok(rules)
    }
}

/// `allow = [...]` and `deny = [...]` lines for `rules`, as the file has
/// them.
pub fn write_rules(out: &mut String, rules: &Rules) -> fmt::Result {
    use fmt::Write;
    for (key, list, unix) in [
        ("allow", &rules.allow, rules.allow_unix),
        ("deny", &rules.deny, rules.deny_unix),
    ] {
        if list.is_empty() && !unix {
            continue;
        }
        let mut items: Vec<String> = list.iter().map(|c| format!("\"{c}\"")).collect();
        if unix {
            items.push("\"unix:\"".into());
        }
        writeln!(out, "{key} = [{}]", items.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> Rules {
        let p = |l: &[&str]| l.iter().flat_map(|s| Cidr::parse(s).unwrap()).collect();
        Rules {
            allow: p(allow),
            deny: p(deny),
            ..Rules::default()
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_most_specific_block_decides() {
        let r = rules(&["10.0.0.0/8"], &["10.6.0.0/16"]);
        assert!(r.admits(ip("10.1.2.3")));
        assert!(!r.admits(ip("10.6.2.3")));
        // Nothing matches and the level allows something: denied.
        assert!(!r.admits(ip("192.0.2.1")));
        let r = rules(&["10.6.6.6"], &["10.0.0.0/8"]);
        assert!(r.admits(ip("10.6.6.6")));
        assert!(!r.admits(ip("10.6.6.7")));
        // Only denials: everything else is admitted.
        let r = rules(&[], &["192.0.2.0/24"]);
        assert!(!r.admits(ip("192.0.2.200")));
        assert!(r.admits(ip("198.51.100.1")));
        // deny all with one exception.
        let r = rules(&["127.0.0.1"], &["all"]);
        assert!(r.admits(ip("127.0.0.1")));
        assert!(!r.admits(ip("127.0.0.2")));
        assert!(!r.admits(ip("::1")));
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let err = |t: &str| {
            crate::config::Config::parse(t, std::path::Path::new("ringside.toml"))
                .unwrap_err()
                .to_string()
        };
        for (text, want) in [
            (
                "[[route]]\nprefix = \"/a/\"\nallow = [\"10.0.0.1/8\"]\n",
                "ringside.toml:3:10: [[route]] allow: \"10.0.0.1/8\" has bits set past its prefix length; the block is 10.0.0.0/8",
            ),
            (
                "[server]\ndeny = [\"10.0.0.0/8\", \"nope\"]\n",
                "ringside.toml:2:23: [server] deny: expected an address, a CIDR block, \"all\" or \"unix:\", got \"nope\"",
            ),
            (
                "[[vhost]]\nnames = [\"a.example\"]\nallow = [\"::1\"]\ndeny = [\"::1/128\"]\n",
                "ringside.toml:4:9: [[vhost]] deny: ::1/128 is in allow too; say which it is",
            ),
            (
                "[server]\nallow = []\n",
                "ringside.toml:2:9: [server] allow: expected at least one address",
            ),
            (
                "[server]\nallow = [\"all\", \"0.0.0.0/0\"]\n",
                "ringside.toml:2:17: [server] allow: 0.0.0.0/0 is listed twice",
            ),
        ] {
            let got = err(text);
            assert!(got.starts_with(want), "{got}\nwanted {want}");
        }
    }

    #[test]
    fn unix_clients_are_named_by_unix_or_all() {
        let c = |t: &str| {
            crate::config::Config::parse(t, std::path::Path::new("ringside.toml")).unwrap()
        };
        let cfg = c("[server]\nallow = [\"unix:\", \"127.0.0.1\"]\ndeny = [\"all\"]\n");
        let r = &cfg.access.server;
        assert!(r.allow_unix && !r.deny_unix);
        assert!(r.admits_unix());
        assert!(!r.admits(ip("10.0.0.1")));
        let text = cfg.to_toml();
        assert!(
            text.contains("allow = [\"127.0.0.1/32\", \"unix:\"]"),
            "{text}"
        );
        assert_eq!(c(&text).access, cfg.access);

        assert!(!c("[server]\ndeny = [\"unix:\"]\n")
            .access
            .server
            .admits_unix());
        assert!(!rules(&["127.0.0.1"], &["all"]).admits_unix());
        assert!(rules(&["all"], &["10.0.0.0/8"]).admits_unix());
        assert!(!rules(&["10.0.0.0/8"], &[]).admits_unix());
        assert!(rules(&[], &["10.0.0.0/8"]).admits_unix());
        let err = crate::config::Config::parse(
            "[server]\nallow = [\"unix:\"]\ndeny = [\"unix:\"]\n",
            std::path::Path::new("ringside.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("ringside.toml:3:9: [server] deny: unix: is in allow too"),
            "{err}"
        );
    }

    #[test]
    fn families_stay_apart_and_mapped_addresses_are_ipv4() {
        let r = rules(&[], &["::/0"]);
        assert!(r.admits(ip("10.0.0.1")));
        assert!(!r.admits(ip("2001:db8::1")));
        let r = rules(&[], &["10.0.0.0/8"]);
        assert!(!r.admits(ip("::ffff:10.1.1.1")));
        assert!(r.admits(ip("2001:db8::1")));
        let r = rules(&["2001:db8::/32"], &[]);
        assert!(r.admits(ip("2001:db8:1::5")));
        assert!(!r.admits(ip("2001:db9::1")));
    }
}
