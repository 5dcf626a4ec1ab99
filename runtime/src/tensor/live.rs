//! Counting live tensors, so tests can prove that no tensor leaks and none is freed twice.
//!
//! The count is of tensor *objects* (one per `empty`, `from_vec`, view, ...), not of handles:
//! cloning a [`Tensor`](super::Tensor) only bumps its reference count and never touches these
//! counters.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static LIVE_HERE: Cell<isize> = const { Cell::new(0) };
}

/// The number of tensor objects alive in the process.
///
/// Tests that run in parallel (the default of `cargo test`) create tensors concurrently, so an
/// exact comparison against this number can race with other tests; use
/// [`live_tensors_on_this_thread`] for exact before/after checks.
pub fn live_tensors() -> usize {
    LIVE.load(Ordering::SeqCst)
}

/// Tensor objects created on this thread minus tensor objects dropped on this thread.
///
/// Unaffected by other threads, so `let before = live_tensors_on_this_thread(); ...;
/// assert_eq!(live_tensors_on_this_thread(), before)` is an exact leak and double-free check for
/// code that creates and drops its tensors on one thread (as a single test does). It can go
/// negative on a thread that drops tensors created elsewhere.
pub fn live_tensors_on_this_thread() -> isize {
    LIVE_HERE.try_with(Cell::get).unwrap_or(0)
}

/// Held by every tensor object: counts it in when created and out when dropped.
pub(crate) struct LiveToken(());

impl LiveToken {
    pub(crate) fn new() -> LiveToken {
        LIVE.fetch_add(1, Ordering::SeqCst);
        // try_with: a tensor may be created or dropped while this thread's locals are torn down.
        let _ = LIVE_HERE.try_with(|c| c.set(c.get() + 1));
        LiveToken(())
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        let _ = LIVE_HERE.try_with(|c| c.set(c.get() - 1));
    }
}

/// Stops counting a tensor object set aside for reuse: it holds no one's tensor until
/// [`taken_back`] counts it in again (or its drop would count it out twice).
pub(crate) fn set_aside() {
    LIVE.fetch_sub(1, Ordering::SeqCst);
    let _ = LIVE_HERE.try_with(|c| c.set(c.get() - 1));
}

/// Counts a tensor object set aside with [`set_aside`] in again.
pub(crate) fn taken_back() {
    LIVE.fetch_add(1, Ordering::SeqCst);
    let _ = LIVE_HERE.try_with(|c| c.set(c.get() + 1));
}
