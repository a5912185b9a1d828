//! The chunked-body decoder (`ringside_http::h1::chunked`).
//!
//! Input layout: byte 0 picks `max_body` (below 0x40: that many bytes, so
//! the 413 path is reached; below 0x80: 1 MiB; else unlimited), bytes 1-2
//! seed the split points, the rest is the body as sent.
//!
//! Checked:
//! - every call: `data` lies within `..consumed`, which lies within the input;
//!   no call stalls (consumes nothing) on a non-empty input unless done; once
//!   done, it stays done and consumes nothing more;
//! - the decoded payload never exceeds `max_body`;
//! - fed in arbitrary pieces, the decoder gives the same payload, the same
//!   bytes consumed and the same outcome (done, needs more, or the same
//!   error) as when fed everything at once;
//! - it agrees with a plain, non-streaming reading of the grammar in the
//!   module docs (`reference` below) on which inputs are complete, which are
//!   refused and which need more, and on the payload of complete ones.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside_http::h1::chunked::{MAX_SIZE_LINE, MAX_TRAILERS};
use ringside_http::h1::{ChunkError, ChunkedDecoder};

#[derive(Debug, PartialEq, Eq)]
enum End {
    Done,
    NeedMore,
    Refused(ChunkError),
}

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    payload: Vec<u8>,
    consumed: usize,
    end: End,
}

fuzz_target!(|data: &[u8]| {
    let [pick, s1, s2, body @ ..] = data else {
        return;
    };
    let max_body = match *pick {
        b @ 0..=0x3f => u64::from(b),
        0x40..=0x7f => 1 << 20,
        _ => u64::MAX,
    };
    let whole = decode(body, max_body, &mut || body.len());
    assert!(whole.payload.len() as u64 <= max_body);

    let mut x = u64::from(u16::from_le_bytes([*s1, *s2])) | 1 << 32;
    let split = decode(body, max_body, &mut || {
        // xorshift: mostly tiny pieces, sometimes large ones.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x & 3 == 0 {
            (x >> 8) as usize % 64
        } else {
            (x >> 8) as usize % 4
        }
    });
    assert_eq!(split, whole, "split feeding differs from one-shot");

    let bytewise = decode(body, max_body, &mut || 1);
    assert_eq!(
        bytewise, whole,
        "byte-by-byte feeding differs from one-shot"
    );

    check_reference(body, max_body, &whole);
});

/// Decodes `input` as a caller would: a buffer of unconsumed bytes, topped
/// up with pieces whose lengths come from `next_len` when a call consumes
/// nothing.
fn decode(input: &[u8], max_body: u64, next_len: &mut dyn FnMut() -> usize) -> Outcome {
    let mut dec = ChunkedDecoder::new(max_body);
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut out = Outcome {
        payload: Vec::new(),
        consumed: 0,
        end: End::NeedMore,
    };
    loop {
        let d = match dec.decode(&buf) {
            Ok(d) => d,
            Err(e) => {
                // Where the bad byte was is not reported, and what was
                // consumed before it depends on the pieces: not compared.
                out.end = End::Refused(e);
                out.consumed = 0;
                return out;
            }
        };
        assert!(d.data.start <= d.data.end && d.data.end <= d.consumed);
        assert!(d.consumed <= buf.len());
        assert_eq!(d.done, dec.is_done());
        out.payload.extend_from_slice(&buf[d.data.clone()]);
        buf.drain(..d.consumed);
        out.consumed += d.consumed;
        if d.done {
            let again = dec.decode(&buf).expect("decode after done");
            assert!(again.done && again.consumed == 0 && again.data.is_empty());
            out.end = End::Done;
            return out;
        }
        if d.consumed == 0 {
            assert!(buf.is_empty(), "stalled with {} bytes buffered", buf.len());
            if fed == input.len() {
                return out;
            }
            let n = next_len().clamp(1, input.len() - fed);
            buf.extend_from_slice(&input[fed..fed + n]);
            fed += n;
        }
    }
}

