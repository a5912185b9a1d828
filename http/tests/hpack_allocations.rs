//! Decoding the heads of a busy upstream allocates nothing once the
//! dynamic table is full: a server that indexes a field whose value
//! changes (`date`, a request id) makes every head insert one entry and
//! evict another, and the evicted entry's storage is reused.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;
use ringside_http::h2::hpack::{Decoder, Encoder};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

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
    COUNTED.with(|c| c.set(true));
    for b in &blocks {
        decode(b, &mut dec, &mut seen);
    }
    COUNTED.with(|c| c.set(false));
    assert!(seen > 0);
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed),
        0,
        "allocations while decoding 200 heads"
    );
}
