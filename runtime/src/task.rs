//! Spawning on this core, sleeping and timeouts, over the current engine.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::backend::on_engine;

/// Runs `fut` on this worker's core, detached. It never moves to another core.
pub fn spawn<F>(fut: F)
where
    F: Future<Output = ()> + 'static,
{
    on_engine!(
        monoio => drop(monoio::spawn(fut)),
        glommio => drop(glommio::spawn_local(fut).detach()),
    )
}

/// [`spawn`] for the future `make` gives, made in the task's own memory on
/// monoio: a future made first and spawned after is copied in whole (its
/// largest state's size, kilobytes for a connection's or a stream's), three
/// times on the way into monoio's task cell (callgrind: about 1,000
/// instructions per HTTP/2 stream).
#[inline(always)]
pub fn spawn_with<F>(make: impl FnOnce() -> F)
where
    F: Future<Output = ()> + 'static,
{
    on_engine!(
        monoio => drop(monoio::spawn_with(make)),
        glommio => drop(glommio::spawn_local(make()).detach()),
    )
}

/// A timer future on this worker's engine.
pub struct Sleep {
    inner: SleepInner,
}

enum SleepInner {
    #[cfg(rt_monoio)]
    // Boxed: monoio's Sleep is 640 bytes, and no hot path sleeps.
    Monoio(Pin<Box<monoio::time::Sleep>>),
    #[cfg(rt_glommio)]
    Glommio(glommio::timer::Timer),
}

pub fn sleep(d: Duration) -> Sleep {
    sleep_until(Instant::now() + d)
}

pub fn sleep_until(deadline: Instant) -> Sleep {
    let inner = on_engine!(
        monoio => SleepInner::Monoio(Box::pin(monoio::time::sleep_until(deadline.into()))),
        glommio => SleepInner::Glommio(glommio::timer::Timer::new(deadline.saturating_duration_since(Instant::now()))),
    );
    Sleep { inner }
}

impl Sleep {
    /// Moves the deadline, reusing the timer (no new allocation).
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        // SAFETY: the inner timer is never moved out of the pinned Sleep.
        let this = unsafe { self.get_unchecked_mut() };
        match &mut this.inner {
            #[cfg(rt_monoio)]
            SleepInner::Monoio(s) => s.as_mut().reset(deadline.into()),
            #[cfg(rt_glommio)]
            SleepInner::Glommio(t) => t.reset(deadline.saturating_duration_since(Instant::now())),
        }
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: we never move the inner timer out of the pinned Sleep.
        let this = unsafe { self.get_unchecked_mut() };
        match &mut this.inner {
            #[cfg(rt_monoio)]
            SleepInner::Monoio(s) => s.as_mut().poll(cx),
            #[cfg(rt_glommio)]
            SleepInner::Glommio(t) => Pin::new(t).poll(cx).map(|_| ()),
        }
    }
}

/// The deadline passed before the future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out")]
pub struct Elapsed;

/// Runs `fut` until `deadline`. Dropping the future cancels its I/O.
///
/// The timer is made only once `fut` has to wait: a timer is an
/// allocation and an entry in the engine's wheel, and most waits on a busy
/// connection (the next frame of a response already read) are ready at
/// once. A ready future wins even past its deadline, as with [`select`].
pub async fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Result<F::Output, Elapsed> {
    timeout_at_with(&std::cell::Cell::new(None), deadline, fut).await
}

