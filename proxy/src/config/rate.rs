//! `[[rate_limit]]`: request rates per key, named and taken by routes
//! (`rate_limit = "NAME"` on a `[[route]]`).
//!
//! ```toml
//! [[rate_limit]]
//! name = "api"
//! key = "client_ip"      # "client_ip" | "header:NAME" | "cookie:NAME" | "route"
//! rate = "100/s"         # N/s, N/m or N/h
//! burst = 20             # requests above the rate taken at once; default: N
//! status = 429           # or 503
//! ```

use std::fmt::{self, Write};

use super::cx::Cx;
use super::error::ConfigError;
use super::file::FileConfig;
use super::upstream::{hash_key, hash_key_text};
use crate::upstream::settings::HashKey;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitKey {
    /// One bucket per value of this field of the request; a request
    /// without it is not limited.
    By(HashKey),
    /// One bucket for the whole route.
    Route,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub name: String,
    pub key: LimitKey,
    /// The rate as written: its count and unit (`s`, `m` or `h`).
    pub count: u32,
    pub unit: char,
    pub burst: u32,
    pub status: u16,
}

impl RateLimit {
    pub fn per_second(&self) -> f64 {
        let secs = match self.unit {
            's' => 1.0,
            'm' => 60.0,
            _ => 3600.0,
        };
        f64::from(self.count) / secs
    }
}

/// Every named limit, and which routes take which (by index in `limits`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateConfig {
    pub limits: Vec<RateLimit>,
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Option<usize>>,
    /// Static routes, by prefix.
    pub static_routes: Vec<(String, usize)>,
}

impl RateConfig {
    pub fn is_empty(&self) -> bool {
        self.proxy_routes.iter().all(Option::is_none) && self.static_routes.is_empty()
    }
}

fn rate(s: &str) -> Result<(u32, char), String> {
    let err = || format!("expected a rate like \"100/s\", \"30/m\" or \"1000/h\", got {s:?}");
    let (n, unit) = s.split_once('/').ok_or_else(err)?;
    let unit = match unit {
        "s" => 's',
        "m" => 'm',
        "h" => 'h',
        _ => return Err(err()),
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    match n.parse::<u32>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok((n, unit)),
        _ => Err(err()),
    }
}

impl Cx<'_> {
    pub(super) fn rates(&self, f: &FileConfig) -> Result<RateConfig, ConfigError> {
        let mut limits: Vec<RateLimit> = Vec::new();
        for l in &f.rate_limits {
            let l = l.get_ref();
            let name = self.check(&l.name, "[[rate_limit]] name", |n| {
                if n.is_empty() {
                    return Err("expected a name".to_owned());
                }
                if limits.iter().any(|o| &o.name == n) {
                    return Err(format!("{n:?} is already a [[rate_limit]]"));
                }
                Ok(n.clone())
            })?;
            let key = self.check(&l.key, "[[rate_limit]] key", |k| {
                if k == "route" {
                    return Ok(LimitKey::Route);
                }
                hash_key(k)
                    .map(LimitKey::By)
                    .map_err(|m| m.replace("\"client_ip\", ", "\"client_ip\", \"route\", "))
            })?;
            let (count, unit) = self.check(&l.rate, "[[rate_limit]] rate", |r| rate(r))?;
            let burst = self.or(&l.burst, "[[rate_limit]] burst", count, |&b| {
                super::cx::int_in(b, 1, 1_000_000_000).map(|b| b as u32)
            })?;
            let status = self.or(&l.status, "[[rate_limit]] status", 429, |&s| match s {
                429 | 503 => Ok(s as u16),
                _ => Err(format!("expected 429 or 503, got {s}")),
            })?;
            limits.push(RateLimit {
                name,
                key,
                count,
                unit,
                burst,
                status,
            });
        }
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let limit = match &r.rate_limit {
                None => None,
                Some(v) => Some(self.check(v, "[[route]] rate_limit", |n| {
                    limits
                        .iter()
                        .position(|l| &l.name == n)
                        .ok_or_else(|| format!("no [[rate_limit]] is named {n:?}"))
                })?),
            };
            match (&r.upstream, limit) {
                (Some(_), l) => proxy_routes.push(l),
                (None, Some(l)) => static_routes.push((r.prefix.get_ref().clone(), l)),
                (None, None) => {}
            }
        }
        Ok(RateConfig {
            limits,
            proxy_routes,
            static_routes,
        })
    }
}

