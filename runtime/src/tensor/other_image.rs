//! Handles to another image's tensors: a [`Tensor`] whose pointer is that image's plugin ABI
//! header, read in place.
//!
//! A plugin's kernel is lent the host's tensors as headers (`abi::plugin_v1::TensorHeader`, a
//! `DLTensor` with a vtable). The kernel gets them as `&Tensor` with nothing wrapped or
//! allocated: the handle points at the header itself. Every tensor object of this image starts
//! with its own header (`own_header.rs`), whose vtable is this image's, exactly where another
//! image's header has its maker's, so one load tells the two apart. A foreign handle reads its
//! metadata from the header, clones through the maker's `retain` and drops through its
//! `release`; what needs this image's storage (element access, views, transfers, DLPack) runs on
//! a tensor of this image's over the same memory ([`Tensor::adopted`]), made when it is asked
//! for.
//!
//! Only [`checked`] headers become handles, so the metadata read here is well-formed: a known
//! dtype and device, shape and strides present for every dimension, no negative size, an element
//! count that fits, and a byte offset that is a whole number of elements.

use std::ffi::c_void;
use std::ptr::NonNull;

use super::dlpack::codes::{dl_device, dl_dtype, from_dl_device_for, from_dl_dtype_for};
use super::layout::is_contiguous;
use super::own_header::this_image;
use super::{DType, Device, Tensor, TensorImpl};
use crate::abi::plugin_v1::{TensorHeader, TensorVTable, TENSOR_FLAG_READ_ONLY};
use crate::{Error, Result};

/// The most dimensions a foreign header may claim (PyTorch's limit is 64 too).
const MAX_DIMS: i32 = 64;

/// The header `ptr` points at when it is another image's, else None.
#[inline]
pub(super) fn foreign<'a>(ptr: NonNull<TensorImpl>) -> Option<&'a TensorHeader> {
    // SAFETY: a handle points at a live `TensorImpl` (repr(C), its header first) or at a checked
    // live header (repr(C), `vtable` first): either way the first word is a vtable pointer.
    let first = unsafe { ptr.cast::<*const TensorVTable>().read() };
    if std::ptr::eq(first, this_image()) {
        None
    } else {
        // SAFETY: not this image's object, so a live header, for as long as the handle lives.
        Some(unsafe { ptr.cast::<TensorHeader>().as_ref() })
    }
}

/// Whether `h` may become a handle (see the module docs), or what is wrong with it.
pub(crate) fn checked(h: &TensorHeader) -> Result<()> {
    let bad = |why: String| {
        Err(Error::InvalidArgument(format!(
            "plugin ABI: a tensor header {why}"
        )))
    };
    if h.vtable.is_null() {
        return bad("has no vtable".into());
    }
    let dl = &h.dl;
    if !(0..=MAX_DIMS).contains(&dl.ndim) {
        return bad(format!("has {} dimensions", dl.ndim));
    }
    const DOING: &str = "plugin ABI: a tensor header";
    let dtype = from_dl_dtype_for(dl.dtype, DOING)?;
    from_dl_device_for(dl.device, DOING)?;
    if dl.ndim > 0 && (dl.shape.is_null() || dl.strides.is_null()) {
        return bad("has no shape or no strides".into());
    }
    // SAFETY: a live header's shape holds `ndim` values (non-null, checked above).
    let shape: &[i64] = unsafe { dims(dl.shape, dl.ndim) };
    let mut numel: usize = 1;
    for &d in shape {
        let Ok(d) = usize::try_from(d) else {
            return bad(format!("has a negative size in shape {shape:?}"));
        };
        let Some(n) = numel.checked_mul(d) else {
            return bad(format!(
                "has more elements than fit in usize (shape {shape:?})"
            ));
        };
        numel = n;
    }
    if numel > 0 && dl.data.is_null() {
        return bad("has elements but no data".into());
    }
    if !dl.byte_offset.is_multiple_of(dtype.size() as u64) {
        return bad(format!(
            "starts {} bytes in, not a whole number of {} elements",
            dl.byte_offset, dtype
        ));
    }
    Ok(())
}

/// `ndim` values at `p` as `T` (`i64`, or `usize` or `isize`, which have its size: asserted in
/// the ABI module); none for `ndim` 0 or less.
///
/// # Safety
/// `p` holds `ndim` values, live for `'a` (or `ndim` is 0 or less).
unsafe fn dims<'a, T>(p: *const i64, ndim: i32) -> &'a [T] {
    const { assert!(size_of::<T>() == size_of::<i64>()) };
    if ndim <= 0 {
        return &[];
    }
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts(p.cast::<T>(), ndim as usize) }
}

// The metadata of a checked header, as a [`Tensor`]'s accessors give it. Out of line and cold:
// a process's own tensors never take these branches, and their accessors stay a load and a
// compare; a plugin's kernel pays a call per read of an input it was lent.

#[cold]
#[inline(never)]
pub(super) fn shape(h: &TensorHeader) -> &[usize] {
    // SAFETY: checked: `ndim` non-negative sizes, live as long as the header.
    unsafe { dims(h.dl.shape, h.dl.ndim) }
}

#[cold]
#[inline(never)]
pub(super) fn strides(h: &TensorHeader) -> &[isize] {
    // SAFETY: checked: `ndim` strides, live as long as the header.
    unsafe { dims(h.dl.strides, h.dl.ndim) }
}

#[cold]
#[inline(never)]
pub(super) fn dtype(h: &TensorHeader) -> DType {
    // Checked: the dtype is known, so the fallback is never taken.
    dl_dtype(h.dl.dtype).unwrap_or(DType::U8)
}

