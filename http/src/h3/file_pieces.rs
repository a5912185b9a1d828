//! The buffers a file is read into for HTTP/3, kept per core for the next
//! piece. quinn-proto holds each piece until the peer acknowledges it and
//! then drops it; allocated fresh, every 256 KiB piece was new memory to
//! fault in and zero (page faults and `clear_page` were 8% of the server's
//! CPU on a 100 MiB download: perf, one worker). A send window's worth of
//! pieces cycles through here instead, each handed to the stream as
//! [`Bytes`] that give their buffer back when dropped.

use std::cell::RefCell;

use bytes::Bytes;

/// Buffers kept free at most: a core holds at most this many pieces'
/// memory (2 MiB) once its downloads end.
const KEEP: usize = 8;

thread_local! {
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// What a file is read in: bigger than a DATA frame of a body in memory,
/// because quinn-proto keeps each write as one segment until it is
/// acknowledged and looks a packet's bytes up by walking those segments,
/// so fewer, larger ones cost less per packet on a long download.
pub(crate) const PIECE: usize = 256 * 1024;

/// The size of a kept buffer: a whole piece, its frame header and a
/// response head before it.
const SIZE: usize = PIECE + 1024;

/// An empty buffer of at least `capacity` bytes. Only a whole piece's
/// buffer comes from (and goes back to) the kept ones: a file's last,
/// shorter piece, or a file smaller than a piece, is made to measure, as
/// a kept size for each of many mid-sized files at once would be a
/// 257 KiB allocation apiece where they need tens of KiB.
pub(crate) fn take(capacity: usize) -> Vec<u8> {
    if capacity < PIECE {
        return Vec::with_capacity(capacity);
    }
    match FREE.with(|f| f.borrow_mut().pop()) {
        Some(v) if v.capacity() >= capacity => v,
        // A head too big for a kept buffer: that one stays kept.
        Some(v) => {
            keep(v);
            Vec::with_capacity(capacity)
        }
        None => Vec::with_capacity(capacity.max(SIZE)),
    }
}

/// Puts `v` on the free list if it is a kept size and there is room.
fn keep(v: Vec<u8>) {
    // A thread being torn down has no list left: the buffer is freed.
    let _ = FREE.try_with(|f| {
        let mut f = f.borrow_mut();
        if f.len() < KEEP && v.capacity() >= SIZE {
            f.push(v);
        }
    });
}

/// `piece` as bytes for a stream; its buffer comes back here when the last
/// of them is dropped.
pub(crate) fn freeze(piece: Vec<u8>) -> Bytes {
    Bytes::from_owner(Piece(piece))
}

struct Piece(Vec<u8>);

impl AsRef<[u8]> for Piece {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        v.clear();
        keep(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_piece_is_the_next_one_taken() {
        let mut v = take(SIZE);
        v.extend_from_slice(b"piece one");
        let at = v.as_ptr();
        let b = freeze(v);
        let part = b.slice(6..);
        drop(b);
        assert_eq!(&part[..], b"one", "still held by what is left of it");
        drop(part);
        let again = take(PIECE + 40);
        assert_eq!(again.as_ptr(), at, "the buffer came back");
        assert!(again.is_empty());
        // A head too big for a kept buffer: a new one, the kept one stays.
        drop(freeze(again));
        assert!(take(SIZE + 1).capacity() > SIZE);
        let kept = take(PIECE);
        assert_eq!(kept.as_ptr(), at);
    }

    #[test]
    fn at_most_keep_buffers_are_kept_and_short_pieces_never() {
        drop(freeze(take(SIZE)));
        let short = take(100 * 1024);
        assert_eq!(short.capacity(), 100 * 1024, "made to measure");
        assert_eq!(FREE.with(|f| f.borrow().len()), 1, "the kept one not taken");
        drop(freeze(short));
        assert_eq!(FREE.with(|f| f.borrow().len()), 1, "and not kept");
        let pieces: Vec<Bytes> = (0..KEEP + 3).map(|_| freeze(take(SIZE))).collect();
        drop(pieces);
        assert_eq!(FREE.with(|f| f.borrow().len()), KEEP);
    }
}
