//! TLS in the config: which listeners speak TLS and with which default
//! certificate, the `[tls]` settings they share, the `[[vhost]]` entries
//! that give host names their own certificate, redirect and HSTS, and the
//! TLS keys of an `[upstream.NAME]`.
//!
//! ```toml
//! [server]
//! listen = [
//!   "0.0.0.0:80",
//!   { addr = "0.0.0.0:443", tls = { cert = "certs/site.pem", key = "certs/site.key" } },
//! ]
//!
//! [tls]
//! unknown_name = "default"  # "default": names no vhost has get the listener's certificate
//!                           # "refuse": the handshake is refused (an access_denied alert)
//! min_version = "1.2"       # "1.2" | "1.3"
//! tickets = true            # TLS session tickets (keys shared by every core, rotated by rustls)
//!
//! [[vhost]]
//! names = ["example.com", "*.example.com"]  # exact names win over wildcards
//! tls = { cert = "certs/example.pem", key = "certs/example.key" }  # chosen by SNI
//! https_redirect = true     # plain-http requests for these names are redirected to https
//! hsts = "max-age=31536000; includeSubDomains"  # sent on https responses for these names
//!
//! [upstream.billing]
//! servers = ["billing.internal:443"]
//! tls = true                # HTTP upstreams only
//! tls_verify = true         # false: any certificate is taken (signatures still checked)
//! tls_ca = "certs/internal-ca.pem"  # default: the system bundle
//! tls_sni = "billing.internal"      # default: each server's host
//! ```
//!
//! # Validation
//!
//! A certificate file holds a PEM chain, leaf first; a key file one PEM
//! private key. Both are read and checked against each other when the
//! config is validated (`crate::tls::certs`), so a missing, unreadable or
//! mismatched file is a config error at the line of its `cert` or `key`
//! value, not a failure at the first handshake. They are read again by
//! `crate::tls::server_configs`, which a reload calls. Paths are taken from
//! the config file's directory and made absolute *without* resolving
//! symlinks: certbot's `live/` links move to new files on renewal, and a
//! reload must follow them.
//!
//! Vhost names are DNS names in lower case, with `*.` allowed only as the
//! whole left-most label (`*.a.example` is `x.a.example`, not `a.example`
//! nor `y.x.a.example`, as RFC 6125 §6.4.3 has certificates match). A name
//! belongs to one vhost only. IP addresses are refused: SNI carries DNS
//! names only (RFC 6066 §3).
//!
//! Keys that would do nothing are refused, as elsewhere: `[tls]` keys,
//! a vhost's `tls`, `https_redirect = true` and `hsts` when no listener has
//! TLS; on an upstream, `tls_verify`, `tls_ca` and `tls_sni` without
//! `tls = true`, `tls_ca` with `tls_verify = false`, and every `tls*` key on
//! a FastCGI upstream. An upstream that verifies without `tls_ca` needs a
//! system bundle (`crate::tls::certs::SYSTEM_BUNDLES`); one that does not
//! exist is a config error.

use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::addr::route_host;
use super::cx::{first_given, header_value, join, Cx};
use super::error::ConfigError;
use super::file::{CertSection, FileConfig, UpstreamSection};
use crate::tls::certs::{load_certified_key, load_roots, AcmeCert, CertPart, CertPaths};
use crate::upstream::settings::{Protocol, UpstreamTls};

/// One `[[vhost]]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Vhost {
    /// Lower case; `*.name` for a wildcard.
    pub names: Vec<String>,
    /// What SNI picks for these names; `None`: the listener's default.
    pub cert: Option<CertPaths>,
    /// Plain-http requests for these names are redirected to https.
    pub https_redirect: bool,
    /// The Strict-Transport-Security value sent on https responses.
    pub hsts: Option<String>,
}

/// What a TLS listener does with a client whose SNI names no vhost, or
/// that sends none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnknownName {
    /// Present the listener's default certificate.
    #[default]
    Default,
    /// Refuse the handshake (rustls sends an alert).
    Refuse,
}

/// The lowest TLS version accepted by the listeners.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TlsVersion {
    #[default]
    Tls12,
    Tls13,
}

/// The validated TLS settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// One entry per `ServerConfig::listen` address, in the same order:
    /// `Some` (the default certificate) for a TLS listener. An index past
    /// the end is a plain listener (see [`TlsConfig::listener`]).
    pub listeners: Vec<Option<CertPaths>>,
    pub vhosts: Vec<Vhost>,
    pub unknown_name: UnknownName,
    pub min_version: TlsVersion,
    /// TLS session tickets.
    pub tickets: bool,
}

