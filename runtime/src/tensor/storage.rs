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
//! - cuda (feature "cuda"): a `CudaSlice<u8>` allocated on the device's default stream behind a
//!   mutex (taken with `try_lock` only, like the cpu lock). Host access through `read`/`write`
//!   is [`Error::Unsupported`]; bytes move with [`Storage::upload`], [`Storage::download`] and
//!   [`Storage::copy_device`], and launch code gets the device pointer from
//!   [`Storage::cuda_ptr`] or the slice itself from [`Storage::with_cuda_slice`]. Without a
//!   driver or a device, creating one is [`Error::NoCuda`].

#[cfg(feature = "cuda")]
use std::sync::{Arc, Mutex, MutexGuard};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

#[cfg(feature = "cuda")]
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError};

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
    #[cfg(feature = "cuda")]
    Cuda(CudaBuffer),
}

/// Device memory on one CUDA device; at least one byte is allocated, so empty tensors have a
/// valid pointer too.
#[cfg(feature = "cuda")]
struct CudaBuffer {
    ordinal: u32,
    device: &'static crate::cuda::CudaDevice,
    slice: Mutex<CudaSlice<u8>>,
}

#[cfg(feature = "cuda")]
impl CudaBuffer {
    fn zeroed(nbytes: usize, ordinal: u32) -> Result<CudaBuffer> {
        if crate::cuda::device_count()? == 0 {
            return Err(Error::NoCuda {
                reason: format!(
                    "cannot create a tensor on cuda:{ordinal}: the CUDA driver reports no devices"
                ),
            });
        }
        let device = crate::cuda::device(ordinal as usize)?;
        let slice = device
            .stream
            .alloc_zeros::<u8>(nbytes.max(1))
            .map_err(|e| cuda_error(ordinal, &format!("allocating {nbytes} bytes"), e))?;
        Ok(CudaBuffer {
            ordinal,
            device,
            slice: Mutex::new(slice),
        })
    }

    fn stream(&self) -> &Arc<CudaStream> {
        &self.device.stream
    }

