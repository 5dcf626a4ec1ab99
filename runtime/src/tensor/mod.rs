//! [`Tensor`]: a reference-counted handle to a strided view of typed elements on a device.
//!
//! Enough to write real operators, not a tensor library: constructors (`empty`, `zeros`,
//! `full`, `from_vec`, ...), metadata, views that share storage (`reshape`, `permute`,
//! `transpose`, `narrow`), `contiguous`, and element access (`to_vec`, `with_slice`,
//! `with_slice_mut`, `copy_from`, `fill_`, `item`).
//!
//! # Handles and ownership
//!
//! A `Tensor` is one pointer wide: it points at a `TensorImpl` (dtype, device, shape, strides,
//! offset, and an `Arc` of its storage) owned by an `Arc`. Cloning a tensor is one atomic
//! increment and makes a second handle to the *same* tensor; views are new tensors that share
//! the storage. The boxed ABI moves handles through [`Tensor::into_raw`],
//! [`Tensor::from_raw`] and [`Tensor::borrow_raw`]. [`live_tensors`] counts tensor objects so
//! tests can catch leaks and double frees.
//!
//! # Storage
//!
//! The bytes live behind the seam in `storage.rs` (cpu, cuda and meta; opbox's own memory or a
//! foreign buffer with its deleter, `foreign.rs`). Element access takes the storage's lock
//! (`lock.rs`): readers share, a writer waits for other threads like an `RwLock`, and a thread
//! that would wait for itself (using a tensor while a view of it is being written further up its
//! own stack) gets [`Error::StorageBusy`] instead of a deadlock.
//!
//! # Files
//!
//! `dtype.rs` [`DType`]; `device.rs` [`Device`]; `element.rs` [`Element`]; `storage.rs` the
//! storage seam; `lock.rs` its lock; `foreign.rs` `from_blob` and `data_ptr`; `layout.rs` shape/stride arithmetic; `create.rs` constructors; `view_ops.rs`
//! views; `data.rs` element access; `live.rs` the live counter; `fmt.rs` `Debug`.

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
pub use live::{live_tensors, live_tensors_on_this_thread};
pub(crate) use live::{set_aside, taken_back};
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

/// What a [`Tensor`] handle points at. Immutable once made, except for the bytes in storage.
struct TensorImpl {
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

// SAFETY: a `Tensor` is an `Arc<TensorImpl>` in raw form, and `Arc<T>` is Send and Sync when
// `T: Send + Sync`, which `TensorImpl` is (asserted above). Its bytes are only reached through
// the storage's lock.
unsafe impl Send for Tensor {}
// SAFETY: as for Send: shared `&Tensor` only gives `&TensorImpl`, which is Sync.
unsafe impl Sync for Tensor {}

impl Clone for Tensor {
    fn clone(&self) -> Tensor {
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle owns one strong reference, so
        // the allocation is alive for the duration of the call.
        unsafe { Arc::increment_strong_count(self.ptr.as_ptr()) };
        Tensor { ptr: self.ptr }
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
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
        let raw = Arc::into_raw(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            device,
            native,
            _live: LiveToken::new(),
        }));
        // SAFETY: `Arc::into_raw` never returns null.
        Tensor {
            ptr: unsafe { NonNull::new_unchecked(raw.cast_mut()) },
        }
    }

    /// The tensor object and its storage, when this handle is the only reference to both.
    fn sole_parts(&mut self) -> Option<&mut TensorImpl> {
        // Borrowed as an `Arc` without touching the count: `ptr` came from `Arc::into_raw` and
        // this handle owns one strong reference, which stays owned (ManuallyDrop).
        // SAFETY: as above.
        let mut arc = ManuallyDrop::new(unsafe { Arc::from_raw(self.ptr.as_ptr()) });
        let inner = Arc::get_mut(&mut arc)?;
        Arc::get_mut(&mut inner.storage)?;
        // SAFETY: `get_mut` proved the object unique, and `&mut self` holds its one reference
        // for the returned borrow's lifetime; the allocation outlives it (the reference is
        // still owned by `self`).
        Some(unsafe { &mut *self.ptr.as_ptr() })
    }

    /// Whether this handle is the only reference to its tensor object and its storage (no
    /// clone, no view).
    pub(crate) fn is_sole_reference(&mut self) -> bool {
        self.sole_parts().is_some()
    }

    /// Points a wrapper of lent memory on `device` with no deleter ([`HostMemory::lent`]) that
    /// this handle alone references at another lent buffer there, whose layout `fill` writes in
    /// place: it is then that buffer's tensor. None, with `fill` not called and nothing changed,
    /// when the tensor is no such wrapper. On `fill`'s error the wrapper is left unusable, for the
    /// caller to drop.
    ///
    /// # Safety
    ///
    /// As [`HostMemory::lent`], for the bytes of the [`Lend`](foreign::Lend) that `fill`
    /// returns.
    ///
    /// [`HostMemory::lent`]: crate::backend::cpu::memory::HostMemory::lent
    pub(crate) unsafe fn relend(
        &mut self,
        device: Device,
        fill: &mut impl FnMut(&mut Layout) -> crate::Result<foreign::Lend>,
    ) -> Option<crate::Result<()>> {
        let inner = self.sole_parts()?;
        // Disjoint fields: the storage is re-pointed after `fill` writes the layout.
        let storage = Arc::get_mut(&mut inner.storage)?;
        if storage.device() != device || !storage.is_relendable() {
            return None;
        }
        let lend = match fill(&mut inner.layout) {
            Ok(lend) => lend,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: relendable, on `device` (checked just above); the bytes as forwarded.
        unsafe { storage.relend(lend.base, lend.nbytes, lend.read_only) };
        inner.dtype = lend.dtype;
        inner.native = None;
        Some(Ok(()))
    }

    fn inner(&self) -> &TensorImpl {
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
        Arc::ptr_eq(&self.inner().storage, &other.inner().storage)
    }

    /// The number of handles to this tensor object (clones and raw handles; views not counted).
    pub fn ref_count(&self) -> usize {
        // SAFETY: `ptr` came from `Arc::into_raw` and this handle holds a strong reference, so the
        // Arc is alive; `ManuallyDrop` keeps the temporary Arc from releasing that reference.
        let arc = ManuallyDrop::new(unsafe { Arc::from_raw(self.ptr.as_ptr().cast_const()) });
        Arc::strong_count(&arc)
    }

    // ---- metadata ----

    /// The size of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.inner().layout.shape
    }

    /// The step, in elements, between neighbours along each dimension.
    pub fn strides(&self) -> &[isize] {
        &self.inner().layout.strides
    }

    /// Where the first element sits in the storage, in elements.
    pub fn offset(&self) -> usize {
        self.inner().layout.offset
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.inner().dtype
    }

    /// Where the elements live.
    pub fn device(&self) -> Device {
        self.inner().device
    }

    /// The number of dimensions (0 for a scalar tensor).
    pub fn dim(&self) -> usize {
        self.inner().layout.ndim()
    }

    /// The number of elements (the product of the shape; 1 for a scalar tensor).
    pub fn numel(&self) -> usize {
        self.inner().layout.numel
    }

    /// `true` when the elements are packed in row-major order (sizes of 1 ignore their stride,
    /// and empty tensors are contiguous, as in PyTorch).
    pub fn is_contiguous(&self) -> bool {
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
