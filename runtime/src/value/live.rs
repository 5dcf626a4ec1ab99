//! Counts of live owned handles, so tests can prove that boxing neither leaks nor frees twice.
//!
//! Strings and lists are counted when their heap box is made and freed; tensors are counted by
//! the tensor module per `TensorImpl` (a leaked reference keeps it alive, a double release frees
//! it early). Nothing here runs per call on the scalar or tensor fast paths.

use std::sync::atomic::{AtomicIsize, Ordering};

static BOXES: AtomicIsize = AtomicIsize::new(0);

pub(crate) fn box_made() {
    BOXES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn box_freed() {
    BOXES.fetch_sub(1, Ordering::Relaxed);
}

/// Live string and list boxes only (no tensors), for tests that must not see tensors made by
/// other tests running in parallel.
pub(crate) fn live_boxes() -> isize {
    BOXES.load(Ordering::Relaxed)
}

/// Live string and list boxes plus live tensors. Signed, so a double free shows as a drop
/// below the baseline instead of wrapping.
pub fn live_handles() -> isize {
    live_boxes() + crate::tensor::live_tensors() as isize
}
