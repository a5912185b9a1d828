//! HPACK's static table (RFC 7541 Appendix A) and its dynamic table
//! (§2.3.2, §4): entries newest first, sized as name + value + 32, evicted
//! oldest first.

use std::collections::VecDeque;

pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The static index (1-based) of `name`'s first entry: a match on the
/// name's length and bytes, not a scan.
pub(super) fn static_name(name: &[u8]) -> Option<usize> {
    let i = match name {
        b":authority" => 1,
        b":method" => 2,
        b":path" => 4,
        b":scheme" => 6,
        b":status" => 8,
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    };
    Some(i)
}

/// The static index of (name, value) exactly, if the table has it.
pub(super) fn static_exact(name_index: usize, name: &[u8], value: &[u8]) -> Option<usize> {
    // Only the first 16 entries carry values.
    if name_index > 16 {
        return None;
    }
    (name_index..=STATIC.len())
        .take_while(|&i| STATIC[i - 1].0 == name)
        .find(|&i| STATIC[i - 1].1 == value && !value.is_empty())
}

struct Entry {
    /// Name then value, then room left unused: the block is sized to the
    /// allocator's size class, so that one evicted entry's block fits the
    /// next entry of a similar size.
    block: Box<[u8]>,
    name_len: u32,
    len: u32,
}

impl Entry {
    fn bytes(&self) -> &[u8] {
        &self.block[..self.len as usize]
    }

    fn name(&self) -> &[u8] {
        &self.block[..self.name_len as usize]
    }
}

/// The bytes a block of at least `n` gets: what malloc would hand out for
/// `n` anyway (16-byte classes less its 8-byte header, 24 at the least).
fn size_class(n: usize) -> usize {
    (n + 8).next_multiple_of(16).max(32) - 8
}

pub(super) struct Dynamic {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
    /// Entries inserted ever: the newest is number `inserted - 1`.
    inserted: u64,
    /// The block of the largest entry the last insert evicted, for the
    /// next insert: a peer that sends a changing field (`date`) with
    /// indexing makes every head insert one entry and evict another, and
    /// this keeps that from allocating.
    spare: Box<[u8]>,
}

impl Dynamic {
    pub(super) fn new(max: usize) -> Dynamic {
        Dynamic {
            entries: VecDeque::new(),
            size: 0,
            max,
            inserted: 0,
            spare: Box::default(),
        }
    }

    /// Where entry number `seq` is now (0 the newest), if still held.
    pub(super) fn index_of(&self, seq: u64) -> Option<usize> {
        let i = self.inserted.checked_sub(seq + 1)? as usize;
        (i < self.entries.len()).then_some(i)
    }

    /// The entry number (plus one; 0: none) whose low 32 bits, plus one,
    /// are `low`: the newest such, as the encoder's memo keeps them.
    pub(super) fn full_seq(&self, low: u32) -> u64 {
        let back = (self.inserted as u32).wrapping_sub(low.wrapping_sub(1)) as u64;
        if low == 0 || back > self.inserted {
            return 0;
        }
        self.inserted - back + 1
    }

    /// The number the next insert gets.
    pub(super) fn next_seq(&self) -> u64 {
        self.inserted
    }

    pub(super) fn size(&self) -> usize {
        self.size
    }

    pub(super) fn max(&self) -> usize {
        self.max
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Entry `i`, 0 the newest.
    pub(super) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries
            .get(i)
            .map(|e| e.bytes().split_at(e.name_len as usize))
    }

    pub(super) fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict(0);
    }

    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.entries.pop_back() {
                Some(e) => {
                    self.size -= e.len as usize + 32;
                    if e.block.len() > self.spare.len() {
                        self.spare = e.block;
                    }
                }
                None => break,
            }
        }
    }

    /// Adds (name, value) as the newest entry; one larger than the table
    /// empties it and is not kept (§4.4).
    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        self.inserted += 1;
        if size > self.max {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        let len = name.len() + value.len();
        let mut block = std::mem::take(&mut self.spare);
        if block.len() < len {
            block = vec![0u8; size_class(len)].into_boxed_slice();
        }
        block[..name.len()].copy_from_slice(name);
        block[name.len()..len].copy_from_slice(value);
        // Within u32: an entry is smaller than the table's maximum size.
        self.entries.push_front(Entry {
            block,
            name_len: name.len() as u32,
            len: len as u32,
        });
        self.size += size;
    }

    /// The newest entry that is exactly (name, value), 0-based.
    pub(super) fn find(&self, name: &[u8], value: &[u8]) -> Option<usize> {
        self.entries.iter().position(|e| {
            e.name_len as usize == name.len()
                && e.len as usize == name.len() + value.len()
                && e.name() == name
                && &e.bytes()[name.len()..] == value
        })
    }

    /// The entry number of entry `i` (0 the newest).
    pub(super) fn seq_of(&self, i: usize) -> u64 {
        self.inserted - 1 - i as u64
    }

    /// The newest entry named `name`, 0-based.
    pub(super) fn find_name(&self, name: &[u8]) -> Option<usize> {
        self.entries.iter().position(|e| e.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::{static_name, Dynamic, STATIC};

    #[test]
    fn every_static_name_is_found_at_its_first_entry() {
        for (i, (name, _)) in STATIC.iter().enumerate() {
            let first = STATIC.iter().position(|(n, _)| n == name).unwrap() + 1;
            assert_eq!(static_name(name), Some(first), "{}", i + 1);
        }
        for other in [
            &b""[..],
            b"x",
            b"dates",
            b"Date",
            b"etah",
            b":statuz",
            b"cookies",
        ] {
            assert_eq!(static_name(other), None);
        }
    }

    /// The encoder's memo keeps entry numbers in 32 bits: each comes back
    /// whole while it is within 2^32 of the newest, and none is made up.
    #[test]
    fn a_memo_entry_number_comes_back_whole() {
        let mut t = Dynamic::new(4096);
        for _ in 0..3 {
            t.insert(b"etag", b"\"x\"");
        }
        assert_eq!(t.full_seq(0), 0, "empty slot");
        for seq in 0..3u64 {
            assert_eq!(t.full_seq(seq as u32 + 1), seq + 1);
        }
        assert_eq!(t.full_seq(10), 0, "a number never given");
        t.inserted = (1 << 32) + 5;
        let seq = (1u64 << 32) + 2;
        assert_eq!(t.full_seq((seq as u32).wrapping_add(1)), seq + 1);
    }
}
