//! Tensor storage in CUDA device memory: opbox's own `CudaSlice<u8>`, allocated on the thread's
//! current stream (`current.rs`), or memory another library owns (`Tensor::from_blob`, DLPack) with its deleter.
//! Host access is refused with what to call instead; bytes move with upload, download and device
//! copies, which go through the driver by address on the current stream for both kinds, behind
//! the storage's one lock (`tensor/lock.rs`: other threads wait, a thread never waits for itself).

use std::any::Any;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, CudaSlice, CudaStream, DevicePtr, DriverError};

use super::context::{created, device, device_count, CudaDevice};
use super::current::cuda_stream_for;
use crate::tensor::lock::StorageLock;
use crate::tensor::storage::{Deleter, ForeignDeleter, Memory};
use crate::tensor::Device;
use crate::{Error, Result};

/// Who frees the allocation.
enum Backing {
    /// opbox's own allocation (at least one byte, so empty tensors have a valid pointer too).
    /// Only `with_slice` hands it out; copies use its address.
    Owned(Mutex<CudaSlice<u8>>),
    /// Another library's: its deleter runs once, when the storage goes.
    Foreign { _deleter: ForeignDeleter },
}

/// Device memory on one CUDA device.
pub(crate) struct CudaMemory {
    ordinal: u32,
    device: &'static CudaDevice,
    /// The allocation's device address, fixed for its life (a lent wrapper's changes only while
    /// it has one owner): launches read it without the lock.
    base: u64,
    lock: StorageLock,
    backing: Backing,
    read_only: bool,
}

impl CudaMemory {
    pub(crate) fn zeroed(nbytes: usize, ordinal: u32) -> Result<CudaMemory> {
        let device = usable_device(ordinal, "create a tensor")?;
        // On the current stream, so the zero fill is ordered before the kernels that stream
        // runs next.
        let stream = cuda_stream_for(ordinal as usize)?;
        let slice = stream
            .alloc_zeros::<u8>(nbytes.max(1))
            .map_err(|e| cuda_error(ordinal, &format!("allocating {nbytes} bytes"), e))?;
        let base = {
            let (ptr, _sync) = slice.device_ptr(&stream);
            ptr
        };
        Ok(CudaMemory {
            ordinal,
            device,
            base,
            lock: StorageLock::new(),
            backing: Backing::Owned(Mutex::new(slice)),
            read_only: false,
        })
    }

    /// Device memory another library owns, from device address `base`; `deleter` runs once when
    /// this is dropped. On error (no such device) the deleter has not run: the caller decides.
    ///
    /// # Safety
    ///
    /// `base` must be a device address on `cuda:ordinal` valid for the bytes the storage will
    /// claim until `deleter` runs.
    // The error carries the deleter back to the caller's ownership rule; a cold path.
    #[allow(clippy::result_large_err)]
    pub(crate) unsafe fn foreign(
        base: u64,
        ordinal: u32,
        read_only: bool,
        deleter: Deleter,
    ) -> std::result::Result<CudaMemory, (Error, Deleter)> {
        let device = match usable_device(ordinal, "wrap foreign memory") {
            Ok(d) => d,
            Err(e) => return Err((e, deleter)),
        };
        Ok(CudaMemory {
            ordinal,
            device,
            base,
            lock: StorageLock::new(),
            backing: Backing::Foreign {
                _deleter: ForeignDeleter::new(deleter),
            },
            read_only,
        })
    }

    /// This thread's current stream on the device, where opbox copies and launches.
    pub(crate) fn stream(&self) -> Result<Arc<CudaStream>> {
        cuda_stream_for(self.ordinal as usize)
    }

    /// Calls `f` with the allocation (at least 1 byte) and the thread's current stream, holding
    /// the storage exclusively. opbox's own memory only: a foreign allocation is no `CudaSlice`.
    pub(crate) fn with_slice<R>(
        &self,
        op: &str,
        f: impl FnOnce(&mut CudaSlice<u8>, &Arc<CudaStream>) -> R,
    ) -> Result<R> {
        let Backing::Owned(slice) = &self.backing else {
            return Err(Error::Unsupported(format!(
                "{op}: this tensor's {} memory belongs to another library (from_blob or DLPack), \
                 so it is no cudarc CudaSlice; pass tensor.device_ptr() to the launch instead",
                self.device()
            )));
        };
        let _held = self.lock.write(op, &self.what())?;
        // The lock above is the storage's; this Mutex only satisfies `&mut` and is never
        // contended (poisoned means a closure panicked, and the slice is still valid).
        let mut slice = slice.lock().unwrap_or_else(|p| p.into_inner());
        let stream = self.stream()?;
        Ok(f(&mut slice, &stream))
    }

