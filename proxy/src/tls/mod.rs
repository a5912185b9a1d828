//! rustls configurations built from the validated config
//! ([`TlsConfig`](crate::config::tls::TlsConfig) for the listeners,
//! [`UpstreamTls`] for upstreams), on aws-lc-rs with post-quantum key
//! exchange first and certificate compression ([`provider`]), TLS 1.2 and
//! 1.3 only.
//!
//! # Listeners
//!
//! [`server_configs`] builds one `rustls::ServerConfig` per TLS listener.
//! Each picks its certificate by SNI ([`sni`]): a vhost's own, else the
//! listener's default, unless `unknown_name = "refuse"` turns a name no
//! vhost has (or no SNI) into a refused handshake. Every listener offers
//! ALPN `http/1.1` only and asks for no client certificate unless its
//! `client_auth` says so ([`client_auth`], which also keeps such a
//! listener's sessions apart).
//!
//! Certificates are read from disk on every call, so calling it again is
//! how a reload (SIGHUP) picks up renewed files; a vhost's file pair is
//! read once per call however many listeners share it.
//!
//! Resumption state is process-wide, made once in a `OnceLock`: one session
//! ticket encrypter (`rustls::crypto::aws_lc_rs::Ticketer`, which rotates its own
//! keys every six hours and keeps the previous ones for decryption) and one
//! TLS 1.2 session-ID cache of 4096 entries. Every core's configs and every
//! reload's share them, so a ticket issued on one core resumes on any
//! other, and a reload does not end every client's session. With
//! `tickets = false` no ticketer is installed and no TLS 1.3 ticket is sent
//! (`send_tls13_tickets = 0`); TLS 1.2 session IDs still resume through
//! the cache.
//!
//! # Upstreams
//!
//! [`client_config`] trusts the roots in `tls_ca`, or the first system
//! bundle found ([`certs::SYSTEM_BUNDLES`]); with `tls_verify = false` it
//! takes any certificate ([`verify`]). [`server_name`] is the name a
//! connection sends in SNI and verifies: `tls_sni`, else the server's own
//! host (an IP address is verified against the certificate's IP addresses,
//! and sent without SNI, as RFC 6066 §3 has it).

pub mod certs;
pub mod client_auth;
pub mod provider;
pub mod sni;
pub mod subject;
pub mod verify;

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::ServerName;
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls::sign::CertifiedKey;
use rustls::version::{TLS12, TLS13};
use rustls::{ClientConfig, ServerConfig, SupportedProtocolVersion};

use crate::config::tls::{TlsConfig, TlsVersion};
use crate::upstream::settings::{HttpVersion, UpstreamTls};
use certs::{load_certified_key, load_roots, CertPaths};
use sni::{Cert, SniResolver, VhostCerts};

/// HTTP/1.1 over TLS, offered on every TLS listener.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";
/// HTTP/2 over TLS (RFC 9113 §3.2).
pub const ALPN_H2: &[u8] = b"h2";
/// TLS-ALPN-01's protocol (RFC 8737 §6.2), offered last where a listener
/// has ACME certificates: no client that asks for HTTP gets it.
pub const ALPN_ACME: &[u8] = b"acme-tls/1";

/// Entries in the process-wide TLS 1.2 session-ID cache.
pub const SESSION_CACHE_SIZE: usize = 4096;

/// The crypto provider every config is built on ([`provider::make`]).
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER.get_or_init(|| Arc::new(provider::make())).clone()
}

/// The process-wide session ticket encrypter.
fn ticketer() -> Result<Arc<dyn ProducesTickets>, String> {
    static TICKETER: OnceLock<Arc<dyn ProducesTickets>> = OnceLock::new();
    if let Some(t) = TICKETER.get() {
        return Ok(t.clone());
    }
    let made = rustls::crypto::aws_lc_rs::Ticketer::new()
        .map_err(|e| format!("cannot make a session ticket key: {e}"))?;
    // Another thread may have won the race; everyone takes the winner's.
    Ok(TICKETER.get_or_init(|| made).clone())
}

/// The process-wide TLS 1.2 session-ID cache.
fn session_cache() -> Arc<dyn StoresServerSessions> {
    static CACHE: OnceLock<Arc<ServerSessionMemoryCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| ServerSessionMemoryCache::new(SESSION_CACHE_SIZE))
        .clone()
}

/// The versions a `min_version` allows, newest first.
fn versions(min: TlsVersion) -> &'static [&'static SupportedProtocolVersion] {
    static FROM_12: [&SupportedProtocolVersion; 2] = [&TLS13, &TLS12];
    static FROM_13: [&SupportedProtocolVersion; 1] = [&TLS13];
    match min {
        TlsVersion::Tls12 => &FROM_12,
        TlsVersion::Tls13 => &FROM_13,
    }
}

