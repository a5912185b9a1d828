//! The access log: each core formats its lines into its own buffer and hands
//! the buffer to the writer thread ([`writer`]) when it is full or when
//! `flush_every` has passed since its first line. Nothing per line crosses
//! a core, and no core ever waits on the disk.
//!
//! The buffer belongs to the core, not to a configuration, so lines survive
//! a reload; it is handed over when the worker thread ends, before the
//! process exits.

pub mod format;
pub mod writer;

use std::cell::RefCell;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use ringside_runtime::task;

use crate::config::ops::{AccessLogConfig, LogFormat};

struct CoreLog {
    buf: Vec<u8>,
    first_at: Option<Instant>,
    tx: Sender<writer::Msg>,
    limit: usize,
    every: Duration,
}

impl CoreLog {
    fn hand_over(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let full = std::mem::replace(&mut self.buf, Vec::with_capacity(self.limit));
        self.first_at = None;
        let _ = self.tx.send(writer::Msg::Lines(full));
    }
}

impl Drop for CoreLog {
    fn drop(&mut self) {
        self.hand_over();
    }
}

thread_local! {
    static CORE: RefCell<Option<CoreLog>> = const { RefCell::new(None) };
}

/// Sets this core's buffer up for `cfg` (on start and on every reload),
/// starting its timer the first time.
pub fn configure_core(cfg: &AccessLogConfig) {
    let Some(tx) = writer::sender() else { return };
    let first = CORE.with(|c| {
        let mut c = c.borrow_mut();
        match &mut *c {
            Some(log) => {
                log.limit = cfg.buffer;
                log.every = cfg.flush_every;
                false
            }
            None => {
                *c = Some(CoreLog {
                    buf: Vec::with_capacity(cfg.buffer),
                    first_at: None,
                    tx,
                    limit: cfg.buffer,
                    every: cfg.flush_every,
                });
                true
            }
        }
    });
    if first {
        task::spawn(flusher());
    }
}

/// Hands over buffers that waited `flush_every`; one timer per core.
async fn flusher() {
    loop {
        let every = CORE.with(|c| c.borrow().as_ref().map(|l| l.every));
        let Some(every) = every else { return };
        // Checking at a quarter of the interval keeps a line's wait under
        // 1.25 intervals without a timer per line.
        task::sleep(every / 4).await;
        CORE.with(|c| {
            if let Some(log) = &mut *c.borrow_mut() {
                if log.first_at.is_some_and(|t| t.elapsed() >= log.every) {
                    log.hand_over();
                }
            }
        });
    }
}

/// Formats one line into this core's buffer.
pub fn log(format: LogFormat, entry: &format::Entry<'_>) {
    CORE.with(|c| {
        let mut c = c.borrow_mut();
        let Some(log) = &mut *c else { return };
        match format {
            LogFormat::Combined => format::combined(&mut log.buf, entry),
            LogFormat::Json => format::json(&mut log.buf, entry),
        }
        if log.first_at.is_none() {
            log.first_at = Some(Instant::now());
        }
        if log.buf.len() >= log.limit {
            log.hand_over();
        }
    });
}
