//! (ringside) Task cells too large for the allocator's per-thread cache,
//! kept per thread for the next task of the same layout.
//!
//! A request's task is kilobytes (an HTTP/2 stream's holds its proxied
//! request's future inline, about 3 KiB), past glibc's per-thread cache
//! (1,032 bytes): each such cell cost a full malloc and free, about 550
//! instructions a stream under callgrind (h2load -c100 -m10, static
//! 26 B), where a cell taken back from here costs a few dozen.

use std::{
    alloc::{alloc, dealloc, handle_alloc_error, Layout},
    cell::RefCell,
    ptr::NonNull,
};

/// Cells up to this size come from glibc's per-thread cache already.
const SMALL: usize = 1032;
/// The most a thread keeps, in bytes: a burst's cells beyond it go back
/// to the allocator. (h2load -c100 -m10 has up to 1,000 streams' tasks
/// alive at once; 256 KiB kept 80 of them and left 59% of the cells to
/// malloc. An HTTP/3 stream's task is 4.8 KiB: 1 MiB kept 216 and left
/// half the cells of `ringside-bench --h3 -c100 --streams 10` to malloc.)
const KEEP_BYTES: usize = 4 * 1024 * 1024;
/// Distinct layouts kept (the tasks a server spawns per request are few).
const CLASSES: usize = 4;

struct Class {
    layout: Layout,
    blocks: Vec<NonNull<u8>>,
}

struct Pool {
    classes: Vec<Class>,
    bytes: usize,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for c in &mut self.classes {
            for b in c.blocks.drain(..) {
                // SAFETY: every block kept was allocated with its class's
                // layout and is owned by the pool alone.
                unsafe { dealloc(b.as_ptr(), c.layout) };
            }
        }
    }
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            classes: Vec::new(),
            bytes: 0,
        })
    };
}

/// A block for a cell of `layout` (its size is never zero: a cell has a
/// header).
#[inline]
pub(crate) fn alloc_cell(layout: Layout) -> NonNull<u8> {
    if layout.size() > SMALL {
        let kept = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            let c = p.classes.iter_mut().find(|c| c.layout == layout)?;
            let b = c.blocks.pop()?;
            p.bytes -= layout.size();
            Some(b)
        });
        if let Ok(Some(b)) = kept {
            return b;
        }
    }
    // SAFETY: the layout's size is not zero.
    let p = unsafe { alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| handle_alloc_error(layout))
}

/// Gives back a block `alloc_cell` gave for `layout`, its cell dropped.
///
/// # Safety
/// `b` came from `alloc_cell(layout)` (or the global allocator with
/// `layout`) and is used no more.
#[inline]
pub(crate) unsafe fn free_cell(b: NonNull<u8>, layout: Layout) {
    if layout.size() > SMALL {
        let kept = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.bytes + layout.size() > KEEP_BYTES {
                return false;
            }
            let at = match p.classes.iter().position(|c| c.layout == layout) {
                Some(at) => at,
                None if p.classes.len() < CLASSES => {
                    p.classes.push(Class {
                        layout,
                        blocks: Vec::with_capacity(KEEP_BYTES / layout.size()),
                    });
                    p.classes.len() - 1
                }
                None => return false,
            };
            p.classes[at].blocks.push(b);
            p.bytes += layout.size();
            true
        });
        if kept == Ok(true) {
            return;
        }
    }
    dealloc(b.as_ptr(), layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_are_reused_small_ones_are_not_kept() {
        let big = Layout::from_size_align(3000, 16).unwrap();
        let a = alloc_cell(big);
        unsafe { free_cell(a, big) };
        let b = alloc_cell(big);
        assert_eq!(a, b, "the block given back is the next one handed out");
        unsafe { free_cell(b, big) };
        let small = Layout::from_size_align(64, 8).unwrap();
        let s = alloc_cell(small);
        unsafe { free_cell(s, small) };
        POOL.with(|p| {
            let p = p.borrow();
            assert!(p.classes.iter().all(|c| c.layout != small));
            assert_eq!(p.bytes, 3000);
        });
    }

    #[test]
    fn a_thread_keeps_at_most_its_bound() {
        let big = Layout::from_size_align(400 * 1024, 16).unwrap();
        let blocks: Vec<_> = (0..4).map(|_| alloc_cell(big)).collect();
        for b in blocks {
            unsafe { free_cell(b, big) };
        }
        POOL.with(|p| assert!(p.borrow().bytes <= KEEP_BYTES));
    }
}
