//! Moving tensors between devices ([`Tensor::to`]) and handing CUDA memory to launch code
//! ([`Tensor::cuda_ptr`], [`Tensor::with_cuda_slice`]). The bytes move through the storage seam.

use super::storage::Storage;
use super::{DType, Device, Tensor};
use crate::{Error, Result};

impl Tensor {
    /// This tensor on `device`: another handle to it when it is already there, else a
    /// contiguous copy (cpu to cuda uploads, cuda to cpu downloads, cuda to another cuda device
    /// copies device to device). To meta gives a meta tensor of the same shape and dtype; from
    /// meta is an error (there is no data). Without a usable GPU, anything to cuda is
    /// [`Error::NoCuda`].
    pub fn to(&self, device: Device) -> Result<Tensor> {
        let from = self.device();
        if from == device {
            return Ok(self.clone());
        }
        if let Some(h) = self.foreign_header() {
            // In a loaded plugin, the host moves its tensor (ABI 1.6), with nothing wrapped on
            // either side. A refusal is made again below, for its typed error.
            if let Some(Ok(moved)) = crate::plugin::guest::host_to(h, device) {
                return Ok(moved);
            }
        }
        if let Some(t) = self.adopted()? {
            return t.to(device);
        }
        if device.is_meta() {
            return Tensor::empty(self.shape(), self.dtype(), Device::Meta);
        }
        if from.is_meta() {
            return Err(Error::Unsupported(format!(
                "to({device}): the tensor is on the meta device, which has no data to copy"
            )));
        }
        if from.is_cuda() && device.is_cpu() {
            return self.download_contiguous("to");
        }
        // To cuda: from cpu or another cuda device; copy_from picks the path.
        let out = Tensor::empty(self.shape(), self.dtype(), device)?.tagged(self.native_schema());
        out.copy_from(self)?;
        Ok(out)
    }

    /// A contiguous cpu copy of this cuda tensor: its span of bytes comes to the host, then is
    /// packed there.
    fn download_contiguous(&self, op: &str) -> Result<Tensor> {
        let Some((range, lo)) = self.byte_span() else {
            return Tensor::empty(self.shape(), self.dtype(), Device::Cpu);
        };
        let bytes = self.storage().download(range, op)?;
        let storage = Storage::cpu_from_bytes(&bytes)?;
        let mut layout = self.layout().clone();
        layout.offset -= lo;
        Tensor::from_impl_native(storage, layout, self.dtype(), self.native_schema()).contiguous()
    }

    /// `copy_from` where either side is on a CUDA device (same shape and dtype, checked).
    pub(super) fn copy_from_cuda(&self, src: &Tensor) -> Result<()> {
        const OP: &str = "copy_from";
        if !self.device().is_cuda() {
            return self.copy_from(&src.to(Device::Cpu)?);
        }
        if !self.is_contiguous() {
            return Err(Error::Unsupported(format!(
                "{OP}: the destination is a strided view on {}; copying into strided CUDA \
                 tensors needs a kernel (copy into a contiguous tensor instead)",
                self.device()
            )));
        }
        let Some((dst, _)) = self.byte_span() else {
            return Ok(());
        };
        if src.device().is_cuda() && src.is_contiguous() && !self.same_storage(src) {
            if let Some((range, _)) = src.byte_span() {
                return self
                    .storage()
                    .copy_device(dst.start, src.storage(), range, OP);
            }
        }
        // Through the host: strided or overlapping sources, and cpu sources.
        let host = src.to(Device::Cpu)?.contiguous()?;
        let guard = host.storage().read(OP)?;
        let Some((range, _)) = host.byte_span() else {
            return Ok(());
        };
        self.storage().upload(dst.start, &guard.bytes()[range], OP)
    }

    /// The device address of this tensor's first element (`offset()` applied) and the number of
    /// bytes of its storage from there on. Device tensors only. The address stays valid while
    /// the tensor (or any handle sharing its storage) is alive; launch on the thread's current
    /// stream (`opbox::cuda::current_stream(i)`) to be ordered after opbox's copies.
    pub fn cuda_ptr(&self) -> Result<(u64, usize)> {
        if let Some(t) = self.adopted()? {
            return t.cuda_ptr();
        }
        let at = self.offset() * self.dtype().size();
        Ok((
            self.device_ptr()?,
            self.storage().nbytes().saturating_sub(at),
        ))
    }

    /// The device address of this tensor's first element, as a launch passes it.
    #[inline]
    pub fn device_ptr(&self) -> Result<u64> {
        if let Some(h) = self.foreign_header() {
            if self.device().is_cuda() {
                return Ok(super::other_image::element_ptr(h) as usize as u64);
            }
            return self.adopted()?.map_or(Ok(0), |t| t.device_ptr());
        }
        let base = self.storage().device_ptr("cuda_ptr")?;
        Ok(base + (self.offset() * self.dtype().size()) as u64)
    }

    /// For a launch that takes this tensor as a packed buffer of `dtype`: its CUDA device and
    /// first element's device address, or None when it is not a contiguous CUDA tensor of
    /// `dtype` (the launch then goes the general way, which says why). Another image's tensor
    /// is read from its header in one call, rather than one per accessor.
    #[inline]
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn cuda_buffer(&self, dtype: DType) -> Option<(Device, u64)> {
        if let Some(h) = self.foreign_header() {
            return super::other_image::cuda_buffer(h, dtype);
        }
        let on = self.device();
        if self.dtype() != dtype || !on.is_cuda() || !self.is_contiguous() {
            return None;
        }
        Some((on, self.device_ptr().ok()?))
    }

    /// Calls `f` with the storage's whole allocation, the byte offset of this tensor's first
    /// element in it, and the thread's current stream: for launches through cudarc's
    /// `PushKernelArg`. Other threads' access to the storage waits while `f` runs; this thread's is
    /// [`Error::StorageBusy`]. opbox's contexts turn cudarc's event tracking off, so the slice
    /// records no uses: launch on the stream given, or order another stream yourself.
    #[cfg(feature = "cuda")]
    pub fn with_cuda_slice<R>(
        &self,
        f: impl FnOnce(
            &mut cudarc::driver::CudaSlice<u8>,
            usize,
            &std::sync::Arc<cudarc::driver::CudaStream>,
        ) -> R,
    ) -> Result<R> {
        if let Some(t) = self.adopted()? {
            return t.with_cuda_slice(f);
        }
        let at = self.offset() * self.dtype().size();
        crate::backend::cuda::memory::CudaMemory::of(self.storage().memory(), "with_cuda_slice")?
            .with_slice("with_cuda_slice", |slice, stream| f(slice, at, stream))
    }
}
