//! Every error in a config file, as a compiler lists them, rather than the
//! first alone.
//!
//! Validation stops at its first error (a later check may rest on an
//! earlier value). To find the next, the `key = value` line the error is
//! about is blanked out (spaces, its newlines kept, so every other line,
//! column and span stays where it was), the key thus takes its default,
//! and the text is validated again. It stops at an error that no single
//! `key = value` holds (a syntax error, a table missing a key), or when a
//! blanked key brings back an error already found.

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::error::Position;
use super::{Config, ConfigError};

/// The most errors listed; past it the file is mostly errors anyway.
const MOST: usize = 50;

/// Every error in the file at `path`, in the file's order; empty when it
/// cannot be read or validates.
pub fn errors_in(path: &Path) -> Vec<ConfigError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut masked = text;
    let mut found: Vec<ConfigError> = Vec::new();
    while found.len() < MOST {
        let err = match Config::parse(&masked, path) {
            Ok(_) => break,
            Err(e) => e,
        };
        if found.contains(&err) {
            break;
        }
        let at = match &err {
            ConfigError::File {
                file,
                position: Some(p),
                ..
            } if file == path => offset_of(&masked, *p),
            _ => None,
        };
        found.push(err);
        let Some(line) = at.and_then(|at| entry_at(&masked, at)) else {
            break;
        };
        masked = blank(&masked, line);
    }
    found.sort_by_key(|e| match e {
        ConfigError::File {
            position: Some(p), ..
        } => (p.line, p.column),
        _ => (usize::MAX, 0),
    });
    found
}

/// The byte offset of a line and column (in characters).
fn offset_of(text: &str, p: Position) -> Option<usize> {
    let start: usize = text
        .split_inclusive('\n')
        .take(p.line - 1)
        .map(str::len)
        .sum();
    let line = text.get(start..)?;
    let column = line
        .char_indices()
        .nth(p.column - 1)
        .map_or(line.len(), |(i, _)| i);
    Some(start + column)
}

/// The span of the `key = value` entry, written on a line of its own, that
/// holds byte `at`.
fn entry_at(text: &str, at: usize) -> Option<Range<usize>> {
    let doc = DeTable::parse(text).ok()?;
    within(doc.get_ref(), text, at)
}

fn within(table: &DeTable<'_>, text: &str, at: usize) -> Option<Range<usize>> {
    for (k, v) in table.iter() {
        // A nested table's own entries first: the innermost line wins.
        let inner = match v.get_ref() {
            DeValue::Table(t) => within(t, text, at),
            DeValue::Array(list) => list.iter().find_map(|e| match e.get_ref() {
                DeValue::Table(t) => within(t, text, at),
                _ => None,
            }),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
        let entry = k.span().start..v.span().end.max(k.span().end);
        if entry.contains(&at) && starts_line(text, entry.start) {
            return Some(entry);
        }
    }
    None
}

/// Whether only blanks come before `at` on its line: a `key = value` line,
/// not a table header (`[server]`) nor a key inside an inline table.
fn starts_line(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    line.chars().all(|c| c == ' ' || c == '\t')
}

fn blank(text: &str, span: Range<usize>) -> String {
    let gone: String = text[span.clone()]
        .chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect();
    format!("{}{gone}{}", &text[..span.start], &text[span.end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_the_line_an_offset_is_on() {
        let text = "[server]\nroot = \"x\"\n\n[upstream.a]\nservers = [\"b:1\",\n \"c:1\"]\n";
        let at = text.find("c:1").unwrap();
        let span = entry_at(text, at).unwrap();
        assert_eq!(&text[span.clone()], "servers = [\"b:1\",\n \"c:1\"]");
        let out = blank(text, span);
        assert_eq!(out.len(), text.len());
        assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        // A header holds no entry.
        assert_eq!(entry_at(text, text.find("upstream").unwrap()), None);
        assert_eq!(
            offset_of(text, Position { line: 2, column: 8 }),
            Some(text.find("\"x\"").unwrap())
        );
    }
}
