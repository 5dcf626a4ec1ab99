//! Tensor storage in CUDA device memory: a `CudaSlice<u8>` allocated on the device's default
//! stream behind a mutex (taken with `try_lock` only, like the cpu lock). Host access is
//! refused with what to call instead; bytes move with upload, download and device copies.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError};

use super::context::{device, device_count, CudaDevice};
use crate::tensor::storage::Memory;
use crate::tensor::Device;
use crate::{Error, Result};

/// Device memory on one CUDA device; at least one byte is allocated, so empty tensors have a
/// valid pointer too.
pub(crate) struct CudaMemory {
    ordinal: u32,
    device: &'static CudaDevice,
    /// The allocation's device address, fixed for its life: launches read it without the lock.
    base: u64,
    slice: Mutex<CudaSlice<u8>>,
}

impl CudaMemory {
    pub(crate) fn zeroed(nbytes: usize, ordinal: u32) -> Result<CudaMemory> {
        if device_count()? == 0 {
            return Err(Error::NoCuda {
                reason: format!(
                    "cannot create a tensor on cuda:{ordinal}: the CUDA driver reports no devices"
                ),
            });
        }
        let device = device(ordinal as usize)?;
        let slice = device
            .stream
            .alloc_zeros::<u8>(nbytes.max(1))
            .map_err(|e| cuda_error(ordinal, &format!("allocating {nbytes} bytes"), e))?;
        let base = {
            let (ptr, _sync) = slice.device_ptr(&device.stream);
            ptr
        };
        Ok(CudaMemory {
            ordinal,
            device,
            base,
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

    /// Calls `f` with the allocation (at least 1 byte) and the device's default stream. Other
    /// access to this memory is `StorageBusy` meanwhile.
    pub(crate) fn with_slice<R>(
        &self,
        op: &str,
        f: impl FnOnce(&mut CudaSlice<u8>, &Arc<CudaStream>) -> R,
    ) -> Result<R> {
        let mut slice = self.lock(op)?;
        Ok(f(&mut slice, self.stream()))
    }

    /// `memory` as CUDA memory, or an error naming `op` and the device it is on.
    pub(crate) fn of<'m>(memory: &'m dyn Memory, op: &str) -> Result<&'m CudaMemory> {
        memory
            .as_any()
            .downcast_ref::<CudaMemory>()
            .ok_or_else(|| memory.not_device_memory(op))
    }
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
        let mut slice = self.lock(op)?;
        let mut view = slice.slice_mut(at..at + bytes.len());
        let stream = self.stream();
        let what = |e| cuda_error(self.ordinal, &format!("{op}: copying to the device"), e);
        stream.memcpy_htod(bytes, &mut view).map_err(what)?;
        stream.synchronize().map_err(what)
    }

    fn download(&self, range: std::ops::Range<usize>, op: &str) -> Result<Vec<u8>> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let slice = self.lock(op)?;
        let view = slice.slice(range);
        let stream = self.stream();
        let what = |e| cuda_error(self.ordinal, &format!("{op}: copying to the host"), e);
        let bytes = stream.clone_dtoh(&view).map_err(what)?;
        stream.synchronize().map_err(what)?;
        Ok(bytes)
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
        let len = range.len();
        let src_slice = src.lock(op)?;
        let mut dst_slice = self.lock(op)?;
        let src_view = src_slice.slice(range);
        let mut dst_view = dst_slice.slice_mut(at..at + len);
        let stream = self.stream();
        let what = |e| cuda_error(self.ordinal, &format!("{op}: device-to-device copy"), e);
        stream.memcpy_dtod(&src_view, &mut dst_view).map_err(what)?;
        stream.synchronize().map_err(what)
    }

    fn device_base(&self) -> Option<u64> {
        // Ordering with opbox's own copies comes from the default stream they and launches
        // share (each copy also synchronizes), not from cudarc's per-slice events.
        Some(self.base)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
