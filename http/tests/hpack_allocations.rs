//! Decoding the heads of a busy upstream allocates nothing once the
//! dynamic table is full: a server that indexes a field whose value
//! changes (`date`, a request id) makes every head insert one entry and
//! evict another, and the evicted entry's storage is reused.

use bytes::BytesMut;
use ringside_http::h2::hpack::{Decoder, Encoder};

#[path = "../../testsupport/counting_alloc.rs"]
mod counting;
use counting::{allocations, count_here, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_full_table_that_keeps_turning_over_decodes_without_allocating() {
    let mut enc = Encoder::new();
    let mut dec = Decoder::new(4096);
    let mut block = BytesMut::with_capacity(4096);
    let head = |n: u32, block: &mut BytesMut, enc: &mut Encoder| {
        block.clear();
        let stamp = format!("Thu, 03 Dec 2026 10:{:02}:{:02} GMT", n / 60 % 60, n % 60);
        let id = format!("{n:016x}");
        enc.field(b":status", b"200", block);
        enc.field(b"date", stamp.as_bytes(), block);
        enc.field(b"x-request-id", id.as_bytes(), block);
        enc.field(b"content-type", b"text/plain", block);
    };
    let mut seen = 0;
    let decode = |block: &[u8], dec: &mut Decoder, seen: &mut usize| {
        dec.decode(block, &mut |n, v| {
            *seen += n.len() + v.len();
            true
        })
        .unwrap();
    };
    // Enough heads to fill the 4 KiB table several times over.
    for n in 0..200 {
        head(n, &mut block, &mut enc);
        decode(&block, &mut dec, &mut seen);
    }
    let mut blocks = Vec::new();
    for n in 200..400 {
        head(n, &mut block, &mut enc);
        blocks.push(block.clone());
    }
    count_here(true);
    for b in &blocks {
        decode(b, &mut dec, &mut seen);
    }
    count_here(false);
    assert!(seen > 0);
    assert_eq!(allocations(), 0, "allocations while decoding 200 heads");
}
