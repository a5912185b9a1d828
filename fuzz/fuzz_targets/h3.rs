//! HTTP/3's frames and QPACK (`ringside_http::h3`), fed a request stream's
//! bytes as a peer could send them.
//!
//! Byte 0 seeds how the stream is split into arrivals; the rest is the
//! stream. Beyond "no panic": the frames read in pieces are the frames
//! read at once (DATA joined), with the same error; each HEADERS payload
//! that QPACK decodes hands on fields that our encoder writes into a
//! section that decodes back to the same fields (the N bit kept); and the
//! section laid out as a request head never panics, whatever it holds.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use ringside_http::h3::frame::{FrameKind, FrameParser, Item};
use ringside_http::h3::qpack::{Decoder, Encoder};
use ringside_http::h3::request::lay_out;
use ringside_http::h3::ErrorCode;
use ringside_http::{Limits, RequestHead};

type Frames = Vec<(Option<FrameKind>, Vec<u8>)>;

/// The stream read in arrivals of `sizes` (cycled) bytes: the frames, DATA
/// as one entry per frame with its payload joined.
fn read(stream: &[u8], sizes: &[usize]) -> Result<Frames, ErrorCode> {
    let mut p = FrameParser::new(16 * 1024);
    let mut buf: Vec<u8> = Vec::new();
    let mut out: Frames = Vec::new();
    let mut fed = 0;
    let mut i = 0;
    loop {
        let step = p.next(&buf)?;
        match step.item {
            Item::NeedMore => {
                if fed == stream.len() {
                    p.finish(&buf)?;
                    return Ok(out);
                }
                let n = sizes[i % sizes.len()].min(stream.len() - fed);
                i += 1;
                buf.extend_from_slice(&stream[fed..fed + n]);
                fed += n;
                continue;
            }
            Item::DataHeader { .. } => out.push((None, Vec::new())),
            Item::Data(r) => out
                .last_mut()
                .expect("DATA header first")
                .1
                .extend_from_slice(&buf[r]),
            Item::Frame { kind, payload } => out.push((Some(kind), buf[payload].to_vec())),
            Item::Skipped => {}
        }
        assert!(step.consumed <= buf.len());
        buf.drain(..step.consumed);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = read(stream, &[stream.len().max(1)]);
    let sizes = [1 + (seed as usize & 7), 1 + (seed as usize >> 3), 1];
    assert_eq!(read(stream, &sizes), whole);
    let Ok(frames) = whole else {
        return;
    };
    let limits = Limits::default();
    for (kind, payload) in frames {
        if kind != Some(FrameKind::Headers) {
            continue;
        }
        let mut fields: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
        let r = Decoder::new(1 << 20).decode(&payload, &mut |n: &[u8], v: &[u8], ni: bool| {
            fields.push((n.to_vec(), v.to_vec(), ni))
        });
        let mut head = RequestHead::empty();
        let mut hb = BytesMut::new();
        let laid = lay_out(
            &mut Decoder::new(1 << 20),
            &payload,
            true,
            &mut head,
            &mut hb,
            &limits,
        );
        if r.is_err() {
            continue;
        }
        if let Ok(len) = laid {
            assert!(head.head_len <= hb.len());
            assert!(len.is_none_or(|l| l <= limits.max_body));
        }
        let enc = Encoder::new();
        let mut out = BytesMut::new();
        enc.begin_section(&mut out);
        for (n, v, ni) in &fields {
            enc.field(n, v, *ni, &mut out);
        }
        let mut again: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
        Decoder::new(1 << 20)
            .decode(&out, &mut |n: &[u8], v: &[u8], ni: bool| {
                again.push((n.to_vec(), v.to_vec(), ni))
            })
            .expect("our own section decodes");
        // The encoder may add the N bit (credentials), never drop it.
        assert_eq!(again.len(), fields.len());
        for (a, f) in again.iter().zip(&fields) {
            assert_eq!((&a.0, &a.1), (&f.0, &f.1));
            assert!(
                a.2 || !f.2,
                "the N bit dropped for {:?}",
                String::from_utf8_lossy(&f.0)
            );
        }
    }
});
