//! Validators and conditional requests (RFC 9110 §8.8, §13).
//!
//! # Validators
//!
//! A file's strong validator is an [`ETag`] made from its inode, size and
//! modification time in nanoseconds (RFC 9110 §8.8.3): any write that changes
//! the bytes changes the size or the mtime, and a file replaced by rename gets
//! a new inode. It is formatted into a fixed buffer, so making one never
//! allocates. The weak validator is `Last-Modified` in whole seconds
//! (§8.8.2), compared after [`parse_http_date`].
//!
//! # HTTP-date (RFC 9110 §5.6.7)
//!
//! Three forms are accepted, all case-sensitive and all in GMT:
//!
//! ```text
//! Sun, 06 Nov 1994 08:49:37 GMT    IMF-fixdate (29 bytes)
//! Sunday, 06-Nov-94 08:49:37 GMT   obsolete RFC 850 form
//! Sun Nov  6 08:49:37 1994         obsolete asctime form (24 bytes)
//! ```
//!
//! The day must exist in its month (no Feb 30), the hour is 00-23, the minute
//! 00-59 and the second 00-60 (a leap second counts as the next minute's
//! first second). The day name must be the right one for the date. Dates
//! before 1970 give `None` (a file's mtime never is one we compare against).
//! The RFC 850 form's two-digit year is read as 1970-2069: §5.6.7 asks for
//! "the most recent year in the past with those digits when more than 50
//! years ahead", which needs the current date; these functions are pure, and
//! the fixed window agrees with that rule for every year a file can have been
//! modified in until 2070. Optional whitespace around the value is ignored.
//!
//! The calendar conversion is Howard Hinnant's `days_from_civil`, exact for
//! the proleptic Gregorian calendar; no crates are involved.
//!
//! # Evaluation (RFC 9110 §13.2.2)
//!
//! [`evaluate`] applies the preconditions of a GET or HEAD in the RFC's
//! order:
//!
//! 1. `If-Match` present: unless it is `*` or some member strong-matches
//!    (§8.8.3.2), the answer is 412 (§13.1.1).
//! 2. Otherwise `If-Unmodified-Since` with a valid date: modified after that
//!    date means 412 (§13.1.4).
//! 3. `If-None-Match` present: `*` or some member weak-matching means 304
//!    (§13.1.2); if none matches, `If-Modified-Since` is not looked at.
//! 4. Otherwise `If-Modified-Since` with a valid date: not modified after it
//!    means 304 (§13.1.3).
//! 5. Otherwise serve (and then consider `Range`, with [`if_range_matches`]
//!    for `If-Range`, §13.1.5).
//!
//! Invalid dates are ignored, as §13.1.3 and §13.1.4 require (a list of dates
//! is invalid too). An entity-tag list that is not valid syntax matches
//! nothing: `If-Match` then fails (412) and `If-None-Match` does not give a
//! 304; neither guesses at a half-parsed list. `*` is only recognised as the
//! whole field value, as the grammar `"*" / #entity-tag` has it. Note that an
//! opaque tag may contain a comma (`"a,b"`), so lists are split by a real
//! tokenizer rather than on commas.

use std::fmt;

use crate::grammar::trim_ows;

/// A strong entity-tag `"<hex ino>-<hex size>-<hex mtime_ns>"`, quotes
/// included, in a fixed buffer.
///
/// `mtime_ns` is written as the two's-complement bits of the `i128`, so a
/// time before 1970 gives a distinct (long) tag rather than being clamped.
/// The longest tag is 2 + 16 + 1 + 16 + 1 + 32 = 68 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ETag {
    buf: [u8; ETag::MAX_LEN],
    len: u8,
}

impl ETag {
    /// Longest possible tag, quotes included, with room for a variant's
    /// `W/` and suffix ([`ETag::variant`]).
    const MAX_LEN: usize = 80;

    pub fn new(ino: u64, size: u64, mtime_ns: i128) -> ETag {
        let mut e = ETag {
            buf: [0; ETag::MAX_LEN],
            len: 0,
        };
        e.push(b'"');
        e.push_hex(u128::from(ino));
        e.push(b'-');
        e.push_hex(u128::from(size));
        e.push(b'-');
        e.push_hex(mtime_ns as u128);
        e.push(b'"');
        e
    }

