//! toml's and serde's messages in the config's own words.
//!
//! The file layer (`file.rs`) is plain serde, so a value of the wrong kind
//! is refused in serde's words: "invalid type: string \"x\", expected a
//! sequence", "expected i64", "missing field `prefix`", and toml's bare
//! "duplicate key". Those name Rust types, not what to write. Here each is
//! said as the validation errors say theirs, "expected X, got Y", with what
//! the key takes (a list of addresses, a whole number, true or false), and a
//! fix where one is plain (quotes to drop, brackets to add). Messages this
//! does not know are kept as toml wrote them: its syntax errors already say
//! what they expected in TOML's terms.

use std::ops::Range;

/// What to say for a toml error: the key it is about and the message.
pub(super) struct Reworded {
    pub key: Option<String>,
    pub message: String,
}

/// `message` as toml gave it, `path` the dotted key it carries, `span`
/// where it points in `text`.
pub(super) fn reword(
    message: &str,
    mut path: Vec<String>,
    text: &str,
    span: Option<Range<usize>>,
) -> Reworded {
    let at = span
        .as_ref()
        .map_or("", |s| text.get(s.start..).unwrap_or(""));
    // A table header starts its line; a value never does.
    let header = span.as_ref().is_some_and(|s| {
        let before = text.get(..s.start).unwrap_or("");
        before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .trim()
            .is_empty()
    });
    let keyed = |path: &[String], message: String| Reworded {
        key: key_name(path),
        message,
    };
    // deny_unknown_fields: "unknown field `x`, expected `a` or `b`". The
    // path then names the table; the unknown key itself goes last.
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some((name, tail)) = rest.split_once('`') {
            // toml hands a date to serde as a map with one private key.
            if name.starts_with("$__toml_private") {
                let expected = what_it_takes(&path).unwrap_or("a table");
                return keyed(&path, format!("expected {expected}, got a date"));
            }
            let mut message = format!("unknown key{tail}");
            if let Some(near) = nearest(name, &backticked(tail)) {
                message.push_str(&format!("; did you mean `{near}`?"));
            }
            path.push(name.to_owned());
            return keyed(&path, message);
        }
    }
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        path.push(field.to_owned());
        return keyed(&path, missing(field));
    }
    if message == "duplicate key" {
        return duplicate(text, span.map_or(0, |s| s.start));
    }
    if message.contains("$__toml_private") {
        let expected = what_it_takes(&path).unwrap_or("another kind of value");
        return keyed(&path, format!("expected {expected}, got a date"));
    }
    if let Some((got, expected)) = message
        .strip_prefix("invalid type: ")
        .and_then(|r| r.split_once(", expected "))
    {
        if let Some(r) = table_shape(&path, at).filter(|_| header) {
            return r;
        }
        return keyed(&path, wrong_type(&path, got, expected, at));
    }
    keyed(&path, message.to_owned())
}

/// `[[server]]` for the one table `[server]`, or `[route]` for the array
/// of tables `[[route]]`. serde says neither: it reads a struct from a list
/// as a tuple, and so complains about the struct's first field instead.
fn table_shape(path: &[String], at: &str) -> Option<Reworded> {
    let header = at.lines().next().unwrap_or("").trim();
    let first = path.first().map(String::as_str).unwrap_or("");
    let array = TABLE_ARRAYS.contains(&first);
    if let Some(inner) = header.strip_prefix("[[").and_then(|h| h.split_once("]]")) {
        if !array {
            let name = inner.0.trim();
            return Some(Reworded {
                key: Some(format!("[{name}]")),
                message: format!(
                    "written [[{name}]], an array of tables, but [{name}] is one table: write [{name}]"
                ),
            });
        }
    } else if let Some(inner) = header.strip_prefix('[').and_then(|h| h.split_once(']')) {
        if array && path.len() == 1 {
            let name = inner.0.trim();
            return Some(Reworded {
                key: Some(format!("[[{name}]]")),
                message: format!(
                    "written [{name}], one table, but {name}s are an array of tables: write [[{name}]] above each"
                ),
            });
        }
    }
    None
}

