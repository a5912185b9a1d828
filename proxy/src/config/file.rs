//! The file layer (DESIGN.md §7): what a TOML config file may say, as serde
//! reads it, before any validation.
//!
//! Every table refuses unknown keys (`deny_unknown_fields`), every table and
//! key is optional, and every value is wrapped in `toml::Spanned` so that the
//! validating layer (`validate.rs`) can point at the line and column of the
//! value it refuses. A missing key is `None` and takes the runtime's default
//! there, so defaults live in one place: `ringside_runtime::config`.
//!
//! Values that may be written two ways (`workers = "auto" | 8`, sizes as
//! `8192 | "8k"`, durations as `10 | "10s"`) are kept as written here; the
//! validating layer parses them. Wrong types are refused here, with messages
//! that say what was expected.
//!
//! Later sections slot in beside the present ones as new fields of
//! [`FileConfig`]: `[upstream.NAME]` as a `BTreeMap<String, UpstreamSection>`
//! and `[[vhost]]` as a `Vec<VhostSection>`; toml's error key paths then read
//! `[upstream.NAME] key`, which `error.rs` already renders.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::size::{DURATION_EXPECTED, SIZE_EXPECTED};

/// A whole config file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileConfig {
    pub runtime: RuntimeSection,
    pub server: ServerSection,
    pub limits: LimitsSection,
    pub timeouts: TimeoutsSection,
    #[serde(rename = "static")]
    pub static_files: StaticSection,
    #[serde(rename = "route")]
    pub routes: Vec<Spanned<RouteSection>>,
}

/// `[static]`: how files are served, for every route that does not say.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StaticSection {
    pub index: Option<Spanned<Vec<Spanned<String>>>>,
    pub listing: Option<Spanned<bool>>,
    pub precompressed: Option<Spanned<bool>>,
    pub cache_control: Option<Spanned<String>>,
    pub mime: Option<Spanned<std::collections::BTreeMap<String, Spanned<String>>>>,
    pub cache_max_bytes: Option<Spanned<SizeValue>>,
    pub cache_max_file: Option<Spanned<SizeValue>>,
    pub revalidate: Option<Spanned<DurationValue>>,
}

/// `[[route]]`: a URL prefix served from a root, with its own headers.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    pub prefix: Spanned<String>,
    pub root: Option<Spanned<String>>,
    pub cache_control: Option<Spanned<String>>,
    pub listing: Option<Spanned<bool>>,
}

/// `[runtime]`: workers, placement and the I/O backend.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeSection {
    pub workers: Option<Spanned<WorkersValue>>,
    pub cpu_affinity: Option<Spanned<AffinityValue>>,
    pub backend: Option<Spanned<String>>,
    pub ring_entries: Option<Spanned<i64>>,
}

/// `[server]`: listeners and the static root.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    pub listen: Option<Spanned<Vec<Spanned<String>>>>,
    pub backlog: Option<Spanned<i64>>,
    /// Relative to the config file's directory.
    pub root: Option<Spanned<String>>,
}

/// `[limits]`: request size limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    pub max_request_line: Option<Spanned<SizeValue>>,
    pub max_head: Option<Spanned<SizeValue>>,
    pub max_headers: Option<Spanned<i64>>,
    pub max_body: Option<Spanned<SizeValue>>,
}

/// `[timeouts]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutsSection {
    pub header_read: Option<Spanned<DurationValue>>,
    pub keepalive: Option<Spanned<DurationValue>>,
    pub body_read: Option<Spanned<DurationValue>>,
    pub send: Option<Spanned<DurationValue>>,
    pub shutdown_grace: Option<Spanned<DurationValue>>,
}

/// What `workers =` must look like, for error messages.
pub const WORKERS_EXPECTED: &str = "\"auto\" or a positive integer";
/// What `cpu_affinity =` must look like, for error messages.
pub const AFFINITY_EXPECTED: &str = "true, false or a list of CPU numbers like [0, 2, 4]";

/// `workers = "auto" | N`, as written; `N` is range-checked later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkersValue {
    Auto,
    Count(i64),
}

/// A size as written: integer bytes or a string like `"16k"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeValue {
    Bytes(i64),
    Text(String),
}

/// A duration as written: integer seconds or a string like `"500ms"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationValue {
    Seconds(i64),
    Text(String),
}

/// `cpu_affinity = true | false | [0, 2, 4]`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffinityValue {
    /// `true` pins worker `i` to the `i`-th CPU the process may use.
    Enabled(bool),
    Cpus(Vec<Spanned<i64>>),
}

impl fmt::Display for SizeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeValue::Bytes(n) => write!(f, "{n}"),
            SizeValue::Text(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for DurationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationValue::Seconds(n) => write!(f, "{n}"),
            DurationValue::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error for a value of the wrong kind: "expected X, got Y".
fn wrong<E: de::Error>(expected: &str, got: impl fmt::Display) -> E {
    E::custom(format!("expected {expected}, got {got}"))
}

/// A visitor for values written as an integer or a string; `text` decides
/// which strings it takes.
struct IntOrStr<F> {
    expected: &'static str,
    int: fn(i64) -> F,
    text: fn(&str) -> Option<F>,
}

impl<F> Visitor<'_> for IntOrStr<F> {
    type Value = F;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<F, E> {
        Ok((self.int)(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<F, E> {
        i64::try_from(v)
            .map(self.int)
            .map_err(|_| wrong(self.expected, v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<F, E> {
        (self.text)(v).ok_or_else(|| wrong(self.expected, format_args!("{v:?}")))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<F, E> {
        Err(wrong(self.expected, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<F, E> {
        Err(wrong(self.expected, v))
    }
}

impl<'de> Deserialize<'de> for WorkersValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: WORKERS_EXPECTED,
            int: WorkersValue::Count,
            text: |s| (s == "auto").then_some(WorkersValue::Auto),
        })
    }
}

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: SIZE_EXPECTED,
            int: SizeValue::Bytes,
            text: |s| Some(SizeValue::Text(s.to_owned())),
        })
    }
}

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: DURATION_EXPECTED,
            int: DurationValue::Seconds,
            text: |s| Some(DurationValue::Text(s.to_owned())),
        })
    }
}

struct AffinityVisitor;

impl<'de> Visitor<'de> for AffinityVisitor {
    type Value = AffinityValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(AFFINITY_EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<AffinityValue, E> {
        Ok(AffinityValue::Enabled(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AffinityValue, A::Error> {
        let mut cpus = Vec::new();
        while let Some(cpu) = seq.next_element::<Spanned<i64>>()? {
            cpus.push(cpu);
        }
        Ok(AffinityValue::Cpus(cpus))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, format_args!("{v:?}")))
    }
}

impl<'de> Deserialize<'de> for AffinityValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AffinityVisitor)
    }
}
