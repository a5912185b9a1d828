//! Swapping a worker's handler while it runs: how a config reload reaches
//! the cores without closing a listener or a connection.
//!
//! Each worker keeps its handler in a [`Current`]. A connection takes the
//! current handler (an `Rc` clone) at the start of each request and holds
//! it until the request ends, so a reload never changes a request midway:
//! requests already running finish on the old handler, and the next request
//! on the same keep-alive connection gets the new one. The old handler is
//! dropped, with its pools, once its last request ends.
//!
//! The listeners stay open throughout. This matters with `SO_REUSEPORT`:
//! closing a listener drops the connections waiting in its accept queue,
//! which is how a restart-style reload loses requests.
//!
//! The main thread sends a [`Factory`] to each worker over a channel and
//! writes one byte to that worker's socketpair; the worker's engine wakes on
//! it like on any socket, builds the new handler on its own thread (its
//! caches and pools are its own), swaps it in and acknowledges.

use std::cell::RefCell;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::config::ConnConfig;
use crate::context::WorkerContext;

/// Builds a worker's handler; on reload it is given the handler it
/// replaces, whose per-core state (pools) it may carry over.
pub type Factory<H> =
    Arc<dyn Fn(&WorkerContext, Option<&H>) -> Result<H, String> + Send + Sync + 'static>;

/// A worker's handler and connection settings, replaced together on reload.
pub struct Current<H> {
    now: RefCell<(Rc<H>, Rc<ConnConfig>)>,
}

impl<H> Current<H> {
    pub(crate) fn new(handler: H, conn: ConnConfig) -> Current<H> {
        Current {
            now: RefCell::new((Rc::new(handler), Rc::new(conn))),
        }
    }

    /// The handler and settings a request starting now uses.
    #[inline]
    pub fn get(&self) -> (Rc<H>, Rc<ConnConfig>) {
        self.now.borrow().clone()
    }

    #[inline]
    pub fn conn(&self) -> Rc<ConnConfig> {
        self.now.borrow().1.clone()
    }

    fn set(&self, handler: H, conn: ConnConfig) {
        *self.now.borrow_mut() = (Rc::new(handler), Rc::new(conn));
    }
}

/// One reload, as sent to each worker.
pub(crate) struct Update<H> {
    generation: u64,
    factory: Factory<H>,
    conn: ConnConfig,
}

/// A worker's answer to an [`Update`].
pub(crate) struct Ack {
    worker: usize,
    generation: u64,
    result: Result<(), String>,
}

/// The main thread's end of every worker's reload channel.
pub(crate) struct Reloader<H> {
    workers: Vec<(mpsc::Sender<Update<H>>, UnixStream)>,
    acks: mpsc::Receiver<Ack>,
    generation: u64,
}

/// A worker's end.
pub(crate) struct ReloadInbox<H> {
    index: usize,
    updates: mpsc::Receiver<Update<H>>,
    wake: UnixStream,
    acks: mpsc::Sender<Ack>,
}

pub(crate) fn channels<H>(workers: usize) -> std::io::Result<(Reloader<H>, Vec<ReloadInbox<H>>)> {
    let (ack_tx, ack_rx) = mpsc::channel();
    let mut ends = Vec::with_capacity(workers);
    let mut inboxes = Vec::with_capacity(workers);
    for index in 0..workers {
        let (tx, rx) = mpsc::channel();
        let (main, worker) = UnixStream::pair()?;
        main.set_nonblocking(true)?;
        ends.push((tx, main));
        inboxes.push(ReloadInbox {
            index,
            updates: rx,
            wake: worker,
            acks: ack_tx.clone(),
        });
    }
    Ok((
        Reloader {
            workers: ends,
            acks: ack_rx,
            generation: 0,
        },
        inboxes,
    ))
}

/// How long the main thread waits for the workers to take a reload.
const ACK_WAIT: Duration = Duration::from_secs(30);

impl<H> Reloader<H> {
    /// Sends `factory` to every worker and waits until each has swapped its
    /// handler or refused. Returns the refusals as (worker, reason).
    pub(crate) fn reload(&mut self, factory: Factory<H>, conn: ConnConfig) -> Vec<(usize, String)> {
        self.generation += 1;
        let generation = self.generation;
        let mut failed = Vec::new();
        let mut waiting = 0;
        for (index, (tx, wake)) in self.workers.iter_mut().enumerate() {
            let sent = tx.send(Update {
                generation,
                factory: factory.clone(),
                conn: conn.clone(),
            });
            // A full socket buffer still holds an unread wake-up byte, which
            // is as good as ours.
            let woke = match wake.write(&[1]) {
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
            };
            if sent.is_ok() && woke {
                waiting += 1;
            } else {
                failed.push((index, "the worker has exited".to_string()));
            }
        }
        let deadline = Instant::now() + ACK_WAIT;
        while waiting > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.acks.recv_timeout(left) {
                Ok(ack) if ack.generation == generation => {
                    waiting -= 1;
                    if let Err(e) = ack.result {
                        failed.push((ack.worker, e));
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    failed.push((usize::MAX, format!("{waiting} workers did not answer")));
                    break;
                }
            }
        }
        failed
    }
}

impl<H: 'static> ReloadInbox<H> {
    /// Runs for the worker's life: applies each update to `current`.
    pub(crate) async fn serve(self, ctx: WorkerContext, current: Rc<Current<H>>) {
        let mut wake = match crate::doorbell::Wakeups::watch(self.wake) {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(%e, "cannot watch for reloads; this worker keeps its config");
                return;
            }
        };
        while wake.next().await {
            while let Ok(u) = self.updates.try_recv() {
                let result = {
                    let (old, _) = current.get();
                    (u.factory)(&ctx, Some(&old))
                };
                let result = result.map(|h| current.set(h, u.conn));
                if let Err(e) = &result {
                    tracing::error!(worker = self.index, error = %e, "reload refused; keeping the old config");
                }
                let _ = self.acks.send(Ack {
                    worker: self.index,
                    generation: u.generation,
                    result,
                });
            }
        }
    }
}
