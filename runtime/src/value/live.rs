//! Counts of live owned handles, so tests can prove that boxing neither leaks nor frees twice.
//!
//! Strings and lists are counted when their heap box is made and freed; tensors are counted by
//! the tensor module per `TensorImpl` (a leaked reference keeps it alive, a double release frees
//! it early). Both are per-thread counts (`crate::live_counts`), so counting costs no shared
//! read-modify-write, and nothing here runs per call on the scalar or tensor fast paths.

use crate::live_counts::{count, total, Kind};

pub(crate) fn box_made() {
    count(Kind::Box, 1);
}

pub(crate) fn box_freed() {
    count(Kind::Box, -1);
}

/// Live string and list boxes only (no tensors).
pub(crate) fn live_boxes() -> isize {
    total(Kind::Box)
}

#[cfg(test)]
/// String and list boxes made minus freed on this thread: an exact check for code that makes
/// and frees its boxes on one thread (a unit test), which tests running in parallel on other
/// threads cannot disturb.
pub(crate) fn live_boxes_on_this_thread() -> isize {
    crate::live_counts::on_this_thread(Kind::Box)
}

/// Live string and list boxes plus live tensors. Signed, so a double free shows as a drop
/// below the baseline instead of wrapping.
pub fn live_handles() -> isize {
    live_boxes() + total(Kind::Tensor)
}
