//! Tensors across the plugin ABI: this image's tensors as [`TensorHeader`]s, and headers (this
//! image's or another's) back as tensors.
//!
//! Each tensor object carries its own headers (`tensor::own_header`): lending a tensor passes its
//! lent header, retaining one gives its own header with the object's count raised, and a tensor
//! given to another image is its own header. The general forms remain for what has no own
//! header: a header written for one call ([`lend_into`]: shape and strides point at the
//! tensor's layout, `manager_ctx` at its handle), and a box of a header and one tensor reference
//! counted by the box's `refcount`; for a tensor DLPack cannot describe (on meta), writing one
//! fails and says why. A plugin's kernel reads the host's headers in place
//! (`tensor::other_image`); the host makes another image's header a tensor over the same memory
//! (DLPack's import path) whose release calls that image's vtable.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::abi::plugin_v1::{TensorHeader, TensorVTable, TENSOR_FLAG_READ_ONLY};
use crate::tensor::dlpack::codes::{from_dl_device, to_dl_dtype};
use crate::tensor::dlpack::export::dl_tensor;
use crate::tensor::dlpack::import::wrap_dltensor;
use crate::tensor::own_header::{is_own, lent_object, retain_own};
use crate::tensor::storage::Deleter;
use crate::value::StableValue;
use crate::{Error, Result, Tensor};

/// This image's vtable: a header whose vtable is this one was made here.
pub(crate) static VTABLE: TensorVTable = TensorVTable {
    size: std::mem::size_of::<TensorVTable>() as u64,
    retain,
    release,
};

/// An owned header: the header first, so a pointer to it is a pointer to this.
#[repr(C)]
struct Owned {
    header: TensorHeader,
    tensor: Tensor,
}

pub(super) fn is_ours(header: &TensorHeader) -> bool {
    std::ptr::eq(header.vtable, &VTABLE)
}

/// A new handle to the tensor of `h`, one of this image's headers: a tensor object's own (the
/// handle is the header), or a borrowed or boxed one (`manager_ctx` is the handle).
///
/// # Safety
/// `h` is a live header of this image's.
unsafe fn handle_of(h: *mut TensorHeader) -> Tensor {
    // SAFETY: live, per the contract.
    let header = unsafe { &*h };
    let p = if is_own(header) {
        h.cast::<c_void>()
    } else if let Some(object) = unsafe { lent_object(h) } {
        // SAFETY (the call): ours and live, per the contract.
        object
    } else {
        header.manager_ctx
    };
    // SAFETY: a live handle of this image's: the object itself, or the one the header keeps (or
    // lends, for the call that lent it).
    unsafe { Tensor::borrow_raw(&p) }.clone()
}

/// Writes the header of `t`, refcount `refcount` (0: borrowed), into `slot`, field by field: a
/// header built elsewhere and copied in would be read back in wide loads from the narrow stores
/// that just made it, which stalls (a plugin call lends a header per tensor).
///
/// # Safety
/// `slot` is valid for writing one header.
#[inline]
unsafe fn write_header(t: &Tensor, refcount: u64, slot: *mut TensorHeader) -> Result<()> {
    // Read-only for every reader (the ABI says so); the casts only match DLPack's types, and
    // point at the tensor's own shape and strides, so a borrowed header allocates nothing.
    let dl = dl_tensor(
        t,
        t.shape().as_ptr().cast::<i64>().cast_mut(),
        t.strides().as_ptr().cast::<i64>().cast_mut(),
        "plugin ABI",
    )?;
    let flags = if t.is_read_only() {
        TENSOR_FLAG_READ_ONLY
    } else {
        0
    };
    // SAFETY: `slot` is writable, per the contract; each field is written once.
    unsafe {
        std::ptr::addr_of_mut!((*slot).vtable).write(&VTABLE);
        std::ptr::addr_of_mut!((*slot).manager_ctx).write(t.as_raw());
        std::ptr::addr_of_mut!((*slot).refcount).write(refcount);
        std::ptr::addr_of_mut!((*slot).flags).write(flags);
        std::ptr::addr_of_mut!((*slot).dl).write(dl);
    }
    Ok(())
}

/// Writes into `slot` a header that lends `t` for one call: no reference is taken, so it must
/// not outlive `t`.
///
/// # Safety
/// `slot` is valid for writing one header.
pub(crate) unsafe fn lend_into(t: &Tensor, slot: *mut TensorHeader) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { write_header(t, 0, slot) }
}