/// One entry per listener of `tls.listeners`: the rustls config of a TLS
/// listener, `None` for a plain one. Reads every certificate and key from
/// disk; an error names the listener or vhost and the file.
///
/// ALPN offers `h2` before `http/1.1` on listeners whose `http2` is on.
pub fn server_configs(
    tls: &TlsConfig,
    http2: &[bool],
) -> Result<Vec<Option<Arc<ServerConfig>>>, String> {
    if !tls.any_tls() {
        return Ok(vec![None; tls.listeners.len()]);
    }
    let vhosts = Arc::new(VhostCerts::load(tls)?);
    let acme = tls.listeners.iter().flatten().any(|p| p.acme.is_some())
        || tls
            .vhosts
            .iter()
            .any(|v| v.cert.as_ref().is_some_and(|c| c.acme.is_some()));
    let mut defaults: Vec<(&CertPaths, Arc<CertifiedKey>)> = Vec::new();
    let compressed = provider::compression_cache(tls.listeners.len() + tls.vhosts.len());
    let mut out = Vec::with_capacity(tls.listeners.len());
    for (i, listener) in tls.listeners.iter().enumerate() {
        let Some(paths) = listener else {
            out.push(None);
            continue;
        };
        let default = match &paths.acme {
            Some(a) if a.names.is_empty() => None,
            Some(a) => Some(Cert::Acme(crate::acme::store::slot(a))),
            None => Some(Cert::Fixed(
                match defaults.iter().find(|(p, _)| *p == paths) {
                    Some((_, k)) => k.clone(),
                    None => {
                        let k = load_certified_key(paths)
                            .map_err(|e| format!("listener {}: {e}", i + 1))?;
                        defaults.push((paths, k.clone()));
                        k
                    }
                },
            )),
        };
        let client = paths.client.as_ref().map(client_auth::load).transpose();
        let client = client.map_err(|e| format!("listener {}: {e}", i + 1))?;
        let resolver = SniResolver::new(vhosts.clone(), default, tls.unknown_name);
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(versions(tls.min_version))
            .map_err(|e| format!("cannot build a TLS config: {e}"))?
            .with_client_cert_verifier(
                client
                    .as_ref()
                    .map_or_else(client_auth::none, |c| c.verifier.clone()),
            )
            .with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = if http2.get(i).copied().unwrap_or(true) {
            vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()]
        } else {
            vec![ALPN_HTTP11.to_vec()]
        };
        if acme {
            config.alpn_protocols.push(ALPN_ACME.to_vec());
        }
        config.session_storage = session_cache();
        config.cert_compression_cache = compressed.clone();
        if tls.tickets {
            config.ticketer = ticketer()?;
        } else {
            config.send_tls13_tickets = 0;
        }
        if let Some(c) = &client {
            client_auth::own_sessions(&mut config, c);
        }
        out.push(Some(Arc::new(config)));
    }
    Ok(out)
}

/// The rustls config for connections to an upstream with `tls = true`,
/// offering by ALPN what `version` speaks. Reads `tls_ca` (or the system
/// bundle) from disk.
pub fn client_config(t: &UpstreamTls, version: HttpVersion) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions(TlsVersion::Tls12))
        .map_err(|e| format!("cannot build a TLS config: {e}"))?;
    let mut config = if t.verify {
        builder
            .with_root_certificates(load_roots(t.ca.as_deref())?)
            .with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verify::AnyCert::new(provider)))
            .with_no_client_auth()
    };
    config.alpn_protocols = match version {
        HttpVersion::H1 => vec![ALPN_HTTP11.to_vec()],
        HttpVersion::H2 => vec![ALPN_H2.to_vec()],
        HttpVersion::Auto => vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()],
    };
    Ok(Arc::new(config))
}

/// The rustls config the ACME thread reaches its CA with: the roots in
/// `ca`, else the system bundle; HTTP/1.1.
pub fn acme_client_config(ca: Option<&std::path::Path>) -> Result<Arc<ClientConfig>, String> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions(TlsVersion::Tls12))
        .map_err(|e| format!("cannot build a TLS config: {e}"))?
        .with_root_certificates(load_roots(ca)?)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
    Ok(Arc::new(config))
}

/// The name a connection to a server at `addr_host` (a `ServerSpec::host`:
/// a DNS name, or an IP address, IPv6 with or without brackets) sends and
/// verifies: `tls_sni` when given, else that host.
pub fn server_name(t: &UpstreamTls, addr_host: &str) -> Result<ServerName<'static>, String> {
    let host = t.sni.as_deref().unwrap_or(addr_host);
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ServerName::IpAddress(ip.into()));
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    ServerName::try_from(host.to_ascii_lowercase())
        .map_err(|_| format!("{host:?} is not a valid TLS server name"))
}

#[cfg(test)]
pub(crate) mod test_certs;
#[cfg(test)]
mod tests;
