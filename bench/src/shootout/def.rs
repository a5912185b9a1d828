//! A shootout's definition: `bench/shootouts/NAME.toml`.
//!
//! ```toml
//! duration = "5s"            # each run
//! warmup = "1s"              # before the repeats, per server and cell
//! repeats = 3                # interleaved: every server once, then again
//! concurrency = [1, 10, 100, 500]
//! workers = [1, "all"]       # "all": one per CPU
//! servers = ["ringside", "nginx", "lighttpd", "haproxy", "apache", "h2o"]
//!
//! [[scenario]]
//! name = "static 26 B"
//! kind = "static"            # static | proxy | fastcgi | ruby
//! size = 26                  # static: the file served, made of this many bytes
//! file = "hello.txt"         # static: its name (the extension picks the type)
//! protocol = "h2"            # client to front end: http (default) | https | h2 | h2c
//! streams = 10               # h2 and h2c: concurrent streams per connection (default 10)
//! fpm_pool = "debian"        # fastcgi: Debian's default www pool (pm = dynamic, 5
//!                            # children, 2 at start), or "static16" (default)
//! ```
//!
//! `https` is HTTP/1.1 over TLS, `h2` HTTP/2 over TLS (ALPN), `h2c`
//! HTTP/2 in the clear by prior knowledge; static and proxy scenarios only
//! (the proxy's origin stays plain HTTP/1.1). A scenario is known by its
//! name and protocol together: the report heads it "static 26 B (h2, 10
//! streams)", so the same name may come once per protocol.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A file from the docroot.
    Static,
    /// Reverse proxy to an nginx origin answering a short body.
    Proxy,
    /// `hello.php` on php-fpm.
    Fastcgi,
    /// Reverse proxy to a Ruby WEBrick app (the seeds' Mongrel).
    Ruby,
}

/// What the client speaks to the front end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.1 in the clear, keep-alive.
    #[default]
    Http,
    /// HTTP/1.1 over TLS, keep-alive.
    Https,
    /// HTTP/2 over TLS, chosen by ALPN.
    H2,
    /// HTTP/2 in the clear, by prior knowledge.
    H2c,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Https => "https",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
        }
    }

    pub fn tls(self) -> bool {
        matches!(self, Protocol::Https | Protocol::H2)
    }

    pub fn http2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }
}

/// php-fpm's pool behind a FastCGI scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FpmPool {
    /// `pm = static` with `FPM_CHILDREN` children: enough that no front
    /// end's kept connections queue requests.
    #[default]
    Static16,
    /// Debian's default `www` pool: `pm = dynamic`, `max_children = 5`,
    /// `start_servers = 2`, spares 1 to 3. What a default install runs,
    /// and where requests queue in the front end.
    Debian,
}

impl FpmPool {
    /// `pm.max_children`.
    pub fn children(self) -> usize {
        match self {
            FpmPool::Static16 => super::servers::FPM_CHILDREN,
            FpmPool::Debian => 5,
        }
    }

    /// Lines that follow the pool section of `deploy/bench/php-fpm.conf`
    /// (`pm = static`; a later line wins).
    pub fn extra_lines(self) -> &'static str {
        match self {
            FpmPool::Static16 => "",
            FpmPool::Debian => {
                "pm = dynamic\npm.start_servers = 2\npm.min_spare_servers = 1\n\
                 pm.max_spare_servers = 3\n"
            }
        }
    }
}

/// Streams per connection when an HTTP/2 scenario names none (h2load's
/// `-m 10` in the HTTP/2 measurements).
pub const DEFAULT_STREAMS: usize = 10;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub kind: Kind,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub protocol: Protocol,
    #[serde(default)]
    pub streams: Option<usize>,
    #[serde(default)]
    pub fpm_pool: Option<FpmPool>,
}

impl Scenario {
    /// Concurrent streams per connection: 1 for HTTP/1.1.
    pub fn streams(&self) -> usize {
        if self.protocol.http2() {
            self.streams.unwrap_or(DEFAULT_STREAMS)
        } else {
            1
        }
    }

    /// php-fpm's pool for a FastCGI scenario.
    pub fn fpm_pool(&self) -> FpmPool {
        self.fpm_pool.unwrap_or_default()
    }

