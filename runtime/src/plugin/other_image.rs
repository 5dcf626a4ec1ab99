//! "Another image's" tensor headers, for the plugin module's tests: one vtable that counts the
//! references held on each header in the `AtomicI64` its `manager_ctx` points at, so tests that
//! run in parallel each count their own.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::abi::plugin_v1::{TensorHeader, TensorVTable};
use crate::tensor::dlpack::codes::{to_dl_device, to_dl_dtype};
use crate::tensor::dlpack::ffi::DLTensor;
use crate::{DType, Device};

/// # Safety
/// `h` is a live header made by [`header`], whose counter is alive.
unsafe fn refs<'a>(h: *mut TensorHeader) -> &'a AtomicI64 {
    // SAFETY: per the contract, `manager_ctx` is the counter `header` was given.
    unsafe { &*(*h).manager_ctx.cast::<AtomicI64>() }
}

unsafe extern "C" fn retain(h: *mut TensorHeader) -> *mut TensorHeader {
    // SAFETY: the ABI calls a header's vtable with that header, live.
    unsafe { refs(h) }.fetch_add(1, Ordering::SeqCst);
    h
}

unsafe extern "C" fn release(h: *mut TensorHeader) {
    // SAFETY: as in `retain`.
    unsafe { refs(h) }.fetch_sub(1, Ordering::SeqCst);
}

pub(crate) static OTHER: TensorVTable = TensorVTable {
    size: std::mem::size_of::<TensorVTable>() as u64,
    retain,
    release,
};

/// A 1-D f32 header lending `data`, its shape and stride kept in `dims` and its references
/// counted in `refs` (its own `refcount` is 0: counting is the maker's business). Its retain
/// returns the header itself, so the header must outlive every reference taken.
pub(crate) fn header(data: &mut [f32], dims: &mut [i64; 2], refs: &AtomicI64) -> TensorHeader {
    *dims = [data.len() as i64, 1];
    // Both from one pointer, so neither borrow of `dims` invalidates the other.
    let dims = dims.as_mut_ptr();
    TensorHeader {
        vtable: &OTHER,
        manager_ctx: std::ptr::from_ref(refs).cast_mut().cast(),
        refcount: 0,
        flags: 0,
        dl: DLTensor {
            data: data.as_mut_ptr().cast(),
            device: to_dl_device(Device::Cpu).unwrap(),
            ndim: 1,
            dtype: to_dl_dtype(DType::F32),
            shape: dims,
            strides: dims.wrapping_add(1),
            byte_offset: 0,
        },
    }
}

/// Gives up one reference to `h`, as its receiver would.
///
/// # Safety
/// As [`refs`], and the caller holds the reference.
pub(crate) unsafe fn release_one(h: *mut TensorHeader) {
    // SAFETY: forwarded.
    unsafe { release(h) }
}