/// [`timeout_at`] on a timer that the caller keeps in `timer`: the first
/// wait that has to wait makes it, later ones move its deadline. A loop of
/// waits (a response relayed piece by piece) then makes one timer, where
/// each [`timeout_at`] makes and drops its own (an allocation and a timer
/// wheel entry each).
pub async fn timeout_at_with<F: Future>(
    timer: &std::cell::Cell<Option<Sleep>>,
    deadline: Instant,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let mut fut = std::pin::pin!(fut);
    let mut set = false;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let mut t = match timer.take() {
            Some(mut t) if !set => {
                Pin::new(&mut t).reset(deadline);
                t
            }
            Some(t) => t,
            None => sleep_until(deadline),
        };
        set = true;
        let r = Pin::new(&mut t).poll(cx);
        timer.set(Some(t));
        match r {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

pub async fn timeout<F: Future>(d: Duration, fut: F) -> Result<F::Output, Elapsed> {
    timeout_at(Instant::now() + d, fut).await
}

pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures, returning the first to finish; the other is dropped.
/// Left is polled first, so a ready left side always wins.
pub async fn select<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// Wakes `waker` once the tasks ready on this core now, and those they
/// wake, have run: for a task that gathers what they produce (a QUIC
/// connection's sends) and should run once for all of it. On glommio, at
/// once.
pub fn wake_after_ready(waker: &std::task::Waker) {
    on_engine!(
        monoio => monoio::task::deferred::wake_after_ready(waker),
        glommio => waker.wake_by_ref(),
    )
}

/// Gives the tasks ready on this core, and what waits for them
/// (`wake_after_ready`), a turn before this one goes on.
pub async fn yield_after_ready() {
    yield_then(wake_after_ready).await
}

/// Gives other tasks on this core a turn.
pub async fn yield_now() {
    yield_then(std::task::Waker::wake_by_ref).await
}

/// Pending once, with `wake` asked to wake this task; ready after.
async fn yield_then(wake: impl FnOnce(&std::task::Waker)) {
    let mut wake = Some(wake);
    std::future::poll_fn(|cx| match wake.take() {
        Some(w) => {
            w(cx.waker());
            Poll::Pending
        }
        None => Poll::Ready(()),
    })
    .await
}

#[cfg(all(test, feature = "io-uring"))]
mod tests {
    use super::*;

    /// Runs `f` to its end on an io_uring engine with timers.
    fn on_uring<F: Future>(f: F) -> F::Output {
        crate::backend::set_current(crate::backend::Backend::IoUring);
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .unwrap()
            .block_on(f)
    }

    type Order = std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>;

    /// A task whose one wait is `yield_after_ready` (its first poll asks
    /// wake_after_ready), then writes `name` down.
    fn after_ready(order: &Order, name: &'static str) -> monoio::task::JoinHandle<()> {
        let o = order.clone();
        monoio::spawn(async move {
            yield_after_ready().await;
            o.borrow_mut().push(name);
        })
    }

    #[test]
    fn a_deferred_wake_comes_after_the_ready_tasks() {
        let order = Order::default();
        on_uring(async {
            let deferred = after_ready(&order, "deferred");
            for name in ["a", "b"] {
                let o = order.clone();
                spawn(async move {
                    // Each gives the others a turn first: still ahead.
                    yield_now().await;
                    yield_now().await;
                    o.borrow_mut().push(name);
                });
            }
            deferred.await;
        });
        assert_eq!(*order.borrow(), ["a", "b", "deferred"]);
    }

    #[test]
    fn yield_after_ready_resumes_after_the_ready_and_the_deferred() {
        let order = Order::default();
        on_uring(async {
            // A connection's turn, deferred while a datagram is handled
            // (as `Inner::kick` asks).
            let turn = after_ready(&order, "turn");
            // A stream the datagram woke.
            let o = order.clone();
            spawn(async move {
                yield_now().await;
                o.borrow_mut().push("stream");
            });
            // The endpoint's loop, going on to the next datagram.
            let o = order.clone();
            let endpoint = monoio::spawn(async move {
                // Let the two above defer and queue themselves first.
                yield_now().await;
                yield_after_ready().await;
                o.borrow_mut().push("next datagram");
            });
            turn.await;
            endpoint.await;
        });
        assert_eq!(*order.borrow(), ["stream", "turn", "next datagram"]);
    }

    #[test]
    fn a_kept_timer_fires_then_moves_to_the_next_deadline() {
        on_uring(async {
            let timer = std::cell::Cell::new(None);
            let soon = Instant::now() + Duration::from_millis(10);
            let r = timeout_at_with(&timer, soon, std::future::pending::<()>()).await;
            assert_eq!(r, Err(Elapsed));
            // The same timer, moved: a fired timer must not end this wait.
            let later = Instant::now() + Duration::from_secs(30);
            let slow = async {
                sleep(Duration::from_millis(20)).await;
                7
            };
            assert_eq!(timeout_at_with(&timer, later, slow).await, Ok(7));
            // And it still fires at a deadline moved back in.
            let soon = Instant::now() + Duration::from_millis(10);
            let r = timeout_at_with(&timer, soon, std::future::pending::<()>()).await;
            assert_eq!(r, Err(Elapsed));
        });
    }
}
