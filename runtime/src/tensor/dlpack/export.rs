//! DLPack export: an opbox tensor handed to another library as a `DLManagedTensorVersioned` that
//! keeps the tensor alive until the consumer calls its deleter.

use std::ffi::c_void;

use super::codes::{to_dl_device, to_dl_dtype};
use super::ffi::{
    DLManagedTensorVersioned, DLPackVersion, DLTensor, DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use super::ToDlpack;
use crate::{Error, Result, Tensor};

/// One exported tensor: the managed tensor first (so a pointer to it is a pointer to this), the
/// tensor handle that keeps the memory alive, and the shape and strides its `DLTensor` points
/// into.
#[repr(C)]
struct Exported {
    managed: DLManagedTensorVersioned,
    tensor: Tensor,
    /// `ndim` sizes, then `ndim` strides. Never resized after `describe`, so the pointers into
    /// it stay put when the box moves (they point at the Vec's heap buffer, not at the box).
    dims: Vec<i64>,
}

/// The `DLTensor` of `t`, its shape and strides written to `dims` (which the caller keeps alive
/// and unmoved-in-heap as long as the DLTensor is used).
pub(crate) fn describe(t: &Tensor, dims: &mut Vec<i64>) -> Result<DLTensor> {
    dims.clear();
    dims.reserve_exact(2 * t.dim());
    // usize/isize sizes and strides fit i64 on every target opbox builds for.
    dims.extend(t.shape().iter().map(|&d| d as i64));
    dims.extend(t.strides().iter().map(|&s| s as i64));
    let (shape, strides) = dims.split_at_mut(t.dim());
    dl_tensor(t, shape.as_mut_ptr(), strides.as_mut_ptr(), "to_dlpack")
}

/// The `DLTensor` of `t` over the caller's `shape` and `strides` arrays (alive while it is
/// used): what DLPack export and the plugin ABI's tensor header both hand out. `what` names the
/// caller in the error for a rank past int32. Inlined, so that a caller writing it into a
/// header builds it there instead of copying it (a plugin call lends a header a tensor).
#[inline]
pub(crate) fn dl_tensor(
    t: &Tensor,
    shape: *mut i64,
    strides: *mut i64,
    what: &str,
) -> Result<DLTensor> {
    let device = to_dl_device(t.device())?;
    let ndim = i32::try_from(t.dim()).map_err(|_| {
        Error::InvalidArgument(format!("{what}: {} dimensions do not fit int32", t.dim()))
    })?;
    Ok(DLTensor {
        // The spec asks for null when there are no elements. Otherwise the first element's
        // address with byte_offset 0, as PyTorch and CuPy export: consumers that ignore
        // byte_offset still read the right bytes.
        data: if t.numel() == 0 {
            std::ptr::null_mut()
        } else {
            t.data_ptr().cast_mut()
        },
        device,
        ndim,
        dtype: to_dl_dtype(t.dtype()),
        shape,
        strides,
        byte_offset: 0,
    })
}

/// The deleter of every tensor opbox exports.
unsafe extern "C" fn delete_exported(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // No panic may cross this C edge: dropping the tensor can run a foreign deleter of its own
    // (a re-exported import), which is user code.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `managed` came from `Box::<Exported>::into_raw` in `to_dlpack_with` (the
        // managed tensor is the first field of a repr(C) struct), and DLPack's consumer calls
        // the deleter once.
        drop(unsafe { Box::from_raw(managed.cast::<Exported>()) });
    }));
}

impl Tensor {
    /// Exports this tensor as a DLPack 1.x managed tensor, with no copy. The consumer owns the
    /// result and must call its `deleter` exactly once; until then the tensor's memory stays
    /// alive. Read-only tensors are flagged read-only. Meta tensors have no DLPack form.
    pub fn to_dlpack(&self) -> Result<*mut DLManagedTensorVersioned> {
        self.to_dlpack_with(&ToDlpack::default())
    }

    /// [`Tensor::to_dlpack`] with a copy request and the consumer's CUDA stream (see
    /// `opbox::tensor::dlpack`).
    pub fn to_dlpack_with(&self, opts: &ToDlpack) -> Result<*mut DLManagedTensorVersioned> {
        if let Some(t) = self.adopted()? {
            return t.to_dlpack_with(opts);
        }
        let mut flags = 0;
        let tensor = if opts.copy == Some(true) {
            flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
            let copy = Tensor::empty(self.shape(), self.dtype(), self.device())?;
            copy.copy_from(self)?;
            copy
        } else {
            self.clone()
        };
        if tensor.is_read_only() {
            flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
        }
        if let (Some(stream), crate::Device::Cuda(_ordinal)) = (opts.stream, tensor.device()) {
            #[cfg(feature = "cuda")]
            if let Some(handle) = stream.handle() {
                use crate::backend::cuda::interop::{opbox_stream, same_stream, stream_waits_for};
                let ours = opbox_stream(_ordinal)?;
                // The consumer's own stream is opbox's current one: already in order.
                if !same_stream(handle, ours) {
                    // SAFETY: the consumer's stream is live (it asked for the tensor on it);
                    // opbox's current stream is live while this thread's scope is.
                    unsafe {
                        stream_waits_for(_ordinal, handle as cudarc::driver::sys::CUstream, ours)?
                    };
                }
            }
            #[cfg(not(feature = "cuda"))]
            let _ = stream;
        }
        let mut dims = Vec::new();
        let dl_tensor = describe(&tensor, &mut dims)?;
        let exported = Box::new(Exported {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: DLPACK_MAJOR_VERSION,
                    minor: DLPACK_MINOR_VERSION,
                },
                manager_ctx: std::ptr::null_mut::<c_void>(),
                deleter: Some(delete_exported),
                flags,
                dl_tensor,
            },
            tensor,
            dims,
        });
        let raw = Box::into_raw(exported);
        // SAFETY: `raw` is a valid, just-leaked box; manager_ctx points back at the whole
        // export, as producers conventionally do.
        unsafe { (*raw).managed.manager_ctx = raw.cast::<c_void>() };
        Ok(raw.cast::<DLManagedTensorVersioned>())
    }
}
