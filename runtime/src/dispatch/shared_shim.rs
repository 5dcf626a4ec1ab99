//! One boxing shim per kernel shape, not per op: `boxed_entry_shared` is generic over the
//! families of a kernel's parameters and its return, and takes the kernel as a function pointer.
//! The 1,000 ops of the scale bench's crate have 18 shapes, so LLVM compiles 18 unboxing bodies
//! instead of 1,000, and an op adds no function at all: its registration pairs the shared entry
//! with its kernel ([`BoxedKernel`]), and the dispatcher passes the op's static data (issue 19).

use std::marker::PhantomData;

use super::boxed_op::BoxedOp;
use super::kernel::{
    kernel_error, panic_error, run_boxed, BoxedKernelFn, KernelArgs, KernelBodyFn, KernelOutputs,
};
use super::key::DispatchKey;
use super::registry::OpEntry;
use super::typed::{erase, unerase, ErasedFn, TypedEntry};
use crate::typemap::KernelReturn;
use crate::value::{Devices, ParamFamily, StableValue, Stack, TypedKey};
use crate::Result;

/// A kernel's parameter list as a tuple of [`ParamFamily`] keys, up to
/// `opbox_codegen::shared_shim::SHARED_SHIM_MAX_PARAMS` long.
///
/// # Safety
/// `Kernel<R>` is a fn pointer type (`BoxedKernel::of` erases it to `fn()` and back), and with
/// `TYPED`, `Args<'x>` is a tuple whose keys, element by element, are `Self`'s.
pub unsafe trait ParamList: 'static {
    /// A kernel of these parameters returning `R`, over every lifetime its parameters borrow
    /// for: a kernel fn item coerces to it.
    type Kernel<R: KernelReturn>: Copy;
    /// The parameters as one tuple, as a typed call passes them.
    type Args<'x>;
    /// Whether a typed call can call the kernel with `Args`.
    const TYPED: bool;

    /// Unboxes the arguments, calls `kernel` and writes its results.
    fn call<R: KernelReturn>(
        args: &KernelArgs<'_>,
        outs: &mut KernelOutputs<'_>,
        kernel: Self::Kernel<R>,
    ) -> Result<()>;

    /// Calls `kernel` with a typed call's arguments; its value without the `Result`.
    fn call_typed<R: KernelReturn>(
        kernel: Self::Kernel<R>,
        args: Self::Args<'_>,
    ) -> Result<R::Value>;

    /// Unboxes the arguments from `values`, asks `pick` for the kernel of their tensors'
    /// devices, and calls it under `catch_unwind`: its value, or `None` with its error left in
    /// `failure`, or a panic's payload. `None` (nothing called) when an argument has another
    /// type or `pick` has no kernel. The core of a fused boxed call; the error-sized `Result`s
    /// stay inside it, so the usual call moves only the value.
    ///
    /// # Safety
    /// `pick` returns only kernels erased from `Self::Kernel<R>`.
    #[doc(hidden)]
    unsafe fn lend_and_call<R: KernelReturn>(
        values: &[StableValue],
        pick: impl FnOnce(Devices) -> Option<ErasedFn>,
        failure: &mut Option<crate::Error>,
    ) -> Option<std::thread::Result<Option<R::Value>>>;
}

