//! Counting live tensors, so tests can prove that no tensor leaks and none is freed twice.
//!
//! The count is of tensor *objects* (one per `empty`, `from_vec`, view, ...), not of handles:
//! cloning a [`Tensor`](super::Tensor) only bumps its reference count and never touches these
//! counters. Each thread counts in counters of its own (`crate::live_counts`), so counting costs
//! no shared read-modify-write.

use crate::live_counts::{count, on_this_thread, total, Kind};

/// The number of tensor objects alive in the process.
///
/// Tests that run in parallel (the default of `cargo test`) create tensors concurrently, so an
/// exact comparison against this number can race with other tests; use
/// [`live_tensors_on_this_thread`] for exact before/after checks.
pub fn live_tensors() -> usize {
    usize::try_from(total(Kind::Tensor)).unwrap_or(0)
}

/// Tensor objects created on this thread minus tensor objects dropped on this thread.
///
/// Unaffected by other threads, so `let before = live_tensors_on_this_thread(); ...;
/// assert_eq!(live_tensors_on_this_thread(), before)` is an exact leak and double-free check for
/// code that creates and drops its tensors on one thread (as a single test does). It can go
/// negative on a thread that drops tensors created elsewhere.
pub fn live_tensors_on_this_thread() -> isize {
    on_this_thread(Kind::Tensor)
}

/// Held by every tensor object: counts it in when created and out when dropped.
pub(crate) struct LiveToken(());

impl LiveToken {
    pub(crate) fn new() -> LiveToken {
        count(Kind::Tensor, 1);
        LiveToken(())
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        count(Kind::Tensor, -1);
    }
}

/// Stops counting a tensor object set aside for the rest of the process (never dropped): it
/// holds no one's tensor.
pub(crate) fn set_aside() {
    count(Kind::Tensor, -1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_counted_out_where_they_drop_and_set_aside_ones_are_not_counted() {
        let here = live_tensors_on_this_thread();
        let kept = std::thread::spawn(|| {
            let made: Vec<LiveToken> = (0..3).map(|_| LiveToken::new()).collect();
            assert_eq!(live_tensors_on_this_thread(), 3);
            made
        })
        .join()
        .unwrap();
        // Made on a thread that has exited, dropped here: this thread counts them out.
        drop(kept);
        assert_eq!(live_tensors_on_this_thread(), here - 3);
        let token = LiveToken::new();
        set_aside();
        assert_eq!(live_tensors_on_this_thread(), here - 3);
        std::mem::forget(token);
        assert_eq!(live_tensors_on_this_thread(), here - 3);
    }
}
