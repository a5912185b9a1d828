//! One response for a file: validators, conditional requests (RFC 9110 §13),
//! ranges (§14), and the body from memory or from the file.

use std::fs::File;
use std::rc::Rc;

use bytes::Bytes;
use ringside_http::semantics::conditional::{self, Conditions, Precondition};
use ringside_http::semantics::negotiation::Coding;
use ringside_http::semantics::range::{self, ByteRange, RangeOutcome};
use ringside_http::{Error, Exchange};

use crate::cache::{Entry, Meta};

/// Where the body comes from.
pub enum Source {
    /// Cached bytes, sent with the head in one write.
    Bytes(Bytes),
    /// An open file, sent without a copy; shared with this core's cache
    /// when it keeps the file open.
    File(Rc<File>),
}

impl Source {
    /// The body of a cached entry.
    pub fn of(e: &Entry) -> Source {
        match &e.file {
            Some(f) => Source::File(f.clone()),
            None => Source::Bytes(e.body.clone()),
        }
    }
}

/// The part of a response that waits on the socket: file bodies.
pub enum Job {
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
    },
    Multi {
        file: Rc<File>,
        parts: Vec<(Vec<u8>, ByteRange)>,
        closing: Vec<u8>,
    },
}

impl Job {
    pub async fn run(self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        match self {
            Job::File { file, offset, len } => ex.write_file(&file, offset, len).await,
            Job::Multi {
                file,
                parts,
                closing,
            } => {
                for (head, r) in &parts {
                    ex.write_body(head).await?;
                    ex.write_file(&file, r.start, r.len()).await?;
                }
                ex.write_body(&closing).await
            }
        }
    }
}

/// The request headers this module reads, found in one pass.
#[derive(Default)]
struct Asked<'a> {
    cond: Conditions<'a>,
    range: Option<&'a [u8]>,
    if_range: Option<&'a [u8]>,
}

fn asked<'a>(ex: &'a Exchange<'_>) -> Asked<'a> {
    let mut a = Asked::default();
    for (name, value) in ex.headers() {
        let slot = match name.len() {
            5 if name.eq_ignore_ascii_case(b"range") => &mut a.range,
            8 if name.eq_ignore_ascii_case(b"if-match") => &mut a.cond.if_match,
            8 if name.eq_ignore_ascii_case(b"if-range") => &mut a.if_range,
            13 if name.eq_ignore_ascii_case(b"if-none-match") => &mut a.cond.if_none_match,
            17 if name.eq_ignore_ascii_case(b"if-modified-since") => &mut a.cond.if_modified_since,
            19 if name.eq_ignore_ascii_case(b"if-unmodified-since") => {
                &mut a.cond.if_unmodified_since
            }
            _ => continue,
        };
        slot.get_or_insert(value);
    }
    a
}

/// Headers of a file response, on the stack.
struct Headers<'a> {
    items: [(&'static str, &'a [u8]); 9],
    len: usize,
}

impl<'a> Headers<'a> {
    fn new() -> Self {
        Headers {
            items: [("", b""); 9],
            len: 0,
        }
    }
    fn push(&mut self, name: &'static str, value: &'a [u8]) {
        self.items[self.len] = (name, value);
        self.len += 1;
    }
    fn as_slice(&self) -> &[(&'static str, &'a [u8])] {
        &self.items[..self.len]
    }
}