impl Default for TlsConfig {
    /// No TLS listener, no vhost, and the `[tls]` defaults.
    fn default() -> Self {
        TlsConfig {
            listeners: Vec::new(),
            vhosts: Vec::new(),
            unknown_name: UnknownName::Default,
            min_version: TlsVersion::Tls12,
            tickets: true,
        }
    }
}

/// `unknown_name` names.
pub const UNKNOWN_NAMES: [(&str, UnknownName); 2] = [
    ("default", UnknownName::Default),
    ("refuse", UnknownName::Refuse),
];

/// `min_version` names.
pub const TLS_VERSIONS: [(&str, TlsVersion); 2] =
    [("1.2", TlsVersion::Tls12), ("1.3", TlsVersion::Tls13)];

impl TlsConfig {
    /// Whether any listener speaks TLS.
    pub fn any_tls(&self) -> bool {
        self.listeners.iter().any(Option::is_some)
    }

    /// The default certificate of listener `index`; `None` for a plain one.
    pub fn listener(&self, index: usize) -> Option<&CertPaths> {
        self.listeners.get(index).and_then(Option::as_ref)
    }

    /// The vhost serving `host` (without a port; any case; a trailing dot
    /// ignored): the one naming it exactly, else the one whose wildcard
    /// covers it. `*.a.example` covers `x.a.example` only.
    ///
    /// The one rule for both SNI (`tls::sni`) and the https redirects and
    /// HSTS (`https`). A linear scan without allocation: vhosts are few,
    /// and this runs per handshake, and per request only where a vhost has
    /// `https_redirect` or `hsts`.
    pub fn vhost_for(&self, host: &str) -> Option<&Vhost> {
        self.vhost_index(host).map(|i| &self.vhosts[i])
    }

    /// [`TlsConfig::vhost_for`], as the vhost's index in `vhosts`.
    pub fn vhost_index(&self, host: &str) -> Option<usize> {
        let host = host.strip_suffix('.').unwrap_or(host);
        if host.is_empty() {
            return None;
        }
        // The parent domain a wildcard must name: "a.example" for "x.a.example".
        let parent = host
            .split_once('.')
            .filter(|(label, p)| !label.is_empty() && !p.is_empty())
            .map(|(_, p)| p);
        let mut wildcard = None;
        for (i, v) in self.vhosts.iter().enumerate() {
            for name in &v.names {
                match name.strip_prefix("*.") {
                    None if name.eq_ignore_ascii_case(host) => return Some(i),
                    Some(domain)
                        if wildcard.is_none()
                            && parent.is_some_and(|p| p.eq_ignore_ascii_case(domain)) =>
                    {
                        wildcard = Some(i)
                    }
                    _ => {}
                }
            }
        }
        wildcard
    }

    /// What needs a TLS listener, if anything does: a vhost's certificate,
    /// `https_redirect` or `hsts`.
    pub fn needs_tls(&self) -> Option<&'static str> {
        self.vhosts.iter().find_map(|v| {
            if v.cert.is_some() {
                Some("a [[vhost]] tls certificate")
            } else if v.https_redirect {
                Some("[[vhost]] https_redirect = true")
            } else if v.hsts.is_some() {
                Some("[[vhost]] hsts")
            } else {
                None
            }
        })
    }

    /// For `--listen`, which replaces the listeners with `count` plain ones:
    /// the `[tls]` settings go back to their defaults (they would do
    /// nothing), and vhosts that need TLS make it an error.
    pub fn set_plain_listeners(&mut self, count: usize) -> Result<(), String> {
        if let Some(what) = self.needs_tls() {
            return Err(format!(
                "replaces the TLS listeners of the config, which {what} needs; add TLS listeners to the config's [server] listen instead"
            ));
        }
        *self = TlsConfig {
            listeners: vec![None; count],
            vhosts: std::mem::take(&mut self.vhosts),
            ..TlsConfig::default()
        };
        Ok(())
    }
}

fn one_of<T: Copy>(table: &[(&str, T)], got: &str) -> Result<T, String> {
    table
        .iter()
        .find(|(n, _)| *n == got)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let names: Vec<String> = table.iter().map(|(n, _)| format!("{n:?}")).collect();
            format!("expected one of {}, got {got:?}", names.join(", "))
        })
}