/// "expected X, got Y", with X what the key takes and a fix where the
/// value only needs its quotes or brackets changed.
fn wrong_type(path: &[String], got: &str, expected: &str, at: &str) -> String {
    let structural =
        matches!(expected, "a sequence" | "a map" | "a table") || expected.starts_with("struct ");
    let expected = match expected {
        _ if structural => what_it_takes(path).unwrap_or(if expected == "a sequence" {
            "a list"
        } else {
            "a table"
        }),
        "i64" | "u64" | "i32" | "u32" | "u16" | "u8" | "usize" => "a whole number",
        "a boolean" => "true or false",
        other => other,
    };
    let string = got.strip_prefix("string ");
    let number = got
        .strip_prefix("integer `")
        .or_else(|| got.strip_prefix("floating point `"))
        .and_then(|n| n.strip_suffix('`'));
    let boolean = got
        .strip_prefix("boolean `")
        .and_then(|b| b.strip_suffix('`'));
    let got_words = match (string, number, boolean) {
        (Some(s), _, _) => format!("the string {s}"),
        (_, Some(n), _) => format!("the number {n}"),
        (_, _, Some(b)) => b.to_owned(),
        _ if got == "sequence" => "a list".to_owned(),
        // toml hands a date or time to serde as a map.
        _ if got == "map" && at.starts_with(|c: char| c.is_ascii_digit()) => "a date".to_owned(),
        _ if got == "map" => "a table".to_owned(),
        _ => got.to_owned(),
    };
    let unquoted = string
        .and_then(|s| s.strip_prefix('"'))
        .and_then(|s| s.strip_suffix('"'));
    // An integer for a string is most often a port or a count meant for
    // another form ("HOST:PORT"), so quoting it would be no fix; a decimal
    // is most often a version (min_version = 1.3).
    let decimal = got
        .strip_prefix("floating point `")
        .and_then(|n| n.strip_suffix('`'));
    let fix = match (expected, unquoted, decimal) {
        ("a whole number", Some(s), _) if s.trim().parse::<i64>().is_ok() => {
            format!("; write it without quotes: {}", s.trim())
        }
        ("true or false", Some(s @ ("true" | "false")), _) => {
            format!("; write it without quotes: {s}")
        }
        (e, Some(_), _) if e.starts_with("a list") => {
            format!("; write it in brackets: [{}]", string.unwrap_or_default())
        }
        ("a string", _, Some(v)) => format!("; write it in quotes: \"{v}\""),
        _ => String::new(),
    };
    format!("expected {expected}, got {got_words}{fix}")
}

/// What a list or table key takes, in the words of its documentation.
fn what_it_takes(path: &[String]) -> Option<&'static str> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    Some(match p.as_slice() {
        ["server", "listen"] => "a list of addresses, like [\"0.0.0.0:80\"]",
        ["static", "index"] => "a list of file names, like [\"index.html\"]",
        ["static", "mime"] => {
            "a table of extensions and media types, like { wasm = \"application/wasm\" }"
        }
        ["upstream"] => "a table per upstream, written [upstream.NAME]",
        ["upstream", _] => "a table, written [upstream.NAME]",
        ["upstream", _, "servers"] => "a list of servers, like [\"127.0.0.1:9000\"]",
        ["upstream", _, "retry_on"] => "a list, like [\"connect\", \"timeout\"]",
        ["cache"] => "a table per cache, written [cache.NAME]",
        ["cache", _] => "a table, written [cache.NAME]",
        ["cache", _, "ignore_query"] => "a list of query parameter names, like [\"utm_source\"]",
        ["cache", _, "key_headers"] => "a list of header names, like [\"accept-language\"]",
        ["cache", _, "key_cookies"] => "a list of cookie names, like [\"lang\"]",
        ["cache", _, "purge_from"] => "a list of addresses or CIDR blocks, like [\"10.0.0.0/8\"]",
        ["route"] => "[[route]] tables, one per route",
        ["route", "host"] | ["vhost", "names"] => "a list of host names, like [\"example.com\"]",
        ["route", "upgrade"] => "a list of protocol names, like [\"my-proto\"]",
        ["vhost"] => "[[vhost]] tables, one per virtual host",
        ["rate_limit"] => "[[rate_limit]] tables, one per named limit",
        ["rewrite"] => "[[rewrite]] tables, one per rule",
        ["server" | "vhost" | "route", "allow" | "deny"] => {
            "a list of addresses or CIDR blocks, like [\"10.0.0.0/8\"]"
        }
        [_, "tls"] | [_, _, "tls"] => "a table like { cert = \"PATH\", key = \"PATH\" }",
        [section] if !TABLE_ARRAYS.contains(section) => return section_table(section),
        _ => return None,
    })
}

/// A top-level section, as it is written.
fn section_table(section: &str) -> Option<&'static str> {
    Some(match section {
        "runtime" => "a table, written [runtime]",
        "server" => "a table, written [server]",
        "limits" => "a table, written [limits]",
        "timeouts" => "a table, written [timeouts]",
        "static" => "a table, written [static]",
        "proxy" => "a table, written [proxy]",
        "admin" => "a table, written [admin]",
        "access_log" => "a table, written [access_log]",
        "tls" => "a table, written [tls]",
        _ => return None,
    })
}

