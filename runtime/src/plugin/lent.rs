//! A kernel's tensor inputs, imported for its call without taking a reference from their maker.
//!
//! The inputs of a plugin kernel are borrowed headers, valid until its call returns, and most
//! kernels read them and let go. So another image's cpu or cuda header is wrapped with no
//! `retain` and no deleter ([`HostMemory::lent`](crate::backend::cpu::memory::HostMemory::lent),
//! and `CudaMemory::lent` on the device). When the call ends
//! (returns, fails or panics), each import is settled:
//! - nothing else references it: it is set aside on this thread for the next call's header,
//!   so a call allocates no wrapper and makes no call to the maker. A header that describes
//!   exactly what a set-aside wrapper views (the same input again, the usual case) gets that
//!   wrapper as it is; any other is re-pointed, which reads and checks the header's dims
//!   (a third of the guest's work in a call of a one-tensor op, by callgrind);
//! - something keeps it (a clone in a static, a view returned): the header is retained now,
//!   while it is still lent, and the storage takes the release as its deleter and the retained
//!   header as its origin, exactly what a retained import has from the start.
//!
//! A tensor the kernel returns that is exactly one of its inputs goes back as that input's
//! header ([`Lent::hand_back`]): as lent to a host of ABI 1.3 or later, which takes its own
//! reference, retained to an older one. Other headers (this image's own, memory on other
//! devices) are imported as `tensor::borrow` does.

use std::cell::RefCell;

use smallvec::SmallVec;

use super::{guest, tensor};
use crate::abi::plugin_v1::{TensorHeader, ABI_V1_3, TENSOR_FLAG_READ_ONLY};
use crate::tensor::dlpack::codes::from_dl_device;
use crate::tensor::dlpack::ffi::{DLDataType, DLDevice};
use crate::tensor::dlpack::import::dims_into;
use crate::tensor::foreign::{checked_extent, lent, lent_base, Lend};
use crate::tensor::layout::Layout;
use crate::tensor::storage::Deleter;
use crate::value::StableValue;
use crate::{Device, Result, Tensor};

/// How many set-aside wrappers a thread keeps: one per tensor input of the widest call it makes.
const SPARES: usize = 8;

/// Wrappers set aside, each the only reference to its object and storage, not counted live.
struct Spares(Vec<SetAside>);

/// A set-aside wrapper, with what the header it views said of it.
struct SetAside {
    tensor: Tensor,
    seen: Seen,
}

/// A header's scalar fields, as bits: two headers that agree on them and on their shape and
/// strides describe the same elements.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Seen {
    /// The first element's address (`data + byte_offset`).
    first: usize,
    dtype: DLDataType,
    device: DLDevice,
    ndim: i32,
    flags: u64,
}

impl Seen {
    fn of(header: &TensorHeader) -> Seen {
        let dl = &header.dl;
        Seen {
            first: (dl.data as usize).wrapping_add(dl.byte_offset as usize),
            dtype: dl.dtype,
            device: dl.device,
            ndim: dl.ndim,
            flags: header.flags & TENSOR_FLAG_READ_ONLY,
        }
    }
}

impl SetAside {
    /// Whether the wrapper views what `header`, whose scalar fields are `now`, describes: the
    /// same scalar fields as the header it was made from, and its own shape and strides (read
    /// from that header) equal to this one's.
    fn views(&self, header: &TensorHeader, now: Seen) -> bool {
        // The same `ndim` as the header the wrapper was made from, so `tensor.dim()`.
        now == self.seen && tensor::same_dims(header, &self.tensor)
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        // Counted in again, so that their drop counts them out once.
        for _ in &self.0 {
            crate::tensor::taken_back();
        }
    }
}

thread_local! {
    static SPARE: RefCell<Spares> = const { RefCell::new(Spares(Vec::new())) };
}