fn name_of<T: Copy + PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table
        .iter()
        .find(|&&(_, t)| t == v)
        .map(|&(n, _)| n)
        .expect("every value has a name")
}

/// `unknown_name = "default" | "refuse"`.
pub fn unknown_name(s: &str) -> Result<UnknownName, String> {
    one_of(&UNKNOWN_NAMES, s)
}

/// The config name of an [`UnknownName`].
pub fn unknown_name_text(u: UnknownName) -> &'static str {
    name_of(&UNKNOWN_NAMES, u)
}

/// `min_version = "1.2" | "1.3"`.
pub fn min_version(s: &str) -> Result<TlsVersion, String> {
    one_of(&TLS_VERSIONS, s)
}

/// The config name of a [`TlsVersion`].
pub fn min_version_text(v: TlsVersion) -> &'static str {
    name_of(&TLS_VERSIONS, v)
}

/// A vhost name: a DNS name, or `*.` and one, in lower case.
pub fn vhost_name(n: &str) -> Result<String, String> {
    if n.contains(':') || n.starts_with('[') {
        if n.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<Ipv6Addr>()
            .is_ok()
        {
            return Err(format!(
                "expected a DNS name, got the IP address {n:?} (SNI carries DNS names only)"
            ));
        }
        return Err(format!(
            "expected a host name without a port (a vhost serves every listener), got {n:?}"
        ));
    }
    let name = route_host(n)?;
    if name.parse::<IpAddr>().is_ok() {
        return Err(format!(
            "expected a DNS name, got the IP address {n:?} (SNI carries DNS names only)"
        ));
    }
    Ok(name)
}

/// A name an ACME certificate is for: a vhost name without a wildcard.
pub fn acme_name(n: &str) -> Result<String, String> {
    let name = vhost_name(n)?;
    if name.starts_with("*.") {
        return Err(format!(
            "{name:?} is a wildcard, which HTTP-01 and TLS-ALPN-01 cannot prove"
        ));
    }
    Ok(name)
}

/// A Strict-Transport-Security value (RFC 6797 §6.1): `max-age=SECONDS`
/// first, then `; directive`s.
pub fn hsts(v: &str) -> Result<String, String> {
    let expected = || {
        format!(
            "expected \"max-age=SECONDS\", optionally followed by \"; includeSubDomains\" or \"; preload\", got {v:?}"
        )
    };
    let head = v.get(..8).filter(|h| h.eq_ignore_ascii_case("max-age="));
    let rest = head.map(|h| &v[h.len()..]).ok_or_else(expected)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let tail = rest[digits..].trim_start_matches([' ', '\t']);
    if digits == 0 || !(tail.is_empty() || tail.starts_with(';')) {
        return Err(expected());
    }
    header_value(v).map_err(|_| expected())
}

/// `tls_sni`: a DNS name or an IP address (IPv6 with or without brackets),
/// in lower case; no wildcard, no port.
pub fn tls_sni(s: &str) -> Result<String, String> {
    let inside = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(s);
    if let Ok(ip) = inside.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
    match rustls::pki_types::DnsName::try_from(name.as_str()) {
        Ok(_) if !name.contains('*') && !name.is_empty() => Ok(name),
        _ => Err(format!(
            "expected a DNS name like \"app.internal\" or an IP address, got {s:?}"
        )),
    }
}

/// A path as written, taken from `base` and made absolute (symlinks kept).
pub fn abs_path(base: &Path, p: &str) -> Result<PathBuf, String> {
    if p.is_empty() || p.contains('\0') {
        return Err(format!("expected a file path, got {p:?}"));
    }
    std::path::absolute(join(base, p)).map_err(|e| format!("cannot make {p:?} absolute: {e}"))
}

/// Where a certificate pair is written, for its errors' keys.
#[derive(Clone, Copy)]
pub(super) enum CertAt {
    /// `[server] listen`, as `tls.cert: ...` in the message (the key names
    /// the list, as a `servers` entry's `weight` does).
    Listen,
    /// `[[vhost]] tls.cert`.
    Vhost,
}

