//! Host memory for cpu tensors: either opbox's own zeroed, [`CPU_ALIGN`]-aligned buffer, or
//! memory another library owns ([`Tensor::from_blob`](crate::Tensor::from_blob), DLPack), freed by
//! its deleter. Both sit behind one `StorageLock`: readers share, a writer waits for them (see
//! `tensor/lock.rs` for what blocks and what is refused).

use std::any::Any;
use std::ptr::NonNull;

#[cfg(all(target_os = "linux", not(miri)))]
use crate::huge_pages;
use crate::tensor::lock::{ReadGuard, StorageLock, WriteGuard};
use crate::tensor::storage::{too_big, Deleter, ForeignDeleter, Memory};
use crate::tensor::Device;
use crate::{Error, Result};

/// The alignment of every cpu buffer opbox allocates, in bytes (a cache line; enough for any SIMD
/// load). Foreign memory needs only its dtype's alignment.
pub const CPU_ALIGN: usize = 64;

/// The unit a cpu buffer is allocated in: its alignment is the buffer's alignment.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Chunk([u8; CPU_ALIGN]);

const _: () = assert!(std::mem::align_of::<Chunk>() == CPU_ALIGN);
const _: () = assert!(std::mem::size_of::<Chunk>() == CPU_ALIGN);

/// Buffers from this size up are anonymous mappings with huge pages ([`huge_pages`]). A fresh
/// buffer's pages are faulted in by its first write: at 4 KiB a page, a 64 MiB result costs
/// 16,384 faults, which measured (a VM, `dsl::softmax` of [16384, 1024] f32) longer than the
/// kernel that writes it; at 2 MiB a page it costs 32. Below this size the faults cost little,
/// and the rounding up to whole huge pages would waste more than it saves.
#[cfg(all(target_os = "linux", not(miri)))]
const MAP_FROM: usize = 8 * huge_pages::HUGE_PAGE;

/// Who frees the bytes.
enum Owner {
    /// opbox: this many chunks from the global allocator (none: a dangling, aligned pointer).
    Chunks(usize),
    /// opbox: an anonymous mapping of this many bytes, with huge pages where the system gives
    /// them (see [`huge`]).
    #[cfg(all(target_os = "linux", not(miri)))]
    Mapped(usize),
    /// Another library, whose deleter runs when this drops.
    Foreign { _deleter: ForeignDeleter },
}

/// Host memory behind a lock.
pub(crate) struct HostMemory {
    lock: StorageLock,
    base: NonNull<u8>,
    owner: Owner,
    /// Writes are refused (DLPack's read-only flag).
    read_only: bool,
}

// SAFETY: the bytes behind `base` are reached only through `read`/`write`, which take `lock`, so
// sharing or moving the memory between threads never gives two threads conflicting access. The
// foreign deleter is `Send` and runs once, in `drop`.
unsafe impl Send for HostMemory {}
// SAFETY: as for Send: `&HostMemory` gives the bytes only under the lock.
unsafe impl Sync for HostMemory {}

/// `nbytes` rounded up to whole chunks from the global allocator, zeroed or not, and how many
/// chunks that is (none: a dangling, aligned pointer). Unzeroed chunks are the caller's to fill.
fn alloc_chunks(nbytes: usize, zeroed: bool) -> Result<(NonNull<u8>, usize)> {
    let n = nbytes.div_ceil(CPU_ALIGN);
    if n == 0 {
        return Ok((NonNull::<Chunk>::dangling().cast::<u8>(), 0));
    }
    let layout = std::alloc::Layout::array::<Chunk>(n).map_err(|_| too_big(nbytes))?;
    // SAFETY: `layout` has a nonzero size (n > 0 chunks of 64 bytes).
    let p = unsafe {
        if zeroed {
            std::alloc::alloc_zeroed(layout)
        } else {
            std::alloc::alloc(layout)
        }
    };
    let base = NonNull::new(p).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "could not allocate {nbytes} bytes on cpu: out of memory"
        ))
    })?;
    Ok((base, n))
}

impl HostMemory {
    pub(crate) fn zeroed(nbytes: usize) -> Result<HostMemory> {
        if let Some(memory) = HostMemory::mapped(nbytes) {
            return Ok(memory);
        }
        let (base, n) = alloc_chunks(nbytes, true)?;
        Ok(HostMemory::owned(base, Owner::Chunks(n)))
    }

