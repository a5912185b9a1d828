//! The configured header fields at the edge: each request gets the rules
//! of its route, merged with its vhost's and the server's when the core's
//! handler was built (`config::headers`), as one pointer on the exchange
//! (`Exchange::set_fields`). The exchange writes them into every response
//! head and into the request fields that go upstream.
//!
//! A config without rules builds nothing here, and requests pay one `None`
//! check. Only where a `[[vhost]]` has rules is the request's host looked
//! up, as the router and `allow`/`deny` read it.

use std::rc::Rc;

use ringside_http::fields::SiteFields;
use ringside_http::Exchange;

use crate::config::headers::{site_fields, HeadersConfig, Level};
use crate::config::tls::TlsConfig;

pub struct Fields {
    /// By vhost slot (0: a host no vhost with rules names), then by route
    /// tag (`Edge`'s: none, the static root, static routes, proxy routes).
    table: Vec<Vec<Option<Rc<SiteFields>>>>,
    /// By `TlsConfig::vhosts` index: its slot in `table`.
    slots: Vec<usize>,
    /// For the vhost of a request's host, where any slot past 0 exists.
    tls: Option<TlsConfig>,
}

impl Fields {
    /// `None` when no level has rules. `prefixes`: the static routes', as
    /// the edge tags them; `proxy_routes`: how many proxy routes.
    pub fn new(
        cfg: &HeadersConfig,
        tls: &TlsConfig,
        prefixes: &[String],
        proxy_routes: usize,
    ) -> Option<Fields> {
        if cfg.is_empty() {
            return None;
        }
        // The route level of each tag, in the edge's order.
        let mut routes: Vec<Option<&Level>> = vec![None, None];
        routes.extend(prefixes.iter().map(|p| cfg.static_route(p)));
        routes.extend((0..proxy_routes).map(|i| cfg.proxy_routes.get(i)));
        let row = |vhost: Option<&Level>| -> Vec<Option<Rc<SiteFields>>> {
            routes
                .iter()
                .map(|r| site_fields([Some(&cfg.server), vhost, *r]).map(Rc::new))
                .collect()
        };
        let mut table = vec![row(None)];
        let mut slots = Vec::with_capacity(cfg.vhosts.len());
        for v in &cfg.vhosts {
            if v.is_empty() {
                slots.push(0);
            } else {
                slots.push(table.len());
                table.push(row(Some(v)));
            }
        }
        let tls = (table.len() > 1).then(|| tls.clone());
        Some(Fields { table, slots, tls })
    }

    /// Gives the request the rules of route tag `tag` for its host.
    pub fn apply(&self, ex: &mut Exchange<'_>, tag: usize) {
        let slot = self.tls.as_ref().map_or(0, |tls| {
            ex.host()
                .and_then(super::router::normalize_host)
                .and_then(|h| tls.vhost_index(&h))
                .map_or(0, |i| self.slots[i])
        });
        if let Some(f) = self.table[slot].get(tag) {
            ex.set_fields(f.clone());
        }
    }
}
