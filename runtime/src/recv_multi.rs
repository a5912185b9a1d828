//! Receiving on a plain client connection without a system call: one
//! multishot RECV per connection, into this core's provided buffer ring
//! (the monoio patch in `vendor/monoio/src/driver/uring/multishot.rs`).
//!
//! The readiness path it replaces costs a POLL SQE and a `recv(2)` per
//! read. Here the receive is armed once and stays armed across keep-alive
//! requests; bytes arrive as completions reaped by the loop's one
//! `io_uring_enter`, are copied into the connection's buffer, and the ring
//! buffer goes straight back. An idle connection holds no buffer, so the
//! readiness path's memory goal holds.
//!
//! `RINGSIDE_URING_RECV=poll` turns it off (the readiness path, as on
//! kernels without buffer rings, which the worker falls back to by itself);
//! `RINGSIDE_URING_SEND=direct` keeps receives here but sends with
//! `send(2)`; `RINGSIDE_URING_RING=ENTRIESxSIZE` shapes the ring.

use std::io;

use bytes::BytesMut;

/// A stream's multishot receive, when it has one.
#[derive(Default)]
pub(crate) struct Multi {
    #[cfg(feature = "io-uring")]
    inner: Option<monoio::multishot::RecvMulti>,
}

impl Multi {
    /// A receive for `fd` where this worker has them on; none otherwise.
    pub(crate) fn new(fd: std::os::fd::RawFd) -> Multi {
        #[cfg(feature = "io-uring")]
        {
            Multi {
                inner: monoio::multishot::RecvMulti::new(fd),
            }
        }
        #[cfg(not(feature = "io-uring"))]
        {
            let _ = fd;
            Multi {}
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        #[cfg(feature = "io-uring")]
        {
            self.inner.is_some()
        }
        #[cfg(not(feature = "io-uring"))]
        false
    }

    /// What was received, into `buf`; `None` when the socket is to be read
    /// the plain way (no receive armed and nothing of one unread).
    #[inline]
    pub(crate) fn try_read(&self, buf: &mut BytesMut) -> Option<io::Result<usize>> {
        #[cfg(feature = "io-uring")]
        if let Some(m) = &self.inner {
            // Into the spare room, as recv(2) reads: a pooled buffer that
            // grew with every queued chunk would go back to its pool grown
            // (the soak saw it when upstream connections used the ring).
            let room = crate::net::make_room(buf);
            return match m.try_read(room, |chunk| buf.extend_from_slice(chunk)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && m.idle() => None,
                r => Some(r),
            };
        }
        let _ = buf;
        None
    }

    /// Waits for bytes (or the end) through the receive, arming it if it
    /// is not; false when the caller should wait the plain way instead
    /// (no receive, or the ring ran dry under it once).
    pub(crate) async fn readable(&self) -> bool {
        #[cfg(feature = "io-uring")]
        if let Some(m) = &self.inner {
            if m.has_data() {
                return true;
            }
            if m.take_starved() {
                return false;
            }
            m.arm();
            std::future::poll_fn(|cx| m.poll_ready(cx)).await;
            return true;
        }
        false
    }
}

/// Turns multishot receive on for this io_uring worker, unless
/// `RINGSIDE_URING_RECV=poll` says not to, and makes its ring. Call inside
/// the worker's runtime. The first worker says at start what it uses; a
/// later one only where it differs (a kernel refusing a ring does so for
/// all).
#[cfg(feature = "io-uring")]
pub(crate) fn start() {
    use std::sync::atomic::{AtomicU8, Ordering};
    static SAID: AtomicU8 = AtomicU8::new(0);
    let cfg = ring_config();
    let outcome: Result<(), String> = if std::env::var("RINGSIDE_URING_RECV")
        .is_ok_and(|v| v == "poll")
    {
        monoio::multishot::disable();
        Err("off (RINGSIDE_URING_RECV=poll)".into())
    } else {
        monoio::multishot::enable(cfg);
        monoio::multishot::prepare().map_err(|e| format!("unavailable ({e}); using poll and recv"))
    };
    let direct = std::env::var("RINGSIDE_URING_SEND").is_ok_and(|v| v == "direct");
    RING_SENDS.with(|r| r.set(outcome.is_ok() && !direct));
    let code = if outcome.is_ok() { 1 } else { 2 };
    if SAID.swap(code, Ordering::Relaxed) == code {
        return;
    }
    match outcome {
        Ok(()) => tracing::info!(
            buffers = cfg.entries,
            buffer_bytes = cfg.size,
            sends = if direct { "send(2)" } else { "ring" },
            "io_uring: plain connections receive by multishot into a provided buffer ring"
        ),
        Err(why) => tracing::info!("io_uring: multishot receive {why}"),
    }
}

thread_local! {
    static RING_SENDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether streams that receive through the ring send through it too.
#[inline]
pub(crate) fn ring_sends() -> bool {
    RING_SENDS.with(std::cell::Cell::get)
}

/// The ring's shape: `RINGSIDE_URING_RING=ENTRIESxSIZE` (tests make it
/// tiny to run it dry), else the default.
#[cfg(feature = "io-uring")]
fn ring_config() -> monoio::multishot::Config {
    let mut cfg = monoio::multishot::Config::default();
    if let Ok(v) = std::env::var("RINGSIDE_URING_RING") {
        match v
            .split_once('x')
            .map(|(e, s)| (e.parse::<u16>(), s.parse::<u32>()))
        {
            Some((Ok(entries), Ok(size))) if entries.is_power_of_two() && size >= 64 => {
                cfg.entries = entries;
                cfg.size = size;
            }
            _ => {
                tracing::warn!(value = %v, "RINGSIDE_URING_RING: expected ENTRIESxSIZE, a power of two and at least 64 bytes; using the default")
            }
        }
    }
    cfg
}

/// This core's ring figures, for the metrics: (buffers in the ring, held
/// now, receives ended by an empty ring, receives paused), all 0 without
/// one.
pub(crate) fn ring_stats() -> [u64; 4] {
    #[cfg(feature = "io-uring")]
    {
        let s = monoio::multishot::stats();
        [s.entries, s.out, s.dry, s.paused]
    }
    #[cfg(not(feature = "io-uring"))]
    [0; 4]
}
