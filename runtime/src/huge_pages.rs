//! Anonymous mappings with transparent huge pages, for large memory that is written once from
//! fresh: big cpu tensors and the registry's table of ops. The mapping is zeroed by the kernel,
//! as `alloc_zeroed` is, and a system without THP gives base pages, which still work.

use std::ptr::NonNull;

/// The size of a huge page on the targets opbox runs on (x86-64 and aarch64 with 4 KiB base
/// pages).
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// A zeroed, readable and writable mapping of at least `nbytes` (whole huge pages; its length
/// is returned), or `None` when the system refuses it.
pub(crate) fn map(nbytes: usize) -> Option<(NonNull<u8>, usize)> {
    let len = nbytes.max(1).checked_next_multiple_of(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping with no address hint has no preconditions; the
    // result is checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `p..p + len` is the mapping just made. A failure (no THP in this kernel) only
    // leaves base pages, so its result is ignored.
    unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
    NonNull::new(p.cast::<u8>()).map(|base| (base, len))
}

/// Unmaps a mapping [`map`] made.
///
/// # Safety
/// `base..base + len` is exactly a mapping `map` returned, and nothing uses it afterwards.
pub(crate) unsafe fn unmap(base: NonNull<u8>, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { libc::munmap(base.as_ptr().cast(), len) };
}