fn check_reference(input: &[u8], max_body: u64, got: &Outcome) {
    match (reference(input, max_body), &got.end) {
        (Ref::Done(payload, consumed), End::Done) => {
            assert_eq!(payload, got.payload, "payload differs from the reference");
            assert_eq!(consumed, got.consumed, "end differs from the reference");
        }
        (Ref::More, End::NeedMore) | (Ref::Bad, End::Refused(_)) => {}
        (want, _) => panic!("reference says {want:?}, decoder {got:?}"),
    }
}

#[derive(Debug)]
enum Ref {
    Done(Vec<u8>, usize),
    More,
    Bad,
}

fn hex(b: u8) -> Option<u128> {
    (b as char).to_digit(16).map(u128::from)
}

/// Extension and trailer-value bytes: HTAB, SP, VCHAR, obs-text.
fn text(b: u8) -> bool {
    b == b'\t' || (b' '..=0x7e).contains(&b) || b >= 0x80
}

fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The grammar of the module docs read over the whole input at once:
/// `Bad` as soon as the bytes seen cannot start a valid body, `More` if they
/// can but end before the last chunk's trailer section does.
fn reference(inp: &[u8], max_body: u64) -> Ref {
    let len = inp.len();
    let mut p = 0;
    let mut payload = Vec::new();
    let mut total: u128 = 0;
    loop {
        // chunk-size: 1 to 16 hex digits.
        let start = p;
        let mut size: u128 = 0;
        while p < len && hex(inp[p]).is_some() {
            if p - start == 16 {
                return Ref::Bad;
            }
            size = size * 16 + hex(inp[p]).unwrap();
            p += 1;
        }
        if p == len {
            return Ref::More;
        }
        if p == start {
            return Ref::Bad;
        }
        // BWS only before ";"; then the extensions, skipped.
        let mut q = p;
        while q < len && (inp[q] == b' ' || inp[q] == b'\t') {
            q += 1;
        }
        if q > p && q < len && inp[q] != b';' {
            return Ref::Bad;
        }
        if q < len && inp[q] == b';' {
            q += 1;
            while q < len && text(inp[q]) {
                q += 1;
            }
        }
        if q - start > MAX_SIZE_LINE {
            return Ref::Bad;
        }
        match inp.get(q..q + 2) {
            Some(b"\r\n") => {}
            None if inp[q..] == *b"" || inp[q..] == *b"\r" => return Ref::More,
            _ => return Ref::Bad,
        }
        p = q + 2;
        if size == 0 {
            break;
        }
        total += size;
        if total > u128::from(max_body) {
            return Ref::Bad;
        }
        if ((len - p) as u128) < size {
            return Ref::More;
        }
        let size = size as usize;
        payload.extend_from_slice(&inp[p..p + size]);
        p += size;
        match inp.get(p..p + 2) {
            Some(b"\r\n") => p += 2,
            None if inp[p..] == *b"" || inp[p..] == *b"\r" => return Ref::More,
            _ => return Ref::Bad,
        }
    }
    // Trailer section: (tchar+ ":" text* CRLF)* CRLF, capped as a whole.
    let start = p;
    let verdict = loop {
        match inp.get(p..p + 2) {
            Some(b"\r\n") => break Ref::Done(payload, p + 2),
            _ if p == len || inp[p..] == *b"\r" => break Ref::More,
            Some([b'\r', _]) => break Ref::Bad,
            _ => {}
        }
        let name = p;
        while p < len && tchar(inp[p]) {
            p += 1;
        }
        if p == len {
            break Ref::More;
        }
        if p == name || inp[p] != b':' {
            break Ref::Bad;
        }
        p += 1;
        while p < len && text(inp[p]) {
            p += 1;
        }
        match inp.get(p..p + 2) {
            Some(b"\r\n") => p += 2,
            _ if p == len || inp[p..] == *b"\r" => break Ref::More,
            _ => break Ref::Bad,
        }
    };
    // The cap counts every trailer byte read, whatever the verdict.
    match verdict {
        Ref::Done(_, end) if end - start > MAX_TRAILERS => Ref::Bad,
        Ref::More if len - start > MAX_TRAILERS => Ref::Bad,
        v => v,
    }
}
