//! A boxed future whose memory is kept by the core for the next one of the
//! same layout: a request's future lives outside its connection's task
//! (so that idle connections stay small) without an allocation per
//! request.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// Blocks kept per layout: as many as requests in flight at once on a
/// core, commonly; past it they go back to the allocator.
const KEPT: usize = 256;

struct Pool {
    /// A list of free blocks per layout (few layouts: one per future type
    /// boxed this way).
    free: Vec<(Layout, Vec<NonNull<u8>>)>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (layout, blocks) in self.free.drain(..) {
            for b in blocks {
                // SAFETY: each block was allocated with this layout and is
                // not in use.
                unsafe { dealloc(b.as_ptr(), layout) };
            }
        }
    }
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { free: Vec::new() }) };
}

fn take(layout: Layout) -> NonNull<u8> {
    let kept = POOL.with(|p| {
        let mut p = p.borrow_mut();
        p.free
            .iter_mut()
            .find(|(l, _)| *l == layout)
            .and_then(|(_, v)| v.pop())
    });
    kept.unwrap_or_else(|| {
        // SAFETY: the layout's size is not zero (checked by the caller).
        let p = unsafe { alloc(layout) };
        NonNull::new(p).unwrap_or_else(|| handle_alloc_error(layout))
    })
}

fn give(layout: Layout, block: NonNull<u8>) {
    let spill = POOL
        .try_with(|p| {
            let mut p = p.borrow_mut();
            let list = match p.free.iter().position(|(l, _)| *l == layout) {
                Some(i) => &mut p.free[i].1,
                None => {
                    p.free.push((layout, Vec::new()));
                    &mut p.free.last_mut().expect("just pushed").1
                }
            };
            if list.len() < KEPT {
                list.push(block);
                false
            } else {
                true
            }
        })
        .unwrap_or(true);
    if spill {
        // SAFETY: allocated with this layout, and no longer used.
        unsafe { dealloc(block.as_ptr(), layout) };
    }
}

/// `F` on the heap, in a block this core reuses.
pub(crate) struct Recycled<F: Future> {
    ptr: NonNull<F>,
}

impl<F: Future> Recycled<F> {
    /// The future `make` gives, made where it will live.
    #[inline(always)]
    pub(crate) fn with(make: impl FnOnce() -> F) -> Recycled<F> {
        let layout = Layout::new::<F>();
        let ptr = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            take(layout).cast::<F>()
        };
        // SAFETY: `ptr` is valid for a write of `F` and suitably aligned.
        unsafe { ptr.as_ptr().write(make()) };
        Recycled { ptr }
    }
}

impl<F: Future> Future for Recycled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future stays where it was written until it is
        // dropped in place: it is pinned even as the handle moves.
        unsafe { Pin::new_unchecked(&mut *self.ptr.as_ptr()) }.poll(cx)
    }
}

// The handle is a pointer; moving it never moves the future.
impl<F: Future> Unpin for Recycled<F> {}

impl<F: Future> Drop for Recycled<F> {
    fn drop(&mut self) {
        let layout = Layout::new::<F>();
        // SAFETY: written in `new` and not dropped before.
        unsafe { std::ptr::drop_in_place(self.ptr.as_ptr()) };
        if layout.size() != 0 {
            give(layout, self.ptr.cast());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn a_block_is_reused_and_the_future_dropped() {
        let dropped = Rc::new(());
        let make = |d: Rc<()>| async move {
            let _held = d;
            [7u8; 300]
        };
        let a = Recycled::with(|| make(dropped.clone()));
        let first = a.ptr.cast::<u8>();
        drop(a);
        assert_eq!(Rc::strong_count(&dropped), 1, "the future was dropped");
        let b = Recycled::with(|| make(dropped.clone()));
        assert_eq!(b.ptr.cast::<u8>(), first, "the same block again");
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut b = b;
        match Pin::new(&mut b).poll(&mut cx) {
            Poll::Ready(v) => assert_eq!(v, [7u8; 300]),
            Poll::Pending => panic!("ready at once"),
        }
    }
}