impl Cx<'_> {
    /// A `tls = { cert, key }` table: both paths made absolute, and the
    /// pair loaded and checked, errors at the value at fault. Or `tls = {
    /// acme = "NAME" }`: a certificate ACME keeps (its issuer is checked
    /// against `[acme.NAME]` in `acme.rs`, once every table is read).
    pub(super) fn cert_paths(
        &self,
        c: &Spanned<CertSection>,
        at: CertAt,
        base: &Path,
    ) -> Result<CertPaths, ConfigError> {
        let table = c;
        let c = c.get_ref();
        let err = |part: &str, span: std::ops::Range<usize>, m: String| match at {
            CertAt::Listen => self.err(span, "[server] listen", format!("tls.{part}: {m}")),
            CertAt::Vhost => self.err(span, &format!("[[vhost]] tls.{part}"), m),
        };
        let client = self.client_auth(c, at, base)?;
        if let Some(issuer) = &c.acme {
            if let Some(v) = c.cert.as_ref().or(c.key.as_ref()) {
                let part = if c.cert.is_some() { "cert" } else { "key" };
                return Err(err(
                    part,
                    v.span(),
                    "a certificate comes from files or from acme, not both".into(),
                ));
            }
            let names = match (&c.names, at) {
                (Some(n), CertAt::Vhost) => {
                    return Err(err(
                        "names",
                        n.span(),
                        "only on a listener: a [[vhost]]'s certificate is for its own names".into(),
                    ))
                }
                (Some(n), CertAt::Listen) => {
                    let mut names: Vec<String> = Vec::with_capacity(n.get_ref().len());
                    for v in n.get_ref() {
                        let name = acme_name(v.get_ref()).map_err(|m| err("names", v.span(), m))?;
                        if names.contains(&name) {
                            return Err(err(
                                "names",
                                v.span(),
                                format!("{name:?} is listed twice"),
                            ));
                        }
                        names.push(name);
                    }
                    names
                }
                (None, _) => Vec::new(),
            };
            return Ok(CertPaths {
                client,
                acme: Some(AcmeCert {
                    issuer: issuer.get_ref().clone(),
                    names,
                }),
                ..CertPaths::default()
            });
        }
        if let Some(n) = &c.names {
            return Err(err("names", n.span(), "needs acme = \"NAME\"".into()));
        }
        let (cert, key) = match (&c.cert, &c.key) {
            (Some(cert), Some(key)) => (cert, key),
            (Some(v), None) | (None, Some(v)) => {
                let (part, missing) = if c.cert.is_some() {
                    ("cert", "key")
                } else {
                    ("key", "cert")
                };
                return Err(err(part, v.span(), format!("needs {missing} beside it")));
            }
            (None, None) => {
                let m = "expected cert and key, or acme = \"NAME\"".to_owned();
                return Err(match at {
                    CertAt::Listen => {
                        self.err(table.span(), "[server] listen", format!("tls: {m}"))
                    }
                    CertAt::Vhost => self.err(table.span(), "[[vhost]] tls", m),
                });
            }
        };
        let paths = CertPaths {
            cert: abs_path(base, cert.get_ref()).map_err(|m| err("cert", cert.span(), m))?,
            key: abs_path(base, key.get_ref()).map_err(|m| err("key", key.span(), m))?,
            client,
            acme: None,
        };
        load_certified_key(&paths).map_err(|e| match e.part {
            CertPart::Cert => err("cert", cert.span(), e.message),
            CertPart::Key => err("key", key.span(), e.message),
        })?;
        Ok(paths)
    }

    /// `[tls]` and `[[vhost]]`, given the listeners' certificates.
    pub(super) fn tls(
        &self,
        f: &FileConfig,
        base: &Path,
        listeners: Vec<Option<CertPaths>>,
    ) -> Result<TlsConfig, ConfigError> {
        let any_tls = listeners.iter().any(Option::is_some);
        let none = "has no effect: no [server] listen entry has tls = { cert, key }";
        let t = &f.tls;
        if !any_tls {
            let given = first_given(&[
                ("unknown_name", t.unknown_name.as_ref().map(Spanned::span)),
                ("min_version", t.min_version.as_ref().map(Spanned::span)),
                ("tickets", t.tickets.as_ref().map(Spanned::span)),
            ]);
            if let Some((k, span)) = given {
                return Err(self.err(span, &format!("[tls] {k}"), none.into()));
            }
        }
        let d = TlsConfig::default();
        let mut vhosts: Vec<Vhost> = Vec::with_capacity(f.vhosts.len());
        for v in &f.vhosts {
            let v = v.get_ref();
            let list = &v.names;
            if list.get_ref().is_empty() {
                return Err(self.err(
                    list.span(),
                    "[[vhost]] names",
                    "expected at least one host name".into(),
                ));
            }
            let mut names: Vec<String> = Vec::with_capacity(list.get_ref().len());
            for n in list.get_ref() {
                names.push(self.check(n, "[[vhost]] names", |n| {
                    let name = vhost_name(n)?;
                    if names.contains(&name) {
                        return Err(format!("{name:?} is listed twice"));
                    }
                    if vhosts.iter().any(|o| o.names.contains(&name)) {
                        return Err(format!("{name:?} is already a name of another [[vhost]]"));
                    }
                    Ok(name)
                })?);
            }
            let cert = match &v.tls {
                Some(c) if !any_tls => {
                    return Err(self.err(c.span(), "[[vhost]] tls", none.into()))
                }
                Some(c) => {
                    let mut paths = self.cert_paths(c, CertAt::Vhost, base)?;
                    if let Some(a) = &mut paths.acme {
                        if let Some(w) = names.iter().find(|n| n.starts_with("*.")) {
                            return Err(self.err(
                                c.span(),
                                "[[vhost]] tls.acme",
                                format!("{w:?} is a wildcard, which HTTP-01 and TLS-ALPN-01 cannot prove; list the names, or give this vhost cert and key"),
                            ));
                        }
                        a.names = names.clone();
                    }
                    Some(paths)
                }
                None => None,
            };
            let https_redirect = match &v.https_redirect {
                Some(r) if *r.get_ref() && !any_tls => {
                    return Err(self.err(r.span(), "[[vhost]] https_redirect", none.into()))
                }
                Some(r) => *r.get_ref(),
                None => false,
            };
            let hsts = match &v.hsts {
                Some(h) if !any_tls => {
                    return Err(self.err(h.span(), "[[vhost]] hsts", none.into()))
                }
                Some(h) => Some(self.check(h, "[[vhost]] hsts", |h| hsts(h))?),
                None => None,
            };
            vhosts.push(Vhost {
                names,
                cert,
                https_redirect,
                hsts,
            });
        }
        Ok(TlsConfig {
            listeners,
            vhosts,
            unknown_name: self.or(&t.unknown_name, "[tls] unknown_name", d.unknown_name, |s| {
                unknown_name(s)
            })?,
            min_version: self.or(&t.min_version, "[tls] min_version", d.min_version, |s| {
                min_version(s)
            })?,
            tickets: t.tickets.as_ref().map_or(d.tickets, |v| *v.get_ref()),
        })
    }

    /// An upstream's `tls`, `tls_verify`, `tls_ca` and `tls_sni`.
    pub(super) fn upstream_tls(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
        protocol: Protocol,
        base: &Path,
    ) -> Result<Option<UpstreamTls>, ConfigError> {
        let span = |v: &Option<Spanned<bool>>| v.as_ref().map(Spanned::span);
        let str_span = |v: &Option<Spanned<String>>| v.as_ref().map(Spanned::span);
        let others = [
            ("tls_verify", span(&u.tls_verify)),
            ("tls_ca", str_span(&u.tls_ca)),
            ("tls_sni", str_span(&u.tls_sni)),
        ];
        if protocol == Protocol::FastCgi {
            let mut all = vec![("tls", span(&u.tls))];
            all.extend(others);
            if let Some((k, span)) = first_given(&all) {
                return Err(self.err(
                    span,
                    &key(k),
                    "only for protocol = \"http\" (this upstream speaks FastCGI)".into(),
                ));
            }
            return Ok(None);
        }
        let on = match &u.tls {
            Some(t) if *t.get_ref() => t,
            _ => {
                if let Some((k, span)) = first_given(&others) {
                    return Err(self.err(span, &key(k), "needs tls = true".into()));
                }
                return Ok(None);
            }
        };
        let verify = !matches!(&u.tls_verify, Some(v) if !*v.get_ref());
        let ca = match &u.tls_ca {
            Some(ca) if !verify => {
                return Err(self.err(
                    ca.span(),
                    &key("tls_ca"),
                    "has no effect with tls_verify = false".into(),
                ))
            }
            Some(ca) => Some(self.check(ca, &key("tls_ca"), |p| {
                let path = abs_path(base, p)?;
                load_roots(Some(&path))?;
                Ok(path)
            })?),
            None => {
                if verify {
                    // The system bundle, as the connections will load it.
                    self.check(on, &key("tls"), |_| load_roots(None).map(drop))?;
                }
                None
            }
        };
        let sni = match &u.tls_sni {
            Some(s) => Some(self.check(s, &key("tls_sni"), |s| tls_sni(s))?),
            None => None,
        };
        Ok(Some(UpstreamTls { verify, ca, sni }))
    }
}
