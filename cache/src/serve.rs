//! Answering a request from a stored response, as a static file is
//! answered: the client's own conditions (RFC 9110 §13) and a single range
//! from the stored body, HEAD without it, and `Age` as this cache reckons
//! it (RFC 9111 §4: a stored response sent is given its current age). A
//! compressed copy, made once per coding and kept beside the identity
//! body, goes to a client that takes it, with the variant ETag and Vary
//! the compression layer gives a compressed response.

use bytes::Bytes;
use ringside_http::compress;
use ringside_http::semantics::conditional::{evaluate, if_range_matches, Conditions, Precondition};
use ringside_http::semantics::negotiation::Coding;
use ringside_http::semantics::range::{
    content_range, content_range_unsatisfied, parse_range, RangeOutcome, CONTENT_RANGE_MAX,
};
use ringside_http::{Error, Exchange, Method};

use crate::entry::{Body, Variant};
use crate::policy;

/// Fields of a stored response not sent from the store: the protocol
/// writes its own Date, and this cache its own Age and Cache-Status.
fn sent(name: &[u8]) -> bool {
    policy::kept_in_store(name)
        && !name.eq_ignore_ascii_case(b"date")
        && !ringside_http::capture::targeted_cache_field(name)
}

/// Fields a compressed copy replaces or drops.
fn encoded_replaces(name: &[u8]) -> bool {
    let is = |f: &str| name.eq_ignore_ascii_case(f.as_bytes());
    is("etag") || is("vary") || is("accept-ranges")
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

/// What goes out: the ETag, a Vary, a Content-Encoding, the body.
type Shape<'a> = (&'a [u8], Option<&'a [u8]>, Option<&'a [u8]>, Out<'a>);

/// The request fields a stored response is answered by, found in one
/// pass over the request's fields.
#[derive(Default)]
struct Asked<'a> {
    any: bool,
    if_match: Option<&'a [u8]>,
    if_none_match: Option<&'a [u8]>,
    if_modified_since: Option<&'a [u8]>,
    if_unmodified_since: Option<&'a [u8]>,
    range: Option<&'a [u8]>,
    if_range: Option<&'a [u8]>,
}

impl<'a> Asked<'a> {
    fn of(ex: &'a Exchange<'_>) -> Asked<'a> {
        let mut a = Asked::default();
        for (n, v) in ex.headers() {
            // Every field asked for starts with "if-" or is "range".
            let slot = match n.len() {
                5 if n.eq_ignore_ascii_case(b"range") => &mut a.range,
                8 if n.eq_ignore_ascii_case(b"if-match") => &mut a.if_match,
                8 if n.eq_ignore_ascii_case(b"if-range") => &mut a.if_range,
                13 if n.eq_ignore_ascii_case(b"if-none-match") => &mut a.if_none_match,
                17 if n.eq_ignore_ascii_case(b"if-modified-since") => &mut a.if_modified_since,
                19 if n.eq_ignore_ascii_case(b"if-unmodified-since") => &mut a.if_unmodified_since,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v);
            }
            a.any = true;
        }
        a
    }
}

/// A compressed copy to send: its coding and bytes.
pub struct Encoded {
    pub coding: Coding,
    pub body: Bytes,
}

