//! The end of a connection that may still be sending, for every
//! protocol driver.

use std::io;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ringside_runtime::link::Link;

/// Half-closes, then reads and drops what the client still sends, for a
/// bounded time and amount, so that the response already sent is read
/// before the kernel answers further data with a reset.
pub(crate) async fn linger(link: &Link, rbuf: Option<&mut BytesMut>) {
    const LINGER_TIME: Duration = Duration::from_secs(2);
    const LINGER_BYTES: usize = 256 * 1024;
    if link.stream.shutdown_write().is_err() {
        return;
    }
    let mut scratch = BytesMut::new();
    let buf = rbuf.unwrap_or(&mut scratch);
    let deadline = Instant::now() + LINGER_TIME;
    let mut total = 0;
    while total < LINGER_BYTES {
        buf.clear();
        match link.stream.try_read(buf) {
            Ok(0) => return,
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if link.readable_until(deadline).await.is_err() || link.expired() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