/// A header that lends `t` for one call, for tests.
#[cfg(test)]
pub(crate) fn borrowed(t: &Tensor) -> Result<TensorHeader> {
    let mut header = std::mem::MaybeUninit::<TensorHeader>::uninit();
    // SAFETY: a header's worth of writable memory, fully written on success.
    unsafe {
        lend_into(t, header.as_mut_ptr())?;
        Ok(header.assume_init())
    }
}

/// An owned header holding the one reference of `t`, a tensor just made here (by a host
/// function): its own header, with nothing to compare, as it views no other image's memory.
pub(crate) fn fresh(t: Tensor) -> Result<*mut TensorHeader> {
    if t.own_header().is_some() {
        return Ok(t.into_raw().cast());
    }
    owned(t)
}

/// An owned header holding one reference to `t`. When `t` is exactly the view a header another
/// image handed over describes (a kernel returning its input, or the tensor the host allocated
/// for it), that header is retained and given back: its maker takes its own tensor back with
/// nothing wrapped or allocated on either side.
pub(crate) fn owned(t: Tensor) -> Result<*mut TensorHeader> {
    // A handle to another image's header owns one reference to it: that header is the value.
    if t.foreign_header().is_some() {
        return Ok(t.into_raw().cast());
    }
    if let Some(h) = handed_back(&t) {
        return Ok(h);
    }
    // The tensor's own header, with the handle's reference.
    if t.own_header().is_some() {
        return Ok(t.into_raw().cast());
    }
    // Box::new_uninit aborts rather than unwinds when out of memory, so no panic reaches a C
    // edge.
    let mut owned = Box::<Owned>::new_uninit();
    let p = owned.as_mut_ptr();
    // SAFETY: `p` is the box's memory: the header is written in place, then the tensor, so the
    // box is whole before `assume_init`. The handle's address is the TensorImpl's, so
    // `manager_ctx` and the shape pointers stay right when `t` moves into the box.
    unsafe {
        write_header(&t, 1, std::ptr::addr_of_mut!((*p).header))?;
        std::ptr::addr_of_mut!((*p).tensor).write(t);
        Ok(Box::into_raw(owned.assume_init()).cast::<TensorHeader>())
    }
}

/// `header` and the reference to `tensor` it describes, as one owned header. The handle's
/// address is unchanged by the move into the box (it is the TensorImpl's), so `manager_ctx`
/// and the shape pointers stay right.
fn boxed(header: TensorHeader, tensor: Tensor) -> *mut TensorHeader {
    // Box::new aborts rather than unwinds when out of memory, so no panic reaches a C edge.
    Box::into_raw(Box::new(Owned { header, tensor })).cast::<TensorHeader>()
}

/// `t`'s origin header (the one its memory was wrapped from), retained, when `t` views exactly
/// what that header describes: the same first element, dtype, device, shape, strides and
/// read-only flag. None otherwise, and when the maker's retain fails.
fn handed_back(t: &Tensor) -> Option<*mut TensorHeader> {
    let origin = t.storage().origin();
    if origin == 0 || t.numel() == 0 {
        return None;
    }
    let h = std::ptr::with_exposed_provenance_mut::<TensorHeader>(origin);
    // SAFETY: a storage with an origin keeps that header's owned reference until it drops
    // (`wrap_foreign`), and `t` holds the storage: the header is live, and makers never change
    // a header they handed out.
    let header = unsafe { &*h };
    if !same_view(header, t) {
        return None;
    }
    // SAFETY: live, as above.
    unsafe { retained(h) }
}

/// One more owned reference to the live header `h`, from its maker's `retain` (the header
/// itself or a new one); None when it has no vtable or the retain fails.
///
/// # Safety
/// `h` is a live header.
pub(super) unsafe fn retained(h: *mut TensorHeader) -> Option<*mut TensorHeader> {
    // SAFETY: live, per the contract; its vtable lives as long as its maker, never unloaded.
    let vtable = unsafe { (*h).vtable.as_ref() }?;
    // SAFETY: the maker's retain, called with its own live header.
    let kept = unsafe { (vtable.retain)(h) };
    (!kept.is_null()).then_some(kept)
}