    /// The tag of a variant made from this representation (one compressed
    /// on the fly): weak, as its bytes depend on the compressor and its
    /// level, and never equal to this one, as RFC 9110 §8.8.3 asks of
    /// different representations. `"x"` with `gzip` is `W/"x-gzip"`.
    pub fn variant(&self, suffix: &str) -> ETag {
        let mut e = ETag {
            buf: [0; ETag::MAX_LEN],
            len: 0,
        };
        let inner = self
            .as_bytes()
            .strip_prefix(b"W/")
            .unwrap_or(self.as_bytes());
        let inner = &inner[..inner.len() - 1];
        for &b in b"W/"
            .iter()
            .chain(inner)
            .chain(b"-")
            .chain(suffix.as_bytes().iter())
        {
            e.push(b);
        }
        e.push(b'"');
        e
    }

    /// The tag as it goes in the `ETag` header, quotes included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len as usize] = b;
        self.len += 1;
    }

    fn push_hex(&mut self, v: u128) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let digits = if v == 0 {
            1
        } else {
            (128 - v.leading_zeros()).div_ceil(4)
        };
        for i in (0..digits).rev() {
            self.push(HEX[((v >> (i * 4)) & 0xf) as usize]);
        }
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Always ASCII.
        let s = std::str::from_utf8(self.as_bytes()).unwrap_or("?");
        f.debug_tuple("ETag").field(&s).finish()
    }
}

/// What to answer after the preconditions.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Precondition {
    /// Serve normally (200, or 206 if ranged).
    Proceed,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// The request's conditional headers, as raw values (None when absent).
#[derive(Debug, Default, Clone, Copy)]
pub struct Conditions<'a> {
    pub if_match: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_unmodified_since: Option<&'a [u8]>,
}

/// Evaluates the preconditions of a GET or HEAD (RFC 9110 §13.2.2) for a
/// resource with the strong entity-tag `etag` (quotes included, as from
/// [`ETag::as_bytes`]) and `last_modified` in unix seconds. See the module
/// docs for the order.
pub fn evaluate(c: &Conditions<'_>, etag: &[u8], last_modified: u64) -> Precondition {
    if let Some(v) = c.if_match {
        if !list_matches(v, etag, Comparison::Strong) {
            return Precondition::Failed;
        }
    } else if let Some(date) = c.if_unmodified_since.and_then(parse_http_date) {
        if last_modified > date {
            return Precondition::Failed;
        }
    }
    if let Some(v) = c.if_none_match {
        if list_matches(v, etag, Comparison::Weak) {
            return Precondition::NotModified;
        }
    } else if let Some(date) = c.if_modified_since.and_then(parse_http_date) {
        if last_modified <= date {
            return Precondition::NotModified;
        }
    }
    Precondition::Proceed
}

/// `If-Range` (RFC 9110 §13.1.5): true when the `Range` should be honoured.
///
/// The value is either one entity-tag, which must be strong and
/// strong-match `etag`, or an HTTP-date, which must equal `last_modified`
/// exactly. A weak tag, a list, or anything else gives false, and the whole
/// representation is sent. (§13.1.5 also says a date is only usable when
/// `Last-Modified` is itself strong, at least a second older than `Date`;
/// that check needs the clock and is the caller's.)
pub fn if_range_matches(value: &[u8], etag: &[u8], last_modified: u64) -> bool {
    let v = trim_ows(value);
    if v.first() == Some(&b'"') || v.starts_with(b"W/") {
        match parse_entity_tag(v) {
            Some((tag, [])) => match parse_entity_tag(etag) {
                Some((ours, b"")) => strong_eq(tag, ours),
                _ => false,
            },
            _ => false,
        }
    } else {
        parse_http_date(v) == Some(last_modified)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Strong,
    Weak,
}

/// One entity-tag: whether it is weak, and its opaque-tag with the quotes.
#[derive(Clone, Copy)]
struct Tag<'a> {
    weak: bool,
    opaque: &'a [u8],
}

/// Strong comparison (§8.8.3.2): both strong and the same opaque-tag.
fn strong_eq(a: Tag<'_>, b: Tag<'_>) -> bool {
    !a.weak && !b.weak && a.opaque == b.opaque
}

