//! The pieces of Prometheus's text format that every family shares.

use std::fmt::Write;

/// A label value with `\`, `"` and newlines escaped.
pub(crate) fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A family's `# HELP` and `# TYPE` lines.
pub(crate) fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}
