use std::io::Read;

use super::encoder::{compress, Encoder};
use super::*;

fn fields<'a>(f: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    f.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
}

#[test]
fn types_match_by_pattern_without_parameters_or_case() {
    let p = Policy::default();
    for t in [
        "text/html",
        "Text/HTML; charset=utf-8",
        "application/json",
        "application/problem+json",
        "application/atom+xml",
        "image/svg+xml",
        "application/wasm",
    ] {
        assert!(p.type_matches(t.as_bytes()), "{t}");
    }
    for t in [
        "image/png",
        "application/octet-stream",
        "application/jsonx",
        "",
        "text",
    ] {
        assert!(!p.type_matches(t.as_bytes()), "{t}");
    }
}

#[test]
fn patterns_are_checked() {
    for bad in ["text", "text/**", "/html", "te xt/html", "*/*x"] {
        assert!(Policy::new(&[bad], 0, Levels::default()).is_err(), "{bad}");
    }
    let p = Policy::new(&["application/vnd.*"], 0, Levels::default()).unwrap();
    assert!(p.type_matches(b"application/vnd.api+json"));
    assert!(!p.type_matches(b"application/json"));
}

#[test]
fn eligibility_follows_the_response() {
    let p = Policy::default();
    let html = [("Content-Type", "text/html")];
    assert!(p.eligible(200, fields(&html), Some(1000)));
    assert!(p.eligible(404, fields(&html), None));
    assert!(!p.eligible(200, fields(&html), Some(100)), "below min_size");
    for status in [101, 204, 206, 304] {
        assert!(!p.eligible(status, fields(&html), Some(1000)), "{status}");
    }
    assert!(!p.eligible(200, fields(&[]), Some(1000)), "untyped");
    for extra in [
        ("Content-Encoding", "gzip"),
        ("Content-Range", "bytes 0-9/100"),
        ("Cache-Control", "public, No-Transform"),
    ] {
        let f = [("Content-Type", "text/html"), extra];
        assert!(!p.eligible(200, fields(&f), Some(1000)), "{extra:?}");
    }
    let f = [
        ("Content-Type", "text/html"),
        ("Content-Encoding", "identity"),
    ];
    assert!(p.eligible(200, fields(&f), Some(1000)));
}

#[test]
fn choice_needs_an_accept_encoding() {
    let p = Policy::default();
    assert_eq!(p.choose(None, &STREAMED_ORDER), None);
    assert_eq!(p.choose(Some(b"gzip"), &STREAMED_ORDER), Some(Coding::Gzip));
    assert_eq!(
        p.choose(Some(b"gzip, br, zstd"), &STREAMED_ORDER),
        Some(Coding::Zstd)
    );
    assert_eq!(
        p.choose(Some(b"gzip, br, zstd"), &CACHED_ORDER),
        Some(Coding::Br)
    );
    assert_eq!(p.choose(Some(b"identity"), &CACHED_ORDER), None);
}

#[test]
fn vary_and_etag_variants() {
    assert_eq!(vary_with_accept_encoding(None).unwrap(), b"Accept-Encoding");
    assert_eq!(
        vary_with_accept_encoding(Some(b"Origin")).unwrap(),
        b"Origin, Accept-Encoding"
    );
    assert_eq!(
        vary_with_accept_encoding(Some(b"origin, accept-encoding")),
        None
    );
    assert_eq!(vary_with_accept_encoding(Some(b"*")), None);
    assert_eq!(
        variant_etag(b"\"abc\"", Coding::Gzip).unwrap(),
        b"W/\"abc-gzip\""
    );
    assert_eq!(
        variant_etag(b"W/\"abc\"", Coding::Br).unwrap(),
        b"W/\"abc-br\""
    );
    assert_eq!(variant_etag(b"abc", Coding::Br), None);
    let e = crate::semantics::conditional::ETag::new(1, 2, 3);
    assert_eq!(e.variant("zstd").as_bytes(), b"W/\"1-2-3-zstd\"");
}

fn decode(c: Coding, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match c {
        Coding::Gzip => {
            flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        Coding::Br => {
            brotli::Decompressor::new(data, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        Coding::Zstd => out = zstd::stream::decode_all(data).unwrap(),
    }
    out
}

/// What a flushed prefix of a stream decodes to.
fn decode_partial(c: Coding, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match c {
        Coding::Gzip => {
            let mut d = flate2::Decompress::new_gzip(15);
            let mut buf = vec![0u8; 1 << 20];
            d.decompress(data, &mut buf, flate2::FlushDecompress::Sync)
                .unwrap();
            buf.truncate(d.total_out() as usize);
            out = buf;
        }
        Coding::Br => {
            let mut r = brotli::Decompressor::new(data, 4096);
            let mut buf = [0u8; 4096];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
        }
        Coding::Zstd => {
            let mut r = zstd::stream::read::Decoder::new(data).unwrap();
            let mut buf = [0u8; 4096];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
        }
    }
    out
}

#[test]
fn every_coding_round_trips_whole_and_streamed() {
    let text: Vec<u8> = (0..2000)
        .flat_map(|i| format!("<li>item {i} of a list</li>\n").into_bytes())
        .collect();
    for c in Coding::ALL {
        let whole = compress(c, &Levels::default(), &text).unwrap();
        assert!(whole.len() * 4 < text.len(), "{c:?}: {}", whole.len());
        assert_eq!(decode(c, &whole), text, "{c:?} whole");

        // Of unknown length, and of a known one (sized to it); twice, the
        // second time on a compressor the first left to the pool.
        for len in [None, Some(text.len() as u64), None, Some(text.len() as u64)] {
            let mut e = Encoder::new(c, &Levels::default(), len).unwrap();
            let (mut out, mut written) = (Vec::new(), 0);
            for piece in text.chunks(7000) {
                e.write(piece, true).unwrap();
                written += piece.len();
                out.extend_from_slice(&e.take());
                // What was flushed decodes to everything written so far.
                assert_eq!(decode_partial(c, &out), &text[..written], "{c:?} {len:?}");
            }
            out.extend_from_slice(&e.finish().unwrap());
            assert_eq!(decode(c, &out), text, "{c:?} streamed, {len:?}");
        }
        // A whole body written at once (gzip takes libdeflate for it).
        let mut e = Encoder::new(c, &Levels::default(), Some(text.len() as u64)).unwrap();
        e.write(&text, false).unwrap();
        let mut out = e.take();
        out.extend_from_slice(&e.finish().unwrap());
        assert_eq!(decode(c, &out), text, "{c:?} whole at once");
        // A body left unfinished does not spoil the compressor it gives back.
        let mut e = Encoder::new(c, &Levels::default(), Some(text.len() as u64)).unwrap();
        e.write(&text[..100], true).unwrap();
        drop(e);
        let again = compress(c, &Levels::default(), &text).unwrap();
        assert_eq!(decode(c, &again), text, "{c:?} after an abandoned one");
    }
}