/// Whether the field value `"*" / #entity-tag` matches `etag`. Invalid
/// syntax anywhere matches nothing.
fn list_matches(list: &[u8], etag: &[u8], cmp: Comparison) -> bool {
    let mut rest = trim_ows(list);
    if rest == b"*" {
        // The resource exists (we are serving it), so "*" matches.
        return true;
    }
    let ours = match parse_entity_tag(etag) {
        Some((t, b"")) => t,
        _ => return false,
    };
    let mut found = false;
    loop {
        // Empty list elements are allowed (§5.6.1).
        while let [b' ' | b'\t' | b',', tail @ ..] = rest {
            rest = tail;
        }
        if rest.is_empty() {
            return found;
        }
        let Some((tag, after)) = parse_entity_tag(rest) else {
            return false;
        };
        found |= match cmp {
            Comparison::Strong => strong_eq(tag, ours),
            Comparison::Weak => tag.opaque == ours.opaque,
        };
        rest = trim_ows_start(after);
        if !matches!(rest, [] | [b',', ..]) {
            return false;
        }
    }
}

/// `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` at the start of `s`;
/// returns the tag and what follows it.
fn parse_entity_tag(s: &[u8]) -> Option<(Tag<'_>, &[u8])> {
    let (weak, s) = match s.strip_prefix(b"W/") {
        Some(t) => (true, t),
        None => (false, s),
    };
    if s.first() != Some(&b'"') {
        return None;
    }
    let close = s[1..].iter().position(|&b| b == b'"')? + 1;
    // etagc = %x21 / %x23-7E / obs-text
    if !s[1..close]
        .iter()
        .all(|&b| b == 0x21 || b >= 0x23 && b != 0x7f)
    {
        return None;
    }
    let opaque = &s[..=close];
    Some((Tag { weak, opaque }, &s[close + 1..]))
}

fn trim_ows_start(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', tail @ ..] = s {
        s = tail;
    }
    s
}

/// Parses an HTTP-date (RFC 9110 §5.6.7) in any of its three forms into unix
/// seconds. See the module docs for what is accepted.
pub fn parse_http_date(s: &[u8]) -> Option<u64> {
    let s = trim_ows(s);
    let (wday, day, month, year, time) = if s.len() == 29 && s[3] == b',' {
        // Sun, 06 Nov 1994 08:49:37 GMT
        if &s[4..5] != b" " || s[7] != b' ' || s[11] != b' ' || s[16] != b' ' || &s[25..] != b" GMT"
        {
            return None;
        }
        let wday = short_day(&s[..3])?;
        (
            wday,
            digits(&s[5..7])?,
            month(&s[8..11])?,
            digits(&s[12..16])?,
            &s[17..25],
        )
    } else if s.len() == 24 && s[3] == b' ' {
        // Sun Nov  6 08:49:37 1994
        if s[7] != b' ' || s[10] != b' ' || s[19] != b' ' {
            return None;
        }
        let day = match s[8..10] {
            [b' ', d] => digits(&[d])?,
            _ => digits(&s[8..10])?,
        };
        (
            short_day(&s[..3])?,
            day,
            month(&s[4..7])?,
            digits(&s[20..24])?,
            &s[11..19],
        )
    } else {
        // Sunday, 06-Nov-94 08:49:37 GMT
        let comma = s.iter().position(|&b| b == b',')?;
        let wday = long_day(&s[..comma])?;
        let r = &s[comma..];
        if r.len() != 24
            || &r[..2] != b", "
            || r[4] != b'-'
            || r[8] != b'-'
            || r[11] != b' '
            || &r[20..] != b" GMT"
        {
            return None;
        }
        let yy = digits(&r[9..11])?;
        let year = if yy < 70 { 2000 + yy } else { 1900 + yy };
        (wday, digits(&r[2..4])?, month(&r[5..8])?, year, &r[12..20])
    };

    if time[2] != b':' || time[5] != b':' {
        return None;
    }
    let (h, m, sec) = (
        digits(&time[..2])?,
        digits(&time[3..5])?,
        digits(&time[6..])?,
    );
    if h > 23 || m > 59 || sec > 60 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    // 1970-01-01 was a Thursday; weekday 0 is Sunday.
    if (days + 4).rem_euclid(7) != wday {
        return None;
    }
    let secs = days * 86_400 + h * 3600 + m * 60 + sec;
    u64::try_from(secs).ok()
}

/// ASCII digits only (no sign, no space) as a number; at most four here.
fn digits(s: &[u8]) -> Option<i64> {
    s.iter().try_fold(0i64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0'))
    })
}