macro_rules! param_list {
    ($(($p:ident $i:tt $s:ident))*) => {
        // SAFETY: `Kernel` is a fn pointer, and `Args` the tuple of the families' `Of`, each
        // keyed by its family (`ParamFamily::Of`'s bound).
        unsafe impl<$($p: ParamFamily),*> ParamList for ($($p,)*) {
            type Kernel<R: KernelReturn> = for<'x> fn($($p::Of<'x>),*) -> R;
            type Args<'x> = ($($p::Of<'x>,)*);
            const TYPED: bool = true;

            #[inline(always)]
            #[allow(unused_variables)]
            fn call<R: KernelReturn>(
                args: &KernelArgs<'_>,
                outs: &mut KernelOutputs<'_>,
                kernel: Self::Kernel<R>,
            ) -> Result<()> {
                // One scratch per argument, declared before the call, so that what a kernel
                // borrows from it (a `&[&str]`'s names) lives for the call.
                $(let mut $s = <$p::Scratch<'_>>::default();)*
                // Bound, not the block's tail: a tail's temporaries (the `?`s' results, which
                // may borrow the scratches) would outlive the scratches.
                let returned = kernel($(args.lend::<$p>($i, &mut $s)?),*);
                returned.write(outs)
            }

            #[inline(always)]
            fn call_typed<R: KernelReturn>(
                kernel: Self::Kernel<R>,
                args: Self::Args<'_>,
            ) -> Result<R::Value> {
                let ($($s,)*) = args;
                R::into_value(kernel($($s),*))
            }

            #[inline(always)]
            #[allow(unused_variables, unused_mut)]
            unsafe fn lend_and_call<R: KernelReturn>(
                values: &[StableValue],
                pick: impl FnOnce(Devices) -> Option<ErasedFn>,
                failure: &mut Option<crate::Error>,
            ) -> Option<std::thread::Result<Option<R::Value>>> {
                $(let mut $s = <$p::Scratch<'_>>::default();)*
                let args = ($(
                    match values.get($i).map(|v| $p::lend(v, &mut $s)) {
                        Some(Ok(arg)) => arg,
                        _ => return None,
                    },
                )*);
                let mut devices = Devices::default();
                $(args.$i.note_devices(&mut devices);)*
                // SAFETY: the caller's contract: `pick` gives a kernel of this type.
                let kernel = unsafe { unerase::<Self::Kernel<R>>(pick(devices)?) };
                let call = std::panic::AssertUnwindSafe(move || {
                    match kernel($(args.$i),*).into_value() {
                        Ok(value) => Some(value),
                        Err(error) => {
                            *failure = Some(error);
                            None
                        }
                    }
                });
                Some(std::panic::catch_unwind(call))
            }
        }
    };
}

/// `param_list!` for every prefix of the list, the empty one included.
macro_rules! param_lists {
    (@done [$($done:tt)*]) => {
        param_list!($($done)*);
    };
    (@done [$($done:tt)*] $next:tt $($rest:tt)*) => {
        param_list!($($done)*);
        param_lists!(@done [$($done)* $next] $($rest)*);
    };
    ($($param:tt)*) => {
        param_lists!(@done [] $($param)*);
    };
}
opbox_codegen::shared_shim_params!(param_lists);

/// The parameter list of a kernel with more parameters than a shared shim takes: its kernel is
/// a body of its own that unboxes them, which `#[stable_impl]` writes.
pub struct UnboxedBody;

// SAFETY: `Kernel` is a fn pointer; without `TYPED`, `Args` is never a typed call's.
unsafe impl ParamList for UnboxedBody {
    type Kernel<R: KernelReturn> = KernelBodyFn;
    type Args<'x> = ();
    // Typed calls take up to 12 arguments (`IntoStack`), and this list is longer.
    const TYPED: bool = false;
    #[inline(always)]
    fn call<R: KernelReturn>(
        args: &KernelArgs<'_>,
        outs: &mut KernelOutputs<'_>,
        body: KernelBodyFn,
    ) -> Result<()> {
        body(args, outs)
    }

    fn call_typed<R: KernelReturn>(_: KernelBodyFn, _: ()) -> Result<R::Value> {
        Err(crate::Error::Unsupported(
            "a kernel with more parameters than a shared shim takes has no typed entry".into(),
        ))
    }

    unsafe fn lend_and_call<R: KernelReturn>(
        _: &[StableValue],
        _: impl FnOnce(Devices) -> Option<ErasedFn>,
        _: &mut Option<crate::Error>,
    ) -> Option<std::thread::Result<Option<R::Value>>> {
        None
    }
}

