//! QPACK (RFC 9204) with the static table alone: our SETTINGS give the
//! server a dynamic table of zero, so every response section must be
//! static references and literals (Required Insert Count 0), and our
//! requests are encoded the same way, once per URL. That keeps a load
//! generator free of QPACK's encoder and decoder streams and of any
//! per-connection table state, at the cost of a few bytes a request that
//! a dynamic table would save (the server's work per request is the same
//! decode of a small section either way).
//!
//! The static table is the server's own (`http/src/h3/qpack`), compiled
//! here from the same source, as HPACK's is; literals may be
//! Huffman-coded, with HPACK's code (§4.1.2).

use crate::args::Config;
use crate::hpack::huffman;
use crate::request::{base64, put_int, USER_AGENT};
use crate::url::Url;

#[allow(dead_code)]
#[path = "../../../http/src/h3/qpack/static_table.rs"]
mod static_table;

/// Why a field section does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpackError {
    /// It ends inside a representation.
    Truncated,
    /// An integer beyond what a section may hold.
    Overflow,
    /// A reference to the dynamic table, which we said is empty (§2.2.3:
    /// QPACK_DECOMPRESSION_FAILED).
    Dynamic,
    /// A static index past the table.
    BadIndex,
    /// A Huffman string that does not decode.
    Huffman,
}

/// The fields of a request, as ab sends them and as HTTP/2's are built
/// (`crate::request::build_h2`): pseudo-fields first, then User-Agent,
/// Accept, cookies, credentials, `-H` headers less HTTP/1's
/// connection-specific ones (RFC 9114 §4.2), and for a body its length
/// and type.
pub fn request_fields(
    cfg: &Config,
    url: &Url,
    method: &str,
    body: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut f: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut add = |n: &[u8], v: &[u8]| f.push((n.to_vec(), v.to_vec()));
    let host = cfg
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(url.authority.as_str(), |(_, v)| v.as_str());
    add(b":method", method.as_bytes());
    add(b":scheme", b"https");
    add(b":authority", host.as_bytes());
    add(b":path", url.path.as_bytes());
    let overridden = |name: &str| {
        cfg.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !overridden("user-agent") {
        add(b"user-agent", USER_AGENT.as_bytes());
    }
    if !overridden("accept") {
        add(b"accept", b"*/*");
    }
    for c in &cfg.cookies {
        add(b"cookie", c.as_bytes());
    }
    if let Some(a) = &cfg.auth {
        add(
            b"authorization",
            format!("Basic {}", base64(a.as_bytes())).as_bytes(),
        );
    }
    for (n, v) in &cfg.headers {
        let name = n.to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "host"
                | "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "upgrade"
        ) {
            continue;
        }
        add(name.as_bytes(), v.as_bytes());
    }
    if let Some(body) = body {
        add(b"content-length", body.len().to_string().as_bytes());
        if !overridden("content-type") {
            add(b"content-type", cfg.content_type.as_bytes());
        }
    }
    f
}

/// Encodes `fields` as a field section (§4.5): the prefix (Required
/// Insert Count 0, Base 0), then each field as a static index when the
/// table holds it whole, else a literal with the table's name when it
/// holds the name, else a literal name; a string is Huffman-coded where
/// that is shorter, as browsers, curl and nghttp3 code them.
pub fn encode(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut w = vec![0x00, 0x00];
    for (name, value) in fields {
        let found = static_table::find(name, value);
        if let Some(i) = found.exact {
            put_int(&mut w, 6, 0xc0, i); // 1 T=1 index
        } else if let Some(i) = found.name {
            put_int(&mut w, 4, 0x50, i); // 01 N=0 T=1 index
            put_str(&mut w, 7, 0x00, value);
        } else {
            put_str(&mut w, 3, 0x20, name); // 001 N=0 H length
            put_str(&mut w, 7, 0x00, value);
        }
    }
    w
}

