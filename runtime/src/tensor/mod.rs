//! [`Tensor`]: a reference-counted handle to a strided view of typed elements on a device.
//!
//! Enough to write real operators, not a tensor library: constructors (`empty`, `zeros`,
//! `full`, `from_vec`, ...), metadata, views that share storage (`reshape`, `permute`,
//! `transpose`, `narrow`), `contiguous`, and element access (`to_vec`, `with_slice`,
//! `with_slice_mut`, `copy_from`, `fill_`, `item`).
//!
//! # Handles and ownership
//!
//! A `Tensor` is one pointer wide: it points at a `TensorImpl` (its plugin-ABI header, dtype,
//! device, shape, strides, offset, and an `Arc` of its storage) owned by an `Arc`, or, in a
//! plugin, at the host's header of a tensor it was lent (`other_image.rs`). Cloning a tensor is
//! one atomic increment and makes a second handle to the *same* tensor; views are new tensors
//! that share the storage. The boxed ABI moves handles through [`Tensor::into_raw`],
//! [`Tensor::from_raw`] and [`Tensor::borrow_raw`]. [`live_tensors`] counts tensor objects so
//! tests can catch leaks and double frees.
//!
//! # Storage
//!
//! The bytes live behind the seam in `storage.rs` (cpu, cuda and meta; opbox's own memory or a
//! foreign buffer with its deleter, `foreign.rs`). Element access takes the storage's lock
//! (`lock.rs`): readers share, a writer waits for other threads like an `RwLock`, and a thread
//! that would wait for itself (using a tensor while a view of it is being written further up its
//! own stack) gets [`crate::Error::StorageBusy`] instead of a deadlock.
//!
//! # Files
//!
//! `dtype.rs` [`DType`]; `device.rs` [`Device`]; `element.rs` [`Element`]; `storage.rs` the
//! storage seam; `lock.rs` its lock; `foreign.rs` `from_blob` and `data_ptr`; `layout.rs`
//! shape/stride arithmetic; `create.rs` constructors; `view_ops.rs` views; `data.rs` element
//! access; `live.rs` the live counter; `fmt.rs` `Debug`; `own_header.rs` each tensor object's
//! plugin-ABI headers, and `other_image.rs` handles to another image's (a plugin kernel's
//! inputs), read in place.

// `crate::Error` is large (some variants carry several strings) and every fallible function here
// returns it; boxing it is error.rs's call, not this module's.
#![allow(clippy::result_large_err)]

mod create;
mod data;
mod device;
pub mod dlpack;
mod dtype;
mod element;
mod fmt;
pub(crate) mod foreign;
pub(crate) mod layout;
mod live;
pub(crate) mod lock;
mod native;
pub(crate) mod other_image;
pub(crate) mod own_header;
pub(crate) mod storage;
mod transfer;
mod view_ops;

#[cfg(test)]
mod tests;

use std::ffi::c_void;
use std::mem::{self, ManuallyDrop};
use std::ptr::NonNull;
use std::sync::Arc;

pub use device::Device;
pub use dtype::DType;
pub use element::Element;
pub(crate) use live::set_aside;
pub use live::{live_tensors, live_tensors_on_this_thread};
pub use storage::CPU_ALIGN;

pub(crate) use element::{with_dtype, with_width};

use layout::Layout;
use live::LiveToken;
use storage::Storage;

/// A reference-counted handle to a tensor: a strided view of `numel()` elements of one
/// [`DType`] on one [`Device`].
///
/// `clone()` gives another handle to the same tensor (no copy); the views (`reshape`,
/// `permute`, `transpose`, `narrow`) are new tensors sharing the storage. The handle is exactly
/// one pointer, `Arc::<TensorImpl>::into_raw`, so the boxed ABI can carry it in a `u64` slot.
#[repr(transparent)]
pub struct Tensor {
    ptr: NonNull<TensorImpl>,
}

