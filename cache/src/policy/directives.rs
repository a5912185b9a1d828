//! Cache-Control directives (RFC 9111 §5.2), of a request or a response,
//! and the targeted fields that outrank a response's Cache-Control for
//! this cache (RFC 9213: `Ringside-Cache-Control`, then
//! `CDN-Cache-Control`).

use ringside_http::grammar::trim_ows;

/// `delta-seconds` past 2^31 is taken as 2^31 (RFC 9111 §1.2.2).
const DELTA_MAX: u64 = 1 << 31;

/// The directives this cache acts on; others are ignored (§5.2.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    pub no_store: bool,
    /// Qualified or not: a shared cache revalidates every use either way.
    pub no_cache: bool,
    /// Qualified or not: a shared cache never stores it.
    pub private: bool,
    pub public: bool,
    pub must_revalidate: bool,
    pub proxy_revalidate: bool,
    pub must_understand: bool,
    pub immutable: bool,
    pub only_if_cached: bool,
    /// Seconds. A value that is not a valid delta-seconds is 0: the
    /// response is stale (§4.2.1 lets a cache treat it so).
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
    /// A request's `max-stale`: without a value, any staleness
    /// (`u64::MAX`).
    pub max_stale: Option<u64>,
    pub min_fresh: Option<u64>,
    pub stale_while_revalidate: Option<u64>,
    pub stale_if_error: Option<u64>,
}

impl Directives {
    /// Parses every value given, in order; of a directive given twice
    /// the first counts (§4.2.1).
    pub fn parse<'v>(values: impl IntoIterator<Item = &'v [u8]>) -> Directives {
        let mut d = Directives::default();
        let mut seen = Seen::default();
        for v in values {
            for (name, arg) in elements(v) {
                d.take(name, arg, &mut seen);
            }
        }
        d
    }

    fn take(&mut self, name: &[u8], arg: Option<&[u8]>, seen: &mut Seen) {
        let is = |d: &str| name.eq_ignore_ascii_case(d.as_bytes());
        let secs = |slot: &mut Option<u64>, seen: &mut bool| {
            if !std::mem::replace(seen, true) {
                *slot = Some(arg.map_or(0, delta_seconds));
            }
        };
        if is("no-store") {
            self.no_store = true;
        } else if is("no-cache") {
            self.no_cache = true;
        } else if is("private") {
            self.private = true;
        } else if is("public") {
            self.public = true;
        } else if is("must-revalidate") {
            self.must_revalidate = true;
        } else if is("proxy-revalidate") {
            self.proxy_revalidate = true;
        } else if is("must-understand") {
            self.must_understand = true;
        } else if is("immutable") {
            self.immutable = true;
        } else if is("only-if-cached") {
            self.only_if_cached = true;
        } else if is("max-age") {
            secs(&mut self.max_age, &mut seen.max_age);
        } else if is("s-maxage") {
            secs(&mut self.s_maxage, &mut seen.s_maxage);
        } else if is("min-fresh") {
            secs(&mut self.min_fresh, &mut seen.min_fresh);
        } else if is("stale-while-revalidate") {
            secs(
                &mut self.stale_while_revalidate,
                &mut seen.stale_while_revalidate,
            );
        } else if is("stale-if-error") {
            secs(&mut self.stale_if_error, &mut seen.stale_if_error);
        } else if is("max-stale") && !std::mem::replace(&mut seen.max_stale, true) {
            self.max_stale = Some(arg.map_or(u64::MAX, delta_seconds));
        }
    }

    /// A response's directives for this cache: the first targeted field
    /// with a valid, non-empty value, else Cache-Control (RFC 9213 §2.1).
    /// The second value says whether a targeted field decided (then
    /// `Expires` is ignored as well).
    pub fn of_response<'h>(
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
    ) -> (Directives, bool) {
        for target in TARGETED {
            let mut values = headers
                .clone()
                .filter(|(n, _)| n.eq_ignore_ascii_case(target.as_bytes()))
                .map(|(_, v)| v)
                .peekable();
            if values.peek().is_some() {
                let all: Vec<&[u8]> = values.collect();
                if all.iter().all(|v| valid_dictionary(v))
                    && all.iter().any(|v| !trim_ows(v).is_empty())
                {
                    return (Directives::parse(all), true);
                }
            }
        }
        (Directives::parse(field(headers, "cache-control")), false)
    }

    /// A request's directives (its Cache-Control; Pragma is not read:
    /// RFC 9111 §5.4 deprecates it).
    pub fn of_request<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> Directives {
        Directives::parse(field(headers, "cache-control"))
    }
}

/// The targeted fields, in the order they outrank one another; neither is
/// sent on to clients.
pub const TARGETED: [&str; 2] = ["ringside-cache-control", "cdn-cache-control"];

#[derive(Default)]
struct Seen {
    max_age: bool,
    s_maxage: bool,
    min_fresh: bool,
    max_stale: bool,
    stale_while_revalidate: bool,
    stale_if_error: bool,
}

fn field<'h>(
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    name: &'static str,
) -> impl Iterator<Item = &'h [u8]> {
    headers
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
        .map(|(_, v)| v)
}

/// `delta-seconds` (§1.2.2), a quoted form accepted as well; anything else
/// is 0, which makes a response stale.
fn delta_seconds(arg: &[u8]) -> u64 {
    let arg = match arg {
        [b'"', inner @ .., b'"'] => inner,
        a => a,
    };
    if arg.is_empty() || !arg.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    arg.iter()
        .try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .map_or(DELTA_MAX, |n| n.min(DELTA_MAX))
}

/// The `name[=arg]` elements of a Cache-Control value, quoted arguments
/// (which may hold commas) kept whole.
pub fn elements(v: &[u8]) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
    let mut rest = v;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let mut i = 0;
        let mut quoted = false;
        while i < rest.len() {
            match rest[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b',' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        let (elem, tail) = rest.split_at(i.min(rest.len()));
        rest = tail.get(1..).unwrap_or(&[]);
        let elem = trim_ows(elem);
        if elem.is_empty() {
            continue;
        }
        return Some(match elem.iter().position(|&b| b == b'=') {
            Some(eq) => (trim_ows(&elem[..eq]), Some(trim_ows(&elem[eq + 1..]))),
            None => (elem, None),
        });
    })
}

/// Whether a targeted field's value parses as a Structured Fields
/// Dictionary as far as this cache reads one (RFC 8941 §3.2): keys in
/// lower case, values tokens, integers or strings.
fn valid_dictionary(v: &[u8]) -> bool {
    elements(v).all(|(name, arg)| {
        let key_ok = name
            .first()
            .is_some_and(|c| c.is_ascii_lowercase() || *c == b'*')
            && name
                .iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-.*".contains(&c));
        // The directives that take seconds take an Integer: a string
        // there is the wrong type, and makes the field invalid (RFC 9213
        // §2.1, RFC 8941).
        let seconds = [
            "max-age",
            "s-maxage",
            "stale-while-revalidate",
            "stale-if-error",
        ];
        if seconds.iter().any(|d| name == d.as_bytes()) {
            return arg.is_some_and(|a| !a.is_empty() && a.iter().all(u8::is_ascii_digit));
        }
        let arg_ok = match arg {
            None => true,
            Some([b'"', .., b'"']) => true,
            Some(a) => {
                !a.is_empty()
                    && (a
                        .iter()
                        .all(|&c| c.is_ascii_digit() || c == b'-' || c == b'.')
                        || a.iter().all(|&c| {
                            ringside_http::grammar::is_tchar(c) || c == b'/' || c == b':'
                        }))
            }
        };
        key_ok && arg_ok
    })
}