/// Whether `header` describes exactly the elements `t` views.
pub(super) fn same_view(header: &TensorHeader, t: &Tensor) -> bool {
    let dl = &header.dl;
    let first = (dl.data as usize).wrapping_add(dl.byte_offset as usize);
    if usize::try_from(dl.ndim) != Ok(t.dim())
        || dl.dtype != to_dl_dtype(t.dtype())
        || from_dl_device(dl.device).ok() != Some(t.device())
        || first != t.data_ptr() as usize
        || (header.flags & TENSOR_FLAG_READ_ONLY != 0) != t.is_read_only()
    {
        return false;
    }
    same_dims(header, t)
}

/// Whether `header`'s shape and strides are `t`'s, given that its `ndim` is `t.dim()`.
pub(super) fn same_dims(header: &TensorHeader, t: &Tensor) -> bool {
    let dl = &header.dl;
    let ndim = t.dim();
    if ndim == 0 {
        return true;
    }
    if dl.shape.is_null() || dl.strides.is_null() {
        return false;
    }
    // SAFETY: a live header's shape and strides (checked non-null) hold `ndim` values each
    // (`ndim` is the header's, per the contract).
    let (shape, strides) = unsafe {
        (
            std::slice::from_raw_parts(dl.shape, ndim),
            std::slice::from_raw_parts(dl.strides, ndim),
        )
    };
    shape
        .iter()
        .zip(t.shape())
        .all(|(&a, &b)| a as u64 == b as u64)
        && strides
            .iter()
            .zip(t.strides())
            .all(|(&a, &b)| a == b as i64)
}

/// # Safety
/// `h` is one of this image's headers, live.
unsafe fn count<'a>(h: *mut TensorHeader) -> &'a AtomicU64 {
    // SAFETY: the header is live and aligned (the caller's contract); only this image's vtable
    // touches `refcount`, always atomically.
    unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*h).refcount)) }
}

unsafe extern "C" fn retain(h: *mut TensorHeader) -> *mut TensorHeader {
    if h.is_null() {
        return h;
    }
    // SAFETY: the ABI calls a header's vtable with that header, live.
    if is_own(unsafe { &*h }) {
        // SAFETY: as above, and own; the reference taken is the one the returned header owns.
        unsafe { retain_own(h) };
        return h;
    }
    // SAFETY: the ABI calls a header's vtable with that header, live.
    let lent = unsafe { lent_object(h) }.is_some();
    // SAFETY: as above; a lent header's count is never touched.
    if lent || unsafe { count(h) }.load(Ordering::Acquire) == 0 {
        // A borrowed header: the reference is the tensor's own header, or (one DLPack cannot
        // describe) a new owned copy.
        // SAFETY: as above; `manager_ctx` is the lent tensor's handle, alive for the call.
        let t = unsafe { handle_of(h) };
        if let Some(own) = t.own_header() {
            std::mem::forget(t);
            return own;
        }
        // SAFETY: as above.
        return unsafe { own_copy(&*h) };
    }
    // SAFETY: as above: a boxed header, whose count this image keeps.
    unsafe { count(h) }.fetch_add(1, Ordering::Relaxed);
    h
}

/// An owned header of the tensor a borrowed header of this image's lends: a copy of it (it
/// already describes the tensor, and its shape and strides point into the tensor, which the
/// copy keeps), counted 1.
///
/// # Safety
/// `h` is one of this image's borrowed headers, live.
unsafe fn own_copy(h: &TensorHeader) -> *mut TensorHeader {
    // SAFETY: `manager_ctx` is the lent tensor's handle, alive for the call that lent it.
    let tensor = unsafe { Tensor::borrow_raw(&h.manager_ctx) }.clone();
    let header = TensorHeader {
        vtable: h.vtable,
        manager_ctx: h.manager_ctx,
        refcount: 1,
        flags: h.flags,
        dl: h.dl,
    };
    boxed(header, tensor)
}

