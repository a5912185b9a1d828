//! RFC 9111's decisions for a shared cache, as pure functions of a
//! request's fields, a response's fields and the time (unix seconds), so
//! that each rule is tested by a table without sockets. The store and the
//! edge (mechanism) ask; nothing here keeps state.
//!
//! ```text
//! response ─▶ storable? (§3) ─ no ─▶ passed on; the key remembers it (hit-for-miss)
//!                │ yes
//!                ▼
//!           Meta: lifetime (§4.2.1), the times its age is reckoned from (§4.2.3)
//!
//! request + Meta + now ─▶ usable() ─▶ Fresh                    serve
//!                                   ─▶ Stale(serve, refresh)  serve, refresh once (RFC 5861)
//!                                   ─▶ Validate               conditional request (§4.3)
//!                                   ─▶ Fetch                  the stored one cannot be used
//! ```

pub mod directives;
pub mod vary;

#[cfg(test)]
mod tests;

pub use directives::Directives;
use ringside_http::semantics::conditional::parse_http_date;

/// Statuses a cache may store without explicit freshness (RFC 9110
/// §15.1, "heuristically cacheable"), less 206: a partial response is
/// never stored here.
pub fn heuristically_cacheable(status: u16) -> bool {
    matches!(
        status,
        200 | 203 | 204 | 300 | 301 | 308 | 404 | 405 | 410 | 414 | 501
    )
}

/// Statuses this cache understands, for `must-understand` (§5.2.2.3).
fn understood(status: u16) -> bool {
    heuristically_cacheable(status)
        || matches!(status, 302 | 303 | 307 | 400 | 403 | 500 | 502 | 503 | 504)
}

/// Why a response is not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotStored {
    Method,
    Status,
    NoStore,
    Private,
    Authorization,
    SetCookie,
    VaryStar,
    /// Neither explicit freshness nor a status a heuristic may cover, nor
    /// validators to revalidate it with.
    NoFreshness,
}

impl NotStored {
    /// For Cache-Status's `detail`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotStored::Method => "method",
            NotStored::Status => "status",
            NotStored::NoStore => "no-store",
            NotStored::Private => "private",
            NotStored::Authorization => "authorization",
            NotStored::SetCookie => "set-cookie",
            NotStored::VaryStar => "vary-star",
            NotStored::NoFreshness => "no-freshness",
        }
    }
}

/// What a request brings to the storing decision.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestFacts {
    pub get: bool,
    pub authorization: bool,
    pub no_store: bool,
}

/// Whether a shared cache may store a response (RFC 9111 §3, §3.5), and
/// the directives it was judged by. A response with `Set-Cookie` is not
/// stored: it is one client's, and serving it to another would hand over
/// a session (nginx and Varnish refuse it the same way).
pub fn storable<'h>(
    req: RequestFacts,
    status: u16,
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) -> Result<(), NotStored> {
    let (d, targeted) = Directives::of_response(headers.clone());
    if !req.get {
        return Err(NotStored::Method);
    }
    if !(200..600).contains(&status) || status == 206 || status == 304 {
        return Err(NotStored::Status);
    }
    if d.must_understand && !understood(status) {
        return Err(NotStored::Status);
    }
    if (d.no_store && !(d.must_understand && understood(status))) || req.no_store {
        return Err(NotStored::NoStore);
    }
    if d.private {
        return Err(NotStored::Private);
    }
    if req.authorization && !(d.public || d.s_maxage.is_some() || d.must_revalidate) {
        return Err(NotStored::Authorization);
    }
    let has = |name: &str| {
        headers
            .clone()
            .any(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
    };
    if has("set-cookie") {
        return Err(NotStored::SetCookie);
    }
    if vary::is_star(headers.clone()) {
        return Err(NotStored::VaryStar);
    }
    let explicit = d.public
        || d.max_age.is_some()
        || d.s_maxage.is_some()
        || (!targeted && has("expires"))
        || d.no_cache;
    if !(explicit || heuristically_cacheable(status)) {
        return Err(NotStored::NoFreshness);
    }
    Ok(())
}

/// How a stored response's freshness and age are reckoned, fixed when it
/// is stored and when a 304 updates it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// When the request that got it was sent, and when the response came.
    pub request_time: u64,
    pub response_time: u64,
    /// §4.2.3's corrected initial age.
    pub initial_age: u64,
    /// §4.2.1's freshness lifetime.
    pub lifetime: u64,
    /// RFC 5861's windows, already capped by the config.
    pub stale_while_revalidate: u64,
    pub stale_if_error: u64,
    /// Stale, it may not be served at all (must-revalidate,
    /// proxy-revalidate, s-maxage: §4.2.4, §5.2.2.2, §5.2.2.8, §5.2.2.10).
    pub no_stale: bool,
    /// Every use is validated first (`no-cache`, §5.2.2.4).
    pub no_cache: bool,
}

