//! DLPack import: a producer's managed tensor becomes an opbox tensor over the same memory.

use std::ffi::c_void;
use std::ptr::addr_of;

use super::codes::{from_dl_device, from_dl_dtype};
use super::ffi::{
    DLManagedTensor, DLManagedTensorVersioned, DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
    DLPACK_MAJOR_VERSION,
};
use super::{flag, FromDlpack};
use crate::tensor::foreign::wrap;
use crate::tensor::layout::{Shape, Strides};
use crate::tensor::storage::Deleter;
use crate::{Error, Result, Tensor};

/// A managed tensor's pointer, moved into the deleter closure that storage runs on whichever
/// thread drops the last view.
struct Managed<T>(*mut T);

// SAFETY: the pointer is only used to call the producer's deleter, once. DLPack's contract is
// that the consumer calls it when done, wherever that is (PyTorch, NumPy and CuPy all free from
// any thread).
unsafe impl<T> Send for Managed<T> {}

impl Managed<DLManagedTensorVersioned> {
    /// # Safety
    /// The pointer is a live managed tensor whose deleter has not run.
    unsafe fn release(self) {
        // SAFETY: live per the contract; fields up to `flags` are stable across majors, so the
        // deleter may be read (and called) whatever the version.
        unsafe {
            if let Some(deleter) = addr_of!((*self.0).deleter).read() {
                deleter(self.0);
            }
        }
    }
}

impl Managed<DLManagedTensor> {
    /// # Safety
    /// As for the versioned tensor.
    unsafe fn release(self) {
        // SAFETY: live per the contract.
        unsafe {
            if let Some(deleter) = addr_of!((*self.0).deleter).read() {
                deleter(self.0);
            }
        }
    }
}

/// A [`Deleter::Call`] of a versioned tensor's deleter.
///
/// # Safety
/// As [`Managed::release`], for `m` a `DLManagedTensorVersioned`.
unsafe fn release_versioned(m: *mut c_void) {
    // SAFETY: forwarded.
    unsafe { Managed(m.cast::<DLManagedTensorVersioned>()).release() }
}

/// A [`Deleter::Call`] of a legacy tensor's deleter.
///
/// # Safety
/// As [`Managed::release`], for `m` a `DLManagedTensor`.
unsafe fn release_legacy(m: *mut c_void) {
    // SAFETY: forwarded.
    unsafe { Managed(m.cast::<DLManagedTensor>()).release() }
}

fn refused(what: String) -> Error {
    Error::InvalidArgument(format!("from_dlpack: {what}"))
}

/// The tensor `dl` describes, over its memory; `release` runs once when the last view goes. On
/// error `release` is handed back, unrun. This is also the plugin tensor header's import, which
/// passes the header's address as `origin` (0 for DLPack; see `Storage::origin`).
///
/// # Safety
///
/// `dl` must describe live memory, as DLPack promises until `release` runs: `shape` (and
/// `strides`, when not null) point at `ndim` values, and the data covers every element.
pub(crate) unsafe fn wrap_dltensor(
    dl: &DLTensor,
    read_only: bool,
    release: Deleter,
    origin: usize,
) -> std::result::Result<Tensor, (Error, Deleter)> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { dims(dl) } {
        Ok((dtype, device, shape, strides, data)) => {
            // SAFETY: DLPack's promise (this function's contract) is from_blob's.
            unsafe {
                wrap(
                    data, shape, strides, dtype, device, read_only, release, origin,
                )
            }
        }
        Err(e) => Err((e, release)),
    }
}

/// Read into the layout's own types, which the tensor keeps: reading a header of up to 4
/// dimensions allocates nothing (a plugin call reads one per tensor it takes).
pub(crate) type Dims = (
    crate::DType,
    crate::Device,
    Shape,
    Option<Strides>,
    *mut c_void,
);

