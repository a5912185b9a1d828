//! Encoding header blocks (RFC 7541 §6). Fields the static table holds
//! are indexed; others are added to the dynamic table once and indexed
//! after, so a response like the last costs a byte a field. Credentials
//! are never indexed (§7.1.3).

use bytes::{BufMut, BytesMut};

use super::table::{static_exact, static_name, Dynamic, STATIC};
use super::{huffman, put_int};

/// The dynamic table's size until the peer says otherwise (§6.5.2).
const DEFAULT_TABLE: usize = 4096;

/// Slots in the encoder's memo of what it indexed (keyed so that the
/// usual response fields' static indexes fall in distinct slots).
const MEMO: usize = 32;

pub struct Encoder {
    table: Dynamic,
    /// (entry number + 1, hash) of fields indexed lately, by hash: a
    /// field sent again is found with one comparison, not a table scan.
    /// A field whose name the static table holds (most of a response's)
    /// is keyed by that index, with no hash to compute. The entry number
    /// is kept in 32 bits: a wrapped one only misses (the entry found is
    /// compared before use).
    memo: [(u32, u32); MEMO],
    /// A size change to announce at the next block: (smallest, last).
    pending: Option<(usize, usize)>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

/// Fields whose values are secrets, sent never-indexed so that no
/// intermediary puts them in a table other connections share; QPACK's
/// encoder sends the same ones with its N bit.
pub(crate) fn sensitive(name: &[u8]) -> bool {
    matches!(
        name,
        b"authorization" | b"proxy-authorization" | b"cookie" | b"set-cookie"
    )
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder {
            table: Dynamic::new(DEFAULT_TABLE),
            memo: [(0, 0); MEMO],
            pending: None,
        }
    }

    pub fn set_max_table_size(&mut self, n: usize) {
        let n = n.min(DEFAULT_TABLE);
        let low = self.pending.map_or(n, |(low, _)| low.min(n));
        self.pending = Some((low, n));
        self.table.set_max(low);
    }

    pub fn begin_block(&mut self, dst: &mut BytesMut) {
        if let Some((low, last)) = self.pending.take() {
            if low < last {
                put_int(dst, 0x20, 5, low);
            }
            put_int(dst, 0x20, 5, last);
            self.table.set_max(last);
        }
    }

    pub fn status(&mut self, status: u16, dst: &mut BytesMut) {
        let i = match status {
            200 => 8,
            204 => 9,
            206 => 10,
            304 => 11,
            400 => 12,
            404 => 13,
            500 => 14,
            _ => {
                // Literal without indexing, name :status (8).
                dst.put_u8(0x08);
                let s = status.min(999);
                dst.put_u8(3);
                dst.put_slice(&[
                    b'0' + (s / 100) as u8,
                    b'0' + (s / 10 % 10) as u8,
                    b'0' + (s % 10) as u8,
                ]);
                return;
            }
        };
        dst.put_u8(0x80 | i);
    }

    pub fn field(&mut self, name: &[u8], value: &[u8], dst: &mut BytesMut) {
        let stat = static_name(name);
        if let Some(i) = stat.and_then(|i| static_exact(i, name, value)) {
            put_int(dst, 0x80, 7, i);
            return;
        }
        let secret = sensitive(name);
        // Static name indexes are below 62; hashes get the top bit.
        let key = match stat {
            Some(i) => i as u32,
            None => field_hash(name, value) | 1 << 31,
        };
        if !secret {
            let seq = match self.memo[key as usize % MEMO] {
                (seq, k) if k == key => self.table.full_seq(seq),
                _ => 0,
            };
            if seq > 0 {
                if let Some(i) = self.table.index_of(seq - 1) {
                    // A static key is the name's static index, and the memo
                    // holds it only for an entry of that name: the value is
                    // all there is to compare. A hashed key may collide.
                    let same = self
                        .table
                        .get(i)
                        .is_some_and(|(n, v)| v == value && (key & 1 << 31 == 0 || n == name));
                    if same {
                        put_int(dst, 0x80, 7, i + 1 + STATIC.len());
                        return;
                    }
                }
            }
            // Not remembered (another field took the slot): the table
            // may still hold it.
            if let Some(i) = self.table.find(name, value) {
                self.remember(key, self.table.seq_of(i));
                put_int(dst, 0x80, 7, i + 1 + STATIC.len());
                return;
            }
        }
        let by_name = match stat {
            Some(_) => None,
            None if secret => None,
            None => self.table.find_name(name),
        };
        let name_index = stat.or(by_name.map(|i| i + 1 + STATIC.len()));
        let size = name.len() + value.len() + 32;
        let (flags, prefix, index) = if secret {
            (0x10, 4, false)
        } else if size <= self.table.max() / 2 {
            (0x40, 6, true)
        } else {
            (0x00, 4, false)
        };
        match name_index {
            Some(i) => put_int(dst, flags, prefix, i),
            None => {
                dst.put_u8(flags);
                string(name, dst);
            }
        }
        string(value, dst);
        if index {
            self.remember(key, self.table.next_seq());
            self.table.insert(name, value);
        }
    }

    /// Notes that the field keyed `key` is the dynamic entry numbered
    /// `seq`.
    fn remember(&mut self, key: u32, seq: u64) {
        self.memo[key as usize % MEMO] = ((seq as u32).wrapping_add(1), key);
    }

    /// A field that is different each time (a request's `:path`): sent
    /// without indexing, so it does not push the fields that repeat out of
    /// the table.
    pub fn literal(&mut self, name: &[u8], value: &[u8], dst: &mut BytesMut) {
        match static_name(name) {
            Some(i) => put_int(dst, 0x00, 4, i),
            None => {
                dst.put_u8(0x00);
                string(name, dst);
            }
        }
        string(value, dst);
    }

    #[cfg(test)]
    pub(super) fn table_len(&self) -> usize {
        self.table.len()
    }
}

/// FNV-1a over the name and the value.
/// A hash of a field for the memo, eight bytes a step: it only picks the
/// slot and is checked against the table, so speed matters more than
/// spread. (Byte-wise FNV over a static response's fields took 8 % of a
/// small response's CPU.)
fn field_hash(name: &[u8], value: &[u8]) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    fn words(mut h: u64, mut s: &[u8]) -> u64 {
        while s.len() >= 8 {
            let w = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
            s = &s[8..];
        }
        let mut tail = [0u8; 8];
        tail[..s.len()].copy_from_slice(s);
        (h.rotate_left(5) ^ u64::from_le_bytes(tail) ^ s.len() as u64).wrapping_mul(K)
    }
    let h = words(words(0, name), value);
    (h >> 32) as u32
}

/// A string literal, Huffman-coded only where that is shorter.
fn string(s: &[u8], dst: &mut BytesMut) {
    let h = huffman::encoded_len(s);
    if h < s.len() {
        put_int(dst, 0x80, 7, h);
        huffman::encode(s, dst);
    } else {
        put_int(dst, 0, 7, s.len());
        dst.put_slice(s);
    }
}
