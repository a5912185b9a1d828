//! The few date formats ACME brings: RFC 3339 (ARI windows), HTTP-date
//! (Retry-After, RFC 9110 §5.6.7) and X.509's UTCTime/GeneralizedTime.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the epoch of a civil UTC date (Howard Hinnant's
/// days_from_civil).
pub(crate) fn unix(year: i64, month: u32, day: u32, h: u32, m: u32, s: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + h as i64 * 3600 + m as i64 * 60 + s as i64)
}

pub(crate) fn system_time(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

fn num(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `2025-01-02T03:04:05Z`, `...05.123Z`, `...05+01:00`.
pub(crate) fn rfc3339(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    // Byte offsets below: a CA's text that is not ASCII is no date.
    if !s.is_ascii() {
        return None;
    }
    if s.len() < 20 || !s.is_char_boundary(19) {
        return None;
    }
    let (dt, zone) = s.split_at(19);
    let b = dt.as_bytes();
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let secs = unix(
        num(&dt[0..4])? as i64,
        num(&dt[5..7])?,
        num(&dt[8..10])?,
        num(&dt[11..13])?,
        num(&dt[14..16])?,
        num(&dt[17..19])?,
    )?;
    let mut zone = zone;
    let mut nanos = 0u32;
    if let Some(frac) = zone.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let f = &frac[..digits.min(9)];
        nanos = num(f)? * 10u32.pow(9 - f.len() as u32);
        zone = &frac[digits..];
    }
    let offset = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let o = (num(&z[1..3])? * 3600 + num(&z[4..6])? * 60) as i64;
            if z.starts_with('+') {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    Some(system_time(secs - offset) + Duration::from_nanos(nanos as u64))
}

/// IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(s: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, hms, "GMT"] = parts[..] else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let mut t = hms.split(':');
    let (h, m, sec) = (num(t.next()?)?, num(t.next()?)?, num(t.next()?)?);
    Some(system_time(unix(
        num(year)? as i64,
        month,
        num(day)?,
        h,
        m,
        sec,
    )?))
}

/// Retry-After (RFC 9110 §10.2.3): seconds, or a date (then the time
/// left until it, zero when past).
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    // A day at most: a larger ask would overflow the clock's arithmetic,
    // and renewal looks again within a day anyway.
    retry_after_unbounded(value, now).map(|d| d.min(Duration::from_secs(86_400)))
}

fn retry_after_unbounded(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(secs) = num(value) {
        return Some(Duration::from_secs(secs as u64));
    }
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// X.509 UTCTime (`YYMMDDHHMMSSZ`, RFC 5280 §4.1.2.5.1) or
/// GeneralizedTime (`YYYYMMDDHHMMSSZ`).
pub(crate) fn x509(generalized: bool, s: &[u8]) -> Option<SystemTime> {
    if !s.is_ascii() {
        return None;
    }
    let s = std::str::from_utf8(s).ok()?;
    let s = s.strip_suffix('Z')?;
    let (year, rest) = if generalized {
        (num(s.get(0..4)?)? as i64, s.get(4..)?)
    } else {
        let yy = num(s.get(0..2)?)? as i64;
        (if yy >= 50 { 1900 + yy } else { 2000 + yy }, s.get(2..)?)
    };
    if rest.len() != 10 {
        return None;
    }
    Some(system_time(unix(
        year,
        num(&rest[0..2])?,
        num(&rest[2..4])?,
        num(&rest[4..6])?,
        num(&rest[6..8])?,
        num(&rest[8..10])?,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn formats() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(at(0)));
        assert_eq!(rfc3339("2025-01-02T03:04:05Z"), Some(at(1735787045)));
        assert_eq!(rfc3339("2025-01-02T04:04:05+01:00"), Some(at(1735787045)));
        assert_eq!(
            rfc3339("2025-01-02T03:04:05.5Z"),
            Some(at(1735787045) + Duration::from_millis(500))
        );
        assert_eq!(rfc3339("2025-13-02T03:04:05Z"), None);
        assert_eq!(rfc3339("2025-01-02"), None);
        assert_eq!(
            http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at(784111777))
        );
        assert_eq!(http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(x509(false, b"940611084937Z"), Some(at(771324577)));
        assert_eq!(
            x509(false, b"500101000000Z"),
            Some(UNIX_EPOCH - Duration::from_secs(631152000))
        );
        assert_eq!(x509(true, b"20250102030405Z"), Some(at(1735787045)));
        assert_eq!(x509(true, b"20250102030405"), None);
    }

    #[test]
    fn retry_after_both_forms() {
        let now = at(784111777 - 30);
        assert_eq!(
            retry_after("18446744073709551615", now),
            Some(Duration::from_secs(86_400))
        );
        assert_eq!(rfc3339("2025-01-02T03:04:05+1\u{e9}00"), None);
        assert_eq!(x509(false, "99123\u{e9}59Z".as_bytes()), None);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(784111777 + 5)),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", now), None);
    }
}
