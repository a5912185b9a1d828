//! What every section's checks share: the context they report on (`Cx`,
//! the file's text and name, so an error can name the line, the column and
//! the key) with its generic `check`/`or`, and the small value checks that
//! more than one section uses (durations, sizes, integer ranges, header
//! values, paths taken from the file's directory).
//!
//! It is a leaf, apart from `validate.rs`, because `validate.rs` assembles
//! [`Config`](super::Config) from the sections and so imports them: the
//! sections (`upstream.rs`, `fastcgi.rs`, `tls.rs`, `ops.rs`) import what
//! they need from here instead, and each adds its own `impl Cx` block
//! beside its checks. The checks are plain functions returning the message
//! alone, so the command-line overrides (`cli.rs`) share them.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::error::{io_reason, ConfigError};
use super::file::{DurationValue, SizeValue};
use super::size::{parse_duration, parse_size, DURATION_EXPECTED, SIZE_EXPECTED};

/// What the checks need to report on a file: its text and its name.
pub(super) struct Cx<'a> {
    pub(super) text: &'a str,
    pub(super) path: &'a Path,
}

impl Cx<'_> {
    pub(super) fn err(&self, span: Range<usize>, key: &str, message: String) -> ConfigError {
        ConfigError::at(
            self.path,
            self.text,
            Some(span),
            Some(key.to_owned()),
            message,
        )
    }

    /// Checks a given value, reporting at its span.
    pub(super) fn check<T, U>(
        &self,
        value: &Spanned<T>,
        key: &str,
        check: impl FnOnce(&T) -> Result<U, String>,
    ) -> Result<U, ConfigError> {
        check(value.get_ref()).map_err(|m| self.err(value.span(), key, m))
    }

    /// Checks a value if given, else takes `default`.
    pub(super) fn or<T, U>(
        &self,
        value: &Option<Spanned<T>>,
        key: &str,
        default: U,
        check: impl FnOnce(&T) -> Result<U, String>,
    ) -> Result<U, ConfigError> {
        match value {
            Some(v) => self.check(v, key, check),
            None => Ok(default),
        }
    }
}

/// The first of `keys` that is given, with its span.
pub(super) fn first_given(
    keys: &[(&'static str, Option<Range<usize>>)],
) -> Option<(&'static str, Range<usize>)> {
    keys.iter()
        .find_map(|(k, s)| s.as_ref().map(|s| (*k, s.clone())))
}

/// `rel` taken from `base`, the config file's directory (`rel` as it is
/// when absolute, or when `base` is empty).
pub(super) fn join(base: &Path, rel: &str) -> PathBuf {
    if base.as_os_str().is_empty() {
        PathBuf::from(rel)
    } else {
        base.join(rel)
    }
}

/// `n` within `lo..=hi`.
pub(super) fn int_in(n: i64, lo: i64, hi: i64) -> Result<i64, String> {
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(format!("expected an integer from {lo} to {hi}, got {n}"))
    }
}

/// A duration, zero allowed (where zero turns something off).
pub fn duration_or_zero(v: &DurationValue) -> Result<Duration, String> {
    match v {
        DurationValue::Seconds(n) => u64::try_from(*n)
            .map(Duration::from_secs)
            .map_err(|_| format!("expected {DURATION_EXPECTED}, got {n}")),
        DurationValue::Text(s) => parse_duration(s),
    }
}

/// A nonzero duration.
pub fn duration(v: &DurationValue) -> Result<Duration, String> {
    let d = duration_or_zero(v)?;
    if d.is_zero() {
        return Err(format!("expected a nonzero duration, got {v}"));
    }
    Ok(d)
}

/// A size in `lo..=hi` bytes.
pub fn size_in(v: &SizeValue, lo: u64, hi: u64) -> Result<u64, String> {
    let n = match v {
        SizeValue::Bytes(n) => {
            u64::try_from(*n).map_err(|_| format!("expected {SIZE_EXPECTED}, got {n}"))?
        }
        SizeValue::Text(s) => parse_size(s)?,
    };
    if (lo..=hi).contains(&n) {
        return Ok(n);
    }
    Err(if hi == u64::MAX {
        format!("expected a size of at least {lo} bytes, got {v}")
    } else {
        format!("expected a size from {lo} to {hi} bytes, got {v}")
    })
}

/// A header value: visible ASCII and spaces only, so it can never split a head.
pub(super) fn header_value(v: &str) -> Result<String, String> {
    if v.is_empty()
        || !v
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..0x7f).contains(&b))
    {
        return Err(format!(
            "expected a non-empty header value of visible ASCII, got {v:?}"
        ));
    }
    Ok(v.to_owned())
}

/// An existing directory, made absolute and free of symlinks.
pub fn root_dir(path: &Path) -> Result<PathBuf, String> {
    let canonical =
        fs::canonicalize(path).map_err(|e| format!("cannot open {path:?}: {}", io_reason(&e)))?;
    if !canonical.is_dir() {
        return Err(format!("{path:?} is not a directory"));
    }
    Ok(canonical)
}
