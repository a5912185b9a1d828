//! HTTP/2 to upstreams in the config: `protocol = "h2"` or `"auto"` and
//! the keys only they have (`h2_connections`, `h2_ping_interval`,
//! `h2_window`), refused on an upstream speaking HTTP/1.1 or FastCGI,
//! where they would do nothing.

use toml::Spanned;

use super::cx::{duration, first_given, int_in, size_in, Cx};
use super::error::ConfigError;
use super::file::UpstreamSection;
use crate::upstream::settings::{H2Settings, Protocol};

/// Connections per server per core at most.
pub const MAX_CONNECTIONS: i64 = 64;
/// A stream's window within HTTP/2's own bounds (RFC 9113 §6.9.1), and
/// at least a frame's worth.
pub const MIN_WINDOW: u64 = 16 * 1024;
pub const MAX_WINDOW: u64 = (1 << 31) - 1;

impl Cx<'_> {
    pub(super) fn h2_settings(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
        protocol: Protocol,
    ) -> Result<H2Settings, ConfigError> {
        let d = H2Settings::default();
        if !matches!(protocol, Protocol::H2 | Protocol::Auto) {
            let given = first_given(&[
                (
                    "h2_connections",
                    u.h2_connections.as_ref().map(Spanned::span),
                ),
                (
                    "h2_ping_interval",
                    u.h2_ping_interval.as_ref().map(Spanned::span),
                ),
                ("h2_window", u.h2_window.as_ref().map(Spanned::span)),
            ]);
            if let Some((k, span)) = given {
                return Err(self.err(
                    span,
                    &key(k),
                    "only for protocol = \"h2\" or \"auto\" (this upstream does not speak HTTP/2)"
                        .into(),
                ));
            }
            return Ok(d);
        }
        Ok(H2Settings {
            connections: self.or(
                &u.h2_connections,
                &key("h2_connections"),
                d.connections,
                |&n| int_in(n, 1, MAX_CONNECTIONS).map(|n| n as u32),
            )?,
            ping_interval: self.or(
                &u.h2_ping_interval,
                &key("h2_ping_interval"),
                d.ping_interval,
                duration,
            )?,
            stream_window: self.or(&u.h2_window, &key("h2_window"), d.stream_window, |v| {
                size_in(v, MIN_WINDOW, MAX_WINDOW).map(|n| n as u32)
            })?,
        })
    }
}
