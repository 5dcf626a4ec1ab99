//! Counts of live objects by kind (tensor objects, string and list boxes), so tests can prove
//! that nothing leaks and nothing is freed twice; `tensor::live_tensors` and
//! `value::live_handles` read them.
//!
//! Each thread counts in counters of its own, which only that thread writes (a load and a store
//! through a plain thread-local pointer: no read-modify-write of a line that every core's objects
//! share, which a many-threaded server would contend on). The counters are registered so that
//! [`total`] can sum them. A thread's counts outlive it: when the thread exits, they are folded
//! into `RETIRED`.

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What is counted.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// Tensor objects (one per `TensorImpl`, not per handle).
    Tensor = 0,
    /// The heap boxes of string and list values.
    Box = 1,
}

const KINDS: usize = 2;

type Counts = [AtomicIsize; KINDS];

/// Every running thread's counters that have counted something.
static COUNTERS: Mutex<Vec<Arc<Counts>>> = Mutex::new(Vec::new());

/// The counts of threads that have exited, and what was counted while a thread's own counters
/// were being torn down.
static RETIRED: Counts = [const { AtomicIsize::new(0) }; KINDS];

fn counters() -> MutexGuard<'static, Vec<Arc<Counts>>> {
    COUNTERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Owns this thread's counters from their registration until the thread exits, then folds them
/// into `RETIRED`.
struct Here(Arc<Counts>);

impl Drop for Here {
    fn drop(&mut self) {
        // What this thread counts from now on (other locals' destructors) goes to `RETIRED`.
        COUNTER.set(std::ptr::null());
        // Under the lock, so that a concurrent sum sees each count in exactly one place.
        let mut all = counters();
        all.retain(|c| !Arc::ptr_eq(c, &self.0));
        for (retired, mine) in RETIRED.iter().zip(self.0.iter()) {
            retired.fetch_add(mine.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// This thread's counters, null until registered and once the thread's `HERE` is gone. A
    /// plain cell with no destructor, so that counting reads one pointer with no check of a
    /// local's state.
    static COUNTER: Cell<*const Counts> = const { Cell::new(std::ptr::null()) };
    static HERE: Here = {
        let counts = Arc::new([const { AtomicIsize::new(0) }; KINDS]);
        counters().push(counts.clone());
        COUNTER.set(Arc::as_ptr(&counts));
        Here(counts)
    };
}

/// Counts `n` objects of `kind` in (or out, negative) on this thread.
#[inline]
pub(crate) fn count(kind: Kind, n: isize) {
    let counts = COUNTER.get();
    if counts.is_null() {
        return count_unregistered(kind, n);
    }
    // SAFETY: a non-null `COUNTER` points into the `Arc` that this thread's `HERE` owns, which
    // nulls it before letting go.
    let counter = &unsafe { &*counts }[kind as usize];
    // Only this thread writes its counters.
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// [`count`] before this thread's counters exist (registering them), or after they are gone.
#[cold]
fn count_unregistered(kind: Kind, n: isize) {
    if HERE.try_with(|_| ()).is_ok() && !COUNTER.get().is_null() {
        return count(kind, n);
    }
    // Counted while this thread's locals are torn down.
    RETIRED[kind as usize].fetch_add(n, Ordering::Relaxed);
}

/// The live objects of `kind` in the process: every thread's count, exited ones included.
/// Exact when no other thread is counting; threads counting at the same moment may show a drop
/// before the creation it matches.
pub(crate) fn total(kind: Kind) -> isize {
    let all = counters();
    all.iter()
        .map(|c| c[kind as usize].load(Ordering::Relaxed))
        .sum::<isize>()
        + RETIRED[kind as usize].load(Ordering::Relaxed)
}

/// Objects of `kind` counted in on this thread minus those counted out on it.
pub(crate) fn on_this_thread(kind: Kind) -> isize {
    let counts = COUNTER.get();
    if counts.is_null() {
        return 0;
    }
    // SAFETY: as in `count`.
    let counts = unsafe { &*counts };
    counts[kind as usize].load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_go_out_where_they_drop_and_kinds_are_apart() {
        let (tensors, boxes) = (on_this_thread(Kind::Tensor), on_this_thread(Kind::Box));
        std::thread::spawn(|| {
            count(Kind::Tensor, 3);
            assert_eq!(on_this_thread(Kind::Tensor), 3);
            assert_eq!(on_this_thread(Kind::Box), 0);
        })
        .join()
        .unwrap();
        // Counted in on a thread that has exited, out here.
        count(Kind::Tensor, -3);
        count(Kind::Box, 1);
        assert_eq!(on_this_thread(Kind::Tensor), tensors - 3);
        assert_eq!(on_this_thread(Kind::Box), boxes + 1);
        count(Kind::Tensor, 3);
        count(Kind::Box, -1);
    }
}
