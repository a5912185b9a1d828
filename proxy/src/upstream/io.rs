//! An upstream connection in use: its socket, registered in the core's
//! connection table so its waits carry deadlines (the same coarse sweeper
//! as client connections; see `ringside_runtime::conns`), and the buffers
//! a try uses, pooled per core.

use std::cell::RefCell;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ringside_runtime::conns::{ConnGuard, Wait};
use ringside_runtime::net::TcpStream;

pub struct UpSock {
    pub stream: TcpStream,
    guard: ConnGuard,
}

impl UpSock {
    pub fn new(stream: TcpStream) -> UpSock {
        let guard = ConnGuard::new(stream.as_raw_fd());
        // Busy: a drain waits for it like for the client it serves.
        guard.set_idle(false);
        UpSock { stream, guard }
    }

    pub fn into_stream(self) -> TcpStream {
        self.stream
    }

    pub fn expired(&self) -> bool {
        self.guard.expired()
    }

    /// Sends all of `buf` within `timeout`, through the engine: on io_uring
    /// the send joins the ring's next batch instead of costing a syscall of
    /// its own (measured, 5 rounds against a direct send: 9.98 against
    /// 10.36 us of server CPU per proxied request).
    pub async fn send_all(&mut self, buf: &mut BytesMut, timeout: Duration) -> io::Result<()> {
        self.guard
            .arm(ringside_runtime::clock::now() + timeout, Wait::Write);
        let (r, mut back) = self.stream.write_all(std::mem::take(buf)).await;
        self.guard.disarm();
        back.clear();
        *buf = back;
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }

    /// Gives a read that runs outside this type (a splice) a deadline.
    pub fn arm_read(&self, idle: Duration) {
        self.guard
            .arm(ringside_runtime::clock::now() + idle, Wait::Read);
    }

    pub fn disarm(&self) {
        self.guard.disarm();
    }

    /// Whether bytes (or an EOF) wait to be read, without taking them.
    pub fn has_pending(&self) -> bool {
        !super::pool::still_open(&self.stream)
    }

    /// Reads at least one byte into `buf`, or `Ok(0)` at EOF; `TimedOut`
    /// when nothing came by `deadline`.
    pub async fn read_some(&mut self, buf: &mut BytesMut, deadline: Instant) -> io::Result<usize> {
        self.guard.arm(deadline, Wait::Read);
        let (r, back) = self.stream.read_owned(std::mem::take(buf)).await;
        self.guard.disarm();
        *buf = back;
        match r {
            Ok(0) | Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}

const BUF_SIZE: usize = 16 * 1024;

thread_local! {
    static BUFS: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A buffer from this core's pool, given back when dropped.
pub struct Buf(pub BytesMut);

impl Buf {
    pub fn take() -> Buf {
        Buf(BUFS.with(|b| b.borrow_mut().pop()).unwrap_or_else(|| {
            ringside_runtime::stats::buffers(BUF_SIZE, true);
            BytesMut::with_capacity(BUF_SIZE)
        }))
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let mut b = std::mem::take(&mut self.0);
        b.clear();
        let kept = b.try_reclaim(BUF_SIZE)
            && BUFS.with(|p| {
                let mut p = p.borrow_mut();
                p.len() < 256 && {
                    p.push(b);
                    true
                }
            });
        if !kept {
            ringside_runtime::stats::buffers(BUF_SIZE, false);
        }
    }
}

impl std::ops::Deref for Buf {
    type Target = BytesMut;
    fn deref(&self) -> &BytesMut {
        &self.0
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut BytesMut {
        &mut self.0
    }
}

/// A value taken from this core's pool of its kind and given back when
/// dropped: a response head, whose field list would otherwise be
/// allocated anew for every try.
pub struct Pooled<T: Poolable>(Option<Box<T>>);

/// What [`Pooled`] can hold: a type with a pool of its own on each core
/// ([`poolable!`](crate::poolable) writes one).
pub trait Poolable: Sized + 'static {
    fn with_pool<R>(f: impl FnOnce(&mut Vec<Box<Self>>) -> R) -> R;
    fn fresh() -> Self;
}

impl<T: Poolable> Pooled<T> {
    pub fn take() -> Pooled<T> {
        let b = T::with_pool(|p| p.pop()).unwrap_or_else(|| Box::new(T::fresh()));
        Pooled(Some(b))
    }
}

impl<T: Poolable> Drop for Pooled<T> {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            T::with_pool(|p| {
                if p.len() < 256 {
                    p.push(b);
                }
            });
        }
    }
}

impl<T: Poolable> std::ops::Deref for Pooled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().expect("held until dropped")
    }
}

impl<T: Poolable> std::ops::DerefMut for Pooled<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_deref_mut().expect("held until dropped")
    }
}

/// Makes `$t` [`Poolable`], each core's pool made with `$fresh`.
#[macro_export]
macro_rules! poolable {
    ($t:ty, $fresh:expr) => {
        impl $crate::upstream::io::Poolable for $t {
            fn with_pool<R>(f: impl FnOnce(&mut Vec<Box<Self>>) -> R) -> R {
                thread_local! {
                    static POOL: std::cell::RefCell<Vec<Box<$t>>> =
                        const { std::cell::RefCell::new(Vec::new()) };
                }
                POOL.with(|p| f(&mut p.borrow_mut()))
            }
            fn fresh() -> Self {
                $fresh
            }
        }
    };
}