/// The caps and heuristic the config sets.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub heuristic_percent: u32,
    pub heuristic_max: u64,
    pub stale_while_revalidate_max: u64,
    pub stale_if_error_max: u64,
}

impl Meta {
    /// The meta of a response received at `response_time` to a request
    /// sent at `request_time`.
    pub fn of<'h>(
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
        request_time: u64,
        response_time: u64,
        limits: &Limits,
    ) -> Meta {
        let (d, targeted) = Directives::of_response(headers.clone());
        let first = |name: &str| {
            headers
                .clone()
                .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                .map(|(_, v)| v)
        };
        let date = first("date")
            .and_then(parse_http_date)
            .unwrap_or(response_time);
        let age_value = first("age").and_then(age_value).unwrap_or(0);
        let apparent_age = response_time.saturating_sub(date);
        let corrected_age = age_value + response_time.saturating_sub(request_time);
        let lifetime = if let Some(s) = d.s_maxage {
            s
        } else if let Some(m) = d.max_age {
            m
        } else if let (false, Some(e)) = (targeted, first("expires")) {
            // An invalid Expires (say "0") is a time in the past.
            lenient_date(e).map_or(0, |e| e.saturating_sub(date))
        } else if heuristically_cacheable(status) || d.public {
            // §4.2.2: a fraction of the time since Last-Modified.
            first("last-modified")
                .and_then(parse_http_date)
                .map_or(0, |lm| {
                    let since = date.saturating_sub(lm);
                    (since * u64::from(limits.heuristic_percent) / 100).min(limits.heuristic_max)
                })
        } else {
            0
        };
        Meta {
            request_time,
            response_time,
            initial_age: apparent_age.max(corrected_age),
            lifetime,
            stale_while_revalidate: d
                .stale_while_revalidate
                .unwrap_or(0)
                .min(limits.stale_while_revalidate_max),
            stale_if_error: d.stale_if_error.unwrap_or(0).min(limits.stale_if_error_max),
            no_stale: d.must_revalidate || d.proxy_revalidate || d.s_maxage.is_some(),
            no_cache: d.no_cache,
        }
    }

    /// §4.2.3's current age.
    pub fn age(&self, now: u64) -> u64 {
        self.initial_age + now.saturating_sub(self.response_time)
    }

    pub fn fresh(&self, now: u64) -> bool {
        self.age(now) < self.lifetime
    }

    /// Seconds past its freshness; 0 while fresh.
    pub fn staleness(&self, now: u64) -> u64 {
        self.age(now).saturating_sub(self.lifetime)
    }

    /// Whether it may be served stale because its origin failed
    /// (RFC 5861 §4).
    pub fn serves_on_error(&self, now: u64) -> bool {
        !self.no_stale
            && !self.no_cache
            && self.staleness(now) <= self.stale_if_error
            && self.stale_if_error > 0
    }
}

