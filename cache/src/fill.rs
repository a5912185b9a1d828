//! One fetch of a key that other requests wait on (Varnish's busy object,
//! nginx's cache lock): the fetching request's capture tells the fill of
//! the head and each piece of the body as they arrive, and a waiting
//! request whose response this may be streams it from here as it grows,
//! not after it ends.
//!
//! ```text
//! leader: forward ─ capture ─▶ Fill::head, Fill::body ... ─▶ finish(ok)
//!                                  │ wakes
//! waiter: wait for the head (lock_timeout) ─▶ shareable? ─ no ─▶ fetch alone
//!            │ yes
//!            ▼
//!         write what came, wait for more, ... until the fill ends (a
//!         broken fill cuts the waiter's response as the leader's was)
//! ```

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use ringside_http::capture::{Capture, Fields, Sink};

/// The head of the response being fetched.
pub struct Head {
    pub status: u16,
    /// As the upstream sent them, its Date among them where it gave one.
    pub headers: Fields,
    pub length: Option<u64>,
}

/// How a fill ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Open,
    /// Whole: what was stored (if it was storable) is there now.
    Done,
    /// Cut, failed, or dropped before a whole response.
    Failed,
}

/// A fetch under way, and what it brought so far.
pub struct Fill {
    /// The fetching request's fields, for its response's Vary.
    pub request: Fields,
    head: RefCell<Option<std::rc::Rc<Head>>>,
    body: RefCell<Vec<u8>>,
    end: Cell<End>,
    /// Bumped by each event; a waiter waits for it to move.
    version: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Fill {
    pub fn new(request: Fields) -> Fill {
        Fill {
            request,
            head: RefCell::default(),
            body: RefCell::default(),
            end: Cell::new(End::Open),
            version: Cell::new(0),
            wakers: RefCell::default(),
        }
    }

    fn bump(&self) {
        self.version.set(self.version.get() + 1);
        for w in self.wakers.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Ends the fill; `ok`: the response came whole.
    pub fn finish(&self, ok: bool) {
        if self.end.get() == End::Open {
            self.end.set(if ok { End::Done } else { End::Failed });
            self.bump();
        }
    }

    pub fn end(&self) -> End {
        self.end.get()
    }

    pub fn head(&self) -> Option<std::rc::Rc<Head>> {
        self.head.borrow().clone()
    }

    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// The body's bytes from `at` on that came so far (copied: the fill
    /// grows while the caller writes them).
    pub fn body_from(&self, at: usize) -> Vec<u8> {
        let b = self.body.borrow();
        b.get(at..).map(<[u8]>::to_vec).unwrap_or_default()
    }

    /// Waits until the fill ends.
    pub async fn ended(&self) {
        while self.end.get() == End::Open {
            let seen = self.version.get();
            self.changed(seen).await;
        }
    }

    /// Waits until something happens after `seen` (a version).
    pub fn changed(&self, seen: u64) -> Changed<'_> {
        Changed { fill: self, seen }
    }
}

impl Sink for Fill {
    fn head(&self, c: &Capture, length: Option<u64>) {
        let mut headers = c.headers.clone();
        if let Some(d) = &c.date {
            headers.push((Box::from(&b"Date"[..]), d.clone()));
        }
        *self.head.borrow_mut() = Some(std::rc::Rc::new(Head {
            status: c.status,
            headers,
            length,
        }));
        self.bump();
    }

    fn body(&self, data: &[u8]) {
        self.body.borrow_mut().extend_from_slice(data);
        self.bump();
    }
}

/// The future of [`Fill::changed`].
pub struct Changed<'a> {
    fill: &'a Fill,
    seen: u64,
}

impl Future for Changed<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.fill.version.get() != self.seen {
            return Poll::Ready(());
        }
        let mut w = self.fill.wakers.borrow_mut();
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