    /// The name the results and the report use: with the protocol, so
    /// that a table over TLS is not read as the plain one.
    pub fn label(&self) -> String {
        match self.protocol {
            Protocol::Http => self.name.clone(),
            Protocol::Https => format!("{} (https)", self.name),
            p => format!("{} ({}, {} streams)", self.name, p.name(), self.streams()),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum WorkersValue {
    Count(usize),
    All(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    duration: String,
    #[serde(default)]
    warmup: Option<String>,
    repeats: usize,
    concurrency: Vec<usize>,
    workers: Vec<WorkersValue>,
    servers: Vec<String>,
    scenario: Vec<Scenario>,
}

/// A checked definition.
#[derive(Clone, Debug)]
pub struct Definition {
    pub name: String,
    pub duration: Duration,
    pub warmup: Duration,
    pub repeats: usize,
    pub concurrency: Vec<usize>,
    /// Worker counts, "all" resolved against `cpus`.
    pub workers: Vec<usize>,
    pub servers: Vec<String>,
    pub scenarios: Vec<Scenario>,
}

/// The servers a shootout knows how to run.
pub const KNOWN: [&str; 6] = ["ringside", "nginx", "lighttpd", "haproxy", "apache", "h2o"];

impl Definition {
    pub fn load(path: &Path, cpus: usize) -> Result<Definition, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path
            .file_stem()
            .map_or("shootout".into(), |s| s.to_string_lossy().into_owned());
        Self::parse(&name, &text, cpus).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(name: &str, text: &str, cpus: usize) -> Result<Definition, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let duration =
            crate::args::parse_duration(&f.duration).map_err(|e| format!("duration: {e}"))?;
        let warmup = match &f.warmup {
            Some(w) => crate::args::parse_duration(w).map_err(|e| format!("warmup: {e}"))?,
            None => Duration::ZERO,
        };
        if f.repeats == 0 {
            return Err("repeats: expected at least 1".into());
        }
        if f.concurrency.is_empty() || f.concurrency.contains(&0) {
            return Err("concurrency: expected a list of positive numbers".into());
        }
        let mut workers = Vec::new();
        for w in &f.workers {
            let n = match w {
                WorkersValue::Count(n) if *n > 0 => *n,
                WorkersValue::All(s) if s == "all" => cpus,
                _ => {
                    return Err(format!(
                        "workers: expected positive numbers or \"all\", got {w:?}"
                    ))
                }
            };
            if !workers.contains(&n) {
                workers.push(n);
            }
        }
        if workers.is_empty() {
            return Err("workers: expected at least one".into());
        }
        if f.servers.first().map(String::as_str) != Some("ringside") {
            return Err(
                "servers: the list starts with \"ringside\" (the others are compared with it)"
                    .into(),
            );
        }
        for s in &f.servers {
            if !KNOWN.contains(&s.as_str()) {
                return Err(format!("servers: unknown {s:?}, expected one of {KNOWN:?}"));
            }
        }
        if f.scenario.is_empty() {
            return Err("expected at least one [[scenario]]".into());
        }
        let mut labels = Vec::new();
        for s in &f.scenario {
            if s.kind == Kind::Static && (s.size.is_none() || s.file.is_none()) {
                return Err(format!(
                    "scenario {:?}: a static scenario needs size and file",
                    s.name
                ));
            }
            if s.protocol != Protocol::Http && !matches!(s.kind, Kind::Static | Kind::Proxy) {
                return Err(format!(
                    "scenario {:?}: protocol {:?} is for static and proxy scenarios only",
                    s.name,
                    s.protocol.name()
                ));
            }
            if s.fpm_pool.is_some() && s.kind != Kind::Fastcgi {
                return Err(format!(
                    "scenario {:?}: fpm_pool is for fastcgi scenarios only",
                    s.name
                ));
            }
            match s.streams {
                Some(_) if !s.protocol.http2() => {
                    return Err(format!(
                        "scenario {:?}: streams is for protocol \"h2\" or \"h2c\" only",
                        s.name
                    ))
                }
                Some(0) => {
                    return Err(format!(
                        "scenario {:?}: streams: expected at least 1",
                        s.name
                    ))
                }
                _ => {}
            }
            let label = s.label();
            if labels.contains(&label) {
                return Err(format!(
                    "scenario {label:?} is given twice (a name may repeat with another protocol)"
                ));
            }
            labels.push(label);
        }
        Ok(Definition {
            name: name.to_owned(),
            duration,
            warmup,
            repeats: f.repeats,
            concurrency: f.concurrency,
            workers,
            servers: f.servers,
            scenarios: f.scenario,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
duration = "2s"
repeats = 3
concurrency = [1, 10]
workers = [1, "all"]
servers = ["ringside", "nginx"]
[[scenario]]
name = "tiny"
kind = "static"
size = 26
file = "hello.txt"
[[scenario]]
name = "php"
kind = "fastcgi"
[[scenario]]
name = "tiny"
kind = "static"
size = 26
file = "hello.txt"
protocol = "h2"
[[scenario]]
name = "proxy"
kind = "proxy"
protocol = "https"
[[scenario]]
name = "proxy"
kind = "proxy"
protocol = "h2c"
streams = 4
"#;

    #[test]
    fn a_definition_resolves_all_workers() {
        let d = Definition::parse("t", GOOD, 4).unwrap();
        assert_eq!(d.workers, vec![1, 4]);
        assert_eq!(d.duration, Duration::from_secs(2));
        assert_eq!(d.scenarios[1].kind, Kind::Fastcgi);
        assert_eq!(d.scenarios[1].protocol, Protocol::Http);
        // "all" on one CPU is the same count as 1: listed once.
        assert_eq!(Definition::parse("t", GOOD, 1).unwrap().workers, vec![1]);
    }

    #[test]
    fn bad_definitions_say_what_is_wrong() {
        let cases = [
            (GOOD.replace("repeats = 3", "repeats = 0"), "repeats"),
            (GOOD.replace("[1, 10]", "[0]"), "concurrency"),
            (GOOD.replace("[1, \"all\"]", "[\"most\"]"), "workers"),
            (
                GOOD.replace("[\"ringside\", \"nginx\"]", "[\"nginx\"]"),
                "starts with",
            ),
            (GOOD.replace("\"nginx\"]", "\"iis\"]"), "unknown \"iis\""),
            (GOOD.replace("size = 26\n", ""), "needs size"),
            (
                GOOD.replace("kind = \"fastcgi\"", "kind = \"cgi\""),
                "unknown variant",
            ),
            (
                GOOD.replace("protocol = \"h2\"", "protocol = \"h3\""),
                "unknown variant",
            ),
            (
                GOOD.replace(
                    "kind = \"fastcgi\"",
                    "kind = \"fastcgi\"\nprotocol = \"h2\"",
                ),
                "static and proxy scenarios only",
            ),
            (
                GOOD.replace("protocol = \"https\"", "protocol = \"https\"\nstreams = 5"),
                "for protocol \"h2\" or \"h2c\" only",
            ),
            (GOOD.replace("streams = 4", "streams = 0"), "at least 1"),
            (
                GOOD.replace(
                    "kind = \"proxy\"\nprotocol = \"https\"",
                    "kind = \"proxy\"\nprotocol = \"https\"\nfpm_pool = \"debian\"",
                ),
                "fpm_pool is for fastcgi scenarios only",
            ),
            (
                GOOD.replace(
                    "kind = \"fastcgi\"",
                    "kind = \"fastcgi\"\nfpm_pool = \"big\"",
                ),
                "unknown variant",
            ),
            (
                GOOD.replace("protocol = \"h2c\"\nstreams = 4", "protocol = \"https\""),
                "\"proxy (https)\" is given twice",
            ),
        ];
        for (text, want) in cases {
            let e = Definition::parse("t", &text, 2).unwrap_err();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }

    #[test]
    fn protocols_and_streams_name_the_scenario() {
        let d = Definition::parse("t", GOOD, 2).unwrap();
        let got: Vec<(String, Protocol, usize)> = d
            .scenarios
            .iter()
            .map(|s| (s.label(), s.protocol, s.streams()))
            .collect();
        assert_eq!(
            got,
            [
                ("tiny".into(), Protocol::Http, 1),
                ("php".into(), Protocol::Http, 1),
                ("tiny (h2, 10 streams)".into(), Protocol::H2, 10),
                ("proxy (https)".into(), Protocol::Https, 1),
                ("proxy (h2c, 4 streams)".into(), Protocol::H2c, 4),
            ]
        );
        assert!(Protocol::Https.tls() && Protocol::H2.tls());
        assert!(!Protocol::H2c.tls() && !Protocol::Http.tls());
    }

    #[test]
    fn the_shipped_shootouts_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shootouts");
        let ci = Definition::load(&dir.join("ci.toml"), 2).unwrap();
        let protocols: Vec<Protocol> = ci.scenarios.iter().map(|s| s.protocol).collect();
        assert_eq!(protocols, [Protocol::Http, Protocol::H2]);
        let seeds = Definition::load(&dir.join("seeds.toml"), 2).unwrap();
        // The seeds' FastCGI rows: a default install's small pool, where
        // requests queue in the front end, and one where none do.
        let pools: Vec<FpmPool> = seeds
            .scenarios
            .iter()
            .filter(|s| s.kind == Kind::Fastcgi)
            .map(Scenario::fpm_pool)
            .collect();
        assert_eq!(pools, [FpmPool::Debian, FpmPool::Static16]);
        assert_eq!(
            (FpmPool::Debian.children(), FpmPool::Static16.children()),
            (5, 16)
        );
        let over: Vec<String> = seeds
            .scenarios
            .iter()
            .filter(|s| s.protocol != Protocol::Http)
            .map(Scenario::label)
            .collect();
        assert_eq!(
            over,
            [
                "static 26 B (https)",
                "static 26 B (h2, 10 streams)",
                "proxy (https)",
                "proxy (h2, 10 streams)"
            ]
        );
    }
}
