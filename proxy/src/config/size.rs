//! Sizes and durations as written in the config file, and back.
//!
//! Sizes: an integer count of bytes, or a string of digits with an optional
//! `k`, `m` or `g` suffix (either case) in powers of 1024: `"16k"` is 16384,
//! `"1m"` is 1048576. Durations: an integer count of seconds, or a string of
//! digits with one unit: `ns`, `us`, `ms`, `s`, `m` (minutes), `h`; digits
//! alone are seconds, as the integer form is. There are
//! no fractions and no spaces; writing `"1500ms"` is how to say 1.5 s.
//!
//! The formatters write exact values (sizes with the largest exact suffix,
//! durations in seconds where exact), so `parse(format(x))` gives `x` back.

use std::time::Duration;

/// What a size must look like, for error messages.
pub const SIZE_EXPECTED: &str = "a size like 8192, \"16k\" or \"1m\"";
/// What a duration must look like, for error messages.
pub const DURATION_EXPECTED: &str =
    "a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds";

/// Parses a size string (`"8192"`, `"16k"`, `"1M"`, `"2g"`) into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("expected {SIZE_EXPECTED}, got {text:?}");
    let (digits, unit) = match text.as_bytes().last() {
        Some(b'k' | b'K') => (&text[..text.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&text[..text.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    let n = parse_digits(digits).ok_or_else(bad)?;
    n.checked_mul(unit)
        .ok_or_else(|| format!("size {text:?} is too large"))
}

/// Parses a duration string (`"500ms"`, `"10s"`, `"2m"`, `"1h"`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected {DURATION_EXPECTED}, got {text:?}");
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n = parse_digits(digits).ok_or_else(bad)?;
    let too_large = || format!("duration {text:?} is too large");
    Ok(match unit {
        "ns" => Duration::from_nanos(n),
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" | "" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(too_large)?),
        "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(too_large)?),
        _ => return Err(bad()),
    })
}

fn parse_digits(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Writes `bytes` with the largest exact suffix: 16384 -> `16k`, 1000 -> `1000`.
pub fn format_size(bytes: u64) -> String {
    for (suffix, unit) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes != 0 && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Writes `d` in whole seconds where exact (`60s`, not `1m`), else in the
/// largest exact smaller unit: `1500ms`.
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    const UNITS: [(&str, u128); 4] = [
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let (name, unit) = UNITS
        .iter()
        .find(|(_, unit)| nanos.is_multiple_of(*unit))
        .expect("every duration is a whole number of nanoseconds");
    format!("{}{name}", nanos / unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<u64>)] = &[
            ("0",        Some(0)),
            ("8192",     Some(8192)),
            ("8k",       Some(8192)),
            ("16K",      Some(16384)),
            ("1m",       Some(1 << 20)),
            ("1M",       Some(1 << 20)),
            ("2g",       Some(2 << 30)),
            ("",         None),
            ("k",        None),
            ("1kb",      None),
            ("1.5k",     None),
            ("-1",       None),
            ("+1",       None),
            (" 1k",      None),
            ("1 k",      None),
            ("1t",       None),
            ("16G",      Some(16 << 30)),
            ("99999999999999999999", None),
            ("17179869184g", None), // 2^34 GiB overflows u64
        ];
        for &(text, want) in cases {
            assert_eq!(parse_size(text).ok(), want, "{text:?}");
        }
        assert_eq!(
            parse_size("lots").unwrap_err(),
            "expected a size like 8192, \"16k\" or \"1m\", got \"lots\""
        );
    }

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        #[rustfmt::skip]
        let cases: &[(&str, Option<Duration>)] = &[
            ("500ms", Some(ms(500))),
            ("10s",   Some(s(10))),
            ("2m",    Some(s(120))),
            ("1h",    Some(s(3600))),
            ("0s",    Some(s(0))),
            ("750us", Some(Duration::from_micros(750))),
            ("5ns",   Some(Duration::from_nanos(5))),
            ("10",    Some(s(10))),
            ("s",     None),
            ("1.5s",  None),
            ("10 s",  None),
            ("10S",   None),
            ("-1s",   None),
            ("1d",    None),
            ("",      None),
            ("99999999999999999999s", None),
            ("18446744073709551615h", None),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_duration(text).ok(), want, "{text:?}");
        }
    }

    #[test]
    fn formatting_round_trips() {
        #[rustfmt::skip]
        let sizes: &[(u64, &str)] = &[
            (0, "0"), (1000, "1000"), (8192, "8k"), (16384, "16k"),
            (1 << 20, "1m"), (3 << 30, "3g"), (1536, "1536"),
        ];
        for &(n, text) in sizes {
            assert_eq!(format_size(n), text);
            assert_eq!(parse_size(text), Ok(n));
        }
        #[rustfmt::skip]
        let durations: &[(Duration, &str)] = &[
            (Duration::from_secs(10), "10s"),
            (Duration::from_secs(75), "75s"),
            (Duration::from_secs(120), "120s"),
            (Duration::from_secs(7200), "7200s"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_micros(1), "1us"),
            (Duration::from_nanos(1_000_001), "1000001ns"),
        ];
        for &(d, text) in durations {
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }
}