/// What a fused boxed call did, with the stack as the general path leaves it. Two words, so
/// that the usual outcome comes back in registers.
pub(crate) enum Fused {
    /// The kernel ran and its results are on the stack.
    Done,
    /// The call failed (the kernel's error or panic, named): the stack is empty.
    Failed(Box<crate::Error>),
    /// The call needs the general path: an argument of another type, tensors on several
    /// devices, no kernel for the key, or a kernel of another shape. Nothing was changed.
    General,
}

/// The kernel a fused call starts from: the entry's first kernel, whose shape's fused entry
/// runs the call.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    /// Its slot in the entry's kernels.
    index: usize,
    /// Its shape's entries, which a kernel of the same shape shares.
    entries: &'static ShapeEntries,
}

impl Probe {
    /// The first kernel of `entry`, if its shape has a fused entry.
    #[inline]
    pub(crate) fn of(entry: &OpEntry) -> Option<(Probe, FusedFn)> {
        let (index, entries) = entry
            .kernels
            .iter()
            .enumerate()
            .find_map(|(i, k)| k.map(|k| (i, k.entries)))?;
        let fused = entries.fused?;
        Some((Probe { index, entries }, fused))
    }

    /// The kernel a call with tensors on `devices` (or none, and `key`) dispatches to, when it
    /// is the probe or a kernel of the probe's shape. None sends the call to the general path,
    /// which dispatches (and refuses) as it always does.
    #[inline(always)]
    fn kernel_for(
        self,
        entry: &OpEntry,
        devices: Devices,
        key: Option<DispatchKey>,
    ) -> Option<ErasedFn> {
        let key = match devices.single()? {
            Some(device) => DispatchKey::for_device(device),
            None => key.unwrap_or(DispatchKey::CPU),
        };
        let (index, slot) = entry.slot_for(key)?;
        // The probe's fused entry, which is running, was paired with its kernel by
        // `BoxedKernel::of`, and so is every kernel of the same entries static.
        let same_shape = index == self.index || std::ptr::eq(slot.entries, self.entries);
        same_shape.then_some(slot.kernel)
    }
}

/// A fused call's end, as the general path ends: the arguments released, and the kernel's
/// value written as its results, or its error or panic named.
#[inline(always)]
fn fused_results<V: KernelReturn>(
    entry: &'static OpEntry,
    ran: std::thread::Result<Option<V>>,
    failure: &mut Option<crate::Error>,
    stack: &mut Stack<'_>,
) -> Fused {
    stack.clear();
    let error = match ran {
        Ok(Some(value)) => match value.push_results(stack, entry.num_outputs()) {
            Ok(()) => return Fused::Done,
            Err(error) => {
                stack.clear();
                kernel_error(entry.name(), error)
            }
        },
        Ok(None) => kernel_error(
            entry.name(),
            failure
                .take()
                .unwrap_or_else(|| crate::Error::msg("the kernel failed and left no error")),
        ),
        Err(payload) => panic_error(entry.name(), crate::panic::dispose(payload)),
    };
    Fused::Failed(Box::new(error))
}

/// A fused entry: a whole boxed call of an op whose kernels have one shape, in one function
/// per shape.
pub(crate) type FusedFn = fn(&'static OpEntry, Probe, Option<DispatchKey>, &mut Stack<'_>) -> Fused;

/// The fused entry of parameter list `P` returning `R`: unboxes once for both dispatch and the
/// kernel, calls it, releases the arguments and writes the results. The general path's
/// separate device scan, output reservation, shim checks and status round trip are what it
/// saves.
fn fused_entry<P: ParamList, R: KernelReturn>(
    entry: &'static OpEntry,
    probe: Probe,
    key: Option<DispatchKey>,
    stack: &mut Stack<'_>,
) -> Fused {
    let mut failure = None;
    // In a block, so that the arguments' borrows of the stack end before the results go on it.
    let ran = {
        let pick = |devices| probe.kernel_for(entry, devices, key);
        // SAFETY: `kernel_for` gives only kernels of the probe's shape, which is `P, R`: this
        // entry is the one `Shape::<P, R>` made for the probe's kernel.
        match unsafe { P::lend_and_call::<R>(stack.as_slice(), pick, &mut failure) } {
            Some(ran) => ran,
            None => return Fused::General,
        }
    };
    // By reference: moved, the error-sized slot would be copied on every call.
    fused_results(entry, ran, &mut failure, stack)
}