/// Answers a GET or HEAD for a file. Returns the transfer still to run when
/// the body comes from the file.
pub fn respond(
    ex: &mut Exchange<'_>,
    meta: &Meta,
    ctype: &str,
    src: Source,
    cache_control: Option<&[u8]>,
    vary: bool,
    coding: Option<Coding>,
) -> Result<Option<Job>, Error> {
    // Validators and caching headers go on 200, 206 and 304 alike.
    let mut h = Headers::new();
    h.push("ETag", meta.etag.as_bytes());
    h.push("Last-Modified", &meta.last_modified);
    if let Some(cc) = cache_control {
        h.push("Cache-Control", cc);
    }
    if vary {
        h.push("Vary", b"Accept-Encoding");
    }
    let a = asked(ex);
    match conditional::evaluate(&a.cond, meta.etag.as_bytes(), meta.mtime) {
        Precondition::Proceed => {}
        Precondition::NotModified => {
            ex.send(304, h.as_slice(), b"")?;
            return Ok(None);
        }
        Precondition::Failed => {
            ex.send(
                412,
                &[("Content-Type", b"text/plain")],
                b"412 Precondition Failed\n",
            )?;
            return Ok(None);
        }
    }
    if let Some(c) = coding {
        h.push("Content-Encoding", c.token().as_bytes());
    }
    h.push("Accept-Ranges", b"bytes");
    let outcome = match a.range {
        Some(r)
            if a.if_range.is_none_or(|v| {
                conditional::if_range_matches(v, meta.etag.as_bytes(), meta.mtime)
            }) =>
        {
            range::parse_range(r, meta.len)
        }
        _ => RangeOutcome::Ignore,
    };
    let mut cr = [0u8; range::CONTENT_RANGE_MAX];
    match outcome {
        RangeOutcome::Ignore | RangeOutcome::Excessive => {
            h.push("Content-Type", ctype.as_bytes());
            body(ex, 200, &h, src, 0, meta.len)
        }
        RangeOutcome::Single(r) => {
            h.push("Content-Type", ctype.as_bytes());
            h.push("Content-Range", range::content_range(r, meta.len, &mut cr));
            body(ex, 206, &h, src, r.start, r.len())
        }
        RangeOutcome::Unsatisfiable => {
            let v = range::content_range_unsatisfied(meta.len, &mut cr);
            ex.send(
                416,
                &[("Content-Range", v), ("Content-Type", b"text/plain")],
                b"416 Range Not Satisfiable\n",
            )?;
            Ok(None)
        }
        RangeOutcome::Multi(set) => {
            let boundary =
                range::boundary(meta.ino ^ meta.len.rotate_left(17) ^ meta.mtime_ns as u64);
            let mut mct = Vec::with_capacity(64);
            mct.extend_from_slice(b"multipart/byteranges; boundary=");
            mct.extend_from_slice(&boundary);
            h.push("Content-Type", &mct);
            let total = range::multipart_len(&set, &boundary, ctype.as_bytes(), meta.len);
            match src {
                Source::Bytes(bytes) => {
                    let mut out = Vec::with_capacity(total as usize);
                    for r in set.as_slice() {
                        range::write_part_head(&mut out, &boundary, ctype.as_bytes(), *r, meta.len);
                        out.extend_from_slice(&bytes[r.start as usize..=r.end as usize]);
                    }
                    range::write_closing(&mut out, &boundary);
                    ex.send(206, h.as_slice(), &out)?;
                    Ok(None)
                }
                Source::File(file) => {
                    ex.start_sized(206, h.as_slice(), total)?;
                    let mut parts = Vec::with_capacity(set.as_slice().len());
                    for r in set.as_slice() {
                        let mut head = Vec::with_capacity(128);
                        range::write_part_head(
                            &mut head,
                            &boundary,
                            ctype.as_bytes(),
                            *r,
                            meta.len,
                        );
                        parts.push((head, *r));
                    }
                    let mut closing = Vec::with_capacity(32);
                    range::write_closing(&mut closing, &boundary);
                    Ok(Some(Job::Multi {
                        file,
                        parts,
                        closing,
                    }))
                }
            }
        }
    }
}

fn body(
    ex: &mut Exchange<'_>,
    status: u16,
    h: &Headers<'_>,
    src: Source,
    offset: u64,
    len: u64,
) -> Result<Option<Job>, Error> {
    match src {
        Source::Bytes(bytes) => {
            let (from, to) = (offset as usize, (offset + len) as usize);
            if (from, to) == (0, bytes.len()) {
                ex.send_shared(status, h.as_slice(), &bytes)?;
            } else {
                ex.send_shared(status, h.as_slice(), &bytes.slice(from..to))?;
            }
            Ok(None)
        }
        Source::File(file) => {
            ex.start_sized(status, h.as_slice(), len)?;
            Ok(Some(Job::File { file, offset, len }))
        }
    }
}
