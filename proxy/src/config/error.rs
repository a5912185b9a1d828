//! Config errors that say where the problem is: the file, the line and column,
//! and the key, e.g. `ringside.toml:7:11: [runtime] workers: expected "auto"
//! or a positive integer, got 0`.
//!
//! Positions come from byte spans: `toml::Spanned` on every file-layer field
//! for validation errors, and `toml::de::Error::span` for syntax errors,
//! unknown keys and wrong types, whose messages `wording.rs` says again in
//! the config's words. Lines and columns count from 1; columns count
//! characters, not bytes, as editors do.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A line and column in a config file, both counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text` (clamped to the text).
    pub fn of(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read: `ringside.toml: cannot read: No such file or directory`.
    #[error("{}: cannot read: {reason}", file.display())]
    Read { file: PathBuf, reason: String },
    /// A problem inside a config file: TOML syntax, an unknown key, a wrong
    /// type or an invalid value. `key` is written like `[runtime] workers`.
    #[error("{}{}{message}", file_prefix(file, position), key_prefix(key))]
    File {
        file: PathBuf,
        position: Option<Position>,
        key: Option<String>,
        message: String,
    },
    /// A problem with a command-line flag: `--workers: expected ...`.
    #[error("{flag}: {message}")]
    Flag { flag: String, message: String },
}

fn file_prefix(file: &Path, position: &Option<Position>) -> String {
    match position {
        Some(p) => format!("{}:{p}: ", file.display()),
        None => format!("{}: ", file.display()),
    }
}

fn key_prefix(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default()
}

impl ConfigError {
    pub(crate) fn read(file: &Path, err: &io::Error) -> ConfigError {
        ConfigError::Read {
            file: file.to_path_buf(),
            reason: io_reason(err),
        }
    }

    pub(crate) fn at(
        file: &Path,
        text: &str,
        span: Option<Range<usize>>,
        key: Option<String>,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError::File {
            file: file.to_path_buf(),
            position: span.map(|s| Position::of(text, s.start)),
            key,
            message: message.into(),
        }
    }

    pub(crate) fn flag(flag: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Flag {
            flag: flag.to_owned(),
            message: message.into(),
        }
    }

    /// A TOML syntax or type error, with the key recovered from the error
    /// and serde's words replaced by the config's (`wording.rs`).
    pub(crate) fn from_toml(file: &Path, text: &str, err: &toml::de::Error) -> ConfigError {
        let r = super::wording::reword(
            err.message().trim_end(),
            toml_key_path(err),
            text,
            err.span(),
        );
        ConfigError::at(file, text, err.span(), r.key, r.message)
    }
}

/// `io::Error`'s text without the " (os error N)" tail.
pub(crate) fn io_reason(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_owned(),
        _ => text,
    }
}

/// The dotted key path a toml error carries. toml keeps it private, but its
/// `Display` without input ends with a line "in `runtime.workers`".
fn toml_key_path(err: &toml::de::Error) -> Vec<String> {
    let mut bare = err.clone();
    bare.set_input(None);
    let rendered = bare.to_string();
    let last = rendered.trim_end().rsplit('\n').next().unwrap_or("");
    match last.strip_prefix("in `").and_then(|s| s.strip_suffix('`')) {
        Some(keys) if !keys.is_empty() => keys.split('.').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(Position::of(text, 0), Position { line: 1, column: 1 });
        assert_eq!(Position::of(text, 4), Position { line: 1, column: 5 });
        assert_eq!(Position::of(text, 6), Position { line: 2, column: 1 });
        // "bé = " is 6 bytes but 5 characters.
        assert_eq!(Position::of(text, 12), Position { line: 2, column: 6 });
        // Past the end and inside a character are clamped.
        assert_eq!(Position::of(text, 99), Position { line: 3, column: 1 });
        assert_eq!(Position::of(text, 8), Position { line: 2, column: 2 });
    }

    #[test]
    fn display_forms() {
        let e = ConfigError::File {
            file: "ringside.toml".into(),
            position: Some(Position {
                line: 7,
                column: 11,
            }),
            key: Some("[runtime] workers".into()),
            message: "expected \"auto\" or a positive integer, got 0".into(),
        };
        assert_eq!(
            e.to_string(),
            "ringside.toml:7:11: [runtime] workers: expected \"auto\" or a positive integer, got 0"
        );
        let e = ConfigError::read(Path::new("ringside.toml"), &io::Error::from_raw_os_error(2));
        assert_eq!(
            e.to_string(),
            "ringside.toml: cannot read: No such file or directory"
        );
        let e = ConfigError::flag("--workers", "bad");
        assert_eq!(e.to_string(), "--workers: bad");
    }
}
