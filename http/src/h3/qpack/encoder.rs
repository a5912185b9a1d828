//! Encoding a field section (RFC 9204 §4.5) with the static table only:
//! a field the table holds whole is one index, one whose name it holds is
//! the name's index and the value, any other is a literal name and value.
//! Strings are Huffman-coded where that is shorter, as HPACK's encoder
//! does. Field names must already be lowercase (RFC 9114 §4.2).

use bytes::{BufMut, BytesMut};

use super::{put_int, put_string, static_table};
// The same credentials HPACK sends never-indexed (RFC 9204 §7.1.3 as RFC
// 7541 §7.1.3).
use crate::h2::hpack::sensitive;

/// Stateless: with no dynamic table, one section does not depend on
/// another, and nothing goes on the encoder stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct Encoder;

impl Encoder {
    pub fn new() -> Encoder {
        Encoder
    }

    /// The section's prefix: Required Insert Count 0 and Base 0 (§4.5.1).
    pub fn begin_section(&self, dst: &mut BytesMut) {
        dst.put_slice(&[0, 0]);
    }

    /// A response's `:status`, the common ones one byte.
    pub fn status(&self, status: u16, dst: &mut BytesMut) {
        let i = match status {
            100 => 63,
            103 => 24,
            200 => 25,
            204 => 64,
            206 => 65,
            302 => 66,
            304 => 26,
            400 => 67,
            403 => 68,
            404 => 27,
            421 => 69,
            425 => 70,
            500 => 71,
            503 => 28,
            _ => {
                // Literal with the name reference of :status 103 (24).
                put_int(dst, 0x50, 4, 24);
                let s = status.min(999);
                dst.put_slice(&[
                    3,
                    b'0' + (s / 100) as u8,
                    b'0' + (s / 10 % 10) as u8,
                    b'0' + (s % 10) as u8,
                ]);
                return;
            }
        };
        put_int(dst, 0xc0, 6, i);
    }

    /// A field, with the N bit where `never_indexed` (a field that came
    /// with it, RFC 9204 §7.1.3) or the name is a credential's.
    pub fn field(&self, name: &[u8], value: &[u8], never_indexed: bool, dst: &mut BytesMut) {
        let found = static_table::find(name, value);
        // A field that came with the N bit goes on as a literal with it,
        // even where the static table has it whole (RFC 9204 §7.1.3: "MUST
        // use a literal representation to forward this field line").
        if let Some(i) = found.exact.filter(|_| !never_indexed) {
            // Indexed field line, static: 1 1 index(6).
            put_int(dst, 0xc0, 6, i);
            return;
        }
        let n = if never_indexed || sensitive(name) {
            0x20
        } else {
            0
        };
        match found.name {
            // Literal with name reference, static: 0 1 N 1 index(4).
            Some(i) => put_int(dst, 0x50 | n, 4, i),
            // Literal with literal name: 0 0 1 N H length(3).
            None => put_string(dst, 0x20 | (n >> 1), 3, name),
        }
        put_string(dst, 0, 7, value);
    }
}
