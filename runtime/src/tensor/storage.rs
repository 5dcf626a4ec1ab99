//! The storage seam: the one place that knows where a tensor's bytes live.
//!
//! A [`Storage`] is a byte buffer on one device, shared (through `Arc<Storage>`) by a tensor and
//! all its views. Everything device-specific lives here: allocation, and access to the bytes.
//! The rest of the tensor module sees bytes only through [`Storage::read`] and
//! [`Storage::write`], which hand out host byte slices behind a guard.
//!
//! Devices today:
//! - cpu: a zero-initialised heap buffer aligned to [`CPU_ALIGN`] bytes behind a [`RwLock`].
//!   Tensors are shared handles, so writing through `&Tensor` needs the lock. Only `try_read`
//!   and `try_write` are used, never a blocking lock, so a thread that reads and writes the same
//!   storage at once (a tensor and its own view, say) gets [`Error::StorageBusy`] instead of a
//!   deadlock, and no thread ever waits.
//! - meta: no bytes at all; data access is [`Error::Unsupported`].
//!
//! The CUDA issue adds a `StorageKind::Cuda` variant here.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use super::Device;
use crate::{Error, Result};

/// The alignment of every cpu buffer, in bytes (a cache line; enough for any SIMD load).
pub const CPU_ALIGN: usize = 64;

/// The unit a cpu buffer is allocated in: its alignment is the buffer's alignment.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct Chunk([u8; CPU_ALIGN]);

const _: () = assert!(std::mem::align_of::<Chunk>() == CPU_ALIGN);
const _: () = assert!(std::mem::size_of::<Chunk>() == CPU_ALIGN);

/// A tensor's bytes, on one device.
pub(crate) struct Storage {
    kind: StorageKind,
    /// The usable length in bytes (a cpu buffer may be longer, rounded up to whole chunks).
    nbytes: usize,
}

/// Where the bytes are. One variant per kind of device memory.
enum StorageKind {
    Cpu(CpuBuffer),
    Meta,
}

/// Host memory: zeroed, [`CPU_ALIGN`]-aligned, guarded by a lock.
struct CpuBuffer {
    chunks: RwLock<Box<[Chunk]>>,
}

impl CpuBuffer {
    fn zeroed(nbytes: usize) -> Result<CpuBuffer> {
        let n = nbytes.div_ceil(CPU_ALIGN);
        let chunks: Box<[Chunk]> = if n == 0 {
            Box::new([])
        } else {
            let layout = std::alloc::Layout::array::<Chunk>(n).map_err(|_| too_big(nbytes))?;
            // SAFETY: `layout` has a nonzero size (n > 0 chunks of 64 bytes).
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            if p.is_null() {
                return Err(Error::InvalidArgument(format!(
                    "could not allocate {nbytes} bytes on cpu: out of memory"
                )));
            }
            // SAFETY: `p` is non-null and was allocated by the global allocator with
            // `Layout::array::<Chunk>(n)`, the layout `Box<[Chunk]>` of length n uses, so the Box
            // may own and free it. The bytes are zeroed and all-zero is a valid `Chunk` (it is
            // `Zeroable`), so all n elements are initialised.
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.cast::<Chunk>(), n)) }
        };
        Ok(CpuBuffer {
            chunks: RwLock::new(chunks),
        })
    }
}

fn too_big(nbytes: usize) -> Error {
    Error::Shape(format!(
        "cannot allocate {nbytes} bytes: more than isize::MAX"
    ))
}

fn no_data(op: &str) -> Error {
    Error::Unsupported(format!(
        "{op}: the tensor is on the meta device, which has a shape and a dtype but no data; \
         create it on cpu to read or write its elements"
    ))
}

impl Storage {
    /// A zero-filled buffer of `nbytes` bytes on `device` (no bytes at all on meta).
    pub(crate) fn zeroed(nbytes: usize, device: Device) -> Result<Storage> {
        if nbytes > isize::MAX as usize {
            return Err(too_big(nbytes));
        }
        let kind = match device {
            Device::Cpu => StorageKind::Cpu(CpuBuffer::zeroed(nbytes)?),
            Device::Meta => StorageKind::Meta,
            Device::Cuda(_) => {
                return Err(Error::Unsupported(format!(
                    "cannot create a tensor on {device}: CUDA storage is not available yet \
                     (only cpu and meta tensors are)"
                )))
            }
        };
        Ok(Storage { kind, nbytes })
    }

    /// A cpu buffer holding a copy of `bytes`.
    pub(crate) fn cpu_from_bytes(bytes: &[u8]) -> Result<Storage> {
        let storage = Storage::zeroed(bytes.len(), Device::Cpu)?;
        storage
            .write("from_slice")?
            .bytes_mut()
            .copy_from_slice(bytes);
        Ok(storage)
    }

    pub(crate) fn device(&self) -> Device {
        match self.kind {
            StorageKind::Cpu(_) => Device::Cpu,
            StorageKind::Meta => Device::Meta,
        }
    }

    pub(crate) fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Shared access to the bytes on the host. `op` names the caller in errors.
    pub(crate) fn read(&self, op: &str) -> Result<HostRead<'_>> {
        match &self.kind {
            StorageKind::Cpu(buf) => {
                let guard = match buf.chunks.try_read() {
                    Ok(g) => g,
                    // A panic inside a with_slice_mut closure poisons the lock; the bytes are
                    // still valid elements (they are plain bit patterns), so carry on.
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => {
                        return Err(Error::StorageBusy(format!(
                            "{op} needs to read the tensor's elements, but they are being written: \
                             a with_slice_mut on this tensor or a view of it is still running, here \
                             or on another thread"
                        )))
                    }
                };
                Ok(HostRead {
                    guard,
                    nbytes: self.nbytes,
                })
            }
            StorageKind::Meta => Err(no_data(op)),
        }
    }

    /// Exclusive access to the bytes on the host. `op` names the caller in errors.
    pub(crate) fn write(&self, op: &str) -> Result<HostWrite<'_>> {
        match &self.kind {
            StorageKind::Cpu(buf) => {
                let guard = match buf.chunks.try_write() {
                    Ok(g) => g,
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => {
                        return Err(Error::StorageBusy(format!(
                            "{op} needs to write the tensor's elements, but they are in use: a \
                             with_slice or with_slice_mut on this tensor or a view of it (or a \
                             tensor sharing its storage) is still running, here or on another thread"
                        )))
                    }
                };
                Ok(HostWrite {
                    guard,
                    nbytes: self.nbytes,
                })
            }
            StorageKind::Meta => Err(no_data(op)),
        }
    }
}

/// Shared access to a storage's bytes; other readers may hold one too, writers get
/// [`Error::StorageBusy`] until it is dropped.
pub(crate) struct HostRead<'a> {
    guard: RwLockReadGuard<'a, Box<[Chunk]>>,
    nbytes: usize,
}

impl HostRead<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        let all: &[u8] = bytemuck::cast_slice(&self.guard[..]);
        // nbytes <= chunks * CPU_ALIGN by construction.
        &all[..self.nbytes]
    }
}

/// Exclusive access to a storage's bytes.
pub(crate) struct HostWrite<'a> {
    guard: RwLockWriteGuard<'a, Box<[Chunk]>>,
    nbytes: usize,
}

impl HostWrite<'_> {
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        let all: &mut [u8] = bytemuck::cast_slice_mut(&mut self.guard[..]);
        &mut all[..self.nbytes]
    }
}
