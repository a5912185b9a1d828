//! What the store keeps under a key: the key itself (the store is indexed
//! by its hash) and the key's variants, one per `Vary` secondary key.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;
use ringside_http::capture::Fields;

use crate::policy::{self, Meta};

pub struct Entry {
    pub key: Box<[u8]>,
    /// Newest first.
    pub variants: Vec<Rc<Variant>>,
}

impl Entry {
    /// Bytes charged for the entry.
    pub fn weight(&self) -> u64 {
        self.key.len() as u64 + self.variants.iter().map(|v| v.weight()).sum::<u64>()
    }
}

/// One stored response.
pub struct Variant {
    /// The names its Vary lists, and the hash of the values they had.
    pub vary: Vec<Box<[u8]>>,
    pub secondary: u64,
    pub meta: Meta,
    pub status: u16,
    /// As the origin sent them (Date included), less Age and the fields
    /// only this cache reads.
    pub headers: Fields,
    pub body: Body,
    /// `Surrogate-Key` and `Cache-Tag` members, for purges by tag.
    pub tags: Vec<Box<[u8]>>,
    /// A soft purge: taken as stale from now on.
    pub soft_purged: Cell<bool>,
    /// Compressed copies of the body, made once each on the first hit
    /// that takes the coding.
    pub encoded: RefCell<Vec<crate::serve::Encoded>>,
    /// Its Last-Modified and Date, read once (a hit compares the client's
    /// conditions with them).
    pub dates: Dates,
}

/// Where a stored body is: in memory, or (a large one) in its disk tier
/// file, sent from there without a copy.
#[derive(Clone)]
pub enum Body {
    Memory(Bytes),
    Disk(Rc<crate::store::disk::Found>),
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::Memory(b) => b.len() as u64,
            Body::Disk(f) => f.body_len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when they are in memory.
    pub fn bytes(&self) -> Option<&Bytes> {
        match self {
            Body::Memory(b) => Some(b),
            Body::Disk(_) => None,
        }
    }

    /// Bytes it holds in memory (a file's body holds none).
    fn in_memory(&self) -> usize {
        self.bytes().map_or(0, Bytes::len)
    }
}

/// A stored response's Last-Modified and Date in unix seconds, and
/// whether its Date is sent as it came.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dates {
    pub last_modified: Option<u64>,
    pub date: Option<u64>,
    /// A well-formed IMF-fixdate: sent on hits in place of now.
    pub date_sendable: bool,
}

impl Dates {
    pub fn of<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone) -> Dates {
        use ringside_http::semantics::conditional::parse_http_date;
        let find = |name: &str| {
            headers
                .clone()
                .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                .map(|(_, v)| v)
        };
        let lm = find("last-modified").and_then(parse_http_date);
        let date_field = find("date");
        let date = date_field.and_then(parse_http_date);
        Dates {
            last_modified: lm,
            date,
            date_sendable: date.is_some() && date_field.is_some_and(|d| d.len() == 29),
        }
    }
}

/// Stored fields as name and value slices.
pub fn headers_iter(h: &Fields) -> impl Iterator<Item = (&[u8], &[u8])> + Clone {
    h.iter().map(|(n, v)| (&n[..], &v[..]))
}

impl Variant {
    pub fn weight(&self) -> u64 {
        let h: usize = self
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.len() + 32)
            .sum();
        let e: usize = self
            .encoded
            .borrow()
            .iter()
            .map(|e| e.body.len() + 32)
            .sum();
        (h + self.body.in_memory() + e + 128) as u64
    }

    /// The compressed copy in `coding`, made now (and kept) if there is
    /// none yet, and whether it was made now; `None` when compressing
    /// failed or gained nothing.
    pub fn encoded_in(
        &self,
        coding: ringside_http::semantics::negotiation::Coding,
        levels: &ringside_http::compress::Levels,
    ) -> Option<(Bytes, bool)> {
        if let Some(e) = self.encoded.borrow().iter().find(|e| e.coding == coding) {
            return (!e.body.is_empty()).then(|| (e.body.clone(), false));
        }
        // A body on disk is sent as it is: large, and most often a kind
        // (media, archives) compression does not help.
        let identity = self.body.bytes()?;
        let out = ringside_http::compress::encoder::compress(coding, levels, identity).ok();
        // An empty copy marks a coding that gained nothing: not tried again.
        let body: Bytes = out
            .filter(|o| o.len() < identity.len())
            .unwrap_or_default()
            .into();
        self.encoded.borrow_mut().push(crate::serve::Encoded {
            coding,
            body: body.clone(),
        });
        (!body.is_empty()).then_some((body, true))
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &v[..])
    }

    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone {
        self.headers.iter().map(|(n, v)| (&n[..], &v[..]))
    }

    /// The meta as a purge left it: soft-purged, it is stale now.
    pub fn meta(&self) -> Meta {
        let mut m = self.meta;
        if self.soft_purged.get() {
            m.lifetime = 0;
        }
        m
    }

    /// The validators a revalidation sends (RFC 9111 §4.3.1).
    pub fn validators(&self) -> Vec<(&'static [u8], Box<[u8]>)> {
        let mut v = Vec::new();
        if let Some(e) = self.header("etag") {
            v.push((&b"If-None-Match"[..], e.into()));
        }
        if let Some(lm) = self.header("last-modified") {
            v.push((&b"If-Modified-Since"[..], lm.into()));
        }
        v
    }

    /// The tags a response carries.
    pub fn tags_of<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> Vec<Box<[u8]>> {
        headers
            .filter(|(n, _)| {
                n.eq_ignore_ascii_case(b"surrogate-key") || n.eq_ignore_ascii_case(b"cache-tag")
            })
            .flat_map(|(_, v)| v.split(|&b| b == b' ' || b == b','))
            .filter(|t| !t.is_empty())
            .map(Box::from)
            .collect()
    }

    /// This variant after a 304 (RFC 9111 §4.3.4): its fields updated,
    /// its age reckoned anew from the 304.
    pub fn refreshed(&self, fresh: &Fields, meta: Meta) -> Variant {
        let fresh = fresh.iter().map(|(n, v)| (&n[..], &v[..]));
        let headers: Fields = policy::updated_by_304(self.pairs(), fresh)
            .into_iter()
            .map(|(n, v)| (n.into(), v.into()))
            .collect();
        Variant {
            vary: self.vary.clone(),
            secondary: self.secondary,
            meta,
            status: self.status,
            body: self.body.clone(),
            tags: self.tags.clone(),
            soft_purged: Cell::new(false),
            encoded: RefCell::default(),
            dates: Dates::of(headers_iter(&headers)),
            headers,
        }
    }
}
