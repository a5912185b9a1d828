//! Faults a debug build can be told to make, so that the checks meant to
//! catch them (the soak's descriptor verdict) can be shown to fail. Release
//! builds compile none of this.
//!
//! `RINGSIDE_FAULT_LEAK_FD_EVERY=N`: every Nth request a worker answers
//! opens `/dev/null` and never closes it.

#[cfg(debug_assertions)]
pub fn request_done() {
    use std::cell::Cell;
    use std::sync::OnceLock;

    static EVERY: OnceLock<u64> = OnceLock::new();
    thread_local! {
        static DONE: Cell<u64> = const { Cell::new(0) };
    }
    let every = *EVERY.get_or_init(|| {
        std::env::var("RINGSIDE_FAULT_LEAK_FD_EVERY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    if every == 0 {
        return;
    }
    let n = DONE.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    if n.is_multiple_of(every) {
        if let Ok(f) = std::fs::File::open("/dev/null") {
            std::mem::forget(f);
        }
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn request_done() {}
