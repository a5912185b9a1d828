//! Writes a [`Config`] back as TOML: the effective configuration with every
//! key, sizes and durations in their shortest exact form, and listen
//! addresses as resolved. The output is valid input for `Config::load`.

use std::fmt::{self, Write};

use ringside_runtime::config::{Affinity, Workers};

use super::size::{format_duration, format_size};
use super::validate::backend_name;
use super::Config;

/// A TOML string literal.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A size: `"16k"` where a suffix is exact, else integer bytes.
fn size(bytes: u64) -> String {
    let text = format_size(bytes);
    match i64::try_from(bytes) {
        Ok(_) if text.bytes().all(|b| b.is_ascii_digit()) => text,
        _ => quote(&text),
    }
}

impl Config {
    /// The effective configuration as TOML, every key included.
    ///
    /// A root path that is not UTF-8 is written lossily.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        self.write_toml(&mut out)
            .expect("writing to a String cannot fail");
        out
    }

    fn write_toml(&self, out: &mut String) -> fmt::Result {
        let r = &self.runtime;
        let s = &self.server;
        let l = &s.limits;
        let t = &s.timeouts;

        writeln!(out, "[runtime]")?;
        let workers = match r.workers {
            Workers::Auto => quote("auto"),
            Workers::Count(n) => n.to_string(),
        };
        writeln!(out, "workers = {workers}")?;
        let affinity = match &r.affinity {
            Affinity::Off => "false".to_owned(),
            Affinity::Auto => "true".to_owned(),
            Affinity::Cpus(cpus) => {
                let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
                format!("[{}]", list.join(", "))
            }
        };
        writeln!(out, "cpu_affinity = {affinity}")?;
        writeln!(out, "backend = {}", quote(backend_name(r.backend)))?;
        writeln!(out, "ring_entries = {}", r.ring_entries)?;

        writeln!(out, "\n[server]")?;
        let listen: Vec<String> = s.listen.iter().map(|a| quote(&a.to_string())).collect();
        writeln!(out, "listen = [{}]", listen.join(", "))?;
        writeln!(out, "backlog = {}", s.backlog)?;
        writeln!(out, "root = {}", quote(&self.root.to_string_lossy()))?;

        writeln!(out, "\n[limits]")?;
        writeln!(
            out,
            "max_request_line = {}",
            size(l.max_request_line as u64)
        )?;
        writeln!(out, "max_head = {}", size(l.max_head as u64))?;
        writeln!(out, "max_headers = {}", l.max_headers)?;
        writeln!(out, "max_body = {}", size(l.max_body))?;

        writeln!(out, "\n[timeouts]")?;
        for (key, d) in [
            ("header_read", t.header_read),
            ("keepalive", t.keepalive_idle),
            ("body_read", t.body_read),
            ("send", t.send),
            ("shutdown_grace", t.shutdown_grace),
        ] {
            writeln!(out, "{key} = {}", quote(&format_duration(d)))?;
        }

        let st = &self.statics;
        writeln!(out, "\n[static]")?;
        let index: Vec<String> = st.index.iter().map(|i| quote(i)).collect();
        writeln!(out, "index = [{}]", index.join(", "))?;
        writeln!(out, "listing = {}", st.listing)?;
        writeln!(out, "precompressed = {}", st.precompressed)?;
        if let Some(cc) = &st.cache_control {
            writeln!(out, "cache_control = {}", quote(cc))?;
        }
        let mime: Vec<String> = st
            .mime
            .iter()
            .map(|(e, t)| format!("{} = {}", quote(e), quote(t)))
            .collect();
        if mime.is_empty() {
            writeln!(out, "mime = {{}}")?;
        } else {
            writeln!(out, "mime = {{ {} }}", mime.join(", "))?;
        }
        writeln!(out, "cache_max_bytes = {}", size(st.cache.max_bytes))?;
        writeln!(out, "cache_max_file = {}", size(st.cache.max_file))?;
        writeln!(
            out,
            "revalidate = {}",
            quote(&format_duration(st.cache.revalidate))
        )?;
        for r in &st.routes {
            writeln!(out, "\n[[route]]")?;
            writeln!(out, "prefix = {}", quote(&r.prefix))?;
            if let Some(root) = &r.root {
                writeln!(out, "root = {}", quote(&root.to_string_lossy()))?;
            }
            if let Some(cc) = &r.cache_control {
                writeln!(out, "cache_control = {}", quote(cc))?;
            }
            if let Some(l) = r.listing {
                writeln!(out, "listing = {l}")?;
            }
        }
        Ok(())
    }
}