/// A string literal after `flags`, its length in an `n`-bit prefix and its
/// Huffman flag the bit above it (§4.1.2).
fn put_str(w: &mut Vec<u8>, n: u32, flags: u8, s: &[u8]) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        put_int(w, n, flags | (1 << n), coded);
        let mut huff = bytes::BytesMut::with_capacity(coded);
        huffman::encode(s, &mut huff);
        w.extend_from_slice(&huff);
    } else {
        put_int(w, n, flags, s.len());
        w.extend_from_slice(s);
    }
}

/// Reads an integer with an `n`-bit prefix at `b[*at]` (RFC 7541 §5.1).
fn int(b: &[u8], at: &mut usize, n: u32) -> Result<usize, QpackError> {
    crate::hpack::read_int(b, at, n).map_err(|e| match e {
        crate::hpack::HpackError::Truncated => QpackError::Truncated,
        _ => QpackError::Overflow,
    })
}

/// A string literal whose length has an `n`-bit prefix and whose Huffman
/// flag is the bit above it; Huffman strings are decoded into `scratch`.
fn string<'a>(
    b: &'a [u8],
    at: &mut usize,
    n: u32,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let huff = b.get(*at).ok_or(QpackError::Truncated)? & (1 << n) != 0;
    let len = int(b, at, n)?;
    let raw = b.get(*at..*at + len).ok_or(QpackError::Truncated)?;
    *at += len;
    if !huff {
        return Ok(raw);
    }
    scratch.clear();
    huffman::decode(raw, scratch).map_err(|_| QpackError::Huffman)?;
    Ok(scratch)
}

fn entry(i: usize) -> Result<(&'static [u8], &'static [u8]), QpackError> {
    static_table::get(i as u64).ok_or(QpackError::BadIndex)
}

/// Decodes a field section, handing each field to `on`.
pub fn decode(b: &[u8], on: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), QpackError> {
    let mut at = 0;
    if int(b, &mut at, 8)? != 0 {
        return Err(QpackError::Dynamic);
    }
    int(b, &mut at, 7)?; // the Base: nothing refers to it
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    while at < b.len() {
        let first = b[at];
        if first & 0x80 != 0 {
            // Indexed field line.
            if first & 0x40 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (n, v) = entry(int(b, &mut at, 6)?)?;
            on(n, v);
        } else if first & 0x40 != 0 {
            // Literal with a name reference.
            if first & 0x10 == 0 {
                return Err(QpackError::Dynamic);
            }
            let (n, _) = entry(int(b, &mut at, 4)?)?;
            let v = string(b, &mut at, 7, &mut s1)?;
            on(n, v);
        } else if first & 0x20 != 0 {
            // Literal with a literal name.
            let n = string(b, &mut at, 3, &mut s1)?;
            let v = string(b, &mut at, 7, &mut s2)?;
            on(n, v);
        } else {
            // Post-base references: the dynamic table.
            return Err(QpackError::Dynamic);
        }
    }
    Ok(())
}

