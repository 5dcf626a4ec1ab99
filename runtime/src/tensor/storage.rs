//! The storage seam: the one place that knows a tensor's bytes live in some device's memory.
//!
//! A [`Storage`] is a byte buffer on one device, shared (through `Arc<Storage>`) by a tensor and
//! all its views. It reaches that memory through one trait, [`Memory`], which each backend
//! implements for its own kind of memory:
//! - [`HostMemory`](crate::backend::cpu::memory::HostMemory): cpu, opbox's zeroed, aligned heap
//!   buffer or another library's memory with its deleter, behind a blocking reader-writer lock
//!   (`lock.rs`: other threads are waited for; a thread that would wait for itself gets
//!   [`Error::StorageBusy`] instead of a deadlock);
//! - meta ([`MetaMemory`], here): no bytes at all; data access is [`Error::Unsupported`];
//! - cuda (feature "cuda"): device memory, opbox's or foreign, `crate::backend::cuda::memory`.
//!
//! The rest of the tensor module sees bytes only through [`Storage::read`] and
//! [`Storage::write`] (host memory), [`Storage::upload`], [`Storage::download`],
//! [`Storage::copy_device`] and [`Storage::device_ptr`]. A new backend, or memory that another
//! framework owns, is one more `Memory` implementation.

use std::any::Any;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::Device;
use crate::backend::cpu::memory::{HostMemory, HostRead, HostWrite};
use crate::{Error, Result};

pub use crate::backend::cpu::memory::CPU_ALIGN;

/// What frees foreign memory: run exactly once ([`Deleter::run`]), on whichever thread drops
/// the last tensor that views it.
pub(crate) enum Deleter {
    /// A Rust closure (`from_blob`'s).
    Boxed(Box<dyn FnOnce() + Send>),
    /// A function of one pointer (a DLPack tensor's deleter, a plugin header's release): held
    /// as it is, so wrapping such memory allocates nothing for its deleter.
    Call {
        run: unsafe fn(*mut c_void),
        arg: *mut c_void,
    },
}

// SAFETY: a closure is Send by its bound; `Call`'s constructor promises that `run(arg)` may run
// on any thread.
unsafe impl Send for Deleter {}

impl Deleter {
    pub(crate) fn boxed(f: impl FnOnce() + Send + 'static) -> Deleter {
        Deleter::Boxed(Box::new(f))
    }

    /// # Safety
    /// `run(arg)` may be called once, on any thread, at any time until then.
    pub(crate) unsafe fn call(run: unsafe fn(*mut c_void), arg: *mut c_void) -> Deleter {
        Deleter::Call { run, arg }
    }

    pub(crate) fn run(self) {
        match self {
            Deleter::Boxed(f) => f(),
            // SAFETY: the constructor's promise; `self` is consumed, so this is the one call.
            Deleter::Call { run, arg } => unsafe { run(arg) },
        }
    }
}

/// What frees memory another library owns: its deleter, run once when the memory goes. In a
/// Mutex, which makes it Sync: it is only ever touched by its drop.
pub(crate) struct ForeignDeleter(Mutex<Option<Deleter>>);

impl ForeignDeleter {
    pub(crate) fn new(deleter: Deleter) -> ForeignDeleter {
        ForeignDeleter(Mutex::new(Some(deleter)))
    }
}

impl Drop for ForeignDeleter {
    fn drop(&mut self) {
        if let Some(deleter) = self.0.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            deleter.run();
        }
    }
}