/// Reads and checks `dl`'s metadata.
///
/// # Safety
/// As [`wrap_dltensor`].
unsafe fn dims(dl: &DLTensor) -> Result<Dims> {
    let (mut shape, mut strides) = (Shape::new(), Strides::new());
    // SAFETY: forwarded.
    let (dtype, row_major, data) = unsafe { dims_into(dl, &mut shape, &mut strides) }?;
    let device = from_dl_device(dl.device)?;
    Ok((dtype, device, shape, (!row_major).then_some(strides), data))
}

/// Reads and checks `dl`'s dtype, shape and strides into `shape` and `strides` (cleared
/// first), in place: a plugin's lent input is read into the layout of a reused wrapper. Returns
/// the dtype, whether the strides were null (a legacy tensor's way of saying row-major; then
/// `strides` is left empty), and the address of element `[0, ...]`.
///
/// # Safety
/// As [`wrap_dltensor`].
pub(crate) unsafe fn dims_into(
    dl: &DLTensor,
    shape: &mut Shape,
    strides: &mut Strides,
) -> Result<(crate::DType, bool, *mut c_void)> {
    let dtype = from_dl_dtype(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim)
        .map_err(|_| refused(format!("ndim is {}, which is negative", dl.ndim)))?;
    let read = |p: *mut i64, what: &str| -> Result<&[i64]> {
        if ndim == 0 {
            return Ok(&[]);
        }
        if p.is_null() {
            return Err(refused(format!("{what} is null but ndim is {ndim}")));
        }
        // SAFETY: non-null, and DLPack (the caller's contract) promises `ndim` values there.
        Ok(unsafe { std::slice::from_raw_parts(p, ndim) })
    };
    // Plain loops of pushes: a collect into Result cost a plugin call (which imports a header
    // per tensor) about 400 instructions for a 1-D header, and an extend from a slice about 150
    // more than these (its memcpy calls, for a dimension or two).
    shape.clear();
    for &d in read(dl.shape, "shape")? {
        match usize::try_from(d) {
            Ok(d) => shape.push(d),
            Err(_) => return Err(refused(format!("shape has a negative size {d}"))),
        }
    }
    strides.clear();
    let row_major = dl.strides.is_null();
    if !row_major {
        // isize is int64_t's size (the plugin ABI asserts it), so every stride fits.
        for &s in read(dl.strides, "strides")? {
            strides.push(s as isize);
        }
    }
    let offset = usize::try_from(dl.byte_offset)
        .map_err(|_| refused(format!("byte_offset {} does not fit usize", dl.byte_offset)))?;
    // `wrapping_add` keeps the host pointer's provenance; a device address is only an integer.
    let data = dl.data.cast::<u8>().wrapping_add(offset).cast::<c_void>();
    Ok((dtype, row_major, data))
}

/// Runs `release` on error; applies `opts` to a tensor that was made.
fn finish(
    made: std::result::Result<Tensor, (Error, Deleter)>,
    opts: &FromDlpack,
) -> Result<Tensor> {
    let tensor = match made {
        Ok(t) => t,
        Err((e, release)) => {
            release.run();
            return Err(e);
        }
    };
    if let (Some(stream), crate::Device::Cuda(_ordinal)) = (opts.producer_stream, tensor.device()) {
        #[cfg(feature = "cuda")]
        if let Some(handle) = stream.handle() {
            use crate::backend::cuda::interop::{opbox_stream, same_stream, stream_waits_for};
            let ours = opbox_stream(_ordinal)?;
            if !same_stream(handle, ours) {
                // SAFETY: the caller names a live stream of the tensor's device
                // (from_dlpack_with's contract); opbox's current stream is live.
                unsafe {
                    stream_waits_for(_ordinal, ours, handle as cudarc::driver::sys::CUstream)?
                };
            }
        }
        #[cfg(not(feature = "cuda"))]
        let _ = stream;
    }
    if opts.copy == Some(true) {
        let owned = Tensor::empty(tensor.shape(), tensor.dtype(), tensor.device())?;
        owned.copy_from(&tensor)?;
        // The producer's memory is released here, with the last view of it.
        return Ok(owned);
    }
    Ok(tensor)
}

