//! This core's pool of I/O buffers. A connection takes a read and a write
//! buffer when a request starts and gives them back when it goes idle, so
//! memory follows the number of busy connections, not of open ones.

use std::cell::RefCell;

use bytes::BytesMut;

/// Size of a pooled buffer; large enough for a default-limit request head.
pub const BUF_SIZE: usize = 16 * 1024;
/// Buffers kept per core beyond those in use; more are freed on return.
const POOL_CAP: usize = 512;

thread_local! {
    static POOL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A cleared buffer with at least [`BUF_SIZE`] bytes of capacity.
pub fn take() -> BytesMut {
    POOL.with(|p| p.borrow_mut().pop())
        .unwrap_or_else(|| BytesMut::with_capacity(BUF_SIZE))
}

/// Returns a buffer; one that is still shared with a live `Bytes`, or that
/// grew past twice the usual size, is dropped instead.
pub fn give(mut buf: BytesMut) {
    buf.clear();
    // Reclaims the whole allocation when no split-off part is alive.
    if !buf.try_reclaim(BUF_SIZE) || buf.capacity() > 2 * BUF_SIZE {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOL_CAP {
            p.push(buf);
        }
    });
}
