//! A tensor object's own plugin-ABI headers: the tensor as another image sees it.
//!
//! Every tensor object starts with two headers (`abi::plugin_v1::TensorHeader`), written once
//! when it is made: its own, owned, at the object's address, so a handle to the object is a
//! pointer to its header and goes to another image as it is; and beside it the same header as
//! lent for one call. Lending a tensor to a plugin's kernel writes nothing, retaining a lent one
//! allocates nothing, and a tensor the kernel gives back is this image's handle again.

use std::ffi::c_void;

use super::dlpack::codes::{to_dl_device, to_dl_dtype};
use super::dlpack::ffi::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use super::{Tensor, TensorImpl};
use crate::abi::plugin_v1::{TensorHeader, TensorVTable, TENSOR_FLAG_READ_ONLY};

/// This image's vtable: the first word of each of its tensor objects.
#[inline]
pub(super) fn this_image() -> &'static TensorVTable {
    &crate::plugin::tensor::VTABLE
}

/// A tensor object's own header: the tensor as another image sees it, owned, at the object's
/// own address (so the handle is the header). Its `refcount` is [`OWN`] and never changes: the
/// object's `Arc` counts its references. Written once, when the object is made
/// ([`OwnHeader::describe`]). A tensor DLPack cannot describe (on meta) keeps a blank one
/// ([`BLANK`]): its vtable only, never handed out.
///
/// Beside it, the same header as lent for one call ([`LENT`]): what the host passes a plugin's
/// kernel, with no header written per call. A kernel that keeps the tensor retains it and gets
/// the own header; one that gives it back as its output unretained (ABI 1.3) writes the lent one,
/// which is how the host tells the two apart.
#[repr(C)]
pub(super) struct OwnHeader {
    own: TensorHeader,
    lent: TensorHeader,
}

/// `refcount` of an own header. A borrowed header has 0 and a boxed one counts from 1, which
/// never reaches this.
const OWN: u64 = u64::MAX;
/// `refcount` of a blank own header.
const BLANK: u64 = u64::MAX - 1;
/// `refcount` of a tensor object's lent header: borrowed, as a header lent for a call is.
const LENT: u64 = u64::MAX - 2;

// SAFETY: the header's pointers (the object itself, its shape and strides, its storage's bytes)
// are written once, before the object is shared, and only read after; the bytes are reached
// through them only by another image's kernel that the object was lent or given to.
unsafe impl Send for OwnHeader {}
// SAFETY: as above: shared access only reads.
unsafe impl Sync for OwnHeader {}

impl OwnHeader {
    pub(super) const fn blank() -> OwnHeader {
        OwnHeader {
            own: OwnHeader::blank_header(),
            lent: OwnHeader::blank_header(),
        }
    }

    const fn blank_header() -> TensorHeader {
        TensorHeader {
            vtable: &crate::plugin::tensor::VTABLE,
            manager_ctx: std::ptr::null_mut(),
            refcount: BLANK,
            flags: 0,
            dl: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim: 0,
                // kDLUInt, 8 bits: u8.
                dtype: DLDataType {
                    code: 1,
                    bits: 8,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        }
    }

    /// Writes `imp`'s header, at its final address.
    pub(super) fn describe(imp: &mut TensorImpl) {
        let (Ok(device), Ok(ndim)) = (to_dl_device(imp.device), i32::try_from(imp.layout.ndim()))
        else {
            return;
        };
        let layout = &imp.layout;
        let base = imp.storage.base_ptr();
        let data = if layout.numel == 0 || base.is_null() {
            std::ptr::null_mut()
        } else {
            // In the storage (every layout is checked against it); `wrapping_add` keeps the host
            // pointer's provenance.
            base.wrapping_add(layout.offset * imp.dtype.size()).cast()
        };
        let flags = if imp.storage.is_read_only() {
            TENSOR_FLAG_READ_ONLY
        } else {
            0
        };
        // Read-only for every reader (the ABI says so); usize and isize are int64_t's size
        // (asserted in the ABI module).
        let (shape, strides) = (
            layout.shape.as_ptr().cast::<i64>().cast_mut(),
            layout.strides.as_ptr().cast::<i64>().cast_mut(),
        );
        let own = TensorHeader {
            vtable: this_image(),
            manager_ctx: std::ptr::null_mut(),
            refcount: OWN,
            flags,
            dl: DLTensor {
                data,
                device,
                ndim,
                dtype: to_dl_dtype(imp.dtype),
                shape,
                strides,
                byte_offset: 0,
            },
        };
        imp.header.lent = TensorHeader {
            refcount: LENT,
            ..own
        };
        imp.header.own = own;
    }

    /// Whether the header describes its tensor (it does unless DLPack cannot).
    pub(super) fn described(&self) -> bool {
        self.own.refcount == OWN
    }
}

/// The tensor object whose lent header `h` is, when it is one (see [`OwnHeader`]).
///
/// # Safety
/// `h` is a live header of this image's.
pub(crate) unsafe fn lent_object(h: *mut TensorHeader) -> Option<*mut c_void> {
    // SAFETY: per the contract.
    if unsafe { (*h).refcount } != LENT {
        return None;
    }
    // The lent header sits at a fixed offset in the object, whose first field is the own one; the
    // pointer came from the object's handle, so the step back stays inside the object.
    Some(
        h.cast::<u8>()
            .wrapping_sub(std::mem::offset_of!(OwnHeader, lent))
            .cast(),
    )
}

/// One more reference to the tensor object whose own header `h` is: its maker's retain, with
/// nothing to look up (the header is the object's first field, so `h` is its handle).
///
/// # Safety
/// `h` is the own header ([`is_own`]) of a live tensor object of this image's.
pub(crate) unsafe fn retain_own(h: *mut TensorHeader) {
    // SAFETY: per the contract, `h` is the object's address, which came from `Arc::into_raw`,
    // and the object is alive.
    unsafe { std::sync::Arc::increment_strong_count(h.cast::<TensorImpl>().cast_const()) };
}

/// Whether `h`, a header of this image's, is a tensor object's own (so `h` is its handle), not
/// a borrowed one lent for a call or a boxed one.
pub(crate) fn is_own(h: &TensorHeader) -> bool {
    h.refcount == OWN
}

impl Tensor {
    /// This tensor's own header (see [`OwnHeader`]), for a tensor of this image's that DLPack
    /// can describe.
    pub(crate) fn own_header(&self) -> Option<*mut TensorHeader> {
        if self.foreign_header().is_some() || !self.inner().header.described() {
            return None;
        }
        Some(self.ptr.as_ptr().cast())
    }

    /// Whether this handle is a header as it is: another image's (checked when it became a
    /// handle), or this image's own, described. Only a tensor DLPack cannot describe is not.
    #[inline]
    pub(crate) fn is_a_header(&self) -> bool {
        self.foreign_header().is_some() || self.inner().header.described()
    }

    /// This tensor's lent header (see [`OwnHeader`]), for a tensor of this image's that DLPack
    /// can describe: valid while this handle lives.
    pub(crate) fn lent_header(&self) -> Option<*mut TensorHeader> {
        self.own_header()?;
        // SAFETY: a live tensor object of this image's (checked above); the field's address is
        // taken from the handle's pointer, with no reference made.
        Some(unsafe { std::ptr::addr_of_mut!((*self.ptr.as_ptr()).header.lent) })
    }
}
