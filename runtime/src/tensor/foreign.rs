//! Memory opbox does not own: [`Tensor::from_blob`] wraps another library's buffer, and
//! [`Tensor::data_ptr`] hands a tensor's address out.
//!
//! # Ownership
//!
//! Handing memory to `from_blob` hands over the duty to free it: the deleter runs exactly once,
//! when the last tensor viewing the memory (the tensor, its clones and its views) is dropped, on
//! whichever thread drops it. If `from_blob` refuses the memory (a bad shape, a misaligned
//! pointer, no CUDA), the deleter runs before the error is returned, so in every case it runs
//! once and the caller never frees the memory itself. DLPack import (`dlpack/`) is built on the
//! same path and keeps the same rule, which is also what the DLPack spec asks of a consumer.

use std::ffi::c_void;
use std::ptr::NonNull;

use super::layout::{checked_nbytes, checked_numel, contiguous_strides, Layout, Shape, Strides};
use super::storage::{Deleter, Storage};
use super::{DType, Device, Tensor};
use crate::backend::cpu::memory::HostMemory;
use crate::{Error, Result};

/// Where a foreign buffer's elements lie relative to the pointer to element `[0, 0, ...]`, in
/// elements: `lo` (<= 0, below it with negative strides) to `hi` (one past the last).
fn reach(shape: &[usize], strides: &[isize]) -> Option<(isize, isize)> {
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&d, &s) in shape.iter().zip(strides) {
        let r = isize::try_from(d.checked_sub(1)?).ok()?.checked_mul(s)?;
        if r < 0 {
            lo = lo.checked_add(r)?;
        } else {
            hi = hi.checked_add(r)?;
        }
    }
    Some((lo, hi.checked_add(1)?))
}

/// Where a foreign buffer's elements lie: the storage's length, and how far its base lies below
/// the pointer to element `[0, ...]` (negative strides reach there), in bytes.
pub(crate) struct Extent {
    pub(crate) nbytes: usize,
    pub(crate) below: usize,
}

/// Checks and completes the layout of a foreign buffer of `dtype` whose element `[0, ...]` is at
/// `ptr`: `layout`'s shape and strides are as the buffer's owner gave them (`row_major`: it gave
/// none, and they are made here); its offset (where element `[0, ...]` sits above the storage's
/// base), element count and contiguity are set here. The pointer must not be null where there
/// are elements, and must be aligned for `dtype`. In place: a plugin call imports a header per
/// tensor, and moving layouts around cost it more than the checks.
pub(crate) fn checked_extent(
    ptr: *mut c_void,
    layout: &mut Layout,
    row_major: bool,
    dtype: DType,
) -> Result<Extent> {
    let numel = checked_numel(&layout.shape)?;
    checked_nbytes(&layout.shape, numel, dtype)?;
    if row_major {
        // Its byte size was checked just above.
        layout.strides = contiguous_strides(&layout.shape);
    } else if layout.strides.len() != layout.shape.len() {
        return Err(rank_mismatch(layout));
    }
    let ext = if numel == 0 {
        layout.set_extent(0, 0);
        Extent {
            nbytes: 0,
            below: 0,
        }
    } else {
        let size = dtype.size();
        let Some((offset, nbytes)) = reach(&layout.shape, &layout.strides).and_then(|(lo, hi)| {
            let nbytes = hi.checked_sub(lo)?.unsigned_abs().checked_mul(size)?;
            (nbytes <= isize::MAX as usize).then_some((lo.unsigned_abs(), nbytes))
        }) else {
            return Err(too_far(layout, dtype));
        };
        layout.set_extent(offset, numel);
        Extent {
            nbytes,
            below: offset * size,
        }
    };
    // Every dtype's size is a power of two, so alignment is a mask, not a division.
    debug_assert!(dtype.size().is_power_of_two());
    if (ptr.is_null() && ext.nbytes > 0) || ptr.addr() & (dtype.size() - 1) != 0 {
        return Err(bad_pointer(ptr, layout, dtype));
    }
    Ok(ext)
}

