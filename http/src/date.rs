//! The `Date` response header value (RFC 9110 §5.6.7, IMF-fixdate), cached
//! per thread and so per core.
//!
//! Every response carries a `Date`, but it only changes once a second, so
//! [`with_date`] keeps the formatted value in a thread-local together with the
//! second it was made for. Each call reads a coarse clock
//! (`CLOCK_REALTIME_COARSE` on Linux: a vDSO read of the last tick, no syscall)
//! and formats again only when the second has changed. A coarse clock may
//! lag by one tick (a few milliseconds), which a one-second field cannot show.
//!
//! The calendar conversion is Howard Hinnant's `civil_from_days`, exact for
//! the proleptic Gregorian calendar; no crates are involved.

use std::cell::Cell;

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_LEN: usize = 29;

/// Last second representable with a four-digit year: 9999-12-31T23:59:59Z.
const MAX_SECS: u64 = 253_402_300_799;

thread_local! {
    /// (second formatted, value); `u64::MAX` means not formatted yet.
    static CACHE: Cell<(u64, [u8; DATE_LEN])> = const { Cell::new((u64::MAX, [0; DATE_LEN])) };
}

/// Calls `f` with the current time as an IMF-fixdate, formatted at most once
/// a second per thread.
pub fn with_date<R>(f: impl FnOnce(&[u8; DATE_LEN]) -> R) -> R {
    let now = now_secs();
    let date = CACHE.with(|cache| {
        let (secs, date) = cache.get();
        if secs == now {
            return date;
        }
        let mut date = [0; DATE_LEN];
        format_imf_fixdate(now, &mut date);
        cache.set((now, date));
        date
    });
    // `f` gets a copy, so it may call `with_date` itself.
    f(&date)
}

/// Formats `unix_secs` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
/// Times after 9999-12-31T23:59:59Z are written as that moment.
pub fn format_imf_fixdate(unix_secs: u64, out: &mut [u8; DATE_LEN]) {
    const WEEKDAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];

    let secs = unix_secs.min(MAX_SECS);
    let days = secs / 86_400;
    let sod = secs % 86_400;
    let (year, month, day) = civil_from_days(days);

    out[0..3].copy_from_slice(WEEKDAYS[(days % 7) as usize]); // 1970-01-01 was a Thursday
    out[3..5].copy_from_slice(b", ");
    two_digits(&mut out[5..7], day);
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[month as usize - 1]);
    out[11] = b' ';
    two_digits(&mut out[12..14], year / 100);
    two_digits(&mut out[14..16], year % 100);
    out[16] = b' ';
    two_digits(&mut out[17..19], (sod / 3600) as u32);
    out[19] = b':';
    two_digits(&mut out[20..22], (sod / 60 % 60) as u32);
    out[22] = b':';
    two_digits(&mut out[23..25], (sod % 60) as u32);
    out[25..29].copy_from_slice(b" GMT");
}

#[inline]
fn two_digits(out: &mut [u8], n: u32) {
    out[0] = b'0' + (n / 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// (year, month 1..=12, day 1..=31) of `days` since 1970-01-01, for days >= 0.
/// Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms".
pub fn civil_from_days(days: u64) -> (u32, u32, u32) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400) as u32 + u32::from(month <= 2);
    (year, month, day)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const CLOCK: libc::clockid_t = libc::CLOCK_REALTIME_COARSE;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const CLOCK: libc::clockid_t = libc::CLOCK_REALTIME;

/// Seconds since the Unix epoch from the (coarse) realtime clock: what a
/// cache reckons ages by, cheaper than `SystemTime`'s arithmetic.
pub fn unix_now() -> u64 {
    now_secs()
}

/// Seconds since the Unix epoch from the (coarse) realtime clock.
fn now_secs() -> u64 {
    let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime fills it in
    // completely when it returns 0, and only then is it read.
    let ts = unsafe {
        if libc::clock_gettime(CLOCK, ts.as_mut_ptr()) != 0 {
            return std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
        }
        ts.assume_init()
    };
    u64::try_from(ts.tv_sec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(secs: u64) -> String {
        let mut out = [0; DATE_LEN];
        format_imf_fixdate(secs, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn known_timestamps() {
        #[rustfmt::skip]
        let cases: &[(u64, &str)] = &[
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (951_868_799, "Tue, 29 Feb 2000 23:59:59 GMT"),
            (951_868_800, "Wed, 01 Mar 2000 00:00:00 GMT"),
            (1_709_164_800, "Thu, 29 Feb 2024 00:00:00 GMT"),
            (2_147_483_647, "Tue, 19 Jan 2038 03:14:07 GMT"),
            (2_147_483_648, "Tue, 19 Jan 2038 03:14:08 GMT"),
            (4_107_456_000, "Sun, 28 Feb 2100 00:00:00 GMT"),
            (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"), // 2100 is not a leap year
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (u64::MAX, "Fri, 31 Dec 9999 23:59:59 GMT"),
        ];
        for (secs, want) in cases {
            assert_eq!(fmt(*secs), *want, "{secs}");
        }
    }

    #[test]
    fn every_day_round_trips() {
        // Days since epoch recomputed from (y, m, d) match, for 1970..=2500.
        let days_from_civil = |y: u64, m: u64, d: u64| {
            let y = if m <= 2 { y - 1 } else { y };
            let era = y / 400;
            let yoe = y - era * 400;
            let mp = (m + 9) % 12;
            let doy = (153 * mp + 2) / 5 + d - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            era * 146_097 + doe - 719_468
        };
        let mut prev = (1969, 12, 31);
        for days in 0..(531 * 366) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y.into(), m.into(), d.into()), days);
            assert!((y, m, d) > prev);
            prev = (y, m, d);
        }
    }

    #[test]
    fn with_date_is_now() {
        let before = now_secs();
        assert!(before > 1_600_000_000);
        let date = with_date(|d| *d);
        let after = now_secs();
        assert!(
            (before..=after).any(|s| fmt(s).as_bytes() == date),
            "{:?}",
            String::from_utf8_lossy(&date)
        );
        // Cached and re-entrant.
        let (outer, inner) = with_date(|d| with_date(|inner| (*d, *inner)));
        assert_eq!(outer, inner);
    }
}
