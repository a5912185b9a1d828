//! The HPACK decoder (`ringside_http::h2::hpack`), fed header blocks one
//! after another on one decoder, as a connection's blocks are.
//!
//! The input is split into blocks at each 0xff 0x00 pair. Beyond "no
//! panic": a block that decodes hands on fields that an encoder, given
//! them again, writes into a block that another decoder reads back as the
//! same fields; a decode that stops handing on (the callback says no)
//! still leaves the table as a full decode would.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use ringside_http::h2::hpack::{Decoder, Encoder};

fuzz_target!(|data: &[u8]| {
    let mut full = Decoder::new(4096);
    let mut stops = Decoder::new(4096);
    let mut enc = Encoder::new();
    let mut back = Decoder::new(4096);
    for block in data.split(|&b| b == 0xff).filter(|b| !b.is_empty()) {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let r = full.decode(block, &mut |n, v| {
            fields.push((n.to_vec(), v.to_vec()));
            true
        });
        let mut handed = 0;
        let r2 = stops.decode(block, &mut |_, _| {
            handed += 1;
            false
        });
        assert_eq!(r, r2);
        assert!(handed <= 1);
        if r.is_err() {
            return;
        }
        assert_eq!(full.table_size(), stops.table_size());
        let mut out = BytesMut::new();
        enc.begin_block(&mut out);
        for (n, v) in &fields {
            enc.field(n, v, &mut out);
        }
        let mut again = Vec::new();
        back.decode(&out, &mut |n, v| {
            again.push((n.to_vec(), v.to_vec()));
            true
        })
        .expect("our own block decodes");
        assert_eq!(again, fields);
    }
});
