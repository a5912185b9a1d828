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
//! ```

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

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub kind: Kind,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub file: Option<String>,
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
        for s in &f.scenario {
            if s.kind == Kind::Static && (s.size.is_none() || s.file.is_none()) {
                return Err(format!(
                    "scenario {:?}: a static scenario needs size and file",
                    s.name
                ));
            }
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
"#;

    #[test]
    fn a_definition_resolves_all_workers() {
        let d = Definition::parse("t", GOOD, 4).unwrap();
        assert_eq!(d.workers, vec![1, 4]);
        assert_eq!(d.duration, Duration::from_secs(2));
        assert_eq!(d.scenarios[1].kind, Kind::Fastcgi);
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
        ];
        for (text, want) in cases {
            let e = Definition::parse("t", &text, 2).unwrap_err();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