/// What a [`Tensor`] handle points at (or another image's header, see `other_image.rs`).
/// Immutable once made, except for the bytes in storage.
#[repr(C)]
struct TensorImpl {
    /// This tensor as the plugin ABI's owned header (`own_header.rs`), first: its vtable is this
    /// image's, where another image's header has its maker's, so one load tells a handle to this
    /// image's tensor from one to another's; and a handle is a pointer to it, so the tensor goes
    /// to another image as it is, counted by its `Arc`.
    header: own_header::OwnHeader,
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
    /// The storage's device, kept here so reading it needs no second pointer hop.
    device: Device,
    /// For a tensor of native values ([`Tensor::from_native_vec`]): the element's schema. The
    /// tensor is then `u8` bytes whose last dimension is the element's size.
    native: Option<&'static opbox_codegen::native::NativeSchema>,
    _live: LiveToken,
}

const _: () = assert!(mem::size_of::<Tensor>() == mem::size_of::<*mut c_void>());
const _: () = assert!(mem::align_of::<Tensor>() == mem::align_of::<*mut c_void>());
const _: () = assert!(mem::size_of::<Option<Tensor>>() == mem::size_of::<*mut c_void>());

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<TensorImpl>();
};

/// What [`Tensor::inner`] gives for another image's header: an empty meta tensor, made once and
/// not counted live.
fn placeholder() -> &'static TensorImpl {
    static PLACEHOLDER: std::sync::OnceLock<&'static TensorImpl> = std::sync::OnceLock::new();
    PLACEHOLDER.get_or_init(|| {
        let t = Tensor::from_impl(Storage::empty_meta(), Layout::default(), DType::U8);
        set_aside();
        // SAFETY: a tensor object of this image, whose one reference `into_raw` gives up and
        // nothing takes back: alive for the rest of the process, and only ever shared.
        unsafe { &*t.into_raw().cast::<TensorImpl>() }
    })
}

// SAFETY: a `Tensor` is an `Arc<TensorImpl>` in raw form, and `Arc<T>` is Send and Sync when
// `T: Send + Sync`, which `TensorImpl` is (asserted above). Its bytes are only reached through
// the storage's lock.
unsafe impl Send for Tensor {}
// SAFETY: as for Send: shared `&Tensor` only gives `&TensorImpl`, which is Sync.
unsafe impl Sync for Tensor {}

impl Clone for Tensor {
    #[inline]
    fn clone(&self) -> Tensor {
        if let Some(h) = self.foreign_header() {
            return other_image::retain(h);
        }
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle owns one strong reference, so
        // the allocation is alive for the duration of the call.
        unsafe { Arc::increment_strong_count(self.ptr.as_ptr()) };
        Tensor { ptr: self.ptr }
    }
}

impl Drop for Tensor {
    #[inline]
    fn drop(&mut self) {
        if let Some(h) = other_image::foreign(self.ptr) {
            // SAFETY: this handle owns one reference to the header's tensor, given up once.
            unsafe { other_image::release(h) };
            return;
        }
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle owns one strong reference,
        // which it gives up here exactly once.
        unsafe { Arc::decrement_strong_count(self.ptr.as_ptr()) };
    }
}

impl Tensor {
    /// Wraps a new tensor object in a handle. Every tensor is born here.
    fn from_impl(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        Tensor::from_impl_native(storage, layout, dtype, None)
    }

    /// [`Tensor::from_impl`] with a native element tag (see [`Tensor::native_schema`]).
    fn from_impl_native(
        storage: Arc<Storage>,
        layout: Layout,
        dtype: DType,
        native: Option<&'static opbox_codegen::native::NativeSchema>,
    ) -> Tensor {
        let device = storage.device();
        let mut imp = Arc::new(TensorImpl {
            header: own_header::OwnHeader::blank(),
            storage,
            layout,
            dtype,
            device,
            native,
            _live: LiveToken::new(),
        });
        // The header points into the object (its shape and strides, itself), so it is written
        // where the object now lies, for good: nothing moves or changes it after this.
        if let Some(imp) = Arc::get_mut(&mut imp) {
            own_header::OwnHeader::describe(imp);
        }
        let raw = Arc::into_raw(imp);
        // SAFETY: `Arc::into_raw` never returns null.
        Tensor {
            ptr: unsafe { NonNull::new_unchecked(raw.cast_mut()) },
        }
    }