/// A key a table cannot do without.
fn missing(field: &str) -> String {
    let example = match field {
        "prefix" => "every route needs one, like prefix = \"/\"",
        "names" => "every vhost needs its host names, like names = [\"example.com\"]",
        "addr" => "the table form needs its address, like { addr = \"127.0.0.1:9000\" }",
        _ => "this table needs it",
    };
    format!("missing: {example}")
}

/// toml's "duplicate key" names nothing; the span is the second key (or
/// table header), so the key is read from the text there, and its first
/// line looked for above it, within its table.
fn duplicate(text: &str, offset: usize) -> Reworded {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let above = || text[..line_start].lines().enumerate().collect::<Vec<_>>();
    if line.trim_start().starts_with('[') {
        let header = header_of(line).unwrap_or_default();
        let first = above()
            .into_iter()
            .rev()
            .find(|(_, l)| header_of(l).as_deref() == Some(header.as_str()))
            .map(|(i, _)| i + 1);
        let message = match first {
            Some(n) => format!(
                "this table is written twice (first on line {n}); keep its keys under one {header}"
            ),
            None => "already defined above, as a key or a table; keep one".to_owned(),
        };
        return Reworded {
            key: Some(header),
            message,
        };
    }
    let (key_text, value) = line.split_once('=').unwrap_or((line, ""));
    let key_text = key_text.trim();
    // The key's table, from the nearest header above, and where the key is
    // first given on the way up to it.
    let mut path: Vec<String> = Vec::new();
    let mut first = None;
    for (i, l) in above().into_iter().rev() {
        if let Some(h) = header_of(l) {
            let name = h.trim_start_matches('[').trim_end_matches(']');
            path = name.split('.').map(|s| s.trim().to_owned()).collect();
            break;
        }
        if first.is_none() && l.split_once('=').is_some_and(|(k, _)| k.trim() == key_text) {
            first = Some(i + 1);
        }
    }
    path.extend(key_text.split('.').map(|s| s.trim().to_owned()));
    let in_value = offset >= line_start + line.len() - value.len();
    let message = match (in_value, first) {
        // Inside an inline table: the line's own key holds it.
        (true, _) => format!(
            "`{}` is given twice in this table; keep one",
            key_at(&text[offset..])
        ),
        (false, Some(n)) => format!("given twice (first on line {n}); keep one"),
        (false, None) => "given twice in this table; keep one".to_owned(),
    };
    Reworded {
        key: key_name(&path),
        message,
    }
}

/// `[name]` or `[[name]]` as written on a header line, without a comment.
fn header_of(line: &str) -> Option<String> {
    let l = line.trim();
    if let Some(r) = l.strip_prefix("[[") {
        return r.split_once("]]").map(|(n, _)| format!("[[{}]]", n.trim()));
    }
    l.strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .map(|(n, _)| format!("[{}]", n.trim()))
}

/// The key that `s` starts with: bare, or quoted.
fn key_at(s: &str) -> &str {
    if let Some(q) = s.chars().next().filter(|&c| c == '"' || c == '\'') {
        return s[1..].split(q).next().unwrap_or("");
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The names in backticks in `s`.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// The known key `name` was most likely meant as: at most two edits away,
/// and fewer than half its letters.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edits(name, k), *k))
        .filter(|&(d, _)| d <= 2 && d * 2 < name.chars().count().max(2))
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Levenshtein distance.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The top-level arrays of tables, written `[[name]]`.
const TABLE_ARRAYS: [&str; 4] = ["route", "vhost", "rate_limit", "rewrite"];

/// `["runtime", "workers"]` -> `[runtime] workers`; `["upstream", "a", "host"]`
/// -> `[upstream.a] host`; `["vhost", "names"]` -> `[[vhost]] names`, as
/// the validation errors name them; a top-level key stays bare.
fn key_name(path: &[String]) -> Option<String> {
    match path {
        [] => None,
        [key] => Some(key.clone()),
        [table, key] if TABLE_ARRAYS.contains(&table.as_str()) => {
            Some(format!("[[{table}]] {key}"))
        }
        [table @ .., key] => Some(format!("[{}] {key}", table.join("."))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        let p = |s: &[&str]| key_name(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(p(&[]), None);
        assert_eq!(p(&["bogus"]).as_deref(), Some("bogus"));
        assert_eq!(
            p(&["runtime", "workers"]).as_deref(),
            Some("[runtime] workers")
        );
        assert_eq!(
            p(&["upstream", "a", "host"]).as_deref(),
            Some("[upstream.a] host")
        );
        assert_eq!(p(&["route", "host"]).as_deref(), Some("[[route]] host"));
        assert_eq!(p(&["vhost", "tls"]).as_deref(), Some("[[vhost]] tls"));
        assert_eq!(
            p(&["vhost", "tls", "cert"]).as_deref(),
            Some("[vhost.tls] cert")
        );
    }
}
