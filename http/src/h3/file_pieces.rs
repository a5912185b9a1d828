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

/// The size of a kept buffer: a 256 KiB piece, its frame header and a
/// response head before it, so that one fits any piece.
const SIZE: usize = 257 * 1024;

/// An empty buffer of at least `capacity` bytes: a kept one where there is
/// and it is big enough. A small file's only piece is made to measure
/// (and not kept) when none is free: a kept size each would be a 257 KiB
/// allocation for a few bytes.
pub(crate) fn take(capacity: usize) -> Vec<u8> {
    let kept = FREE.with(|f| f.borrow_mut().pop());
    match kept {
        Some(v) if v.capacity() >= capacity => v,
        _ if capacity > SIZE / 4 => Vec::with_capacity(capacity.max(SIZE)),
        _ => Vec::with_capacity(capacity),
    }
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
        // A thread being torn down has no list left: the buffer is freed.
        let _ = FREE.try_with(|f| {
            let mut f = f.borrow_mut();
            if f.len() < KEEP && v.capacity() >= SIZE {
                f.push(v);
            }
        });
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
        let again = take(100);
        assert_eq!(
            again.as_ptr(),
            at,
            "the buffer came back, for a small piece too"
        );
        assert!(again.is_empty());
        // A kept buffer too small for what is asked is not used.
        drop(freeze(again));
        assert!(take(SIZE + 1).capacity() > SIZE);
    }

    #[test]
    fn at_most_keep_buffers_are_kept_and_small_ones_never() {
        let small = freeze(take(64));
        assert!(FREE.with(|f| f.borrow_mut().pop()).is_none());
        drop(small);
        assert_eq!(
            FREE.with(|f| f.borrow().len()),
            0,
            "made to measure, not kept"
        );
        let pieces: Vec<Bytes> = (0..KEEP + 3).map(|_| freeze(take(SIZE))).collect();
        drop(pieces);
        assert_eq!(FREE.with(|f| f.borrow().len()), KEEP);
    }
}