/// One device's memory behind a [`Storage`]. Defaults refuse, naming the device, so each
/// implementation writes only what its memory can do.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) trait Memory: Send + Sync + 'static {
    fn device(&self) -> Device;

    /// The memory as host bytes, when the host can address it.
    fn host(&self) -> Option<&HostMemory> {
        None
    }

    /// Why the host cannot read or write this memory, for `op`'s error.
    fn no_host_access(&self, op: &str) -> Error;

    /// Copies `bytes` from the host to byte `at`; returns once the copy is done.
    fn upload(&self, _at: usize, _bytes: &[u8], op: &str) -> Result<()> {
        Err(self.not_device_memory(op))
    }

    /// The bytes `range`, copied to the host.
    fn download(&self, _range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        Err(self.not_device_memory(op))
    }

    /// Copies `src`'s bytes `range` to byte `at`, device to device. Ranges are checked.
    fn copy_device(
        &self,
        _at: usize,
        _src: &dyn Memory,
        _range: std::ops::Range<usize>,
        op: &str,
    ) -> Result<()> {
        Err(self.not_device_memory(op))
    }

    /// The device address of byte 0, for kernel launches; None for memory a kernel cannot
    /// address.
    fn device_base(&self) -> Option<u64> {
        None
    }

    /// `true` when writes are refused (DLPack's read-only flag).
    fn is_read_only(&self) -> bool {
        false
    }

    /// For a backend's own operations on its memory (the CUDA slice, say).
    fn as_any(&self) -> &dyn Any;

    #[cold]
    fn not_device_memory(&self, op: &str) -> Error {
        Error::Unsupported(format!(
            "{op}: the tensor is on {}, not on a CUDA device",
            self.device()
        ))
    }
}

/// The meta device: shapes and dtypes, no bytes.
struct MetaMemory;

impl Memory for MetaMemory {
    fn device(&self) -> Device {
        Device::Meta
    }

