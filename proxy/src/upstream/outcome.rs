//! What a request's upstream tries came to, for the access log's
//! `upstream_status` and `upstream_error`: packed into the exchange's tag
//! beside the route (`Exchange::set_tag`), so nothing is allocated or kept
//! per request, and unpacked only when a line is written.
//!
//! The tag's bits: 0..32 the route, 32..42 the status of the last try (0:
//! none), 42..46 the reason of the last failed try (`Reason` as a number,
//! 0: none), 46..49 how many tries went before the last (at most 7), and
//! from 49 two bits for each of those: no status, 502, 503 or 504 (a try
//! that went on to another server answered nothing, or one of these).

use std::fmt::Write;

use super::failure::Reason;

const STATUS_AT: u32 = 32;
const REASON_AT: u32 = 42;
const EARLIER_AT: u32 = 46;
const CODES_AT: u32 = 49;
const MAX_EARLIER: u16 = 7;

/// The tries of one request to its upstream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Tries before the last, and their statuses as two-bit codes.
    earlier: u16,
    codes: u16,
    /// The last try's status, 0 when it answered none.
    status: u16,
    reason: Option<Reason>,
}

impl Outcome {
    /// A try that did not end the request: it answered `status` (a 502,
    /// 503 or 504 the retry policy sends elsewhere) or nothing.
    /// Past `MAX_EARLIER` tries the last slot holds the newest, so that
    /// the log keeps the first ones and the latest, and
    /// [`Outcome::ended_there`] still finds the real last try.
    pub fn went_on(&mut self, status: Option<u16>) {
        let code = match status {
            Some(502) => 1,
            Some(503) => 2,
            Some(504) => 3,
            _ => 0,
        };
        if self.earlier == MAX_EARLIER {
            let at = 2 * (MAX_EARLIER - 1);
            self.codes = (self.codes & !(3 << at)) | code << at;
            return;
        }
        self.codes |= code << (2 * self.earlier);
        self.earlier += 1;
    }

    /// No server was left after the last [`Outcome::went_on`]: that try
    /// was the last one after all.
    pub fn ended_there(&mut self) {
        if self.earlier == 0 || self.status != 0 {
            return;
        }
        self.earlier -= 1;
        let at = 2 * self.earlier;
        self.status = [0, 502, 503, 504][usize::from((self.codes >> at) & 3)];
        self.codes &= !(3 << at);
    }

    /// The last try answered `status` (0: not at all).
    pub fn answered(&mut self, status: u16) {
        self.status = status;
    }

    /// A try failed for `reason`.
    pub fn failed(&mut self, reason: Option<Reason>) {
        if reason.is_some() {
            self.reason = reason;
        }
    }

    /// The tag with `route` in its low half.
    pub fn pack(self, route: u32) -> u64 {
        route as u64
            | u64::from(self.status.min(1023)) << STATUS_AT
            | u64::from(self.reason.map_or(0, |r| r as u8)) << REASON_AT
            | u64::from(self.earlier) << EARLIER_AT
            | u64::from(self.codes) << CODES_AT
    }

    /// The route and the outcome of a tag made by [`Outcome::pack`] (or a
    /// bare route, whose outcome is empty).
    pub fn unpack(tag: u64) -> (u32, Outcome) {
        let bits = |at: u32, n: u32| ((tag >> at) & ((1 << n) - 1)) as u16;
        let o = Outcome {
            status: bits(STATUS_AT, 10),
            reason: Reason::from_code(bits(REASON_AT, 4) as u8),
            earlier: bits(EARLIER_AT, 3),
            codes: bits(CODES_AT, 14),
        };
        (tag as u32, o)
    }

    /// `upstream_status` as nginx writes `$upstream_status`: each try's
    /// status, comma-separated, `-` for a try without one, and `-` alone
    /// when no try was made.
    pub fn write_status(&self, out: &mut impl Write) -> std::fmt::Result {
        for i in 0..self.earlier {
            out.write_str(match (self.codes >> (2 * i)) & 3 {
                1 => "502, ",
                2 => "503, ",
                3 => "504, ",
                _ => "-, ",
            })?;
        }
        match self.status {
            0 => out.write_str("-"),
            s => write!(out, "{s}"),
        }
    }

    /// `upstream_error`: the reason of the last try that failed, `-` when
    /// none did.
    pub fn error(&self) -> &'static str {
        self.reason.map_or("-", Reason::token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(o: &Outcome) -> String {
        let mut s = String::new();
        o.write_status(&mut s).unwrap();
        s
    }

    #[test]
    fn packs_beside_the_route_and_reads_back() {
        let mut o = Outcome::default();
        o.failed(Some(Reason::ConnectRefused));
        o.went_on(None);
        o.went_on(Some(503));
        o.answered(200);
        let (route, back) = Outcome::unpack(o.pack(u32::MAX));
        assert_eq!((route, back), (u32::MAX, o));
        assert_eq!(status(&back), "-, 503, 200");
        assert_eq!(back.error(), "connect_refused");

        let (route, bare) = Outcome::unpack(7);
        assert_eq!(route, 7);
        assert_eq!((status(&bare), bare.error()), ("-".to_owned(), "-"));
    }

    #[test]
    fn a_try_with_no_server_after_it_is_the_last() {
        let mut o = Outcome::default();
        o.went_on(None);
        o.went_on(Some(503));
        o.ended_there();
        assert_eq!(status(&o), "-, 503");
        let mut o = Outcome::default();
        o.went_on(None);
        o.ended_there();
        assert_eq!(status(&o), "-");
    }

    #[test]
    fn at_most_seven_earlier_tries_are_kept() {
        let mut o = Outcome::default();
        for _ in 0..20 {
            o.went_on(Some(504));
        }
        o.answered(999);
        let (_, back) = Outcome::unpack(o.pack(0));
        assert_eq!(status(&back), "504, ".repeat(7) + "999");
        // Nine servers: seven refuse, the last two answer 503 and no
        // server is left. The log keeps the first six and the latest, and
        // the last status is the last server's.
        let mut o = Outcome::default();
        for _ in 0..7 {
            o.went_on(None);
        }
        o.went_on(Some(503));
        o.went_on(Some(503));
        o.ended_there();
        assert_eq!(status(&o), "-, ".repeat(6) + "503");
    }
}
