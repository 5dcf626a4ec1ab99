//! Counts of live owned handles, so tests can prove that boxing neither leaks nor frees twice.
//!
//! Strings and lists are counted when their heap box is made and freed; tensors are counted by
//! the tensor module per `TensorImpl` (a leaked reference keeps it alive, a double release frees
//! it early). Nothing here runs per call on the scalar or tensor fast paths.

#[cfg(test)]
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

static BOXES: AtomicIsize = AtomicIsize::new(0);

#[cfg(test)]
thread_local! {
    /// Boxes made minus boxes freed on this thread, as the tensor module counts tensors (unit
    /// tests only: they run in parallel, and each reads its own thread's count).
    static BOXES_HERE: Cell<isize> = const { Cell::new(0) };
}

pub(crate) fn box_made() {
    BOXES.fetch_add(1, Ordering::Relaxed);
    // try_with: a box may be made or freed while this thread's locals are torn down.
    #[cfg(test)]
    let _ = BOXES_HERE.try_with(|c| c.set(c.get() + 1));
}

pub(crate) fn box_freed() {
    BOXES.fetch_sub(1, Ordering::Relaxed);
    #[cfg(test)]
    let _ = BOXES_HERE.try_with(|c| c.set(c.get() - 1));
}

/// Live string and list boxes only (no tensors).
pub(crate) fn live_boxes() -> isize {
    BOXES.load(Ordering::Relaxed)
}

#[cfg(test)]
/// String and list boxes made minus freed on this thread: an exact check for code that makes
/// and frees its boxes on one thread (a unit test), which tests running in parallel on other
/// threads cannot disturb.
pub(crate) fn live_boxes_on_this_thread() -> isize {
    BOXES_HERE.try_with(Cell::get).unwrap_or(0)
}

/// Live string and list boxes plus live tensors. Signed, so a double free shows as a drop
/// below the baseline instead of wrapping.
pub fn live_handles() -> isize {
    live_boxes() + crate::tensor::live_tensors() as isize
}