    /// `memory` as CUDA memory, or an error naming `op` and the device it is on.
    pub(crate) fn of<'m>(memory: &'m dyn Memory, op: &str) -> Result<&'m CudaMemory> {
        memory
            .as_any()
            .downcast_ref::<CudaMemory>()
            .ok_or_else(|| memory.not_device_memory(op))
    }

    /// The memory, as a lock's error names it: formatted only for that error, since every copy
    /// passes it.
    fn what(&self) -> MemoryOn {
        MemoryOn(self.ordinal)
    }

    fn check_writable(&self, op: &str) -> Result<()> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{op} would write a read-only tensor on {}: its memory was shared by another \
                 library with DLPack's read-only flag",
                self.device()
            )));
        }
        Ok(())
    }

    /// Runs a driver call on the current stream with the context bound, then waits for it.
    fn on_stream(
        &self,
        op: &str,
        what: &str,
        call: impl FnOnce(cudarc::driver::sys::CUstream) -> std::result::Result<(), DriverError>,
    ) -> Result<()> {
        let err = |e| cuda_error(self.ordinal, &format!("{op}: {what}"), e);
        let stream = self.stream()?;
        self.device.context.bind_to_thread().map_err(err)?;
        call(stream.cu_stream()).map_err(err)?;
        stream.synchronize().map_err(err)
    }
}

/// "the tensor's cuda:N memory".
struct MemoryOn(u32);

impl std::fmt::Display for MemoryOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the tensor's cuda:{} memory", self.0)
    }
}

/// The device `ordinal`, or NoCuda when the machine has none; `doing` says what for.
fn usable_device(ordinal: u32, doing: &str) -> Result<&'static CudaDevice> {
    // A device already in use needs no driver call: this runs for every allocation and every
    // wrap of foreign memory (a plugin's CUDA op wraps two or three tensors a call), and
    // counting the devices is a call into the driver.
    if let Some(d) = created(ordinal as usize) {
        return Ok(d);
    }
    if device_count()? == 0 {
        return Err(Error::NoCuda {
            reason: format!("cannot {doing} on cuda:{ordinal}: the CUDA driver reports no devices"),
        });
    }
    device(ordinal as usize)
}

fn cuda_error(ordinal: u32, what: &str, e: DriverError) -> Error {
    Error::Cuda {
        kernel: format!("device cuda:{ordinal} ({what})"),
        message: e.to_string(),
    }
}

impl Memory for CudaMemory {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn no_host_access(&self, op: &str) -> Error {
        Error::Unsupported(format!(
            "{op}: the tensor is on {}, in GPU memory; copy it to the host with \
             .to(Device::Cpu) first (to_vec and item do this themselves)",
            self.device()
        ))
    }

    fn upload(&self, at: usize, bytes: &[u8], op: &str) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.check_writable(op)?;
        let _held = self.lock.write(op, &self.what())?;
        let dst = self.base + at as u64;
        self.on_stream(op, "copying to the device", |stream| {
            // SAFETY: the storage checked `at..at + len` lies inside this allocation, which
            // lives while `self` does; `bytes` outlives the call, which is waited for before
            // returning; the write lock keeps other opbox copies out meanwhile.
            unsafe { result::memcpy_htod_async(dst, bytes, stream) }
        })
    }

    fn download(&self, range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let _held = self.lock.read(op, &self.what())?;
        let mut out = vec![0u8; range.len()];
        let src = self.base + range.start as u64;
        self.on_stream(op, "copying to the host", |stream| {
            // SAFETY: the storage checked the range lies inside this allocation; `out` has its
            // length and outlives the copy, which `on_stream` waits for.
            unsafe { result::memcpy_dtoh_async(&mut out, src, stream) }
        })?;
        Ok(out)
    }

    fn copy_device(
        &self,
        at: usize,
        src: &dyn Memory,
        range: std::ops::Range<usize>,
        op: &str,
    ) -> Result<()> {
        let src = CudaMemory::of(src, op)?;
        if range.is_empty() {
            return Ok(());
        }
        self.check_writable(op)?;
        let what = self.what();
        // Address order, so two threads copying a -> b and b -> a cannot deadlock.
        let (_r, _w) = if src.lock.order() < self.lock.order() {
            let r = src.lock.read(op, &what)?;
            (r, self.lock.write(op, &what)?)
        } else {
            let w = self.lock.write(op, &what)?;
            (src.lock.read(op, &what)?, w)
        };
        let (dst, from, len) = (
            self.base + at as u64,
            src.base + range.start as u64,
            range.len(),
        );
        self.on_stream(op, "device-to-device copy", |stream| {
            // SAFETY: both ranges were checked against their storages, whose allocations live
            // while `self` and `src` do; the copy is waited for before the locks are released.
            // Unified addressing lets one DtoD copy reach another device's memory.
            unsafe { result::memcpy_dtod_async(dst, from, len, stream) }
        })
    }

    fn device_base(&self) -> Option<u64> {
        // Ordering with opbox's own copies comes from the current stream they and launches
        // share (each copy also synchronizes), not from cudarc's per-slice events.
        Some(self.base)
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