unsafe extern "C" fn release(h: *mut TensorHeader) {
    if h.is_null() {
        return;
    }
    // SAFETY: the ABI calls a header's vtable with that header, live.
    if is_own(unsafe { &*h }) {
        // Dropping the tensor may run another library's deleter: no panic may leave this C edge.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: an own header is its tensor's handle; the caller gives up the reference it
            // owns, once.
            drop(unsafe { Tensor::from_raw(h.cast()) });
        }));
        return;
    }
    // A tensor object's lent header is borrowed: releasing it is the caller's mistake, and
    // harmless.
    // SAFETY: as above.
    if unsafe { lent_object(h) }.is_some() {
        return;
    }
    // SAFETY: as in `retain`.
    let c = unsafe { count(h) };
    // A borrowed header owns nothing; releasing one is the caller's mistake, and harmless.
    if c.load(Ordering::Acquire) == 0 || c.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    // Dropping the tensor may run another library's deleter: no panic may leave this C edge.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: an owned header is the first field of an `Owned` box (see `owned`), and the
        // count just reached zero, so this is its last reference.
        drop(unsafe { Box::from_raw(h.cast::<Owned>()) });
    }));
}

/// A [`Deleter::Call`] of a header's own release.
///
/// # Safety
/// `h` is a live header (of any image) whose one owned reference this gives up.
pub(super) unsafe fn release_header(h: *mut c_void) {
    let h = h.cast::<TensorHeader>();
    // SAFETY: live per the contract; its vtable lives as long as its maker, never unloaded.
    unsafe {
        if let Some(vtable) = (*h).vtable.as_ref() {
            (vtable.release)(h);
        }
    }
}

/// Wraps another image's owned reference; `release` runs once, when the last view goes (or now,
/// on error).
///
/// # Safety
/// `h` is a live header whose one reference the caller hands over.
unsafe fn wrap_foreign(h: *mut TensorHeader) -> Result<Tensor> {
    // SAFETY: live, per the contract.
    let (vtable, flags, dl) = unsafe { ((*h).vtable, (*h).flags, (*h).dl) };
    if vtable.is_null() {
        return Err(Error::InvalidArgument(
            "plugin ABI: a tensor header has no vtable".to_string(),
        ));
    }
    // SAFETY: the reference handed over, given up once by the storage (or below, on error);
    // the ABI lets a header's release run on any thread.
    let drop_ref = unsafe { Deleter::call(release_header, h.cast()) };
    // SAFETY: the maker keeps the memory valid until its release runs (the ABI's promise).
    // The header is the storage's origin: `owned` gives it back when the tensor goes home.
    let origin = h.expose_provenance();
    match unsafe { wrap_dltensor(&dl, flags & TENSOR_FLAG_READ_ONLY != 0, drop_ref, origin) } {
        Ok(t) => Ok(t),
        Err((e, drop_ref)) => {
            drop_ref.run();
            Err(e)
        }
    }
}

/// Takes an owned header: this image's gives its tensor back. Another image's is held as it
/// is in a loaded plugin (the header is the handle; dropping it releases through its maker),
/// whose kernels mostly fill what the host allocated for them and hand it back; the host, which
/// keeps what it takes and uses it in its own ops, wraps it once in a tensor of its own. The
/// reference is consumed on success and on error.
///
/// # Safety
/// `h` is null (an error) or a live header whose one owned reference the caller hands over.
pub(crate) unsafe fn take(h: *mut TensorHeader) -> Result<Tensor> {
    if h.is_null() {
        return Err(Error::InvalidArgument(
            "plugin ABI: a null tensor".to_string(),
        ));
    }
    // SAFETY: live, per the contract.
    let header = unsafe { &*h };
    if !is_ours(header) {
        if super::guest::host().is_none() {
            // SAFETY: forwarded.
            return unsafe { wrap_foreign(h) };
        }
        if let Err(e) = crate::tensor::other_image::checked(header) {
            // SAFETY: the reference handed over, given up once.
            unsafe { discard(h) };
            return Err(e);
        }
        // SAFETY: a checked live header of another image's, whose reference the handle now
        // owns: its maker keeps it until the handle's drop releases it.
        return Ok(unsafe { Tensor::from_raw(h.cast()) });
    }
    if is_own(header) {
        // SAFETY: an own header is its tensor's handle, whose reference is handed over.
        return Ok(unsafe { Tensor::from_raw(h.cast()) });
    }
    // SAFETY: ours, live.
    let t = unsafe { handle_of(h) };
    // SAFETY: the reference the caller handed over, given up once (a no-op for a borrowed one).
    unsafe { release(h) };
    Ok(t)
}