#[cold]
#[inline(never)]
fn rank_mismatch(layout: &Layout) -> Error {
    Error::Shape(format!(
        "from_blob: shape {:?} has {} dimensions but strides {:?} has {}",
        layout.shape,
        layout.shape.len(),
        layout.strides,
        layout.strides.len()
    ))
}

#[cold]
#[inline(never)]
fn too_far(layout: &Layout, dtype: DType) -> Error {
    Error::Shape(format!(
        "from_blob: a {dtype} tensor of shape {:?} and strides {:?} reaches further than \
         isize::MAX bytes",
        layout.shape, layout.strides
    ))
}

#[cold]
#[inline(never)]
fn bad_pointer(ptr: *mut c_void, layout: &Layout, dtype: DType) -> Error {
    if ptr.is_null() {
        return Error::InvalidArgument(format!(
            "from_blob: the pointer is null, but a {dtype} tensor of shape {:?} has elements",
            layout.shape
        ));
    }
    Error::InvalidArgument(format!(
        "from_blob: the pointer {ptr:p} is not aligned for {dtype} (a multiple of {} bytes)",
        dtype.size()
    ))
}

/// A cpu buffer's storage base: `below` bytes under the pointer to element `[0, ...]`.
/// `wrapping_sub` keeps the pointer's provenance; the caller promised those bytes are part of
/// the same buffer.
pub(crate) fn cpu_base(ptr: *mut c_void, ext: &Extent) -> NonNull<u8> {
    host_base(ptr.cast::<u8>().wrapping_sub(ext.below))
}

/// A host buffer's base as storage holds it: an empty buffer may come with a null pointer,
/// which becomes a dangling, aligned one (nothing reads through it).
pub(crate) fn host_base(base: *mut u8) -> NonNull<u8> {
    NonNull::new(base).unwrap_or(NonNull::<u64>::dangling().cast())
}

/// Wraps foreign memory whose element `[0, ...]` is at address `ptr`. On error the deleter is
/// handed back, unrun, for the caller's rule (from_blob runs it; so does DLPack import).
///
/// # Safety
///
/// As [`Tensor::from_blob`].
// from_blob's seven facts about the buffer, and where a plugin header's memory came from.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn wrap(
    ptr: *mut c_void,
    shape: Shape,
    strides: Option<Strides>,
    dtype: DType,
    device: Device,
    read_only: bool,
    deleter: Deleter,
    origin: usize,
) -> std::result::Result<Tensor, (Error, Deleter)> {
    let row_major = strides.is_none();
    let mut layout = Layout {
        shape,
        strides: strides.unwrap_or_default(),
        ..Layout::default()
    };
    let ext = match checked_extent(ptr, &mut layout, row_major, dtype) {
        Ok(e) => e,
        Err(e) => return Err((e, deleter)),
    };
    let storage = match device {
        Device::Cpu => {
            let base = cpu_base(ptr, &ext);
            // SAFETY: the caller guarantees the buffer covers every element of the layout, which
            // is `base .. base + nbytes`, and stays valid until the deleter runs.
            let memory = unsafe { HostMemory::foreign(base, read_only, deleter) };
            Storage::new(memory, ext.nbytes, origin)
        }
        #[cfg(feature = "cuda")]
        Device::Cuda(ordinal) => {
            let base = (ptr as u64).wrapping_sub(ext.below as u64);
            // SAFETY: as for cpu, with device addresses.
            match unsafe {
                crate::backend::cuda::memory::CudaMemory::foreign(base, ordinal, read_only, deleter)
            } {
                Ok(m) => Storage::new(m, ext.nbytes, origin),
                Err(failed) => return Err(failed),
            }
        }
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => {
            let e = Error::Unsupported(format!(
                "from_blob on {device}: opbox-runtime was built without its \"cuda\" feature"
            ));
            return Err((e, deleter));
        }
        Device::Meta => {
            let e = Error::InvalidArgument(
                "from_blob on meta: the meta device holds no memory to wrap; use \
                 Tensor::empty(shape, dtype, Device::Meta)"
                    .to_string(),
            );
            return Err((e, deleter));
        }
    };
    Ok(Tensor::from_impl(storage, layout, dtype))
}