/// What the bench keeps of a response head: its status, and the Server
/// field when `want_server`.
pub fn status_and_server(
    section: &[u8],
    want_server: bool,
) -> Result<(u16, Option<String>), QpackError> {
    let mut status = 0u16;
    let mut server = None;
    decode(section, &mut |n, v| {
        if n == b":status" {
            status = std::str::from_utf8(v)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        } else if want_server && n == b"server" {
            server = Some(String::from_utf8_lossy(v).into_owned());
        }
    })?;
    Ok((status, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn decoded(b: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        decode(b, &mut |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .unwrap();
        out
    }

    #[test]
    fn request_encodes_by_the_static_table() {
        let f = fields(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:8443"),
            (":path", "/"),
            ("x-custom", "1"),
        ]);
        let b = encode(&f);
        let huff = |s: &[u8]| {
            let mut h = bytes::BytesMut::new();
            huffman::encode(s, &mut h);
            h.to_vec()
        };
        // The authority Huffman-coded (10 bytes, not 14), with H set.
        let mut want = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23, 0x50, 0x80 | 10];
        want.extend_from_slice(&huff(b"127.0.0.1:8443"));
        want.push(0xc0 | 1);
        // A literal name coded in 6 bytes (H is 0x08 above the 3-bit
        // prefix); the value "1" is shorter as it is.
        want.push(0x20 | 0x08 | 6);
        want.extend_from_slice(&huff(b"x-custom"));
        want.extend_from_slice(&[1, b'1']);
        assert_eq!(b, want);
        let back: Vec<(String, String)> = decoded(&b);
        assert_eq!(back.len(), 5);
        for ((n, v), (bn, bv)) in f.iter().zip(&back) {
            assert_eq!((n.as_slice(), v.as_slice()), (bn.as_bytes(), bv.as_bytes()));
        }
    }

    #[test]
    fn long_values_use_continued_integers() {
        let path = format!("/{}", "a".repeat(300));
        let f = fields(&[(":path", &path), ("user-agent", "ringside-bench/0.1.0")]);
        let back = decoded(&encode(&f));
        assert_eq!(back[0], (":path".into(), path));
        assert_eq!(back[1].1, "ringside-bench/0.1.0");
    }

    #[test]
    fn responses_decode_status_and_server() {
        // :status 200 indexed (25), server literal with name reference (92)
        // Huffman-coded "Caddy", content-length 26 with literal name.
        assert_eq!(static_table::get(92).unwrap().0, b"server");
        let mut b = vec![0x00, 0x00, 0xc0 | 25, 0x50 | 0x0f, 92 - 15];
        let mut huff = bytes::BytesMut::new();
        huffman::encode(b"Caddy", &mut huff);
        b.push(0x80 | huff.len() as u8);
        b.extend_from_slice(&huff);
        // A literal name of 14 bytes: 7 in the 3-bit prefix, then 7.
        b.extend_from_slice(&[0x27, 7]);
        b.extend_from_slice(b"content-length");
        b.extend_from_slice(&[2, b'2', b'6']);
        let (status, server) = status_and_server(&b, true).unwrap();
        assert_eq!((status, server.as_deref()), (200, Some("Caddy")));
        assert_eq!(status_and_server(&b, false).unwrap().1, None);
        // A status the table lacks, as a literal with the name :status (24).
        let b = [0x00, 0x00, 0x50 | 0x0f, 24 - 15, 3, b'2', b'0', b'1'];
        assert_eq!(status_and_server(&b, false).unwrap().0, 201);
        // Every static :status entry.
        for (i, want) in [(24, 103), (27, 404), (63, 100), (71, 500)] {
            let mut b = vec![0x00, 0x00];
            put_int(&mut b, 6, 0xc0, i);
            assert_eq!(status_and_server(&b, false).unwrap().0, want, "{i}");
        }
    }

    #[test]
    fn dynamic_references_and_truncation_are_refused() {
        use QpackError::*;
        for (b, e) in [
            (&[0x01, 0x00][..], Dynamic),          // Required Insert Count 1
            (&[0x00, 0x00, 0x80 | 3], Dynamic),    // indexed, dynamic
            (&[0x00, 0x00, 0x40 | 3, 0], Dynamic), // name ref, dynamic
            (&[0x00, 0x00, 0x10], Dynamic),        // post-base index
            (&[0x00, 0x00, 0x00], Dynamic),        // post-base name ref
            (&[0x00, 0x00, 0xc0 | 0x3f, 0x30], BadIndex),
            (&[0x00, 0x00, 0x51, 5, b'a'], Truncated),
            (&[0x00], Truncated),
            (&[0x00, 0x00, 0x51, 0x81, 0x00], Huffman), // EOS padding of 0s
        ] {
            assert_eq!(decode(b, &mut |_, _| {}), Err(e), "{b:02x?}");
        }
    }
}