/// A kernel as the dispatcher calls it: the kernel, and the entries shared by the kernels of
/// its shape. No op has a function of its own for this.
#[derive(Clone, Copy, Debug)]
pub struct BoxedKernel {
    kernel: ErasedFn,
    entries: &'static ShapeEntries,
}

/// What the kernels of one parameter list and return share: the entry of a boxed call, and the
/// typed entry. One static per shape, so a kernel holds one pointer to both.
#[derive(Debug)]
struct ShapeEntries {
    boxed: SharedEntryFn,
    typed: Option<TypedEntry>,
    /// The whole boxed call in one function, for the kernels of a typed shape.
    fused: Option<FusedFn>,
    /// The same shape's entries without the typed one, for [`BoxedKernel::without_typed`];
    /// `None` where `typed` is already `None`.
    boxed_only: Option<&'static ShapeEntries>,
}

/// The boxed entry of a [`BoxedKernel`]: the op it runs for, its kernel (erased), and the stack
/// as [`BoxedKernelFn`] takes it.
type SharedEntryFn = unsafe fn(&'static BoxedOp, ErasedFn, *mut StableValue, u64, u64) -> i32;

/// The entries of parameter list `P` and return `R`.
struct Shape<P, R>(PhantomData<fn() -> (P, R)>);

impl<P: ParamList, R: KernelReturn> Shape<P, R> {
    const ENTRIES: &'static ShapeEntries = &ShapeEntries {
        boxed: boxed_entry_shared::<P, R>,
        typed: TypedEntry::of::<P, R>(),
        fused: if P::TYPED {
            Some(fused_entry::<P, R>)
        } else {
            None
        },
        boxed_only: Some(Self::BOXED_ONLY),
    };

    /// For an op with fixed-size lists, whose calls take the general path (it checks them).
    const BOXED_ONLY: &'static ShapeEntries = &ShapeEntries {
        boxed: boxed_entry_shared::<P, R>,
        typed: None,
        fused: None,
        boxed_only: None,
    };
}

/// The entries of hand-written boxed kernels, which have no typed entry.
static RAW_ENTRIES: ShapeEntries = ShapeEntries {
    boxed: raw_entry,
    typed: None,
    fused: None,
    boxed_only: None,
};

impl BoxedKernel {
    /// `kernel`, a kernel of parameter list `P` returning `R`, with the entries shared by every
    /// kernel of that list and return.
    pub const fn of<P: ParamList, R: KernelReturn>(kernel: P::Kernel<R>) -> BoxedKernel {
        BoxedKernel {
            // SAFETY: a fn pointer (ParamList's contract), turned back into `P::Kernel<R>` by
            // the entries it is paired with here, and by nothing else.
            kernel: unsafe { erase(kernel) },
            entries: Shape::<P, R>::ENTRIES,
        }
    }

    /// A hand-written boxed kernel, called as it is (it names its op itself), with no typed
    /// entry.
    pub const fn raw(kernel: BoxedKernelFn) -> BoxedKernel {
        BoxedKernel {
            // SAFETY: a fn pointer, turned back into a BoxedKernelFn by `raw_entry` only.
            kernel: unsafe { erase(kernel) },
            entries: &RAW_ENTRIES,
        }
    }

    /// Runs the kernel on `stack` for `op`.
    ///
    /// # Safety
    /// `op` is the op the kernel was registered for, and `stack` points to `num_args +
    /// num_outputs` initialised values that stay valid and unaliased for the call, as
    /// [`BoxedKernelFn`] describes.
    #[inline]
    pub unsafe fn call(
        &self,
        op: &'static BoxedOp,
        stack: *mut StableValue,
        num_args: u64,
        num_outputs: u64,
    ) -> i32 {
        // SAFETY: the caller's contract is the entry's, and the entry was paired with this
        // kernel by `of` or `raw`.
        unsafe { (self.entries.boxed)(op, self.kernel, stack, num_args, num_outputs) }
    }