impl Tensor {
    /// A tensor over memory another library owns: element `[0, 0, ...]` is at `ptr` (a host
    /// pointer on cpu, a device address on cuda), the others `strides` elements apart (`None`:
    /// row-major; strides may be zero or negative). No copy is made. `deleter` runs exactly once,
    /// when the last tensor viewing the memory is dropped, or before the error returns if the
    /// memory is refused (see the module's ownership rule).
    ///
    /// `ptr` must be aligned to the dtype's size; a null `ptr` is accepted only for a tensor with
    /// no elements.
    ///
    /// # Safety
    ///
    /// - `ptr` must be valid for reads and writes of every element the shape and strides reach,
    ///   on `device`, until `deleter` runs; on cpu those bytes must be initialised, and for bool
    ///   hold only 0 or 1 (reads check, and fail otherwise).
    /// - Nothing outside opbox may write the memory while opbox reads it, or touch it while
    ///   opbox writes it (opbox's own accesses are ordered by the storage's lock).
    pub unsafe fn from_blob(
        ptr: *mut c_void,
        shape: &[usize],
        strides: Option<&[isize]>,
        dtype: DType,
        device: Device,
        deleter: impl FnOnce() + Send + 'static,
    ) -> Result<Tensor> {
        // SAFETY: forwarded from this function's contract.
        match unsafe {
            wrap(
                ptr,
                Shape::from_slice(shape),
                strides.map(Strides::from_slice),
                dtype,
                device,
                false,
                Deleter::boxed(deleter),
                0,
            )
        } {
            Ok(t) => Ok(t),
            Err((e, deleter)) => {
                deleter.run();
                Err(e)
            }
        }
    }

    /// The address of this tensor's first element (its offset applied): a host pointer on cpu, a
    /// device address on cuda, null on meta. Any dtype and layout; the strides say where the
    /// other elements are.
    ///
    /// Getting the pointer is safe; using it is not. It stays valid while any tensor sharing the
    /// storage is alive, and accesses through it bypass the storage's lock: the caller orders
    /// them against opbox's own (`with_slice`, copies) and other threads. On cuda, work queued on
    /// the device's default stream is ordered after opbox's copies.
    pub fn data_ptr(&self) -> *const c_void {
        self.element_ptr().cast_const()
    }

    /// [`Tensor::data_ptr`] for writing: an error for a read-only tensor (DLPack's read-only
    /// flag). The same rules apply to using it.
    pub fn mutable_data_ptr(&self) -> Result<*mut c_void> {
        if self.is_read_only() {
            return Err(Error::InvalidArgument(format!(
                "mutable_data_ptr: this {} tensor on {} is read-only (another library shared it \
                 with DLPack's read-only flag)",
                self.dtype(),
                self.device()
            )));
        }
        Ok(self.element_ptr())
    }

    /// `true` when the tensor's memory may not be written (imported with DLPack's read-only
    /// flag); writes through opbox are errors.
    pub fn is_read_only(&self) -> bool {
        if let Some(h) = self.foreign_header() {
            return super::other_image::read_only(h);
        }
        self.storage().is_read_only()
    }

    fn element_ptr(&self) -> *mut c_void {
        if let Some(h) = self.foreign_header() {
            return super::other_image::element_ptr(h);
        }
        let base = self.storage().base_ptr();
        if base.is_null() {
            return std::ptr::null_mut();
        }
        // `wrapping_add` keeps the host pointer's provenance; the offset lies inside the
        // storage (every layout is checked against it).
        base.wrapping_add(self.offset() * self.dtype().size())
            .cast::<c_void>()
    }
}

#[cfg(test)]
#[path = "foreign_tests.rs"]
mod tests;
