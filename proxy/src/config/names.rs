//! The names sections are known by.

/// A section's name (`[upstream.NAME]`, `[cache.NAME]`): `[A-Za-z0-9_-]+`;
/// `what` names the section's kind in the error.
pub fn section_name(what: &str, n: &str) -> Result<(), String> {
    if !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(())
    } else {
        Err(format!(
            "expected {what} name of letters, digits, '_' and '-', got {n:?}"
        ))
    }
}