    fn lock(&self, op: &str) -> Result<MutexGuard<'_, CudaSlice<u8>>> {
        match self.slice.try_lock() {
            Ok(g) => Ok(g),
            // The slice is still a valid allocation after a panic elsewhere.
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(Error::StorageBusy(format!(
                "{op} needs the tensor's cuda:{} memory, but it is in use: a with_cuda_slice on \
                 this tensor or one sharing its storage is still running, here or on another \
                 thread",
                self.ordinal
            ))),
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_error(ordinal: u32, what: &str, e: DriverError) -> Error {
    Error::Cuda {
        kernel: format!("device cuda:{ordinal} ({what})"),
        message: e.to_string(),
    }
}

#[cfg(feature = "cuda")]
fn host_access(op: &str, device: Device) -> Error {
    Error::Unsupported(format!(
        "{op}: the tensor is on {device}, in GPU memory; copy it to the host with \
         .to(Device::Cpu) first (to_vec and item do this themselves)"
    ))
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
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => StorageKind::Cuda(CudaBuffer::zeroed(nbytes, ordinal)?),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => {
                return Err(Error::Unsupported(format!(
                    "cannot create a tensor on {device}: opbox-runtime was built without its \
                     \"cuda\" feature"
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
            #[cfg(feature = "cuda")]
            StorageKind::Cuda(ref buf) => Device::Cuda(buf.ordinal),
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
            #[cfg(feature = "cuda")]
            StorageKind::Cuda(_) => Err(host_access(op, self.device())),
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
            #[cfg(feature = "cuda")]
            StorageKind::Cuda(_) => Err(host_access(op, self.device())),
        }
    }
}

/// The CUDA side of the seam: moving bytes, and handing device memory to launch code.
#[cfg(feature = "cuda")]
impl Storage {
    fn cuda(&self, op: &str) -> Result<&CudaBuffer> {
        match &self.kind {
            StorageKind::Cuda(buf) => Ok(buf),
            _ => Err(Error::Unsupported(format!(
                "{op}: the tensor is on {}, not on a CUDA device",
                self.device()
            ))),
        }
    }

    fn check_range(&self, op: &str, start: usize, len: usize) -> Result<()> {
        if start.checked_add(len).is_none_or(|end| end > self.nbytes) {
            return Err(Error::InvalidArgument(format!(
                "{op}: bytes {start}..{} are outside the storage's {} bytes",
                start.saturating_add(len),
                self.nbytes
            )));
        }
        Ok(())
    }

    /// Copies `bytes` from the host into this cuda storage at byte `at`; returns once the copy
    /// is done.
    pub(crate) fn upload(&self, at: usize, bytes: &[u8], op: &str) -> Result<()> {
        let buf = self.cuda(op)?;
        self.check_range(op, at, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        let mut slice = buf.lock(op)?;
        let mut view = slice.slice_mut(at..at + bytes.len());
        let stream = buf.stream();
        let what = |e| cuda_error(buf.ordinal, &format!("{op}: copying to the device"), e);
        stream.memcpy_htod(bytes, &mut view).map_err(what)?;
        stream.synchronize().map_err(what)
    }

    /// The bytes `range` of this cuda storage, copied to the host.
    pub(crate) fn download(&self, range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        let buf = self.cuda(op)?;
        self.check_range(op, range.start, range.len())?;
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let slice = buf.lock(op)?;
        let view = slice.slice(range);
        let stream = buf.stream();
        let what = |e| cuda_error(buf.ordinal, &format!("{op}: copying to the host"), e);
        let bytes = stream.clone_dtoh(&view).map_err(what)?;
        stream.synchronize().map_err(what)?;
        Ok(bytes)
    }

    /// Copies `src`'s bytes `range` into this storage at byte `at`, device to device (across
    /// devices too, through a peer copy). `src` must be another storage.
    pub(crate) fn copy_device(
        &self,
        at: usize,
        src: &Storage,
        range: std::ops::Range<usize>,
        op: &str,
    ) -> Result<()> {
        let dst_buf = self.cuda(op)?;
        let src_buf = src.cuda(op)?;
        self.check_range(op, at, range.len())?;
        src.check_range(op, range.start, range.len())?;
        if range.is_empty() {
            return Ok(());
        }
        let len = range.len();
        let src_slice = src_buf.lock(op)?;
        let mut dst_slice = dst_buf.lock(op)?;
        let src_view = src_slice.slice(range);
        let mut dst_view = dst_slice.slice_mut(at..at + len);
        let stream = dst_buf.stream();
        let what = |e| cuda_error(dst_buf.ordinal, &format!("{op}: device-to-device copy"), e);
        stream.memcpy_dtod(&src_view, &mut dst_view).map_err(what)?;
        stream.synchronize().map_err(what)
    }

    /// The device address of byte 0. Work queued on the device's default stream (where opbox
    /// launches) is ordered after every copy this storage makes.
    pub(crate) fn cuda_ptr(&self, op: &str) -> Result<u64> {
        let buf = self.cuda(op)?;
        let slice = buf.lock(op)?;
        let (ptr, _sync) = slice.device_ptr(buf.stream());
        Ok(ptr)
    }

    /// Calls `f` with the allocation (at least `nbytes` long, at least 1 byte) and the
    /// device's default stream. Other access to this storage is `StorageBusy` meanwhile.
    pub(crate) fn with_cuda_slice<R>(
        &self,
        op: &str,
        f: impl FnOnce(&mut CudaSlice<u8>, &Arc<CudaStream>) -> R,
    ) -> Result<R> {
        let buf = self.cuda(op)?;
        let mut slice = buf.lock(op)?;
        Ok(f(&mut slice, buf.stream()))
    }
}

/// Without the "cuda" feature no storage is ever on a CUDA device; these keep callers simple.
#[cfg(not(feature = "cuda"))]
impl Storage {
    fn not_cuda(&self, op: &str) -> Error {
        Error::Unsupported(format!(
            "{op}: the tensor is on {}, not on a CUDA device",
            self.device()
        ))
    }

    pub(crate) fn upload(&self, _at: usize, _bytes: &[u8], op: &str) -> Result<()> {
        Err(self.not_cuda(op))
    }

    pub(crate) fn download(&self, _range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        Err(self.not_cuda(op))
    }

    pub(crate) fn copy_device(
        &self,
        _at: usize,
        _src: &Storage,
        _range: std::ops::Range<usize>,
        op: &str,
    ) -> Result<()> {
        Err(self.not_cuda(op))
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
