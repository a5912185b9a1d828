//! Answering a request from a stored response, as a static file is
//! answered: the client's own conditions (RFC 9110 §13) and a single range
//! from the stored body, HEAD without it, and `Age` as this cache reckons
//! it (RFC 9111 §4: a stored response sent is given its current age).

use ringside_http::semantics::conditional::{
    evaluate, if_range_matches, parse_http_date, Conditions, Precondition,
};
use ringside_http::semantics::range::{
    content_range, parse_range, RangeOutcome, CONTENT_RANGE_MAX,
};
use ringside_http::{Error, Exchange, Method};

use crate::entry::Variant;
use crate::policy;

/// Fields of a stored response not sent from the store: the protocol
/// writes its own Date, and this cache its own Age and Cache-Status.
fn sent(name: &[u8]) -> bool {
    policy::kept_in_store(name)
        && !name.eq_ignore_ascii_case(b"date")
        && !name.eq_ignore_ascii_case(b"cdn-cache-control")
}

/// The fields a 304 repeats from the response it stands for (RFC 9110
/// §15.4.5).
fn in_304(name: &[u8]) -> bool {
    let is = |f: &str| name.eq_ignore_ascii_case(f.as_bytes());
    is("cache-control")
        || is("content-location")
        || is("etag")
        || is("expires")
        || is("vary")
        || is("last-modified")
}

/// Sends `v` for `ex`, `status_line` as its Cache-Status.
pub fn answer(
    ex: &mut Exchange<'_>,
    v: &Variant,
    now: u64,
    status_line: &[u8],
) -> Result<(), Error> {
    let mut age = [0u8; 20];
    let age = ringside_http::grammar::decimal(v.meta().age(now), &mut age);
    let own = [(&b"Age"[..], age), (&b"Cache-Status"[..], status_line)];
    let stored = v.pairs().filter(|(n, _)| sent(n));
    // The origin's Date goes out as it came, if it is one (RFC 9110
    // §6.6.1: a cache does not make its own).
    let date = v
        .header("date")
        .filter(|d| d.len() == 29 && parse_http_date(d).is_some());
    if v.status == 200 && matches!(ex.method(), Method::Get | Method::Head) {
        let etag = v.header("etag").unwrap_or_default();
        let lm = v.header("last-modified").and_then(parse_http_date);
        let c = Conditions {
            if_match: ex.header("if-match"),
            if_none_match: ex.header("if-none-match"),
            if_modified_since: lm.and(ex.header("if-modified-since")),
            if_unmodified_since: lm.and(ex.header("if-unmodified-since")),
        };
        match evaluate(&c, etag, lm.unwrap_or(0)) {
            Precondition::Proceed => {}
            Precondition::NotModified => {
                let hs = stored.filter(|(n, _)| in_304(n)).chain(own);
                return ex.send_dated(304, hs, date, b"");
            }
            Precondition::Failed => return ex.send_status(412),
        }
        let total = v.body.len() as u64;
        let ranged = ex.header("range").filter(|_| {
            ex.header("if-range")
                .is_none_or(|ir| if_range_matches(ir, etag, lm.unwrap_or(u64::MAX)))
        });
        if let Some(r) = ranged {
            match parse_range(r, total) {
                RangeOutcome::Single(r) => {
                    let mut cr = [0u8; CONTENT_RANGE_MAX];
                    let cr = content_range(r, total, &mut cr);
                    let hs = stored
                        .filter(|(n, _)| !n.eq_ignore_ascii_case(b"content-range"))
                        .chain(own)
                        .chain([(&b"Content-Range"[..], cr)]);
                    let body = &v.body[r.start as usize..=r.end as usize];
                    return ex.send_dated(206, hs, date, body);
                }
                RangeOutcome::Unsatisfiable => {
                    let mut cr = [0u8; CONTENT_RANGE_MAX];
                    let cr =
                        ringside_http::semantics::range::content_range_unsatisfied(total, &mut cr);
                    return ex.send_with(
                        416,
                        own.into_iter().chain([(&b"Content-Range"[..], cr)]),
                        b"",
                    );
                }
                _ => {}
            }
        }
    }
    ex.send_dated(v.status, stored.chain(own), date, &v.body)
}
