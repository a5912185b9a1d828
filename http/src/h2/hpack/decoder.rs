//! Decoding header blocks (RFC 7541 §3, §6).

use super::table::{Dynamic, STATIC};
use super::{huffman, read_int, HpackError};

thread_local! {
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

pub struct Decoder {
    table: Dynamic,
    /// The most a size update may set: our SETTINGS_HEADER_TABLE_SIZE.
    max_table: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a string of the block is: in the block, or Huffman-decoded into
/// one of the decoder's scratch buffers.
enum Str {
    Raw(usize, usize),
    Name,
    Value,
}

impl Decoder {
    pub fn new(max_table: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(max_table),
            max_table,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Decodes one whole header block, handing each field to `field` in
    /// order until it returns `false`; the rest is decoded all the same,
    /// so the dynamic table stays in step with the peer's.
    pub fn decode(
        &mut self,
        block: &[u8],
        field: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), HpackError> {
        // The Huffman scratch buffers are the core's, not the connection's:
        // an idle connection holds none.
        SCRATCH.with(|c| {
            let (n, v) = std::mem::take(&mut *c.borrow_mut());
            self.name = n;
            self.value = v;
        });
        let r = self.decode_block(block, field);
        let kept = (
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.value),
        );
        SCRATCH.with(|c| *c.borrow_mut() = kept);
        r
    }

    fn decode_block(
        &mut self,
        block: &[u8],
        field: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), HpackError> {
        let mut at = 0;
        let mut on = true;
        let mut fields = false;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let i = read_int(block, &mut at, 7)?;
                let (n, v) = entry(&self.table, i)?;
                if on {
                    on = field(n, v);
                }
                fields = true;
            } else if b & 0x40 != 0 {
                let i = read_int(block, &mut at, 6)?;
                let name = self.name_of(block, &mut at, i)?;
                let value = self.string(block, &mut at, Str::Value)?;
                // Neither lies in the table (an indexed name was copied
                // into the scratch), so the insert's evictions leave both.
                let (n, v) = (
                    slice(&self.name, &self.value, block, &name),
                    slice(&self.name, &self.value, block, &value),
                );
                self.table.insert(n, v);
                if on {
                    on = field(n, v);
                }
                fields = true;
            } else if b & 0x20 != 0 {
                if fields {
                    return Err(HpackError::SizeUpdateMisplaced);
                }
                let n = read_int(block, &mut at, 5)?;
                if n > self.max_table {
                    return Err(HpackError::SizeUpdateTooLarge);
                }
                self.table.set_max(n);
            } else {
                // Without indexing (0000) or never indexed (0001).
                let i = read_int(block, &mut at, 4)?;
                let name = self.name_of(block, &mut at, i)?;
                let value = self.string(block, &mut at, Str::Value)?;
                if on {
                    let (n, v) = (
                        slice(&self.name, &self.value, block, &name),
                        slice(&self.name, &self.value, block, &value),
                    );
                    on = field(n, v);
                }
                fields = true;
            }
        }
        Ok(())
    }

    /// The name of a literal: indexed (`i` > 0), else a string that follows.
    fn name_of(&mut self, block: &[u8], at: &mut usize, i: usize) -> Result<Str, HpackError> {
        if i == 0 {
            return self.string(block, at, Str::Name);
        }
        let (n, _) = entry(&self.table, i)?;
        self.name.clear();
        self.name.extend_from_slice(n);
        Ok(Str::Name)
    }

    fn string(&mut self, block: &[u8], at: &mut usize, into: Str) -> Result<Str, HpackError> {
        let huff = block.get(*at).ok_or(HpackError::Truncated)? & 0x80 != 0;
        let len = read_int(block, at, 7)?;
        let end = at.checked_add(len).ok_or(HpackError::Truncated)?;
        if end > block.len() {
            return Err(HpackError::Truncated);
        }
        let start = *at;
        *at = end;
        if !huff {
            return Ok(Str::Raw(start, end));
        }
        let dst = match into {
            Str::Name => &mut self.name,
            _ => &mut self.value,
        };
        dst.clear();
        huffman::decode(&block[start..end], dst)?;
        Ok(into)
    }
}

/// A string of the block being decoded: in it, or in a scratch buffer.
fn slice<'s>(name: &'s [u8], value: &'s [u8], block: &'s [u8], s: &Str) -> &'s [u8] {
    match *s {
        Str::Raw(a, b) => &block[a..b],
        Str::Name => name,
        Str::Value => value,
    }
}

fn entry(table: &Dynamic, i: usize) -> Result<(&[u8], &[u8]), HpackError> {
    match i {
        0 => Err(HpackError::BadIndex),
        1..=61 => Ok(STATIC[i - 1]),
        _ => table.get(i - 62).ok_or(HpackError::BadIndex),
    }
}