/// Takes the owned header that one of the host table's tensor functions (`tensor_empty`,
/// `tensor_from_bytes`) just made, in a loaded plugin. The host wrote it itself, as it writes
/// the headers of the tensors an in-place kernel is given, so it is held as the handle without
/// the checks a header of unknown origin gets.
///
/// # Safety
/// `h` is null (an error) or a live header the host table's function returned, whose one owned
/// reference the caller hands over.
pub(crate) unsafe fn take_from_host(h: *mut TensorHeader) -> Result<Tensor> {
    // SAFETY: per the contract (null is refused before it is read).
    if h.is_null() || is_ours(unsafe { &*h }) {
        // SAFETY: forwarded.
        return unsafe { take(h) };
    }
    // SAFETY: the host's live header, whose reference the handle now owns: the host keeps it
    // until the handle's drop releases it.
    Ok(unsafe { Tensor::from_raw(h.cast()) })
}

/// A header as a borrower meets it: one of this image's, whose tensor is a new handle, or
/// another image's.
enum Met<'a> {
    Ours(Tensor),
    Other(&'a TensorHeader),
}

/// # Safety
/// `h` is null (an error) or a live header, valid for `'a`.
unsafe fn meet<'a>(h: *mut TensorHeader) -> Result<Met<'a>> {
    // SAFETY: per the contract.
    let Some(header) = (unsafe { h.as_ref() }) else {
        return Err(Error::InvalidArgument(
            "plugin ABI: a null tensor".to_string(),
        ));
    };
    if is_ours(header) {
        // SAFETY: ours, live.
        return Ok(Met::Ours(unsafe { handle_of(h) }));
    }
    Ok(Met::Other(header))
}

/// A tensor for a borrowed header (a kernel's input), which may be kept past the call: this
/// image's gives a new handle, another's is retained and wrapped.
///
/// # Safety
/// `h` is null (an error) or a live header, valid for this call.
pub(crate) unsafe fn borrow(h: *mut TensorHeader) -> Result<Tensor> {
    // SAFETY: forwarded.
    let header = match unsafe { meet(h) }? {
        Met::Ours(t) => return Ok(t),
        Met::Other(header) => header,
    };
    if header.vtable.is_null() {
        return Err(Error::InvalidArgument(
            "plugin ABI: a tensor header has no vtable".to_string(),
        ));
    }
    // SAFETY: live, per the contract.
    let Some(kept) = (unsafe { retained(h) }) else {
        return Err(Error::InvalidArgument(
            "plugin ABI: retaining a tensor failed".to_string(),
        ));
    };
    // SAFETY: `retain` returned one owned reference, handed over here.
    unsafe { wrap_foreign(kept) }
}

/// A kernel's input header as a value for its call: this image's own gives its tensor (a new
/// handle); another's is checked and borrowed in place, the handle being the header, so the
/// value neither retains nor releases it.
///
/// # Safety
/// `h` is null (an error) or a live header, valid for this call.
pub(crate) unsafe fn lend_in(h: *mut TensorHeader) -> Result<StableValue> {
    // SAFETY: forwarded.
    let header = match unsafe { meet(h) }? {
        Met::Ours(t) => return Ok(StableValue::tensor(t)),
        Met::Other(header) => header,
    };
    crate::tensor::other_image::checked(header)?;
    // SAFETY: a checked header of another image, live for the call, which is as long as the
    // value lives (the kernel's stack is dropped before its call returns).
    Ok(unsafe { StableValue::tensor_borrowed_raw(h.cast()) })
}

/// Gives up an owned header without reading it (an error path's cleanup).
///
/// # Safety
/// As [`take`].
pub(crate) unsafe fn discard(h: *mut TensorHeader) {
    if !h.is_null() {
        // SAFETY: live, per the contract, and its reference is handed over.
        unsafe { release_header(h.cast()) }
    }
}

