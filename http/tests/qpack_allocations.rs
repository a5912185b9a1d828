//! A request's field section decodes without allocating once the
//! decoder's two Huffman buffers have grown: fields sent plain are slices
//! of the section, Huffman-coded ones are decoded into those buffers. The
//! encoder, given room, allocates nothing either.

use bytes::BytesMut;
use ringside_http::h3::frame::{put_frame, FrameKind, FrameParser, Item};
use ringside_http::h3::qpack::{Decoder, Encoder};

#[path = "../../testsupport/counting_alloc.rs"]
mod counting;
use counting::{allocations, count_here, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn request(n: u32, enc: &Encoder, dst: &mut BytesMut) {
    let path = [b'/', b'i', b't', b'e', b'm', b'/', b'0' + (n % 10) as u8];
    let stamp = [b'a' + (n % 26) as u8; 24];
    enc.begin_section(dst);
    enc.field(b":method", b"GET", false, dst);
    enc.field(b":scheme", b"https", false, dst);
    enc.field(b":authority", b"www.example.com", false, dst);
    enc.field(b":path", &path, false, dst);
    enc.field(
        b"user-agent",
        b"Mozilla/5.0 (X11; Linux x86_64)",
        false,
        dst,
    );
    enc.field(b"x-request-stamp", &stamp, false, dst);
    enc.field(b"x-binary", &[0xfe, 0xfd, 0xfc], false, dst);
    enc.field(b"cookie", b"a=b; c=d", false, dst);
}

#[test]
fn sections_decode_and_encode_without_allocating() {
    let enc = Encoder::new();
    let mut dec = Decoder::new(16 << 10);
    let mut seen = 0usize;
    let mut section = BytesMut::with_capacity(4096);
    let mut stream = BytesMut::with_capacity(4096);
    // Warm up: the buffers grow to the longest strings.
    for n in 0..10 {
        section.clear();
        request(n, &enc, &mut section);
        dec.decode(&section, &mut |n: &[u8], v: &[u8], _| {
            seen += n.len() + v.len()
        })
        .unwrap();
    }
    count_here(true);
    for n in 0..200 {
        section.clear();
        request(n, &enc, &mut section);
        stream.clear();
        put_frame(&mut stream, FrameKind::Headers, &section);
        let mut p = FrameParser::new(16 << 10);
        let step = p.next(&stream).unwrap();
        let Item::Frame { payload, .. } = step.item else {
            panic!("{step:?}")
        };
        dec.decode(&stream[payload], &mut |n: &[u8], v: &[u8], _| {
            seen += n.len() + v.len()
        })
        .unwrap();
    }
    count_here(false);
    assert!(seen > 0);
    assert_eq!(
        allocations(),
        0,
        "allocations while encoding and decoding 200 sections"
    );
}
