//! Files compressed on the fly, once: a file held in memory that its route
//! compresses is compressed the first time a client takes a coding, and
//! the result is cached beside the file under its own key, with a variant
//! ETag made from the file's (`W/"<file's tag>-gzip"`). Later requests are
//! served from that entry with no compression at all until the file
//! changes: the variant's ETag then no longer matches the file's, and the
//! next request compresses it again. A range request, a file too large to
//! hold in memory, or one whose type the route does not compress, is sent
//! as it is.

use std::time::Instant;

use bytes::Bytes;
use ringside_http::compress::{encoder, Policy, CACHED_ORDER, STREAMED_ORDER};
use ringside_http::semantics::conditional::{self, Conditions, Precondition};
use ringside_http::semantics::negotiation::Coding;
use ringside_http::{Error, Exchange};

use crate::cache::{Cache, Entry, Lookup, Meta};
use crate::respond::{respond, Job, Source};
use crate::{Route, VARIANT_KEY};

/// Separates a compressed entry's coding from its path in the cache key:
/// no decoded path holds a NUL.
const CODING_MARK: u8 = 0;

/// Whether `policy` compresses the cached entry `e` for some client: the
/// identity response then carries `Vary: Accept-Encoding` too.
pub(crate) fn compressible(policy: Option<&Policy>, e: &Entry) -> bool {
    policy.is_some_and(|p| {
        e.file.is_none() && e.meta.len >= p.min_size && p.type_matches(e.ctype.as_bytes())
    })
}

/// Serves the cached entry `i` compressed, when this client takes a
/// coding and asked for no range. `Ok(None)`: serve it as it is.
pub(crate) fn serve(
    ex: &mut Exchange<'_>,
    cache: &mut Cache,
    i: usize,
    route: &Route,
    scratch: &mut Vec<u8>,
    policy: &Policy,
    now: Instant,
) -> Result<Option<Option<Job>>, Error> {
    if ex.header("range").is_some() {
        return Ok(None);
    }
    let Some(coding) = policy.choose(ex.header("accept-encoding"), &CACHED_ORDER) else {
        return Ok(None);
    };
    let file = cache.get(i);
    let etag = file.meta.etag.variant(coding.token());
    let base_len = scratch.len();
    scratch.push(CODING_MARK);
    scratch.extend_from_slice(coding.token().as_bytes());
    scratch[0] |= VARIANT_KEY;
    let cached = match cache.lookup(scratch, now) {
        Lookup::Fresh(c) | Lookup::Stale(c) if cache.get(c).meta.etag == etag => {
            // The file's entry was just checked against the disk, and
            // this one is of the same file.
            cache.confirm(c, now);
            let e = cache.get(c);
            Some((e.meta.clone(), e.body.clone(), e.ctype.clone()))
        }
        _ => None,
    };
    let (meta, body, ctype) = match cached {
        Some(hit) => hit,
        None => {
            let file = cache.get(i);
            let (mut meta, ctype) = (file.meta.clone(), file.ctype.clone());
            let body = compress(coding, policy, &file.body)?;
            meta.len = body.len() as u64;
            meta.etag = etag;
            cache.insert(
                scratch,
                Entry::new(meta.clone(), body.clone(), ctype.clone(), 0, now),
            );
            (meta, body, ctype)
        }
    };
    scratch.truncate(base_len);
    scratch[0] &= !VARIANT_KEY;
    let job = respond(
        ex,
        &meta,
        &ctype,
        Source::Bytes(body),
        route.cache_control.as_deref(),
        true,
        Some(coding),
    )?;
    Ok(Some(job))
}

/// A file too large to cache is compressed as it is sent, by the exchange,
/// with the variant ETag it would have if cached; an If-None-Match holding
/// that tag is a 304 here, before the file is opened for sending. True
/// when answered.
pub(crate) fn variant_not_modified(
    ex: &mut Exchange<'_>,
    meta: &Meta,
    ctype: &str,
    cache_control: Option<&[u8]>,
) -> Result<bool, Error> {
    let Some(p) = ex.compression() else {
        return Ok(false);
    };
    let asked = ex.header("if-none-match");
    if asked.is_none()
        || ex.header("if-match").is_some()
        || ex.header("range").is_some()
        || meta.len < p.min_size
        || !p.type_matches(ctype.as_bytes())
    {
        return Ok(false);
    }
    let Some(coding) = p.choose(ex.header("accept-encoding"), &STREAMED_ORDER) else {
        return Ok(false);
    };
    let tag = meta.etag.variant(coding.token());
    let cond = Conditions {
        if_none_match: asked,
        ..Conditions::default()
    };
    if conditional::evaluate(&cond, tag.as_bytes(), meta.mtime) != Precondition::NotModified {
        return Ok(false);
    }
    let mut h: Vec<(&str, &[u8])> = vec![
        ("ETag", tag.as_bytes()),
        ("Last-Modified", &meta.last_modified),
        ("Vary", b"Accept-Encoding"),
    ];
    if let Some(cc) = cache_control {
        h.push(("Cache-Control", cc));
    }
    ex.send(304, &h, b"")?;
    Ok(true)
}

fn compress(coding: Coding, policy: &Policy, data: &[u8]) -> Result<Bytes, Error> {
    encoder::compress(coding, &policy.levels, data)
        .map(Bytes::from)
        .map_err(|e| Error::internal("compressing a file").because(e))
}
