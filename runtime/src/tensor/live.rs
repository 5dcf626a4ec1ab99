//! Counting live tensors, so tests can prove that no tensor leaks and none is freed twice.
//!
//! The count is of tensor *objects* (one per `empty`, `from_vec`, view, ...), not of handles:
//! cloning a [`Tensor`](super::Tensor) only bumps its reference count and never touches these
//! counters.
//!
//! Each thread counts in a counter of its own, which only that thread writes (a load and a
//! store: no read-modify-write of a line that every core's tensors share, which a many-threaded
//! server would contend on). The counters are registered so that [`live_tensors`] can sum them.
//! A thread's count outlives it: when the thread exits, its counter is folded into `RETIRED`.

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Every running thread's counter that has counted a tensor.
static COUNTERS: Mutex<Vec<Arc<AtomicIsize>>> = Mutex::new(Vec::new());

/// The counts of threads that have exited, and what was counted while a thread's own counter
/// was being torn down.
static RETIRED: AtomicIsize = AtomicIsize::new(0);

fn counters() -> MutexGuard<'static, Vec<Arc<AtomicIsize>>> {
    COUNTERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Owns this thread's counter from its registration until the thread exits, then folds its
/// count into `RETIRED`.
struct Here(Arc<AtomicIsize>);

impl Drop for Here {
    fn drop(&mut self) {
        // What this thread counts from now on (other locals' destructors) goes to `RETIRED`.
        COUNTER.set(std::ptr::null());
        // Under the lock, so that a concurrent sum sees the count in exactly one place.
        let mut all = counters();
        all.retain(|c| !Arc::ptr_eq(c, &self.0));
        RETIRED.fetch_add(self.0.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

thread_local! {
    /// This thread's counter, null until registered and once the thread's `HERE` is gone. A
    /// plain cell with no destructor, so that counting reads one pointer with no check of a
    /// local's state.
    static COUNTER: Cell<*const AtomicIsize> = const { Cell::new(std::ptr::null()) };
    static HERE: Here = {
        let counter = Arc::new(AtomicIsize::new(0));
        counters().push(counter.clone());
        COUNTER.set(Arc::as_ptr(&counter));
        Here(counter)
    };
}

/// Counts `n` tensor objects in (or out, negative) on this thread.
#[inline]
fn count(n: isize) {
    let counter = COUNTER.get();
    if counter.is_null() {
        return count_unregistered(n);
    }
    // SAFETY: a non-null `COUNTER` points into the `Arc` that this thread's `HERE` owns, which
    // nulls it before letting go.
    let counter = unsafe { &*counter };
    // Only this thread writes its counter.
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// [`count`] before this thread's counter exists (registering it), or after it is gone.
#[cold]
fn count_unregistered(n: isize) {
    if HERE.try_with(|_| ()).is_ok() && !COUNTER.get().is_null() {
        return count(n);
    }
    // A tensor made or dropped while this thread's locals are torn down.
    RETIRED.fetch_add(n, Ordering::Relaxed);
}

/// The number of tensor objects alive in the process.
///
/// Tests that run in parallel (the default of `cargo test`) create tensors concurrently, so an
/// exact comparison against this number can race with other tests; use
/// [`live_tensors_on_this_thread`] for exact before/after checks.
pub fn live_tensors() -> usize {
    let all = counters();
    let sum = all.iter().map(|c| c.load(Ordering::Relaxed)).sum::<isize>()
        + RETIRED.load(Ordering::Relaxed);
    // Threads counting at this moment may have counted a drop before the creation it matches.
    usize::try_from(sum).unwrap_or(0)
}

/// Tensor objects created on this thread minus tensor objects dropped on this thread.
///
/// Unaffected by other threads, so `let before = live_tensors_on_this_thread(); ...;
/// assert_eq!(live_tensors_on_this_thread(), before)` is an exact leak and double-free check for
/// code that creates and drops its tensors on one thread (as a single test does). It can go
/// negative on a thread that drops tensors created elsewhere.
pub fn live_tensors_on_this_thread() -> isize {
    let counter = COUNTER.get();
    if counter.is_null() {
        return 0;
    }
    // SAFETY: as in `count`.
    unsafe { &*counter }.load(Ordering::Relaxed)
}

/// Held by every tensor object: counts it in when created and out when dropped.
pub(crate) struct LiveToken(());

impl LiveToken {
    pub(crate) fn new() -> LiveToken {
        count(1);
        LiveToken(())
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        count(-1);
    }
}

/// Stops counting a tensor object set aside for reuse: it holds no one's tensor until
/// [`taken_back`] counts it in again (or its drop would count it out twice).
pub(crate) fn set_aside() {
    count(-1);
}

/// Counts a tensor object set aside with [`set_aside`] in again.
pub(crate) fn taken_back() {
    count(1);
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
        taken_back();
        drop(token);
        assert_eq!(live_tensors_on_this_thread(), here - 3);
    }
}