    /// This image's tensor object. For a handle to another image's header (whose accessors
    /// read the header, and whose other methods run on [`Tensor::adopted`]), an empty meta
    /// tensor: a path that missed that would see no elements, never another image's memory.
    #[inline]
    fn inner(&self) -> &TensorImpl {
        if self.foreign_header().is_some() {
            return placeholder();
        }
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle owns a strong reference, so the
        // `TensorImpl` is alive at least as long as `&self`; it is only ever shared immutably.
        unsafe { self.ptr.as_ref() }
    }

    /// A new view of this tensor's storage with `layout`, which the caller has checked stays
    /// inside the storage.
    fn view_with(&self, layout: Layout) -> Tensor {
        Tensor::from_impl_native(
            self.inner().storage.clone(),
            layout,
            self.dtype(),
            self.inner().native,
        )
    }

    // ---- raw handles (the boxed ABI) ----

    /// The handle's pointer, without giving up or taking a reference: valid only while `self`
    /// (or another handle to the same tensor) is alive.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr().cast::<c_void>()
    }

    /// Gives up this handle and returns its pointer, which still owns one reference. Turn it
    /// back into a `Tensor` with [`Tensor::from_raw`] (exactly once) to release it.
    pub fn into_raw(self) -> *mut c_void {
        let p = self.ptr.as_ptr().cast::<c_void>();
        mem::forget(self);
        p
    }

    /// Takes back a handle given up by [`Tensor::into_raw`].
    ///
    /// # Safety
    ///
    /// `p` must come from [`Tensor::into_raw`], and the reference it carries must not have been
    /// taken back already: each `into_raw` is matched by exactly one `from_raw`.
    pub unsafe fn from_raw(p: *mut c_void) -> Tensor {
        // SAFETY: the caller guarantees `p` came from `into_raw`, which never returns null.
        Tensor {
            ptr: unsafe { NonNull::new_unchecked(p.cast::<TensorImpl>()) },
        }
    }

    /// Reads a slot that holds a raw handle as a borrowed `Tensor`, without touching the
    /// reference count. The borrow lives as long as the borrow of the slot
    /// (`fn borrow_raw<'a>(p: &'a *mut c_void) -> &'a Tensor`).
    ///
    /// Sound because `Tensor` is `#[repr(transparent)]` over a `NonNull` pointer, so a
    /// `*mut c_void` holding a handle has exactly a `Tensor`'s layout.
    ///
    /// # Safety
    ///
    /// `*p` must be a pointer from [`Tensor::into_raw`] whose reference is still held (not yet
    /// given to [`Tensor::from_raw`]) for all of the borrow, and the slot must not be written during
    /// the borrow. The borrowed tensor must not be dropped (it cannot be, through `&Tensor`), but may
    /// be cloned.
    pub unsafe fn borrow_raw(p: &*mut c_void) -> &Tensor {
        // SAFETY: `Tensor` is repr(transparent) over `NonNull<TensorImpl>`, which has the size
        // and alignment of `*mut c_void` (asserted above); the caller guarantees `*p` is a live,
        // non-null handle pointer that stays put while the slot is borrowed.
        unsafe { &*(p as *const *mut c_void).cast::<Tensor>() }
    }

    /// `true` when both handles point at the same tensor object (clones of one another).
    pub fn ptr_eq(&self, other: &Tensor) -> bool {
        self.ptr == other.ptr
    }

    /// `true` when both tensors view the same storage (one is a view of the other, or both are
    /// views of a third).
    pub fn same_storage(&self, other: &Tensor) -> bool {
        match (self.foreign_header(), other.foreign_header()) {
            (None, None) => Arc::ptr_eq(&self.inner().storage, &other.inner().storage),
            (Some(a), Some(b)) => !a.dl.data.is_null() && a.dl.data == b.dl.data,
            _ => false,
        }
    }

    /// The number of handles to this tensor object (clones and raw handles; views not counted).
    pub fn ref_count(&self) -> usize {
        // Another image counts its own references; this handle is one of them.
        if self.foreign_header().is_some() {
            return 1;
        }
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle holds a strong reference, so the
        // Arc is alive; `ManuallyDrop` keeps the temporary Arc from releasing that reference.
        let arc = ManuallyDrop::new(unsafe { Arc::from_raw(self.ptr.as_ptr().cast_const()) });
        Arc::strong_count(&arc)
    }

    // ---- metadata ----

    /// The size of each dimension.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        if let Some(h) = self.foreign_header() {
            return other_image::shape(h);
        }
        &self.inner().layout.shape
    }

    /// The step, in elements, between neighbours along each dimension.
    #[inline]
    pub fn strides(&self) -> &[isize] {
        if let Some(h) = self.foreign_header() {
            return other_image::strides(h);
        }
        &self.inner().layout.strides
    }

    /// Where the first element sits in the storage, in elements.
    #[inline]
    pub fn offset(&self) -> usize {
        if let Some(h) = self.foreign_header() {
            return other_image::offset(h);
        }
        self.inner().layout.offset
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        if let Some(h) = self.foreign_header() {
            return other_image::dtype(h);
        }
        self.inner().dtype
    }

    /// Where the elements live.
    #[inline]
    pub fn device(&self) -> Device {
        if let Some(h) = self.foreign_header() {
            return other_image::device(h);
        }
        self.inner().device
    }

    /// The number of dimensions (0 for a scalar tensor).
    #[inline]
    pub fn dim(&self) -> usize {
        if let Some(h) = self.foreign_header() {
            return h.dl.ndim.max(0) as usize;
        }
        self.inner().layout.ndim()
    }

    /// The number of elements (the product of the shape; 1 for a scalar tensor).
    #[inline]
    pub fn numel(&self) -> usize {
        if let Some(h) = self.foreign_header() {
            return other_image::numel(h);
        }
        self.inner().layout.numel
    }

    /// `true` when the elements are packed in row-major order (sizes of 1 ignore their stride,
    /// and empty tensors are contiguous, as in PyTorch).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        if let Some(h) = self.foreign_header() {
            return other_image::is_contiguous_header(h);
        }
        self.inner().layout.contiguous
    }

    /// The size of this tensor's elements in bytes: `numel() * dtype().size()` (not of its
    /// storage, which a view may only partly cover).
    pub fn nbytes(&self) -> usize {
        // Cannot overflow: checked when the storage was made, and a view has no more elements.
        self.numel() * self.dtype().size()
    }

    fn layout(&self) -> &Layout {
        &self.inner().layout
    }

    pub(crate) fn storage(&self) -> &Storage {
        &self.inner().storage
    }

    /// The addresses this tensor's elements span, `[lo, hi)` as the device sees them (host
    /// addresses on cpu, device addresses on cuda); `None` when it has no elements or no memory
    /// (meta). Two tensors whose ranges overlap share bytes, whichever storages hold them: what
    /// a kernel graph derives its dependencies from.
    pub(crate) fn address_range(&self) -> Option<std::ops::Range<u64>> {
        if self.foreign_header().is_some() {
            return self.adopted().ok().flatten()?.address_range();
        }
        let base = self.storage().base_ptr() as usize as u64;
        if base == 0 {
            return None;
        }
        let (range, _) = self.byte_span()?;
        Some(base + range.start as u64..base + range.end as u64)
    }

    /// The byte range of this tensor's elements in its storage, `[lo, hi)`, and the offset in
    /// elements it starts at; `None` when it has no elements.
    fn byte_span(&self) -> Option<(std::ops::Range<usize>, usize)> {
        let (lo, hi) = self.layout().span()?;
        let size = self.dtype().size();
        Some((lo * size..hi * size, lo))
    }
}