    /// The same kernel with no typed entry, so that every call takes the boxed path: for an
    /// op with fixed-size list arguments, whose lengths only the boxed path checks. Its shape's
    /// boxed-only entries are static data beside the others, so the registry allocates nothing
    /// for it, and no typed call has to test the op's lists.
    pub(crate) fn without_typed(self) -> BoxedKernel {
        match self.entries.boxed_only {
            Some(entries) => BoxedKernel {
                kernel: self.kernel,
                entries,
            },
            None => self,
        }
    }

    /// The typed entry of the kernel's shape, and the kernel to hand it; `None` for a kernel
    /// with no typed entry.
    #[inline]
    pub(crate) fn typed(&self) -> Option<(&'static TypedEntry, ErasedFn)> {
        match &self.entries.typed {
            Some(typed) => Some((typed, self.kernel)),
            None => None,
        }
    }
}

/// The entry of a hand-written boxed kernel.
///
/// # Safety
/// As [`BoxedKernel::call`], with `kernel` erased from a [`BoxedKernelFn`].
unsafe fn raw_entry(
    _: &'static BoxedOp,
    kernel: ErasedFn,
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
) -> i32 {
    // SAFETY: `BoxedKernel::raw` erased it from this type; the stack is the caller's contract.
    unsafe { unerase::<BoxedKernelFn>(kernel)(stack, num_args, num_outputs) }
}

/// The boxed entry shared by every kernel of parameter list `P` and return `R`: checks the
/// counts against `op`'s schema, unboxes, calls `kernel`, writes its results, and turns its
/// errors and panics into a status, as `boxed_entry` does.
///
/// # Safety
/// As [`BoxedKernel::call`], with `kernel` erased from a `P::Kernel<R>`.
#[inline(never)]
unsafe fn boxed_entry_shared<P: ParamList, R: KernelReturn>(
    op: &'static BoxedOp,
    kernel: ErasedFn,
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
) -> i32 {
    // SAFETY: `BoxedKernel::of::<P, R>` erased `kernel` from this type.
    let kernel = unsafe { unerase::<P::Kernel<R>>(kernel) };
    // SAFETY: the caller's contract is run_boxed's.
    unsafe {
        run_boxed(op, stack, num_args, num_outputs, |args, outs| {
            P::call(args, outs, kernel)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::TypedKey;

    fn twice(x: i64) -> i64 {
        2 * x
    }

    type Key = (<i64 as TypedKey>::Key,);

    #[test]
    fn a_kernel_without_its_typed_entry_keeps_its_boxed_one_from_static_data() {
        let kernel = BoxedKernel::of::<Key, i64>(twice);
        let boxed_only = kernel.without_typed();
        assert!(kernel.typed().is_some());
        assert!(boxed_only.typed().is_none());
        assert!(std::ptr::fn_addr_eq(
            boxed_only.entries.boxed,
            kernel.entries.boxed
        ));
        assert!(std::ptr::fn_addr_eq(boxed_only.kernel, kernel.kernel));
        // The shape's static twin, shared by every kernel of the shape: nothing is allocated.
        let again = BoxedKernel::of::<Key, i64>(twice).without_typed();
        assert!(std::ptr::eq(again.entries, boxed_only.entries));
        // Taking it away again, or from a hand-written kernel, changes nothing.
        assert!(std::ptr::eq(
            boxed_only.without_typed().entries,
            boxed_only.entries
        ));
        unsafe extern "C" fn done(_: *mut StableValue, _: u64, _: u64) -> i32 {
            0
        }
        let raw = BoxedKernel::raw(done);
        assert!(std::ptr::eq(raw.without_typed().entries, &RAW_ENTRIES));
    }
}