/// An HTTP-date as senders get it wrong: names in any case, and a weekday
/// that is not the date's (RFC 9110 §5.6.7 asks a recipient to be
/// lenient with a date it only uses for freshness).
pub fn lenient_date(v: &[u8]) -> Option<u64> {
    if let Some(t) = parse_http_date(v) {
        return Some(t);
    }
    let v = ringside_http::grammar::trim_ows(v);
    if v.len() > 40 {
        return None;
    }
    // Title case for names, GMT in capitals.
    let mut fixed = v.to_vec();
    let mut word_start = true;
    for b in &mut fixed {
        if b.is_ascii_alphabetic() {
            *b = if word_start {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
            word_start = false;
        } else {
            word_start = true;
        }
    }
    if fixed.ends_with(b"Gmt") {
        let n = fixed.len();
        fixed[n - 3..].copy_from_slice(b"GMT");
    }
    if let Some(t) = parse_http_date(&fixed) {
        return Some(t);
    }
    // A wrong weekday: the one that parses.
    if fixed.len() >= 4 && (fixed[3] == b',' || fixed[3] == b' ') {
        for day in [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"] {
            fixed[..3].copy_from_slice(day);
            if let Some(t) = parse_http_date(&fixed) {
                return Some(t);
            }
        }
    }
    None
}

/// `Age`'s first member, when it is a valid delta-seconds (§5.1: else
/// ignored).
fn age_value(v: &[u8]) -> Option<u64> {
    let v = ringside_http::grammar::trim_ows(v.split(|&b| b == b',').next()?);
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        v.iter()
            .try_fold(0u64, |n, &d| {
                n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
            .unwrap_or(1 << 31)
            .min(1 << 31),
    )
}

/// What a stored response can do for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usable {
    Fresh,
    /// Served stale; `refresh`: within stale-while-revalidate, so one
    /// background revalidation should run (else the client's max-stale
    /// allowed it).
    Stale {
        refresh: bool,
    },
    /// Only after the origin says it is still good (§4.3).
    Validate,
}

/// Whether a stored response with `meta` answers a request with
/// directives `req` at `now` (§4.2, §5.2.1).
pub fn usable(meta: &Meta, req: &Directives, now: u64) -> Usable {
    if meta.no_cache || req.no_cache {
        return Usable::Validate;
    }
    let age = meta.age(now);
    if req.max_age.is_some_and(|m| age > m) {
        return Usable::Validate;
    }
    if let Some(min) = req.min_fresh {
        if meta.lifetime.saturating_sub(age) < min {
            return Usable::Validate;
        }
    }
    if age < meta.lifetime {
        return Usable::Fresh;
    }
    if meta.no_stale {
        return Usable::Validate;
    }
    let stale = age - meta.lifetime;
    if req.max_stale.is_some_and(|m| stale <= m) && req.max_age.is_none() {
        return Usable::Stale { refresh: false };
    }
    if stale < meta.stale_while_revalidate {
        return Usable::Stale { refresh: true };
    }
    Usable::Validate
}

/// Whether a response to an unsafe method invalidates what is stored
/// for its target (§4.4): a success or a redirect, not an error.
pub fn invalidates(method: &[u8], status: u16) -> bool {
    let safe = matches!(method, b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PURGE");
    !safe && (200..400).contains(&status)
}

/// Fields never stored (hop-by-hop ones are gone already): Age is sent
/// as this cache reckons it, and Cache-Status is its own. The targeted
/// fields (RFC 9213) are kept, as a 304 may leave them standing, but never
/// sent on (`ringside_http::capture::targeted_cache_field`).
pub fn kept_in_store(name: &[u8]) -> bool {
    let is = |f: &str| name.eq_ignore_ascii_case(f.as_bytes());
    !(is("age") || is("cache-status"))
}

/// The stored fields updated by a 304 (§3.2, §4.3.4): each field the 304
/// carries replaces the stored ones of its name, except those that
/// describe the body or its framing.
pub fn updated_by_304<'a>(
    stored: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    fresh: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
) -> Vec<(&'a [u8], &'a [u8])> {
    let kept_out = |n: &[u8]| {
        let is = |f: &str| n.eq_ignore_ascii_case(f.as_bytes());
        is("content-length")
            || is("content-encoding")
            || is("transfer-encoding")
            || is("content-range")
            || !kept_in_store(n)
    };
    let replaced = |n: &[u8]| !kept_out(n) && fresh.clone().any(|(f, _)| f.eq_ignore_ascii_case(n));
    let mut out: Vec<_> = stored.filter(|(n, _)| !replaced(n)).collect();
    out.extend(fresh.clone().filter(|(n, _)| !kept_out(n)));
    out
}
