//! The config loader (`ringside::config::Config::parse`).
//!
//! The input is the text of a config file (not UTF-8: skipped, as
//! `Config::load` refuses it before parsing), read as if from
//! `/ringside.toml`, so a relative `root` is taken from `/`.
//!
//! Checked:
//! - it never panics, whatever the text;
//! - a refusal renders (`Display`) to a message naming the file;
//! - an accepted config written out with `to_toml` loads again, to an equal
//!   `Config`, and writing that one out gives the same text.
//!
//! Certificate, key and CA files named by the TLS keys are read relative
//! to `/`; the fuzzer rarely names one that exists, so those inputs mostly
//! exercise the refusals (the unit tests in `config/tls_tests.rs` cover the
//! accepted side with real certificates).
//!
//! Listen addresses that are host names are resolved while loading
//! (`getaddrinfo`); a fuzzer would send a DNS query for every one it makes
//! up, so such inputs are skipped. Addresses that are IP literals, "off"
//! and every other key are fuzzed in full.
#![no_main]

use std::net::SocketAddr;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ringside::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if names_a_host(text) {
        return;
    }
    let path = Path::new("/ringside.toml");
    match Config::parse(text, path) {
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("/ringside.toml"), "{message}");
            assert!(message.len() > "/ringside.toml: ".len(), "{message}");
        }
        Ok(config) => {
            let written = config.to_toml();
            let back = Config::parse(&written, path)
                .unwrap_or_else(|e| panic!("to_toml output refused: {e}\n{written}"));
            assert_eq!(back, config, "round trip changed the config\n{written}");
            assert_eq!(back.to_toml(), written, "written twice differently");
        }
    }
});

/// Whether a listen address in `text` would be looked up in DNS: one that
/// is not an IP literal but has the HOST:PORT shape `resolve_listen` sends to
/// `getaddrinfo`. Text that is not TOML never gets that far.
fn names_a_host(text: &str) -> bool {
    let Ok(doc) = toml::from_str::<toml::Table>(text) else {
        return false;
    };
    let looked_up = |v: &toml::Value| {
        v.as_str().is_some_and(|s| {
            s != "off"
                && s.parse::<SocketAddr>().is_err()
                && s.rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        })
    };
    let key = |table: &str, key: &str| doc.get(table).and_then(|t| t.get(key)).cloned();
    // A listen entry is "HOST:PORT" or a table { addr = "HOST:PORT", ... }.
    let entry = |v: &toml::Value| looked_up(v) || v.get("addr").is_some_and(looked_up);
    let server = match key("server", "listen") {
        Some(toml::Value::Array(items)) => items.iter().any(entry),
        Some(v) => looked_up(&v),
        None => false,
    };
    server || key("admin", "listen").is_some_and(|v| looked_up(&v))
}