    /// A buffer holding a copy of `bytes`, not zeroed first: only the padding after them is.
    pub(crate) fn copied(bytes: &[u8]) -> Result<HostMemory> {
        let nbytes = bytes.len();
        if let Some(memory) = HostMemory::mapped(nbytes) {
            // SAFETY: the mapping holds at least `nbytes` bytes, and no one else has it yet.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory.base(), nbytes) };
            return Ok(memory);
        }
        let (base, n) = alloc_chunks(nbytes, false)?;
        // SAFETY: `base` holds `n * CPU_ALIGN >= nbytes` bytes of a fresh allocation: the copy
        // fills the first `nbytes`, the write the rest, so every byte is initialized.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.as_ptr(), nbytes);
            std::ptr::write_bytes(base.as_ptr().add(nbytes), 0, n * CPU_ALIGN - nbytes);
        }
        Ok(HostMemory::owned(base, Owner::Chunks(n)))
    }

    /// A fresh anonymous mapping (zeroed by the kernel) for a buffer of [`MAP_FROM`] bytes or
    /// more, or None: smaller, or the system gave none.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn mapped(nbytes: usize) -> Option<HostMemory> {
        let (base, len) = (nbytes >= MAP_FROM).then(|| huge_pages::map(nbytes))??;
        Some(HostMemory::owned(base, Owner::Mapped(len)))
    }

    #[cfg(not(all(target_os = "linux", not(miri))))]
    fn mapped(_nbytes: usize) -> Option<HostMemory> {
        None
    }

    fn owned(base: NonNull<u8>, owner: Owner) -> HostMemory {
        HostMemory {
            lock: StorageLock::new(),
            base,
            owner,
            read_only: false,
        }
    }

    /// Memory another library owns, `base` onwards; `deleter` runs once when this is dropped.
    ///
    /// # Safety
    ///
    /// `base` must be valid for reads (and, unless `read_only`, writes) of the bytes the storage
    /// will claim, until `deleter` runs, and nothing else may write them while opbox reads or
    /// read them while opbox writes.
    pub(crate) unsafe fn foreign(
        base: NonNull<u8>,
        read_only: bool,
        deleter: Deleter,
    ) -> HostMemory {
        HostMemory {
            lock: StorageLock::new(),
            base,
            owner: Owner::Foreign {
                _deleter: ForeignDeleter::new(deleter),
            },
            read_only,
        }
    }

    /// The address of byte 0 (for `data_ptr`; reading through it bypasses the lock).
    pub(crate) fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Shared access to the first `nbytes` bytes (which the storage checked are ours), waiting
    /// for another thread's writer. `op` names the caller in errors.
    pub(crate) fn read(&self, op: &str, nbytes: usize) -> Result<HostRead<'_>> {
        let guard = self.lock.read(op, &"the tensor's elements")?;
        // SAFETY: `base` is valid for reads of `nbytes` bytes (the storage's length, checked
        // against the allocation or promised by `foreign`'s caller) while `self` lives, and the
        // read lock, held as long as the slice, keeps writers out.
        let bytes = unsafe { std::slice::from_raw_parts(self.base.as_ptr(), nbytes) };
        Ok(HostRead {
            _guard: guard,
            bytes,
        })
    }

    /// Exclusive access to the first `nbytes` bytes, waiting for other threads' readers and
    /// writers. `op` names the caller in errors.
    pub(crate) fn write(&self, op: &str, nbytes: usize) -> Result<HostWrite<'_>> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{op} would write a read-only tensor: its memory was shared by another library \
                 with DLPack's read-only flag; write a copy (.contiguous() of a clone, or \
                 Tensor::from_dlpack with copy) instead"
            )));
        }
        let guard = self.lock.write(op, &"the tensor's elements")?;
        // SAFETY: as in `read`, and the write lock, held as long as the slice, makes this the
        // only access to the bytes; `read_only` memory never gets here.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr(), nbytes) };
        Ok(HostWrite {
            _guard: guard,
            bytes,
        })
    }

    pub(crate) fn lock(&self) -> &StorageLock {
        &self.lock
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        match &mut self.owner {
            Owner::Chunks(0) => {}
            Owner::Chunks(n) => {
                if let Ok(layout) = std::alloc::Layout::array::<Chunk>(*n) {
                    // SAFETY: `base` came from `alloc_zeroed` with exactly this layout (it was
                    // computed from the same `n` in `zeroed`), and is freed only here.
                    unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
                }
            }
            #[cfg(all(target_os = "linux", not(miri)))]
            // SAFETY: `base..base + len` is the mapping `zeroed` made, unmapped only here, when
            // the last reference to its storage goes.
            Owner::Mapped(len) => unsafe { huge_pages::unmap(self.base, *len) },
            // Its own drop runs the deleter.
            Owner::Foreign { .. } => {}
        }
    }
}

impl Memory for HostMemory {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn host(&self) -> Option<&HostMemory> {
        Some(self)
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn no_host_access(&self, op: &str) -> Error {
        // Unreachable in practice: `host` is always Some for host memory.
        Error::Unsupported(format!("{op}: host memory is host-accessible"))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Shared access to a storage's bytes; other readers may hold one too, writers wait until it is
/// dropped.
pub(crate) struct HostRead<'a> {
    _guard: ReadGuard<'a>,
    bytes: &'a [u8],
}

impl HostRead<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes
    }
}

/// Exclusive access to a storage's bytes.
pub(crate) struct HostWrite<'a> {
    _guard: WriteGuard<'a>,
    bytes: &'a mut [u8],
}

impl HostWrite<'_> {
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy holds exactly the bytes, and every byte of its allocation past them is zero.
    fn check_copied(len: usize) {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8 + 1).collect();
        let memory = HostMemory::copied(&bytes).expect("the copy");
        let whole = len.div_ceil(CPU_ALIGN) * CPU_ALIGN;
        // SAFETY: a chunked buffer holds whole chunks and a mapping at least as many bytes; the
        // test is its only user.
        let held = unsafe { std::slice::from_raw_parts(memory.base(), whole) };
        assert_eq!(&held[..len], &bytes[..], "{len} bytes");
        assert!(held[len..].iter().all(|&b| b == 0), "{len} bytes: padding");
    }

    #[test]
    fn a_copy_holds_the_bytes_and_zeroed_padding() {
        for len in [0, 1, 63, 64, 65, 1000] {
            check_copied(len);
        }
    }

    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_large_copy_is_mapped_and_holds_the_bytes() {
        check_copied(MAP_FROM + 100);
        let memory = HostMemory::copied(&vec![7u8; MAP_FROM]).expect("the copy");
        assert!(
            matches!(memory.owner, Owner::Mapped(_)) || huge_pages::map(MAP_FROM).is_none(),
            "a buffer of MAP_FROM bytes is mapped where the system maps one"
        );
    }
}
