//! An object file's layout, and the CRC-32C that guards it.
//!
//! ```text
//!  0  magic        8   b"RSCACHE\0"
//!  8  version      u32 FORMAT_VERSION
//! 12  key_len      u32
//! 16  generation   u64 the store's generation when written
//! 24  hash         u64 the key's hash (also the file's name)
//! 32  written_at   u64 unix seconds (eviction order after a restart)
//! 40  body_len     u64
//! 48  head_len     u32
//! 52  meta_crc     u32 CRC-32C of key ++ head
//! 56  body_crc     u32 CRC-32C of body
//! 60  header_crc   u32 CRC-32C of bytes 0..60
//! 64  key, then head, then body (at body_offset = 64 + key_len + head_len)
//! ```
//!
//! All integers little-endian. A file is exactly
//! `64 + key_len + head_len + body_len` bytes long; anything else is torn.

/// The header's size: the key starts here.
pub const HEADER_LEN: usize = 64;

const MAGIC: [u8; 8] = *b"RSCACHE\0";

/// Bumped whenever the layout changes: files of another version are
/// removed at the rebuild and never served.
pub const FORMAT_VERSION: u32 = 2;
/// Bodies above this start at a page boundary.
pub const ALIGN_ABOVE: u64 = 64 * 1024;
const PAGE: u64 = 4096;

/// The longest key and head block a file may hold: a header claiming more
/// is taken as corrupt (a check on lengths before anything is allocated).
pub const KEY_MAX: usize = 64 * 1024;
pub const HEAD_MAX: usize = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub generation: u64,
    pub hash: u64,
    pub written_at: u64,
    pub key_len: u32,
    pub head_len: u32,
    pub body_len: u64,
    pub meta_crc: u32,
    pub body_crc: u32,
}

/// Why a header was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// Not one of ours, or its checksum fails: torn or corrupt.
    Corrupt,
    /// Ours, whole, of another format version.
    Version,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.key_len.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.hash.to_le_bytes());
        b[32..40].copy_from_slice(&self.written_at.to_le_bytes());
        b[40..48].copy_from_slice(&self.body_len.to_le_bytes());
        b[48..52].copy_from_slice(&self.head_len.to_le_bytes());
        b[52..56].copy_from_slice(&self.meta_crc.to_le_bytes());
        b[56..60].copy_from_slice(&self.body_crc.to_le_bytes());
        let crc = crc32c(0, &b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Header, Bad> {
        if b.len() < HEADER_LEN || b[0..8] != MAGIC {
            return Err(Bad::Corrupt);
        }
        if crc32c(0, &b[..60]) != u32_at(b, 60) {
            return Err(Bad::Corrupt);
        }
        if u32_at(b, 8) != FORMAT_VERSION {
            return Err(Bad::Version);
        }
        let h = Header {
            key_len: u32_at(b, 12),
            generation: u64_at(b, 16),
            hash: u64_at(b, 24),
            written_at: u64_at(b, 32),
            body_len: u64_at(b, 40),
            head_len: u32_at(b, 48),
            meta_crc: u32_at(b, 52),
            body_crc: u32_at(b, 56),
        };
        if h.key_len as usize > KEY_MAX || h.head_len as usize > HEAD_MAX {
            return Err(Bad::Corrupt);
        }
        Ok(h)
    }

    /// Where the body starts in the file.
    /// Where the key and head block end.
    pub fn head_end(&self) -> u64 {
        (HEADER_LEN + self.key_len as usize + self.head_len as usize) as u64
    }

    /// Where the body starts: right after the head block, or for a body
    /// above [`ALIGN_ABOVE`] at the next page, so that sending it from
    /// the page cache (splice, sendfile) moves whole pages.
    pub fn body_offset(&self) -> u64 {
        let end = self.head_end();
        if self.body_len > ALIGN_ABOVE {
            end.next_multiple_of(PAGE)
        } else {
            end
        }
    }

    /// The whole file's length.
    pub fn file_len(&self) -> u64 {
        self.body_offset() + self.body_len
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// CRC-32C (Castagnoli, reflected 0x82F63B78), continuing from `crc` (0 to
/// start): the checksum iSCSI, ext4 and btrfs use. SSE 4.2's `crc32`
/// instruction where the CPU has it (8 bytes a cycle or so), slicing-by-8
/// tables otherwise (about 1 GB/s).
pub fn crc32c(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { crc32c_sse42(crc, data) };
    }
    crc32c_soft(crc, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = !crc as u64;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let mut c = c as u32;
    for &b in words.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

/// Slicing-by-8: eight tables, each byte's contribution shifted by
/// 0..8 bytes, so the loop takes eight bytes a step.
static TABLES: [[u32; 256]; 8] = tables();

const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

pub fn crc32c_soft(crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut c = !crc;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let lo = c ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][w[4] as usize]
            ^ t[2][w[5] as usize]
            ^ t[1][w[6] as usize]
            ^ t[0][w[7] as usize];
    }
    for &b in words.remainder() {
        c = (c >> 8) ^ t[0][((c ^ b as u32) & 0xff) as usize];
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_known_answers() {
        // RFC 3720 B.4 and the usual check value.
        assert_eq!(crc32c(0, b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_soft(0, b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(0, &[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(0, &[0xffu8; 32]), 0x62A8_AB43);
        let inc: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c_soft(0, &inc), 0x46DD_794E);
        assert_eq!(crc32c(0, b""), 0);
    }

    #[test]
    fn crc32c_hardware_soft_and_pieces_agree() {
        let data: Vec<u8> = (0..10_007u32).map(|i| (i * 31 + i / 7) as u8).collect();
        let whole = crc32c_soft(0, &data);
        assert_eq!(crc32c(0, &data), whole);
        for cut in [0, 1, 7, 8, 9, 4096, 10_000] {
            let (a, b) = data.split_at(cut);
            assert_eq!(crc32c(crc32c(0, a), b), whole, "cut {cut}");
            assert_eq!(crc32c_soft(crc32c_soft(0, a), b), whole, "cut {cut}");
        }
    }

    #[test]
    fn header_round_trip_and_refusals() {
        let h = Header {
            generation: 7,
            hash: 0xdead_beef_0123_4567,
            written_at: 1_700_000_000,
            key_len: 12,
            head_len: 300,
            body_len: 1 << 33,
            meta_crc: 1,
            body_crc: 2,
        };
        let mut b = h.encode();
        assert_eq!(Header::decode(&b), Ok(h));
        // A large body starts at the next page; a small one right after.
        assert_eq!(h.body_offset(), 4096);
        assert_eq!(
            Header {
                body_len: 1000,
                ..h
            }
            .body_offset(),
            64 + 312
        );
        // Any flipped bit is caught.
        for bit in [0, 70, 100, 200, 400, 511] {
            let mut c = b;
            c[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(Header::decode(&c), Err(Bad::Corrupt), "bit {bit}");
        }
        assert_eq!(Header::decode(&b[..63]), Err(Bad::Corrupt));
        // Another version, whole: told apart from corruption.
        b[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let crc = crc32c(0, &b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Header::decode(&b), Err(Bad::Version));
    }
}