    fn no_host_access(&self, op: &str) -> Error {
        Error::Unsupported(format!(
            "{op}: the tensor is on the meta device, which has a shape and a dtype but no data; \
             create it on cpu to read or write its elements"
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A tensor's bytes, on one device. Shared as `Arc<Storage>`, which is
/// `Arc<Storage<dyn Memory>>`: the memory sits inline, after the fields every access reads, so a
/// new tensor's storage is one allocation, not an `Arc` and a `Box`.
pub(crate) struct Storage<M: ?Sized + Memory = dyn Memory> {
    /// `memory`'s device address of byte 0, read once at creation: a launch packs it with no
    /// call through `memory` (one cache line fewer to miss on the launch path).
    device_base: Option<u64>,
    /// The usable length in bytes (a cpu buffer may be longer, rounded up to whole chunks).
    nbytes: usize,
    /// For memory wrapped from a plugin-ABI tensor header: the address of that header, whose
    /// one owned reference this storage's deleter releases; 0 otherwise. It lets the plugin ABI
    /// hand a tensor back to the image that made it as that image's own header. Lent memory
    /// gets one when something keeps it past its call, while other views may be reading.
    origin: AtomicUsize,
    memory: M,
}

pub(crate) fn too_big(nbytes: usize) -> Error {
    Error::Shape(format!(
        "cannot allocate {nbytes} bytes: more than isize::MAX"
    ))
}

impl Storage {
    /// A zero-filled buffer of `nbytes` bytes on `device` (no bytes at all on meta).
    pub(crate) fn zeroed(nbytes: usize, device: Device) -> Result<Arc<Storage>> {
        if nbytes > isize::MAX as usize {
            return Err(too_big(nbytes));
        }
        Ok(match device {
            Device::Cpu => Storage::new(HostMemory::zeroed(nbytes)?, nbytes, 0),
            Device::Meta => Storage::new(MetaMemory, nbytes, 0),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => Storage::new(
                crate::backend::cuda::memory::CudaMemory::zeroed(nbytes, ordinal)?,
                nbytes,
                0,
            ),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => {
                return Err(Error::Unsupported(format!(
                    "cannot create a tensor on {device}: opbox-runtime was built without its \
                     \"cuda\" feature"
                )))
            }
        })
    }

    /// No bytes, on meta.
    pub(crate) fn empty_meta() -> Arc<Storage> {
        Storage::new(MetaMemory, 0, 0)
    }

    /// A cpu buffer holding a copy of `bytes`.
    pub(crate) fn cpu_from_bytes(bytes: &[u8]) -> Result<Arc<Storage>> {
        Ok(Storage::new(HostMemory::copied(bytes)?, bytes.len(), 0))
    }

    /// `memory` as a shared storage of `nbytes` bytes. For memory another library owns, its
    /// deleter runs when this storage is dropped (the memory's constructor took it), and
    /// `origin` is the plugin-ABI header it came from, or 0 (see [`origin`](Self::origin)).
    pub(crate) fn new<M: Memory>(memory: M, nbytes: usize, origin: usize) -> Arc<Storage> {
        Arc::new(Storage {
            device_base: memory.device_base(),
            nbytes,
            origin: AtomicUsize::new(origin),
            memory,
        })
    }

    /// The address of the plugin-ABI tensor header whose owned reference keeps this memory
    /// alive (released when this storage drops), or 0 for memory that came another way.
    pub(crate) fn origin(&self) -> usize {
        self.origin.load(Ordering::Acquire)
    }

    pub(crate) fn device(&self) -> Device {
        self.memory.device()
    }

    /// The address of byte 0 as the device sees it: a host pointer on cpu, a device address on
    /// cuda, null on meta.
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        match (self.memory.host(), self.device_base) {
            (Some(host), _) => host.base(),
            (None, Some(addr)) => addr as usize as *mut u8,
            (None, None) => std::ptr::null_mut(),
        }
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.memory.is_read_only()
    }

    pub(crate) fn nbytes(&self) -> usize {
        self.nbytes
    }

    pub(crate) fn memory(&self) -> &dyn Memory {
        &self.memory
    }

    /// Shared access to the bytes on the host. `op` names the caller in errors.
    pub(crate) fn read(&self, op: &str) -> Result<HostRead<'_>> {
        match self.memory.host() {
            Some(host) => host.read(op, self.nbytes),
            None => Err(self.memory.no_host_access(op)),
        }
    }

    /// Exclusive access to the bytes on the host. `op` names the caller in errors.
    pub(crate) fn write(&self, op: &str) -> Result<HostWrite<'_>> {
        match self.memory.host() {
            Some(host) => host.write(op, self.nbytes),
            None => Err(self.memory.no_host_access(op)),
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

    /// Where this storage's lock comes in the one order that code holding several storages
    /// acquires them in (`tensor/lock.rs`); memory without a host lock sorts by its address.
    pub(crate) fn lock_order(&self) -> usize {
        match self.memory.host() {
            Some(host) => host.lock().order(),
            None => &self.memory as *const dyn Memory as *const u8 as usize,
        }
    }

    /// Shared access to `src` and exclusive access to `dst` (two different storages), taken in
    /// address order so that two threads copying `a -> b` and `b -> a` cannot deadlock.
    pub(crate) fn read_write_pair<'a>(
        src: &'a Storage,
        dst: &'a Storage,
        op: &str,
    ) -> Result<(HostRead<'a>, HostWrite<'a>)> {
        let (Some(s), Some(d)) = (src.memory.host(), dst.memory.host()) else {
            let off_host = if src.memory.host().is_none() {
                src
            } else {
                dst
            };
            return Err(off_host.memory.no_host_access(op));
        };
        if s.lock().order() < d.lock().order() {
            let r = src.read(op)?;
            Ok((r, dst.write(op)?))
        } else {
            let w = dst.write(op)?;
            Ok((src.read(op)?, w))
        }
    }

    /// Copies `bytes` from the host into this device storage at byte `at`; returns once the
    /// copy is done.
    pub(crate) fn upload(&self, at: usize, bytes: &[u8], op: &str) -> Result<()> {
        self.check_range(op, at, bytes.len())?;
        self.memory.upload(at, bytes, op)
    }

    /// The bytes `range` of this device storage, copied to the host.
    pub(crate) fn download(&self, range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        self.check_range(op, range.start, range.len())?;
        self.memory.download(range, op)
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
        self.check_range(op, at, range.len())?;
        src.check_range(op, range.start, range.len())?;
        self.memory.copy_device(at, src.memory(), range, op)
    }

    /// The device address of byte 0. Work queued on the device's default stream (where opbox
    /// launches) is ordered after every copy this storage makes.
    #[inline]
    pub(crate) fn device_ptr(&self, op: &str) -> Result<u64> {
        match self.device_base {
            Some(base) => Ok(base),
            None => Err(self.no_device_ptr(op)),
        }
    }

    #[cold]
    #[inline(never)]
    fn no_device_ptr(&self, op: &str) -> Error {
        self.memory.not_device_memory(op)
    }
}
