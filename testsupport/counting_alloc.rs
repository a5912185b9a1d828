//! A global allocator that counts the allocations (and reallocations) made
//! on threads that turned counting on: the tests that hold a hot path to
//! no allocation include this file (`#[path]`) and declare it global.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

pub static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised, so reading it never allocates inside the allocator.
    pub static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Counts this thread's allocations from now on (or stops).
pub fn count_here(on: bool) {
    COUNTED.with(|c| c.set(on));
}

/// Allocations counted so far, on every counting thread.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTED.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}