/// Each `[[rate_limit]]`, as the file has it.
pub fn write_limits(out: &mut String, c: &RateConfig) -> fmt::Result {
    for l in &c.limits {
        writeln!(out, "\n[[rate_limit]]")?;
        writeln!(out, "name = {}", toml::Value::String(l.name.clone()))?;
        let key = match &l.key {
            LimitKey::Route => "route".to_owned(),
            LimitKey::By(k) => hash_key_text(k),
        };
        writeln!(out, "key = {}", toml::Value::String(key))?;
        writeln!(out, "rate = \"{}/{}\"", l.count, l.unit)?;
        writeln!(out, "burst = {}", l.burst)?;
        writeln!(out, "status = {}", l.status)?;
    }
    Ok(())
}

/// A route's `rate_limit = "NAME"` line.
pub fn write_route_limit(out: &mut String, c: &RateConfig, limit: Option<usize>) -> fmt::Result {
    match limit.and_then(|i| c.limits.get(i)) {
        Some(l) => writeln!(out, "rate_limit = {}", toml::Value::String(l.name.clone())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn err(t: &str) -> String {
        Config::parse(t, Path::new("ringside.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let limit = "[[rate_limit]]\nname = \"a\"\nkey = \"route\"\n";
        for (text, want) in [
            (format!("{limit}rate = \"10/d\"\n"), "ringside.toml:4:8: [[rate_limit]] rate: expected a rate like \"100/s\""),
            (format!("{limit}rate = \"0/s\"\n"), "ringside.toml:4:8: [[rate_limit]] rate: expected a rate"),
            (format!("{limit}rate = \"+5/s\"\n"), "ringside.toml:4:8: [[rate_limit]] rate: expected a rate"),
            (format!("{limit}rate = \"5/s\"\nstatus = 500\n"), "ringside.toml:5:10: [[rate_limit]] status: expected 429 or 503, got 500"),
            (format!("{limit}rate = \"5/s\"\nburst = 0\n"), "ringside.toml:5:9: [[rate_limit]] burst:"),
            (format!("{limit}rate = \"5/s\"\n{limit}rate = \"5/s\"\n"), "ringside.toml:6:8: [[rate_limit]] name: \"a\" is already a [[rate_limit]]"),
            ("[[rate_limit]]\nname = \"a\"\nkey = \"ip\"\nrate = \"5/s\"\n".to_owned(), "ringside.toml:3:7: [[rate_limit]] key: expected \"client_ip\", \"route\", \"header:NAME\""),
            (format!("{limit}rate = \"5/s\"\n[[route]]\nprefix = \"/\"\nrate_limit = \"b\"\n"), "ringside.toml:7:14: [[route]] rate_limit: no [[rate_limit]] is named \"b\""),
        ] {
            let got = err(&text);
            assert!(got.starts_with(want), "{got}\nwanted {want}");
        }
    }

    #[test]
    fn burst_defaults_to_the_count() {
        let c = Config::parse(
            "[[rate_limit]]\nname = \"a\"\nkey = \"client_ip\"\nrate = \"30/m\"\n[[route]]\nprefix = \"/a/\"\nrate_limit = \"a\"\n",
            Path::new("ringside.toml"),
        )
        .unwrap();
        let l = &c.rates.limits[0];
        assert_eq!((l.burst, l.status), (30, 429));
        assert!((l.per_second() - 0.5).abs() < 1e-9);
        assert_eq!(c.rates.static_routes, [("/a/".to_owned(), 0)]);
    }
}