/// Sends `v` for `ex`, `status_line` as its Cache-Status; `encoded`: the
/// compressed copy the client takes, if any; `varies`: the route
/// compresses such a response, so even its identity copy says
/// `Vary: Accept-Encoding`, as a response compressed on its way out does.
pub async fn answer(
    ex: &mut Exchange<'_>,
    v: &Variant,
    now: u64,
    status_line: &[u8],
    encoded: Option<&Encoded>,
    varies: bool,
) -> Result<(), Error> {
    let mut age = [0u8; 20];
    let age = ringside_http::grammar::decimal(v.meta().age(now), &mut age);
    // Outlives the fields below, which a 206 adds its Content-Range to.
    let mut range_buf = [0u8; CONTENT_RANGE_MAX];
    // The origin's Date goes out as it came, if it is one (RFC 9110
    // §6.6.1: a cache does not make its own).
    let date = v.dates.date_sendable.then(|| v.header("date")).flatten();
    let (etag_owned, vary_owned);
    let (etag, vary, coding, body): Shape<'_> = match encoded {
        None if varies => {
            vary_owned = compress::vary_with_accept_encoding(v.header("vary"));
            let etag = v.header("etag").unwrap_or_default();
            (etag, vary_owned.as_deref(), None, Out::of(&v.body))
        }
        None => (
            v.header("etag").unwrap_or_default(),
            None,
            None,
            Out::of(&v.body),
        ),
        Some(e) => {
            etag_owned = v
                .header("etag")
                .and_then(|t| compress::variant_etag(t, e.coding));
            vary_owned = compress::vary_with_accept_encoding(v.header("vary"));
            let vary = vary_owned.as_deref().or(v.header("vary"));
            let etag = etag_owned.as_deref().unwrap_or_default();
            (
                etag,
                vary,
                Some(e.coding.token().as_bytes()),
                Out::Bytes(&e.body),
            )
        }
    };
    let own = [(&b"Age"[..], age), (&b"Cache-Status"[..], status_line)];
    let replaced = |n: &[u8]| {
        (encoded.is_some() && encoded_replaces(n))
            || (vary.is_some() && n.eq_ignore_ascii_case(b"vary"))
    };
    let added = [
        (!etag.is_empty() && encoded.is_some()).then_some((&b"ETag"[..], etag)),
        vary.map(|v| (&b"Vary"[..], v)),
        coding.map(|c| (&b"Content-Encoding"[..], c)),
    ];
    let stored = v
        .pairs()
        .filter(|(n, _)| sent(n) && !replaced(n))
        .chain(added.into_iter().flatten())
        .chain(own);
    let asked = Asked::of(ex);
    if v.status == 200 && asked.any && matches!(ex.method(), Method::Get | Method::Head) {
        // Without a Last-Modified, the Date stands in for it (RFC 9110
        // §13.1.3: the time the response was known current).
        let lm_real = v.dates.last_modified;
        let lm = lm_real.or(v.dates.date);
        let c = Conditions {
            if_match: asked.if_match,
            if_none_match: asked.if_none_match,
            if_modified_since: lm.and(asked.if_modified_since),
            if_unmodified_since: lm.and(asked.if_unmodified_since),
        };
        match evaluate(&c, etag, lm.unwrap_or(0)) {
            Precondition::Proceed => {}
            Precondition::NotModified => {
                let hs = stored.filter(|(n, _)| in_304(n) || n.eq_ignore_ascii_case(b"age"));
                return ex.send_dated(304, hs, date, b"");
            }
            Precondition::Failed => return ex.send_status(412),
        }
        let total = body.len();
        // Ranges of the identity body only, as for a file.
        let ranged = asked.range.filter(|_| {
            encoded.is_none()
                && asked
                    .if_range
                    .is_none_or(|ir| if_range_matches(ir, etag, lm_real.unwrap_or(u64::MAX)))
        });
        if let Some(r) = ranged {
            match parse_range(r, total) {
                RangeOutcome::Single(r) => {
                    let cr = content_range(r, total, &mut range_buf);
                    let hs = stored
                        .filter(|(n, _)| !n.eq_ignore_ascii_case(b"content-range"))
                        .chain([(&b"Content-Range"[..], cr)]);
                    return body.send(ex, 206, hs, date, r.start, r.len()).await;
                }
                RangeOutcome::Unsatisfiable => {
                    let mut cr = [0u8; CONTENT_RANGE_MAX];
                    let cr = content_range_unsatisfied(total, &mut cr);
                    let hs = own.into_iter().chain([(&b"Content-Range"[..], cr)]);
                    return ex.send_with(416, hs, b"");
                }
                _ => {}
            }
        }
    }
    let len = body.len();
    body.send(ex, v.status, stored, date, 0, len).await
}

/// The body a hit sends: bytes in memory, or a range of a disk tier's
/// file sent without a copy.
#[derive(Clone, Copy)]
enum Out<'a> {
    Bytes(&'a [u8]),
    File(&'a crate::store::disk::Found),
}

impl<'a> Out<'a> {
    fn of(b: &'a Body) -> Out<'a> {
        match b {
            Body::Memory(b) => Out::Bytes(b),
            Body::Disk(f) => Out::File(f),
        }
    }

    fn len(self) -> u64 {
        match self {
            Out::Bytes(b) => b.len() as u64,
            Out::File(f) => f.body_len,
        }
    }

    /// Sends `len` bytes from `at` as the body of a `status` response.
    async fn send<'h>(
        self,
        ex: &mut Exchange<'_>,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        date: Option<&[u8]>,
        at: u64,
        len: u64,
    ) -> Result<(), Error> {
        match self {
            Out::Bytes(b) => {
                ex.send_dated(status, headers, date, &b[at as usize..(at + len) as usize])
            }
            Out::File(f) => {
                ex.send_file_dated(status, headers, date, f.std_file(), f.body_offset + at, len)
                    .await
            }
        }
    }
}