impl Tensor {
    /// Imports a DLPack 1.x managed tensor with no copy (see `opbox::tensor::dlpack` for the
    /// ownership, flag and stream rules). The producer's deleter runs exactly once: when the last
    /// tensor viewing the memory is dropped, or before the error returns if opbox cannot hold it.
    ///
    /// # Safety
    ///
    /// `managed` must be null (an error) or a live `DLManagedTensorVersioned` whose ownership the
    /// caller gives up, describing memory valid as the DLPack spec promises until its deleter
    /// runs; the rules of [`Tensor::from_blob`] on concurrent foreign access apply.
    pub unsafe fn from_dlpack(managed: *mut DLManagedTensorVersioned) -> Result<Tensor> {
        // SAFETY: forwarded.
        unsafe { Tensor::from_dlpack_with(managed, &FromDlpack::default()) }
    }

    /// [`Tensor::from_dlpack`] with a copy request and the producer's pending stream.
    ///
    /// # Safety
    ///
    /// As [`Tensor::from_dlpack`]; `opts.producer_stream`, if a handle, must be a live stream of
    /// the tensor's device.
    pub unsafe fn from_dlpack_with(
        managed: *mut DLManagedTensorVersioned,
        opts: &FromDlpack,
    ) -> Result<Tensor> {
        if managed.is_null() {
            return Err(refused("the managed tensor pointer is null".to_string()));
        }
        let m = Managed(managed);
        // SAFETY: live per the contract. Only `version` is read before it is checked: a tensor
        // of another major version may lay out the rest differently.
        let version = unsafe { addr_of!((*managed).version).read() };
        if version.major != DLPACK_MAJOR_VERSION {
            // SAFETY: the spec makes the deleter safe to call for any version, and it runs once.
            unsafe { m.release() };
            return Err(Error::Unsupported(format!(
                "from_dlpack: the tensor is DLPack {}.{}, but opbox reads major version \
                 {DLPACK_MAJOR_VERSION} (its deleter has been called)",
                version.major, version.minor
            )));
        }
        // SAFETY: a live major-1 tensor: every field is as `ffi.rs` declares.
        let (flags, dl) = unsafe { ((*managed).flags, (*managed).dl_tensor) };
        // SAFETY: `release_versioned` calls the live tensor's deleter, which DLPack lets run on
        // any thread; the storage or `finish` (on error) runs it once.
        let release = unsafe { Deleter::call(release_versioned, m.0.cast()) };
        let read_only = flag(flags, DLPACK_FLAG_BITMASK_READ_ONLY);
        // SAFETY: `dl` describes live memory per the contract.
        finish(unsafe { wrap_dltensor(&dl, read_only, release, 0) }, opts)
    }

    /// Imports a legacy (pre-1.0) `DLManagedTensor`, which has no version and no flags (so it
    /// is writable). Ownership and the deleter are as for [`Tensor::from_dlpack`].
    ///
    /// # Safety
    ///
    /// As [`Tensor::from_dlpack`], for a live `DLManagedTensor`.
    pub unsafe fn from_dlpack_legacy(managed: *mut DLManagedTensor) -> Result<Tensor> {
        if managed.is_null() {
            return Err(refused("the managed tensor pointer is null".to_string()));
        }
        let m = Managed(managed);
        // SAFETY: live per the contract.
        let dl = unsafe { (*managed).dl_tensor };
        // SAFETY: as in `from_dlpack`, for a legacy tensor.
        let release = unsafe { Deleter::call(release_legacy, m.0.cast()) };
        // SAFETY: `dl` describes live memory per the contract.
        finish(
            unsafe { wrap_dltensor(&dl, false, release, 0) },
            &FromDlpack::default(),
        )
    }
}