#[cold]
#[inline(never)]
pub(super) fn device(h: &TensorHeader) -> Device {
    // Checked: the device is known, so the fallback is never taken.
    dl_device(h.dl.device).unwrap_or(Device::Meta)
}

#[cold]
#[inline(never)]
pub(super) fn numel(h: &TensorHeader) -> usize {
    // Checked: the product fits.
    shape(h).iter().product()
}

#[cold]
#[inline(never)]
pub(super) fn is_contiguous_header(h: &TensorHeader) -> bool {
    // SAFETY: checked: `ndim` sizes and `ndim` strides, live as long as the header.
    unsafe { is_contiguous(dims(h.dl.shape, h.dl.ndim), dims(h.dl.strides, h.dl.ndim)) }
}

/// [`Tensor::cuda_buffer`] of a header: its CUDA device and first element's address, when it
/// is a contiguous CUDA tensor of `dtype`.
#[cold]
#[inline(never)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(super) fn cuda_buffer(h: &TensorHeader, dtype: DType) -> Option<(Device, u64)> {
    let on = dl_device(h.dl.device)?;
    if dl_dtype(h.dl.dtype) != Some(dtype) || !on.is_cuda() || !is_contiguous_header(h) {
        return None;
    }
    Some((on, element_ptr(h) as usize as u64))
}

/// The first element's offset from `data`, in elements (checked whole).
#[cold]
#[inline(never)]
pub(super) fn offset(h: &TensorHeader) -> usize {
    (h.dl.byte_offset / dtype(h).size() as u64) as usize
}

pub(super) fn read_only(h: &TensorHeader) -> bool {
    h.flags & TENSOR_FLAG_READ_ONLY != 0
}

/// The first element's address (host or device), null when the header has no data.
pub(super) fn element_ptr(h: &TensorHeader) -> *mut c_void {
    if h.dl.data.is_null() {
        return std::ptr::null_mut();
    }
    h.dl.data
        .cast::<u8>()
        .wrapping_add(h.dl.byte_offset as usize)
        .cast()
}

/// One more owned reference to `h`'s tensor, from its maker: the process aborts, as an `Arc`'s
/// overflow does, when the maker cannot give one (out of memory), since a clone cannot fail.
#[cold]
#[inline(never)]
pub(super) fn retain(h: &TensorHeader) -> Tensor {
    let ptr = std::ptr::from_ref(h).cast_mut();
    // SAFETY: a checked live header; its maker's vtable lives as long as the process (plugins
    // are never unloaded).
    let kept = unsafe { ((*h.vtable).retain)(ptr) };
    match NonNull::new(kept) {
        // SAFETY: the maker's retain returns a live header of the same tensor, as checked as
        // the one it came from (same maker, same metadata).
        Some(p) => unsafe { Tensor::from_raw(p.as_ptr().cast()) },
        None => {
            eprintln!("opbox: another image could not retain a tensor it lent (out of memory)");
            std::process::abort()
        }
    }
}

/// Gives up one owned reference to `h`'s tensor, to its maker.
///
/// # Safety
/// The handle owned that reference and gives it up here, once.
#[cold]
#[inline(never)]
pub(super) unsafe fn release(h: &TensorHeader) {
    let ptr = std::ptr::from_ref(h).cast_mut();
    // SAFETY: per the contract; the maker's vtable lives as long as the process.
    unsafe { ((*h.vtable).release)(ptr) };
}

impl Tensor {
    /// Another image's header this handle points at, None for one of this image's tensors.
    #[inline]
    pub(crate) fn foreign_header(&self) -> Option<&TensorHeader> {
        foreign(self.ptr)
    }

    /// For another image's tensor on the host, its first element's address (null when it has
    /// none); None for this image's own and for device memory.
    pub(crate) fn foreign_host_ptr(&self) -> Option<*mut c_void> {
        let h = self.foreign_header()?;
        (device(h) == Device::Cpu).then(|| element_ptr(h))
    }

    /// For another image's contiguous cpu tensor of `T`s at an address aligned for `T`, its
    /// elements where the header says they are: read in place, with no tensor of this image's
    /// made over them. None otherwise (the caller checks the dtype).
    pub(super) fn lent_elements<T: super::Element>(&self) -> Option<&[T]> {
        let (p, n) = self.lent_span::<T>()?;
        // SAFETY: a checked header's `numel` elements of its dtype (`T`, checked by the caller)
        // at its first element, contiguous, in host memory its maker keeps for as long as the
        // handle lives (lent for the call, or retained); aligned (checked).
        Some(unsafe { std::slice::from_raw_parts(p, n) })
    }

    /// Where [`Tensor::lent_elements`] are, for writing them: the first and the count.
    pub(super) fn lent_elements_mut<T: super::Element>(&self) -> Option<(*mut T, usize)> {
        self.lent_span::<T>().map(|(p, n)| (p.cast_mut(), n))
    }

    fn lent_span<T>(&self) -> Option<(*const T, usize)> {
        let h = self.foreign_header()?;
        if device(h) != Device::Cpu || !is_contiguous_header(h) {
            return None;
        }
        let n = numel(h);
        if n == 0 {
            return Some((NonNull::<T>::dangling().as_ptr(), 0));
        }
        let p = element_ptr(h).cast::<T>().cast_const();
        p.is_aligned().then_some((p, n))
    }

    /// For another image's tensor, one of this image's over the same memory (retaining the
    /// header, released when its last view goes); None for this image's own.
    pub(crate) fn adopted(&self) -> Result<Option<Tensor>> {
        match self.foreign_header() {
            None => Ok(None),
            // SAFETY: a checked live header, valid at least as long as this handle.
            Some(h) => unsafe {
                crate::plugin::tensor::borrow(std::ptr::from_ref(h).cast_mut()).map(Some)
            },
        }
    }
}
