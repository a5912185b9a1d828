//! A copy of a response as it goes to the client, for a cache to store:
//! the head as the upstream sent it and the body before any compression.
//! The exchange feeds it (`Exchange::capture`); whether what was caught is
//! whole is the exchange's to say (`Exchange::complete`) once the handler
//! is done, so a response cut short is never taken for a stored one.
//!
//! It also shapes the request that goes upstream for the cache: the
//! client's own conditions and ranges are left out (the cache wants the
//! whole response, and answers them itself from it), and the cache's
//! validators go in their place when it revalidates what it holds.

use std::rc::Rc;

/// Header fields as owned name and value bytes.
pub type Fields = Vec<(Box<[u8]>, Box<[u8]>)>;

/// What else hears of a caught response as it goes: the requests a cache
/// made wait for this one's fetch, which stream it as it arrives.
pub trait Sink {
    /// The head, as caught (the Date included), and the body's length
    /// where it is sized.
    fn head(&self, c: &Capture, length: Option<u64>);
    /// A piece of the body, before any compression.
    fn body(&self, data: &[u8]);
}

/// A capture's [`Sink`].
#[derive(Clone)]
pub struct Tee(pub Rc<dyn Sink>);

impl std::fmt::Debug for Tee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tee")
    }
}

/// What a capture caught, and what it asks of the upstream request.
#[derive(Debug, Default)]
pub struct Capture {
    /// Leave the client's conditional and range fields out upstream.
    pub strip_conditions: bool,
    /// Fields added upstream (the stored response's validators).
    pub validators: Vec<(&'static [u8], Box<[u8]>)>,
    /// A body past this many bytes is not kept (`over` is set).
    pub limit: u64,
    pub over: bool,
    /// 0 until the response started.
    pub status: u16,
    pub headers: Fields,
    /// The upstream's Date, which the protocol does not pass on (it
    /// writes its own), but which a stored response's age counts from.
    pub date: Option<Box<[u8]>>,
    pub body: Vec<u8>,
    /// Statuses kept from the client: a 304 to the cache's own
    /// validators (the client asked for the whole response), and, where a
    /// stale response may stand in, a 5xx. The cache answers instead.
    pub hold_not_modified: bool,
    pub hold_errors: bool,
    /// The client was answered already (a stale response served while
    /// this fetch refreshes it): nothing of this response goes to it.
    pub detached: bool,
    /// `Cache-Status` (RFC 9211) for the response passed on.
    pub cache_status: Option<Box<[u8]>>,
    /// Told of the head and every piece of the body as they come.
    pub sink: Option<Tee>,
}

impl Capture {
    pub fn new(limit: u64) -> Capture {
        Capture {
            strip_conditions: true,
            limit,
            ..Capture::default()
        }
    }

    pub(crate) fn head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        length: Option<u64>,
    ) {
        self.status = status;
        self.headers = headers.map(|(n, v)| (n.into(), v.into())).collect();
        if let Some(t) = self.sink.clone() {
            t.0.head(self, length);
        }
    }

    /// Whether a response of `status` is kept from the client.
    pub fn holds(&self, status: u16) -> bool {
        self.detached
            || (self.hold_not_modified && status == 304)
            || (self.hold_errors && status >= 500)
    }

    pub(crate) fn body(&mut self, data: &[u8]) {
        if let Some(t) = &self.sink {
            t.0.body(data);
        }
        if self.over {
            return;
        }
        if (self.body.len() + data.len()) as u64 > self.limit {
            self.over = true;
            self.body = Vec::new();
            return;
        }
        self.body.extend_from_slice(data);
    }
}

/// Whether `name` is a targeted cache field (RFC 9213) a cache in front
/// obeys and does not pass on: `CDN-Cache-Control`, `Ringside-Cache-Control`.
pub fn targeted_cache_field(name: &[u8]) -> bool {
    matches!(name.len(), 17 | 22)
        && (name.eq_ignore_ascii_case(b"cdn-cache-control")
            || name.eq_ignore_ascii_case(b"ringside-cache-control"))
}

/// The request fields a capturing request does not send upstream.
pub(crate) fn is_condition(name: &[u8]) -> bool {
    let is = |f: &str| name.eq_ignore_ascii_case(f.as_bytes());
    name.len() >= 5
        && (is("if-none-match")
            || is("if-modified-since")
            || is("if-match")
            || is("if-unmodified-since")
            || is("if-range")
            || is("range"))
}