/// A set-aside wrapper for `header`, lent on `device`: `Exact` when one still views exactly what
/// the header describes (the same input as in a recent call), which then needs no re-pointing.
fn take_spare(header: &TensorHeader, device: Device) -> Spare {
    let spare = SPARE
        .try_with(|s| {
            let spares = &mut s.try_borrow_mut().ok()?.0;
            let now = Seen::of(header);
            if let Some(at) = spares.iter().position(|s| s.views(header, now)) {
                return Some(Spare::Exact(spares.swap_remove(at).tensor));
            }
            let at = spares.iter().rposition(|s| s.tensor.device() == device)?;
            Some(Spare::Other(spares.swap_remove(at).tensor))
        })
        .ok()
        .flatten()
        .unwrap_or(Spare::None);
    if !matches!(spare, Spare::None) {
        crate::tensor::taken_back();
    }
    spare
}

/// What [`take_spare`] found.
enum Spare {
    /// A wrapper already viewing the header's elements, as `relend` would have pointed it.
    Exact(Tensor),
    /// A wrapper on the device, to re-point.
    Other(Tensor),
    None,
}

/// Sets `tensor`, which views what `header` describes, aside, or drops it when this thread
/// keeps enough.
fn put_spare(tensor: Tensor, header: &TensorHeader) {
    let mut tensor = Some(tensor);
    let seen = Seen::of(header);
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.0.len() < SPARES {
                crate::tensor::set_aside();
                s.0.extend(tensor.take().map(|tensor| SetAside { tensor, seen }));
            }
        }
    });
}

/// Whether the host this plugin was loaded by takes an input's lent header back as an output,
/// unretained (ABI 1.3).
fn host_takes_lent_back() -> bool {
    guest::host().is_some_and(|h| h.version >= ABI_V1_3)
}

/// The device of another image's header whose memory can be lent (cpu, and cuda with the
/// "cuda" feature); None for this image's own headers and the rest.
fn lendable_device(header: &TensorHeader) -> Option<Device> {
    if tensor::is_ours(header) || header.vtable.is_null() {
        return None;
    }
    match from_dl_device(header.dl.device).ok()? {
        Device::Cpu => Some(Device::Cpu),
        #[cfg(feature = "cuda")]
        Device::Cuda(ordinal) => Some(Device::Cuda(ordinal)),
        _ => None,
    }
}

/// An input wrapped with no reference taken, and the header it was lent as.
struct Import {
    tensor: Tensor,
    header: *mut TensorHeader,
}

/// The tensors imported for one kernel call; dropping it (after the call's own handles are
/// gone) settles them.
#[derive(Default)]
pub(crate) struct Lent {
    imports: SmallVec<[Import; 4]>,
}

impl Lent {
    /// A tensor value for `h`, a header lent for this call, which the kernel may keep past it.
    ///
    /// # Safety
    /// `h` is null (an error) or a live header, valid until this `Lent` is dropped.
    pub(crate) unsafe fn import(&mut self, h: *mut TensorHeader) -> Result<StableValue> {
        // SAFETY: null or live, per the contract.
        let Some(header) = (unsafe { h.as_ref() }) else {
            // SAFETY: `borrow`'s error for a null header.
            return unsafe { tensor::borrow(h) }.map(StableValue::tensor);
        };
        let Some(device) = lendable_device(header) else {
            // Retained and wrapped (or this image's own): its storage's origin gives it back.
            // SAFETY: forwarded.
            return unsafe { tensor::borrow(h) }.map(StableValue::tensor);
        };
        let read_only = header.flags & TENSOR_FLAG_READ_ONLY != 0;
        let mut fill = |layout: &mut Layout| {
            // SAFETY: a live header's `shape` and `strides` hold `ndim` values each.
            let (dtype, row_major, data) =
                unsafe { dims_into(&header.dl, &mut layout.shape, &mut layout.strides) }?;
            let ext = checked_extent(data, layout, row_major, dtype)?;
            Ok(Lend {
                dtype,
                base: lent_base(device, data, &ext),
                nbytes: ext.nbytes,
                read_only,
            })
        };
        let spare = match take_spare(header, device) {
            // It views the same bytes, with the same layout, dtype and read-only flag, as
            // re-pointing it at this header would: what `lent` promises below holds for it too.
            Spare::Exact(spare) => return Ok(self.record(spare, h)),
            Spare::Other(spare) => Some(spare),
            Spare::None => None,
        };
        // SAFETY: the maker keeps a lent header's memory valid (and, for writing, unshared)
        // until the call returns; `settle` retains the header before then if anything keeps
        // the tensor.
        let tensor = unsafe { lent(device, spare, &mut fill) }?;
        Ok(self.record(tensor, h))
    }

