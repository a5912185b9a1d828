//! `[compression]`: responses compressed on the fly, and the routes that
//! say otherwise (`compress = false`, `compress_levels = { ... }`).
//!
//! ```toml
//! [compression]
//! enabled = true                       # the default
//! types = ["text/*", "application/json"]
//! min_size = 256                       # bytes; smaller bodies go as they are
//! levels = { gzip = 6, br = 5, zstd = 3 }
//! ```

use std::fmt::{self, Write};

use ringside_http::compress::{self, Levels, Policy};

use super::cx::{int_in, size_in, Cx};
use super::error::ConfigError;
use super::file::{FileConfig, LevelsSection};

/// A route's own word on compression.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteCompression {
    pub enabled: Option<bool>,
    /// The route's levels, merged over `[compression] levels`.
    pub levels: Option<Levels>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressionConfig {
    pub enabled: bool,
    pub types: Vec<String>,
    pub min_size: u64,
    pub levels: Levels,
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<RouteCompression>,
    /// Static routes that say anything, by prefix.
    pub static_routes: Vec<(String, RouteCompression)>,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            enabled: true,
            types: compress::DEFAULT_TYPES
                .iter()
                .map(|t| t.to_string())
                .collect(),
            min_size: compress::DEFAULT_MIN_SIZE,
            levels: Levels::default(),
            proxy_routes: Vec::new(),
            static_routes: Vec::new(),
        }
    }
}

impl CompressionConfig {
    /// The policy of a route that says `r` (the server's, for `None`);
    /// `None` when it compresses nothing.
    pub fn policy(&self, r: Option<&RouteCompression>) -> Option<Policy> {
        let enabled = r.and_then(|r| r.enabled).unwrap_or(self.enabled);
        if !enabled {
            return None;
        }
        let levels = r.and_then(|r| r.levels).unwrap_or(self.levels);
        Some(Policy::new(&self.types, self.min_size, levels).expect("types checked"))
    }

    /// A static route's own word, by prefix.
    pub fn static_route(&self, prefix: &str) -> Option<&RouteCompression> {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, r)| r)
    }
}

impl Cx<'_> {
    fn levels(&self, l: &LevelsSection, base: Levels, at: &str) -> Result<Levels, ConfigError> {
        let level = |v: &Option<toml::Spanned<i64>>, name: &str, lo, hi, d: u32| {
            self.or(v, &format!("{at} {name}"), d, |&n| {
                int_in(n, lo, hi).map(|n| n as u32)
            })
        };
        Ok(Levels {
            gzip: level(&l.gzip, "gzip", 1, 9, base.gzip)?,
            br: level(&l.br, "br", 0, 11, base.br)?,
            zstd: level(&l.zstd, "zstd", 1, 19, base.zstd)?,
        })
    }

    pub(super) fn compression(&self, f: &FileConfig) -> Result<CompressionConfig, ConfigError> {
        let c = &f.compression;
        let d = CompressionConfig::default();
        let enabled = self.or(&c.enabled, "[compression] enabled", d.enabled, |&b| Ok(b))?;
        let types = match &c.types {
            None => d.types,
            Some(list) => {
                let mut out = Vec::new();
                for t in list.get_ref() {
                    self.check(t, "[compression] types", |t| {
                        Policy::new(&[t], 0, Levels::default()).map(drop)
                    })?;
                    out.push(t.get_ref().trim().to_ascii_lowercase());
                }
                out
            }
        };
        let min_size = self.or(&c.min_size, "[compression] min_size", d.min_size, |v| {
            size_in(v, 0, u64::MAX)
        })?;
        let levels = match &c.levels {
            None => d.levels,
            Some(l) => self.levels(l.get_ref(), d.levels, "[compression] levels")?,
        };
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let own = RouteCompression {
                enabled: r.compress.as_ref().map(|b| *b.get_ref()),
                levels: match &r.compress_levels {
                    None => None,
                    Some(l) => {
                        Some(self.levels(l.get_ref(), levels, "[[route]] compress_levels")?)
                    }
                },
            };
            if r.upstream.is_some() {
                proxy_routes.push(own);
            } else if own != RouteCompression::default() {
                static_routes.push((r.prefix.get_ref().clone(), own));
            }
        }
        Ok(CompressionConfig {
            enabled,
            types,
            min_size,
            levels,
            proxy_routes,
            static_routes,
        })
    }
}

fn levels_table(l: &Levels) -> String {
    format!("{{ gzip = {}, br = {}, zstd = {} }}", l.gzip, l.br, l.zstd)
}

/// `[compression]`, as the file has it.
pub fn write_section(out: &mut String, c: &CompressionConfig) -> fmt::Result {
    writeln!(out, "\n[compression]")?;
    writeln!(out, "enabled = {}", c.enabled)?;
    let types: Vec<String> = c
        .types
        .iter()
        .map(|t| toml::Value::String(t.clone()).to_string())
        .collect();
    writeln!(out, "types = [{}]", types.join(", "))?;
    writeln!(out, "min_size = {}", c.min_size)?;
    writeln!(out, "levels = {}", levels_table(&c.levels))
}

/// A route's `compress` and `compress_levels` lines.
pub fn write_route(out: &mut String, r: Option<&RouteCompression>) -> fmt::Result {
    let Some(r) = r else { return Ok(()) };
    if let Some(b) = r.enabled {
        writeln!(out, "compress = {b}")?;
    }
    if let Some(l) = &r.levels {
        writeln!(out, "compress_levels = {}", levels_table(l))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn parse(t: &str) -> Result<Config, String> {
        Config::parse(t, Path::new("ringside.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn errors_name_the_line_and_key() {
        for (text, want) in [
            ("[compression]\ntypes = [\"text\"]\n", "ringside.toml:2:10: [compression] types: expected a media type"),
            ("[compression]\nlevels = { gzip = 10 }\n", "ringside.toml:2:19: [compression] levels gzip: expected an integer from 1 to 9, got 10"),
            ("[compression]\nmin_size = \"lots\"\n", "ringside.toml:2:12: [compression] min_size:"),
            ("[[route]]\nprefix = \"/a/\"\ncompress_levels = { zstd = 0 }\n", "ringside.toml:3:28: [[route]] compress_levels zstd: expected an integer from 1 to 19, got 0"),
            ("[compression]\nlevel = 3\n", "ringside.toml:2:1: [compression] level: unknown key"),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.starts_with(want), "{got}\nwanted {want}");
        }
    }

    #[test]
    fn routes_take_the_server_policy_or_their_own() {
        let c = parse(
            "[compression]\nlevels = { gzip = 4 }\nmin_size = \"1k\"\n\
             [[route]]\nprefix = \"/raw/\"\ncompress = false\n\
             [[route]]\nprefix = \"/fast/\"\ncompress_levels = { br = 1 }\n",
        )
        .unwrap();
        let z = &c.compression;
        let server = z.policy(None).unwrap();
        assert_eq!(
            (server.levels.gzip, server.levels.br, server.min_size),
            (4, 5, 1024)
        );
        assert!(z.policy(z.static_route("/raw/")).is_none());
        let fast = z.policy(z.static_route("/fast/")).unwrap();
        assert_eq!((fast.levels.gzip, fast.levels.br), (4, 1));
        let off = parse("[compression]\nenabled = false\n").unwrap();
        assert!(off.compression.policy(None).is_none());
    }
}