/// The handle a header of this image's lends, for tests.
#[cfg(test)]
pub(crate) fn manager_handle(h: &TensorHeader) -> *mut std::ffi::c_void {
    h.manager_ctx
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicI64;

    use super::*;
    use crate::plugin::other_image::{header, release_one};
    use crate::{DType, Device};

    #[test]
    fn a_tensor_goes_home_as_the_header_it_came_from_and_a_view_does_not() {
        let refs = AtomicI64::new(1);
        let (mut data, mut dims) = ([1.0f32, 2.0, 3.0, 4.0], [0i64; 2]);
        let mut header = header(&mut data, &mut dims, &refs);
        let h: *mut TensorHeader = &mut header;
        // SAFETY: a live header of "another image", whose one reference is handed over.
        let t = unsafe { take(h) }.unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);

        let back = owned(t.clone()).unwrap();
        assert_eq!(back, h, "the whole tensor goes back as its own header");
        assert_eq!(refs.load(Ordering::Relaxed), 2, "retained by its maker");
        // SAFETY: the reference `owned` gave, released by its receiver (its maker), once.
        unsafe { release_one(back) };

        let view = owned(t.narrow(0, 1, 2).unwrap()).unwrap();
        assert_ne!(view, h, "a view is not what the header describes");
        // SAFETY: a live header `owned` just made.
        assert!(is_ours(unsafe { &*view }));
        // SAFETY: the one owned reference `owned` gave.
        unsafe { discard(view) };
        assert_eq!(refs.load(Ordering::Relaxed), 1);
        drop(t);
        assert_eq!(
            refs.load(Ordering::Relaxed),
            0,
            "released when the last view went"
        );
    }

    #[test]
    fn another_images_header_is_a_kernels_input_in_place_and_counts_its_references() {
        let refs = AtomicI64::new(0);
        let (mut data, mut dims) = ([1.0f32, 2.0, 3.0, 4.0], [0i64; 2]);
        let mut header = header(&mut data, &mut dims, &refs);
        let h: *mut TensorHeader = &mut header;
        // SAFETY: a live header of "another image", valid for the value's life.
        let value = unsafe { lend_in(h) }.unwrap();
        let x = value.as_tensor().unwrap();
        assert_eq!(x.as_raw(), h.cast(), "the handle is the header itself");
        assert_eq!(
            (x.shape(), x.strides(), x.dtype(), x.device()),
            (&[4usize][..], &[1isize][..], DType::F32, Device::Cpu)
        );
        assert!(x.is_contiguous() && x.numel() == 4 && x.offset() == 0);
        assert_eq!(
            refs.load(Ordering::Relaxed),
            0,
            "borrowed: nothing retained"
        );
        // What the header answers wraps nothing: the tensor itself (retained through its
        // maker) when it is contiguous already, or on the device asked for.
        let unwrapped = |same: Tensor| {
            assert_eq!(same.as_raw(), h.cast(), "the header itself");
            assert_eq!(refs.load(Ordering::Relaxed), 1);
        };
        unwrapped(x.contiguous().unwrap());
        unwrapped(x.to(Device::Cpu).unwrap());
        assert_eq!(refs.load(Ordering::Relaxed), 0);
        let (mut one, mut one_dims) = ([7.0f32], [0i64; 2]);
        let mut scalar = crate::plugin::other_image::header(&mut one, &mut one_dims, &refs);
        // SAFETY: as above.
        let scalar = unsafe { lend_in(&mut scalar) }.unwrap();
        let scalar = scalar.as_tensor().unwrap();
        assert_eq!(scalar.item::<f32>().unwrap(), 7.0, "read in place");
        assert_eq!(scalar.item_scalar().unwrap(), crate::Scalar::Float(7.0));
        assert_eq!(
            scalar.item::<i32>().unwrap_err().to_string(),
            crate::Tensor::from_vec(vec![7.0f32], &[1])
                .unwrap()
                .item::<i32>()
                .unwrap_err()
                .to_string(),
            "the same refusal as this image's tensor"
        );
        // What needs storage runs on a tensor of this image's over the same memory.
        assert_eq!(x.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            x.narrow(0, 1, 2).unwrap().to_vec::<f32>().unwrap(),
            [2.0, 3.0]
        );
        x.with_slice_mut(|s: &mut [f32]| s[0] = 5.0).unwrap();
        assert_eq!(
            refs.load(Ordering::Relaxed),
            0,
            "each adopted view released"
        );
        let kept = x.clone();
        assert_eq!(
            refs.load(Ordering::Relaxed),
            1,
            "a clone retains through the maker"
        );
        // Given back, the kept handle is its header, with the reference it holds.
        let back = owned(kept).unwrap();
        assert_eq!(back, h);
        // SAFETY: the reference `owned` handed over, released once by its maker.
        unsafe { release_one(back) };
        drop(value);
        assert_eq!(
            refs.load(Ordering::Relaxed),
            0,
            "the borrowed value releases nothing"
        );
        assert_eq!(data[0], 5.0);

        // A header that cannot be a handle is refused, saying why.
        let mut bad = header;
        bad.dl.ndim = -1;
        // SAFETY: as above.
        let e = unsafe { lend_in(&mut bad) }.unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument: plugin ABI: a tensor header has -1 dimensions"
        );
        bad.dl.ndim = 1;
        bad.dl.dtype.code = 99;
        // SAFETY: as above.
        let e = unsafe { lend_in(&mut bad) }.unwrap_err().to_string();
        assert_eq!(
            e,
            "plugin ABI: a tensor header: DLPack dtype {code 99 (an unknown type code), bits 32, \
             lanes 1} has no opbox dtype: opbox has no dtype of this kind"
        );
    }

    #[test]
    fn another_images_cuda_header_is_read_for_a_launch_in_one_call() {
        let refs = AtomicI64::new(0);
        let (mut data, mut dims) = ([0.0f32; 4], [0i64; 2]);
        let mut on_cuda = header(&mut data, &mut dims, &refs);
        // Never dereferenced: a launch only takes the address.
        on_cuda.dl.device = crate::tensor::dlpack::codes::to_dl_device(Device::Cuda(1)).unwrap();
        on_cuda.dl.byte_offset = 8;
        let first = (on_cuda.dl.data as u64) + 8;
        let buffer = |h: &mut TensorHeader, dtype| {
            // SAFETY: a live header of "another image", valid for the value's life.
            let value = unsafe { lend_in(h) }.unwrap();
            value.as_tensor().unwrap().cuda_buffer(dtype)
        };
        assert_eq!(
            buffer(&mut on_cuda, DType::F32),
            Some((Device::Cuda(1), first))
        );
        assert_eq!(buffer(&mut on_cuda, DType::I32), None, "another dtype");
        let mut strided = on_cuda;
        let mut every_other = [2i64, 2];
        // Both from one pointer, so neither borrow invalidates the other.
        let every_other = every_other.as_mut_ptr();
        (strided.dl.shape, strided.dl.strides) = (every_other, every_other.wrapping_add(1));
        assert_eq!(buffer(&mut strided, DType::F32), None, "not contiguous");
        let (mut cpu_data, mut cpu_dims) = ([0.0f32; 4], [0i64; 2]);
        let mut on_cpu = header(&mut cpu_data, &mut cpu_dims, &refs);
        assert_eq!(buffer(&mut on_cpu, DType::F32), None, "not on CUDA");
        // The same answers for this image's own tensor.
        let own = Tensor::from_vec(vec![0.0f32; 4], &[4]).unwrap();
        assert_eq!(own.cuda_buffer(DType::F32), None);
        assert_eq!(refs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn headers_lend_and_own_without_leaking() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let mut lent = borrowed(&t).unwrap();
        assert_eq!(lent.dl.ndim, 2);
        // SAFETY: the header lends `t`'s own shape, 2 values.
        let shape = unsafe { std::slice::from_raw_parts(lent.dl.shape, 2) };
        assert_eq!(shape, [2, 2]);
        assert_eq!(manager_handle(&lent), t.as_raw());
        // SAFETY: a live header of ours.
        let kept = unsafe { retain(&mut lent) };
        assert_ne!(
            kept, &mut lent as *mut TensorHeader,
            "a lent header is copied"
        );
        assert_eq!(t.ref_count(), 2);
        // SAFETY: `kept` is one owned reference: retained once more, then both released.
        unsafe {
            assert_eq!(retain(kept), kept);
            release(kept);
            assert_eq!(t.ref_count(), 2);
            let back = take(kept).unwrap();
            assert!(back.ptr_eq(&t));
        }
        assert_eq!(t.ref_count(), 1);
        // SAFETY: a borrowed header; borrow gives a new handle.
        let again = unsafe { borrow(&mut lent) }.unwrap();
        assert_eq!(t.ref_count(), 2);
        drop(again);
        // Releasing a lent header does nothing.
        // SAFETY: ours, live.
        unsafe { release(&mut lent) };
        assert_eq!(t.ref_count(), 1);
    }
}
