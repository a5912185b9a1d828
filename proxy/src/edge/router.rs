//! Which handler answers a request: the virtual host first (by Host), then
//! the longest path prefix within it, as nginx chooses a `server` and then a
//! `location`.
//!
//! Proxy routes may name hosts (`host = ["api.example.com",
//! "*.example.com"]`). A request whose host is named by some route is a
//! request for that virtual host, and only its routes are looked at; an
//! exact name wins over a wildcard, and a longer wildcard over a shorter
//! one. Other requests go to the default host: proxy routes naming no host,
//! the static routes, and the static root at `/`. There a proxy route wins
//! over a static one of the same length, so `--upstream` takes `/`.

use ringside_http::path::prefix_matches;

use crate::upstream::settings::ProxyRoute;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Index into the proxy routes.
    Proxy(usize),
    /// The static files: 0 for the root, `i + 1` for static route `i`,
    /// the one the static handler picks by the same rule.
    Static(usize),
    /// A named virtual host with no route for the path.
    NotFound,
}

pub struct Router {
    routes: Vec<ProxyRoute>,
    static_prefixes: Vec<String>,
    named: bool,
}

impl Router {
    pub fn new(routes: Vec<ProxyRoute>, static_prefixes: Vec<String>) -> Router {
        let named = routes.iter().any(|r| !r.hosts.is_empty());
        Router {
            routes,
            static_prefixes,
            named,
        }
    }

    pub fn routes(&self) -> &[ProxyRoute] {
        &self.routes
    }

    pub fn route(&self, host: Option<&[u8]>, path: &[u8]) -> Target {
        if self.named {
            if let Some(vhost) = host.and_then(|h| self.vhost(h)) {
                return self
                    .longest(path, |r| r.hosts.iter().any(|n| n == &vhost))
                    .map_or(Target::NotFound, |(i, _)| Target::Proxy(i));
            }
        }
        let proxy = self.longest(path, |r| r.hosts.is_empty());
        let (static_len, static_route) = self
            .static_prefixes
            .iter()
            .enumerate()
            .filter(|(_, p)| prefix_matches(path, p.as_bytes()))
            .max_by_key(|(_, p)| p.len())
            .map_or((1, 0), |(i, p)| (p.len(), i + 1));
        match proxy {
            Some((i, len)) if len >= static_len => Target::Proxy(i),
            _ => Target::Static(static_route),
        }
    }

    /// The host name (as written in the routes) that the request's host
    /// selects: an exact name, else the longest matching wildcard.
    fn vhost(&self, host: &[u8]) -> Option<String> {
        let host = normalize_host(host)?;
        let mut best: Option<&String> = None;
        for name in self.routes.iter().flat_map(|r| &r.hosts) {
            if *name == host {
                return Some(name.clone());
            }
            if let Some(suffix) = name.strip_prefix('*') {
                if host.ends_with(suffix) && best.is_none_or(|b| name.len() > b.len()) {
                    best = Some(name);
                }
            }
        }
        best.cloned()
    }

    fn longest(&self, path: &[u8], pick: impl Fn(&ProxyRoute) -> bool) -> Option<(usize, usize)> {
        self.routes
            .iter()
            .enumerate()
            .filter(|(_, r)| pick(r) && prefix_matches(path, r.prefix.as_bytes()))
            .map(|(i, r)| (i, r.prefix.len()))
            .max_by_key(|&(_, len)| len)
    }
}

/// Lower case, without the port or trailing dots: the one form of a
/// Host that routing and access rules judge.
pub(super) fn normalize_host(host: &[u8]) -> Option<String> {
    let h = std::str::from_utf8(host).ok()?;
    let h = if h.starts_with('[') {
        h.split_inclusive(']').next().unwrap_or(h)
    } else {
        h.rsplit_once(':').map_or(h, |(name, _)| name)
    };
    Some(h.trim_end_matches('.').to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::settings::HostHeader;

    fn r(hosts: &[&str], prefix: &str) -> ProxyRoute {
        ProxyRoute {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            prefix: prefix.into(),
            upstream: 0,
            replace_prefix: None,
            host: HostHeader::Pass,
            fastcgi: None,
            forward_path: Default::default(),
            upgrade: Vec::new(),
            grpc: false,
            cache: None,
        }
    }

    #[test]
    fn vhost_then_longest_prefix() {
        let router = Router::new(
            vec![
                r(&[], "/api/"),
                r(&["a.example"], "/"),
                r(&["a.example"], "/v2/"),
                r(&["*.example"], "/"),
                r(&["*.b.example"], "/"),
                r(&[], "/"),
            ],
            vec!["/assets/".into(), "/api/static/".into()],
        );
        let cases: &[(Option<&str>, &str, Target)] = &[
            (Some("a.example"), "/v2/x", Target::Proxy(2)),
            (Some("A.Example:8080"), "/x", Target::Proxy(1)),
            (Some("a.example."), "/x", Target::Proxy(1)),
            (Some("c.example"), "/x", Target::Proxy(3)),
            (Some("c.b.example"), "/x", Target::Proxy(4)),
            (Some("other"), "/api/x", Target::Proxy(0)),
            (Some("other"), "/api", Target::Proxy(0)),
            (Some("other"), "/api/static/x", Target::Static(2)),
            (Some("other"), "/assets/x", Target::Static(1)),
            (None, "/x", Target::Proxy(5)),
        ];
        for (host, path, want) in cases {
            let got = router.route(host.map(str::as_bytes), path.as_bytes());
            assert_eq!(got, *want, "{host:?} {path}");
        }
    }

    #[test]
    fn named_host_without_a_match_is_not_found() {
        let router = Router::new(vec![r(&["a.example"], "/api/")], vec![]);
        assert_eq!(router.route(Some(b"a.example"), b"/x"), Target::NotFound);
        assert_eq!(router.route(Some(b"b.example"), b"/x"), Target::Static(0));
    }

    #[test]
    fn static_root_without_proxy_root() {
        let router = Router::new(vec![r(&[], "/api/")], vec![]);
        assert_eq!(router.route(None, b"/index.html"), Target::Static(0));
        assert_eq!(router.route(None, b"/apix"), Target::Static(0));
    }
}