    /// `tensor`, imported for the header `h`, as the kernel's value; kept to be settled.
    fn record(&mut self, tensor: Tensor, h: *mut TensorHeader) -> StableValue {
        // A handle of its own for the value: one borrowed from the import measured slower.
        self.imports.push(Import {
            tensor: tensor.clone(),
            header: h,
        });
        StableValue::tensor(tensor)
    }

    /// The header to give back for `t` when it views exactly what one of this call's inputs
    /// describes: that header as lent when the host takes it so (ABI 1.3), else retained by its
    /// maker; None otherwise.
    pub(crate) fn hand_back(&self, t: &Tensor) -> Option<*mut TensorHeader> {
        let import = self
            .imports
            .iter()
            .find(|i| std::ptr::eq(i.tensor.storage(), t.storage()))?;
        // SAFETY: lent for the call, which has not returned (this `Lent` lives).
        let header = unsafe { &*import.header };
        // The import itself (a tensor object never changes its view) is the header's view.
        if !import.tensor.ptr_eq(t) && !tensor::same_view(header, t) {
            return None;
        }
        if host_takes_lent_back() {
            return Some(import.header);
        }
        // SAFETY: lent, so live, as above.
        unsafe { tensor::retained(import.header) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        for Import { tensor, header } in self.imports.drain(..) {
            settle(tensor, header);
        }
    }
}

/// Sets a lent import aside when nothing else references it, or keeps it: see the module docs.
fn settle(mut tensor: Tensor, h: *mut TensorHeader) {
    if tensor.is_sole_reference() {
        // SAFETY: the header is still lent (the call has not returned), and `tensor` was
        // imported for it.
        put_spare(tensor, unsafe { &*h });
        return;
    }
    // SAFETY: the header is still lent (the call has not returned).
    let Some(kept) = (unsafe { tensor::retained(h) }) else {
        // The kernel kept memory its maker will free when the call returns: no error can be
        // returned to anyone who holds it, so stop here, as running out of memory does.
        eprintln!(
            "opbox: a plugin kernel kept a tensor input past its call, and its maker could not \
             retain it (out of memory); aborting"
        );
        std::process::abort();
    };
    // SAFETY: `kept` is one owned reference, given up once by the storage's deleter; the ABI
    // lets a header's release run on any thread.
    let release = unsafe { Deleter::call(tensor::release_header, kept.cast()) };
    if let Err(release) = tensor
        .storage()
        .keep_lent(release, kept.expose_provenance())
    {
        // Unreachable: a lent import's memory is lent, with no deleter until now.
        release.run();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;
    use crate::plugin::other_image::{header, release_one};
    use crate::tensor::live_tensors_on_this_thread;

    #[test]
    fn lent_inputs_take_no_reference_unless_kept_and_their_wrappers_are_reused() {
        let live = live_tensors_on_this_thread();
        let refs = AtomicI64::new(0);
        let (mut a, mut a_dims) = ([1.0f32, 2.0, 3.0], [0i64; 2]);
        let mut a_header = header(&mut a, &mut a_dims, &refs);
        let h: *mut TensorHeader = &mut a_header;
        let first = {
            let mut lent = Lent::default();
            // SAFETY: `h` is live until `lent` drops, at the end of this block, after `v`.
            let v = unsafe { lent.import(h) }.unwrap();
            let t = v.as_tensor().unwrap();
            assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
            assert_eq!(refs.load(Ordering::SeqCst), 0, "no reference taken");
            let back = lent.hand_back(&t.clone()).unwrap();
            assert_eq!(back, h, "an input given back is its own header, retained");
            // SAFETY: the reference `hand_back` took, given up by its receiver.
            unsafe { release_one(back) };
            assert!(lent.hand_back(&t.narrow(0, 1, 2).unwrap()).is_none());
            t.as_raw()
        };
        assert_eq!(refs.load(Ordering::SeqCst), 0, "settled with nothing kept");
        assert_eq!(
            live_tensors_on_this_thread(),
            live,
            "the spare is not counted"
        );

        // The test's retain gives back the header itself, so it must outlive the kept view.
        let (mut b, mut b_dims) = ([4.0f32, 5.0], [0i64; 2]);
        let mut b_header = header(&mut b, &mut b_dims, &refs);
        let h: *mut TensorHeader = &mut b_header;
        let kept = {
            let mut lent = Lent::default();
            // SAFETY: as above.
            let v = unsafe { lent.import(h) }.unwrap();
            let t = v.as_tensor().unwrap();
            assert_eq!(t.as_raw(), first, "the set-aside wrapper, re-pointed");
            assert_eq!(t.shape(), [2]);
            let view = t.narrow(0, 1, 1).unwrap();
            drop((v, lent));
            assert_eq!(refs.load(Ordering::SeqCst), 1, "a view kept it: retained");
            view
        };
        assert_eq!(kept.to_vec::<f32>().unwrap(), [5.0]);
        assert_eq!(kept.storage().origin(), h.addr(), "the retained header");
        drop(kept);
        assert_eq!(
            refs.load(Ordering::SeqCst),
            0,
            "released with the last view"
        );

        let (mut c, mut c_dims) = ([6.0f32], [0i64; 2]);
        let mut c_header = header(&mut c, &mut c_dims, &refs);
        {
            let mut lent = Lent::default();
            // SAFETY: as above.
            let v = unsafe { lent.import(&mut c_header) }.unwrap();
            assert_eq!(
                v.as_tensor().unwrap().to_vec::<f32>().unwrap(),
                [6.0],
                "a new wrapper: none was set aside"
            );
        }
        assert_eq!(refs.load(Ordering::SeqCst), 0);
        assert_eq!(live_tensors_on_this_thread(), live);
    }

    /// Each input's wrapper as the kernel sees it, after one call lending `headers` in order.
    fn call_with(headers: &mut [&mut TensorHeader]) -> Vec<(*mut std::ffi::c_void, Vec<f32>)> {
        let mut lent = Lent::default();
        let seen = headers
            .iter_mut()
            .map(|h| {
                // SAFETY: each header is live until `lent` drops, at the end of this function.
                let v = unsafe { lent.import(&mut **h) }.unwrap();
                let t = v.as_tensor().unwrap();
                (t.as_raw(), t.to_vec::<f32>().unwrap())
            })
            .collect();
        drop(lent);
        seen
    }

    #[test]
    fn an_input_lent_again_as_before_gets_its_own_wrapper_back_and_a_changed_one_is_repointed() {
        let live = live_tensors_on_this_thread();
        let refs = AtomicI64::new(0);
        let (mut a, mut a_dims) = ([1.0f32, 2.0, 3.0], [0i64; 2]);
        let (mut b, mut b_dims) = ([4.0f32, 5.0], [0i64; 2]);
        let mut a_header = header(&mut a, &mut a_dims, &refs);
        let mut b_header = header(&mut b, &mut b_dims, &refs);
        let first = call_with(&mut [&mut a_header, &mut b_header]);
        // a finds the wrapper that viewed it, not the last one set aside (b's).
        let again = call_with(&mut [&mut a_header, &mut b_header]);
        assert_eq!(again, first, "each input's own wrapper, as it was");

        // The same first element, fewer elements: not the view a's wrapper has, so re-pointed.
        // SAFETY: `shape` points at `a_dims[0]`, which the header lends.
        unsafe { *a_header.dl.shape = 2 };
        let narrowed = call_with(&mut [&mut a_header]);
        assert_eq!(
            narrowed[0].1,
            [1.0, 2.0],
            "re-pointed at the header as it is now"
        );
        assert_eq!(refs.load(Ordering::SeqCst), 0, "no reference taken");
        assert_eq!(live_tensors_on_this_thread(), live);
    }
}
