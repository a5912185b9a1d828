//! `[real_ip]`: the client's address as the balancers in front of ringside
//! report it, taken only from the peers named in `from` (nginx's
//! `set_real_ip_from`, `real_ip_header` and `real_ip_recursive`).
//!
//! ```toml
//! [real_ip]
//! from = ["10.0.0.0/8", "unix:"]  # peers (and hops) trusted to report it; "unix:": a Unix-socket listener's
//! header = "X-Forwarded-For"      # or "X-Real-IP", any field holding a list of addresses
//! recursive = true                # walk right to left past trusted hops; false: the rightmost entry
//! ```
//!
//! The walk itself is `crate::edge::real_ip`'s. Without the section nothing
//! is looked at and every request's address is its connection's.

use std::fmt::{self, Write};

use ringside_runtime::cidr::Cidr;
use toml::Spanned;

use super::cx::Cx;
use super::emit::quote;
use super::error::ConfigError;
use super::file::FileConfig;

/// The field read when `header` is left out.
pub const DEFAULT_HEADER: &str = "x-forwarded-for";

/// `[real_ip]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealIpConfig {
    /// The trusted blocks.
    pub from: Vec<Cidr>,
    /// Whether a peer on a Unix-socket listener is trusted (`"unix:"`).
    pub unix: bool,
    /// The field's name, in lower case.
    pub header: String,
    pub recursive: bool,
}

impl Cx<'_> {
    /// `[real_ip]`, or `None` when the section is not there.
    pub(super) fn real_ip(&self, f: &FileConfig) -> Result<Option<RealIpConfig>, ConfigError> {
        let Some(s) = &f.real_ip else {
            return Ok(None);
        };
        let (span, s) = (s.span(), s.get_ref());
        let Some(list) = &s.from else {
            return Err(self.err(
                span,
                "[real_ip] from",
                "expected the addresses trusted to report a client's (without them [real_ip] trusts nobody)".into(),
            ));
        };
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                "[real_ip] from",
                "expected at least one address, CIDR block or \"unix:\"".into(),
            ));
        }
        let (mut from, mut unix) = (Vec::new(), false);
        for entry in list.get_ref() {
            self.check(entry, "[real_ip] from", |e| {
                if e == "unix:" {
                    if unix {
                        return Err("\"unix:\" is listed twice".into());
                    }
                    unix = true;
                    return Ok(());
                }
                for b in Cidr::parse(e)
                    .map_err(|m| m.replace(" or \"all\"", ", \"all\" or \"unix:\""))?
                {
                    if from.contains(&b) {
                        return Err(format!("{b} is listed twice"));
                    }
                    from.push(b);
                }
                Ok(())
            })?;
        }
        let header = self.or(&s.header, "[real_ip] header", DEFAULT_HEADER.into(), |h| {
            header_name(h)
        })?;
        let recursive = s.recursive.as_ref().is_some_and(|r| *r.get_ref());
        Ok(Some(RealIpConfig {
            from,
            unix,
            header,
            recursive,
        }))
    }
}

/// A field's name (a token, RFC 9110 §5.1), in lower case; the fields
/// ringside writes itself on the way upstream are refused, as they never
/// come from a balancer.
fn header_name(h: &str) -> Result<String, String> {
    if !ringside_http::grammar::is_token(h.as_bytes()) {
        return Err(format!(
            "expected a header name (a token like \"X-Real-IP\"), got {h:?}"
        ));
    }
    let lower = h.to_ascii_lowercase();
    if ringside_http::hop::is_hop_by_hop(lower.as_bytes()) || lower == "host" {
        return Err(format!("{h:?} cannot carry a client's address"));
    }
    Ok(lower)
}