/// Weekday, 0 = Sunday.
fn short_day(s: &[u8]) -> Option<i64> {
    const DAYS: [&[u8]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
    DAYS.iter().position(|d| *d == s).map(|i| i as i64)
}

fn long_day(s: &[u8]) -> Option<i64> {
    const DAYS: [&[u8]; 7] = [
        b"Sunday",
        b"Monday",
        b"Tuesday",
        b"Wednesday",
        b"Thursday",
        b"Friday",
        b"Saturday",
    ];
    DAYS.iter().position(|d| *d == s).map(|i| i as i64)
}

/// Month 1-12.
fn month(s: &[u8]) -> Option<i64> {
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    MONTHS.iter().position(|m| *m == s).map(|i| i as i64 + 1)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
/// `days_from_civil`): years counted from March so that the leap day is last.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use Precondition::{Failed, NotModified as NM, Proceed};

    #[test]
    fn etag_format() {
        #[rustfmt::skip]
        let cases: &[(u64, u64, i128, &str)] = &[
            (0, 0, 0, r#""0-0-0""#),
            (0x1a2b, 4096, 1_700_000_000_123_456_789, r#""1a2b-1000-17979cfe3d85cd15""#),
            (u64::MAX, u64::MAX, i128::MAX, r#""ffffffffffffffff-ffffffffffffffff-7fffffffffffffffffffffffffffffff""#),
            (1, 2, -1, r#""1-2-ffffffffffffffffffffffffffffffff""#),
            (1, 2, i128::MIN, r#""1-2-80000000000000000000000000000000""#),
        ];
        for &(ino, size, mtime, want) in cases {
            let e = ETag::new(ino, size, mtime);
            assert_eq!(e.as_bytes(), want.as_bytes(), "{ino} {size} {mtime}");
        }
        assert_eq!(format!("{:?}", ETag::new(1, 2, 3)), r#"ETag("\"1-2-3\"")"#);
    }

    #[test]
    fn http_dates() {
        const NOV6: u64 = 784_111_777; // 1994-11-06 08:49:37
        #[rustfmt::skip]
        let cases: &[(&str, Option<u64>)] = &[
            // The three forms of the same moment (RFC 9110 §5.6.7).
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(NOV6)),
            ("Sunday, 06-Nov-94 08:49:37 GMT", Some(NOV6)),
            ("Sun Nov  6 08:49:37 1994", Some(NOV6)),
            ("Sun Nov 06 08:49:37 1994", Some(NOV6)),
            ("  Sun, 06 Nov 1994 08:49:37 GMT\t", Some(NOV6)),
            ("Thu, 01 Jan 1970 00:00:00 GMT", Some(0)),
            ("Wed, 31 Dec 1969 23:59:59 GMT", None), // before the epoch
            ("Tue, 29 Feb 2000 12:00:00 GMT", Some(951_825_600)),
            ("Tue, 19 Jan 2038 03:14:08 GMT", Some(1 << 31)),
            ("Fri, 31 Dec 9999 23:59:59 GMT", Some(253_402_300_799)),
            ("Sat, 31 Dec 2016 23:59:60 GMT", Some(1_483_228_800)), // leap second
            ("Thu Feb 29 00:00:00 2024", Some(1_709_164_800)),
            ("Thursday, 01-Jan-70 00:00:00 GMT", Some(0)),
            ("Saturday, 01-Jan-00 00:00:00 GMT", Some(946_684_800)), // 2000
            ("Friday, 31-Dec-99 23:59:59 GMT", Some(946_684_799)), // 1999
            ("Friday, 01-Jan-38 00:00:00 GMT", Some(2_145_916_800)), // 2038
            // Invalid.
            ("Sun, 06 Foo 1994 08:49:37 GMT", None), // bad month
            ("Sun, 06 nov 1994 08:49:37 GMT", None), // case-sensitive
            ("Thu, 30 Feb 2023 08:49:37 GMT", None), // Feb 30
            ("Sun, 29 Feb 2023 08:49:37 GMT", None), // not a leap year
            ("Sat, 29 Feb 1900 08:49:37 GMT", None), // century not a leap year
            ("Sun, 00 Nov 1994 08:49:37 GMT", None), // day 0
            ("Wed, 31 Nov 1994 08:49:37 GMT", None), // 30-day month
            ("Sun, 06 Nov 1994 25:00:00 GMT", None), // hour
            ("Sun, 06 Nov 1994 24:00:00 GMT", None),
            ("Sun, 06 Nov 1994 08:60:37 GMT", None), // minute
            ("Sun, 06 Nov 1994 08:49:61 GMT", None), // second
            ("Sun, 06 Nov 1994 08:49:37 UTC", None), // zone
            ("Mon, 06 Nov 1994 08:49:37 GMT", None), // wrong weekday
            ("Xyz, 06 Nov 1994 08:49:37 GMT", None),
            ("Sun, 06 Nov 1994 08-49-37 GMT", None),
            ("Sun, 6 Nov 1994 08:49:37 GMT", None), // one-digit day
            ("Sun, 06 Nov 94 08:49:37 GMT", None),
            ("Sun, +6 Nov 1994 08:49:37 GMT", None),
            ("Sun,  06 Nov 1994 08:49:37 GMT", None),
            ("Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT", None), // a list
            ("Sunday, 06-Nov-1994 08:49:37 GMT", None),
            ("Sun, 06-Nov-94 08:49:37 GMT", None), // short name in RFC 850 form
            ("Sunday, 06-Nov-94 08:49:37", None),
            ("Sunday, 06-Nov-94 08:49:37 GMTX", None),
            ("Sun Nov  6 08:49:37 94", None),
            ("Sun Nov 6  08:49:37 1994", None),
            ("Sun Nov 31 08:49:37 1994", None),
            ("Sun Nov  6 08:49:37 1994 GMT", None),
            ("", None),
            ("garbage", None),
            ("1994-11-06T08:49:37Z", None),
            ("784111777", None),
            (",", None),
            ("Sunday,", None),
        ];
        for &(s, want) in cases {
            assert_eq!(parse_http_date(s.as_bytes()), want, "{s:?}");
        }
    }

    #[test]
    fn every_day_round_trips() {
        // Every day 1970-2100 in all three forms, against a counted calendar.
        const WD: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        const LWD: [&str; 7] = [
            "Sunday",
            "Monday",
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
        ];
        const MON: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let mut days = 0u64;
        for y in 1970..2100 {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    let wd = ((days + 4) % 7) as usize;
                    let want = Some(days * 86_400 + 45_296); // 12:34:56
                    let mon = MON[m as usize - 1];
                    let imf = format!("{}, {d:02} {mon} {y} 12:34:56 GMT", WD[wd]);
                    let asc = format!("{} {mon} {d:2} 12:34:56 {y}", WD[wd]);
                    assert_eq!(parse_http_date(imf.as_bytes()), want, "{imf}");
                    assert_eq!(parse_http_date(asc.as_bytes()), want, "{asc}");
                    if y < 2070 {
                        let yy = y % 100;
                        let rfc850 = format!("{}, {d:02}-{mon}-{yy:02} 12:34:56 GMT", LWD[wd]);
                        assert_eq!(parse_http_date(rfc850.as_bytes()), want, "{rfc850}");
                    }
                    days += 1;
                }
            }
        }
    }

    #[test]
    fn preconditions() {
        const E: &str = r#""abc""#;
        const LM: u64 = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
        const AT: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
        const BEFORE: &str = "Sun, 06 Nov 1994 08:49:36 GMT";
        const AFTER: &str = "Sun, 06 Nov 1994 08:49:38 GMT";
        // (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, expected)
        type O = Option<&'static str>;
        #[rustfmt::skip]
        let cases: &[(O, O, O, O, Precondition)] = &[
            (None, None, None, None, Proceed),
            // 1. If-Match: strong comparison.
            (Some(r#""abc""#), None, None, None, Proceed),
            (Some("*"), None, None, None, Proceed),
            (Some(" * "), None, None, None, Proceed),
            (Some(r#""xyz""#), None, None, None, Failed),
            (Some(r#"W/"abc""#), None, None, None, Failed), // weak never strong-matches
            (Some(r#""x", "abc""#), None, None, None, Proceed),
            (Some(r#""x" ,  "abc" "#), None, None, None, Proceed),
            (Some(r#""x","abc""#), None, None, None, Proceed),
            (Some(r#", ,"abc",,"#), None, None, None, Proceed), // empty elements
            (Some(r#""x", W/"abc""#), None, None, None, Failed),
            (Some(r#""abc"x"#), None, None, None, Failed), // invalid list
            (Some(r#""abc" "x""#), None, None, None, Failed), // missing comma
            (Some(r#""abc", *"#), None, None, None, Failed), // "*" only alone
            (Some("abc"), None, None, None, Failed), // unquoted
            (Some(r#""abc"#), None, None, None, Failed), // unterminated
            (Some(""), None, None, None, Failed),
            (Some(r#""ab""#), None, None, None, Failed),
            // If-Match decides; If-Unmodified-Since is not looked at.
            (Some(r#""abc""#), None, None, Some(BEFORE), Proceed),
            // 2. If-Unmodified-Since.
            (None, None, None, Some(AT), Proceed),
            (None, None, None, Some(AFTER), Proceed),
            (None, None, None, Some(BEFORE), Failed),
            (None, None, None, Some("Sunday, 06-Nov-94 08:49:36 GMT"), Failed),
            (None, None, None, Some("Sun Nov  6 08:49:36 1994"), Failed),
            (None, None, None, Some("garbage"), Proceed), // invalid date ignored
            (None, None, None, Some("Sun, 31 Feb 1994 08:49:36 GMT"), Proceed),
            // 3. If-None-Match: weak comparison.
            (None, Some(r#""abc""#), None, None, NM),
            (None, Some(r#"W/"abc""#), None, None, NM),
            (None, Some("*"), None, None, NM),
            (None, Some(r#""x""#), None, None, Proceed),
            (None, Some(r#""x", W/"abc""#), None, None, NM),
            (None, Some(r#""x",	"y" , "abc""#), None, None, NM), // tab as OWS
            (None, Some(r#""a,bc", "abc""#), None, None, NM), // comma inside a tag
            (None, Some(r#""a,bc""#), None, None, Proceed),
            (None, Some(r#""x" garbage, "abc""#), None, None, Proceed), // invalid list
            (None, Some(""), None, None, Proceed),
            (None, Some(r#"w/"abc""#), None, None, Proceed), // "W/" is case-sensitive
            // If-None-Match present: If-Modified-Since is ignored.
            (None, Some(r#""x""#), Some(AT), None, Proceed),
            (None, Some(r#""abc""#), Some(BEFORE), None, NM),
            // 4. If-Modified-Since.
            (None, None, Some(AT), None, NM),
            (None, None, Some(AFTER), None, NM),
            (None, None, Some(BEFORE), None, Proceed),
            (None, None, Some("Sunday, 06-Nov-94 08:49:37 GMT"), None, NM),
            (None, None, Some("Sun Nov  6 08:49:37 1994"), None, NM),
            (None, None, Some("Sun, 06 Nov 1994 25:00:00 GMT"), None, Proceed),
            (None, None, Some("garbage"), None, Proceed),
            // 412 comes before 304.
            (Some(r#""x""#), Some(r#""abc""#), None, None, Failed),
            (None, Some(r#""abc""#), None, Some(BEFORE), Failed),
            (Some(r#""abc""#), Some(r#""abc""#), None, None, NM),
            (Some("*"), Some("*"), None, None, NM),
            (Some(r#""abc""#), None, Some(AT), Some(BEFORE), NM),
        ];
        for &(im, inm, ims, ius, want) in cases {
            let c = Conditions {
                if_match: im.map(str::as_bytes),
                if_none_match: inm.map(str::as_bytes),
                if_modified_since: ims.map(str::as_bytes),
                if_unmodified_since: ius.map(str::as_bytes),
            };
            assert_eq!(evaluate(&c, E.as_bytes(), LM), want, "{c:?}");
        }
    }

    #[test]
    fn if_range() {
        const E: &str = r#""abc""#;
        const LM: u64 = 784_111_777;
        #[rustfmt::skip]
        let cases: &[(&str, bool)] = &[
            (r#""abc""#, true),
            (r#"  "abc" "#, true),
            (r#"W/"abc""#, false), // weak
            (r#""abd""#, false),
            (r#""abc", "abc""#, false), // a list is not a value of If-Range
            (r#""abc"x"#, false),
            (r#""abc"#, false),
            ("*", false),
            ("Sun, 06 Nov 1994 08:49:37 GMT", true),
            ("Sunday, 06-Nov-94 08:49:37 GMT", true),
            ("Sun Nov  6 08:49:37 1994", true),
            ("Sun, 06 Nov 1994 08:49:38 GMT", false), // must be exactly equal
            ("Sun, 06 Nov 1994 08:49:36 GMT", false),
            ("Sun, 06 Nov 1994 25:49:37 GMT", false),
            ("", false),
            ("garbage", false),
        ];
        for &(v, want) in cases {
            assert_eq!(
                if_range_matches(v.as_bytes(), E.as_bytes(), LM),
                want,
                "{v:?}"
            );
        }
        // Our own tag weak: nothing strong-matches it.
        assert!(!if_range_matches(br#"W/"abc""#, br#"W/"abc""#, LM));
        assert!(!if_range_matches(br#""abc""#, br#"W/"abc""#, LM));
        // A generated tag matches itself.
        let e = ETag::new(7, 8, 9);
        assert!(if_range_matches(e.as_bytes(), e.as_bytes(), 0));
    }
}