/// The `[real_ip]` section as the file has it, if there is one.
pub fn write_section(out: &mut String, c: &Option<RealIpConfig>) -> fmt::Result {
    let Some(c) = c else { return Ok(()) };
    let mut from: Vec<String> = c.from.iter().map(|b| quote(&b.to_string())).collect();
    if c.unix {
        from.push(quote("unix:"));
    }
    writeln!(out, "\n[real_ip]")?;
    writeln!(out, "from = [{}]", from.join(", "))?;
    writeln!(out, "header = {}", quote(&c.header))?;
    writeln!(out, "recursive = {}", c.recursive)
}

/// The file layer's `[real_ip]`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct RealIpSection {
    pub from: Option<Spanned<Vec<Spanned<String>>>>,
    pub header: Option<Spanned<String>>,
    pub recursive: Option<Spanned<bool>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    fn parse(t: &str) -> Result<Config, String> {
        Config::parse(t, Path::new("ringside.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_section_and_writes_it_back() {
        let c = parse(
            "[real_ip]\nfrom = [\"10.0.0.0/8\", \"unix:\", \"::1\"]\nheader = \"X-Real-IP\"\nrecursive = true\n",
        )
        .unwrap();
        let r = c.real_ip.clone().unwrap();
        assert_eq!(r.header, "x-real-ip");
        assert!(r.unix && r.recursive);
        let blocks: Vec<String> = r.from.iter().map(|b| b.to_string()).collect();
        assert_eq!(blocks, ["10.0.0.0/8", "::1/128"]);
        let text = c.to_toml();
        assert!(
            text.contains("[real_ip]\nfrom = [\"10.0.0.0/8\", \"::1/128\", \"unix:\"]\nheader = \"x-real-ip\"\nrecursive = true\n"),
            "{text}"
        );
        let again = parse(&text).unwrap();
        assert_eq!(again.real_ip, c.real_ip);

        let c = parse("[real_ip]\nfrom = [\"192.0.2.1\"]\n").unwrap();
        let r = c.real_ip.clone().unwrap();
        assert_eq!(r.header, DEFAULT_HEADER);
        assert!(!r.recursive && !r.unix);
        assert_eq!(parse(&c.to_toml()).unwrap().real_ip, c.real_ip);

        let c = parse("").unwrap();
        assert_eq!(c.real_ip, None);
        assert!(!c.to_toml().contains("real_ip"));
    }

    #[test]
    fn errors_name_the_line_and_key() {
        for (text, want) in [
            (
                "[real_ip]\nfrom = [\"10.0.0.1/8\"]\n",
                "ringside.toml:2:9: [real_ip] from: \"10.0.0.1/8\" has bits set past its prefix length",
            ),
            (
                "[real_ip]\nfrom = [\"10.0.0.0/8\", \"nope\"]\n",
                "ringside.toml:2:23: [real_ip] from: expected an address, a CIDR block, \"all\" or \"unix:\", got \"nope\"",
            ),
            (
                "[real_ip]\nfrom = [\"unix:\", \"unix:\"]\n",
                "ringside.toml:2:18: [real_ip] from: \"unix:\" is listed twice",
            ),
            (
                "[real_ip]\nfrom = []\n",
                "ringside.toml:2:8: [real_ip] from: expected at least one",
            ),
            (
                "[real_ip]\nheader = \"X-Real-IP\"\n",
                "ringside.toml:1:1: [real_ip] from: expected the addresses trusted",
            ),
            (
                "[real_ip]\nfrom = [\"::1\"]\nheader = \"X Real IP\"\n",
                "ringside.toml:3:10: [real_ip] header: expected a header name",
            ),
            (
                "[real_ip]\nfrom = [\"::1\"]\nheader = \"Connection\"\n",
                "ringside.toml:3:10: [real_ip] header: \"Connection\" cannot carry",
            ),
            (
                "[real_ip]\nfrom = [\"::1\"]\nrecursive = \"yes\"\n",
                "ringside.toml:3:13: [real_ip] recursive",
            ),
            (
                "[real_ip]\nfrom = [\"::1\"]\nheaders = \"x\"\n",
                "ringside.toml:3:1: [real_ip] headers",
            ),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.starts_with(want), "{got}\nwanted {want}");
        }
    }
}
