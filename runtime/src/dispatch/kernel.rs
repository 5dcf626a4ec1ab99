//! The boxed kernel ABI, and the helper every generated shim calls.

use std::cell::RefCell;

use super::boxed_op::BoxedOp;
use super::registration::OpSpec;
use crate::value::{FromStable, ParamFamily, StableValue};
use crate::{Error, Result};

/// A boxed kernel: `extern "C"`, so a plugin built by another compiler can provide one.
///
/// On entry `stack[0..num_args]` hold the arguments, which the kernel borrows, and
/// `stack[num_args..num_args + num_outputs]` hold None, which the kernel overwrites with owned
/// results. It returns [`STATUS_OK`], or another status with the error left for
/// [`take_last_error`] on the calling thread. It never unwinds.
pub type BoxedKernelFn =
    unsafe extern "C" fn(stack: *mut StableValue, num_args: u64, num_outputs: u64) -> i32;

/// The kernel ran and wrote its outputs.
pub const STATUS_OK: i32 = 0;
/// The kernel returned an error.
pub const STATUS_ERROR: i32 = 1;
/// The kernel panicked; the panic was caught at the `extern "C"` edge.
pub const STATUS_PANIC: i32 = 2;

thread_local! {
    static LAST_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// The error the last failed kernel on this thread left behind.
pub fn take_last_error() -> Option<Error> {
    LAST_ERROR.with(|slot| slot.borrow_mut().take())
}

fn set_last_error(error: Error) {
    LAST_ERROR.with(|slot| *slot.borrow_mut() = Some(error));
}

/// A kernel's view of its arguments, with unboxing that names the op and argument on a
/// mismatch.
pub struct KernelArgs<'a> {
    op: &'static BoxedOp,
    values: &'a [StableValue],
}

impl<'a> KernelArgs<'a> {
    /// Unboxes argument `index` as `T`, or says which argument had which wrong type.
    #[inline]
    pub fn get<T: FromStable<'a>>(&self, index: usize) -> Result<T> {
        match self.values.get(index) {
            Some(value) => match T::from_stable(value) {
                Ok(v) => Ok(v),
                Err(_) => Err(self.type_error(index, value)),
            },
            None => Err(self.count_error()),
        }
    }

    /// Unboxes argument `index` as a parameter of family `K` as [`get`](Self::get) does, for a
    /// type that may borrow `scratch` too (a `&[&str]`): what generated shims call, with a
    /// scratch per argument that lives for the kernel call.
    #[inline]
    pub fn lend<'x, K: ParamFamily>(
        &self,
        index: usize,
        scratch: &'x mut K::Scratch<'a>,
    ) -> Result<K::Of<'x>>
    where
        'a: 'x,
    {
        match self.values.get(index) {
            Some(value) => match K::lend(value, scratch) {
                Ok(v) => Ok(v),
                Err(_) => Err(self.type_error(index, value)),
            },
            None => Err(self.count_error()),
        }
    }

    // The error builders stay out of line, so the hot path of every generated shim is short.
    #[cold]
    #[inline(never)]
    fn type_error(&self, index: usize, value: &StableValue) -> Error {
        let arg = self.op.schema().arguments.get(index);
        Error::ArgType {
            op: self.op.name().to_string(),
            index,
            name: arg.map(|a| a.name.to_string()).unwrap_or_default(),
            expected: arg.map(|a| a.ty.to_string()).unwrap_or_default(),
            got: value.describe(),
        }
    }

    #[cold]
    #[inline(never)]
    fn count_error(&self) -> Error {
        super::op::arg_count(self.op, self.values.len())
    }
}

/// The output slots a kernel writes, in order.
pub struct KernelOutputs<'a> {
    slots: &'a mut [StableValue],
    written: usize,
}

impl<'a> KernelOutputs<'a> {
    /// The output slots `slots`, all None, none written yet.
    #[inline]
    pub(crate) fn new(slots: &'a mut [StableValue]) -> KernelOutputs<'a> {
        KernelOutputs { slots, written: 0 }
    }

    /// Writes the next output slot; an error when the kernel returns more values than its schema.
    #[inline]
    pub fn push(&mut self, value: StableValue) -> Result<()> {
        match self.slots.get_mut(self.written) {
            Some(slot) => {
                // Dropping the slot's old value may call out, so `value` waits in a temporary,
                // stored as two 8-byte halves; `*slot = value` would read it back as one 16-byte
                // load, which the CPU cannot forward from those stores (a stall of several ns on
                // every result). Moved by halves instead.
                let value = std::mem::ManuallyDrop::new(value);
                // SAFETY: `slot` is an initialised value of the output slots, dropped once here
                // and then overwritten; `value` is moved out exactly once (ManuallyDrop keeps it
                // from being dropped again).
                unsafe {
                    std::ptr::drop_in_place(slot as *mut StableValue);
                    StableValue::move_by_halves(&*value, slot);
                }
                self.written += 1;
                Ok(())
            }
            None => Err(too_many_outputs(self.written)),
        }
    }
}

#[cold]
#[inline(never)]
fn too_many_outputs(declared: usize) -> Error {
    Error::Unsupported(format!(
        "kernel wrote more than the {declared} outputs its schema declares"
    ))
}

/// A kernel body as [`boxed_entry`] runs it: unbox the arguments, call, write the outputs.
pub type KernelBody<'b> = dyn FnMut(&KernelArgs<'_>, &mut KernelOutputs<'_>) -> Result<()> + 'b;

/// Runs a kernel body behind the boxed ABI for the op `S`: [`boxed_entry`] with `S`'s static
/// data, for hand-written shims (generated ones call `boxed_entry` directly).
///
/// # Safety
/// As [`boxed_entry`].
#[inline]
pub unsafe fn boxed_call<S: OpSpec>(
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
    mut body: impl FnMut(&KernelArgs<'_>, &mut KernelOutputs<'_>) -> Result<()>,
) -> i32 {
    // SAFETY: the caller's contract is boxed_entry's.
    unsafe { boxed_entry(S::BOXED, stack, num_args, num_outputs, &mut body) }
}

/// A kernel body as a plain function: what a kernel too long to share a shim unboxes in
/// (`UnboxedBody`).
pub type KernelBodyFn = fn(&KernelArgs<'_>, &mut KernelOutputs<'_>) -> Result<()>;

/// Runs a kernel body behind the boxed ABI: checks the counts against the op's schema, runs
/// `body` once, and turns its errors and panics into a status (the error is left for
/// [`take_last_error`]). Not generic, so every hand-written shim shares this one copy.
///
/// # Safety
/// `stack` must point to `num_args + num_outputs` initialised values that stay valid and
/// unaliased for the call, as [`BoxedKernelFn`] describes.
pub unsafe fn boxed_entry(
    op: &'static BoxedOp,
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
    body: &mut KernelBody<'_>,
) -> i32 {
    // SAFETY: the caller's contract is run_boxed's.
    unsafe { run_boxed(op, stack, num_args, num_outputs, body) }
}

/// The one body of [`boxed_entry`] and of the entries shared by the kernels of one shape
/// (`shared_shim`), instantiated for each: the shared ones then call their kernel directly, not
/// through a `dyn FnMut` shim around it (a second indirect call, +10 ns a boxed call in the
/// scale bench).
///
/// # Safety
/// As [`boxed_entry`].
#[inline(always)]
pub(super) unsafe fn run_boxed(
    op: &'static BoxedOp,
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
    mut body: impl FnMut(&KernelArgs<'_>, &mut KernelOutputs<'_>) -> Result<()>,
) -> i32 {
    let counts = (usize::try_from(num_args), usize::try_from(num_outputs));
    let (Ok(num_args), Ok(num_outputs)) = counts else {
        return refuse(op, Refusal::Overflow);
    };
    if num_args != op.num_args() || num_outputs != op.num_outputs() {
        return refuse(op, Refusal::Counts(num_args, num_outputs));
    }
    // An op with no arguments and no results reads no stack, so any pointer will do.
    let (inputs, outputs): (&[StableValue], &mut [StableValue]) = if num_args + num_outputs == 0 {
        (&[], &mut [])
    } else if stack.is_null() {
        return refuse(op, Refusal::Null(num_args + num_outputs));
    } else {
        // SAFETY: the caller guarantees `stack` points to `num_args + num_outputs` initialised,
        // unaliased values (checked non-null above); the two halves do not overlap.
        unsafe {
            (
                std::slice::from_raw_parts(stack, num_args),
                std::slice::from_raw_parts_mut(stack.add(num_args), num_outputs),
            )
        }
    };
    let args = KernelArgs { op, values: inputs };
    let mut outs = KernelOutputs {
        slots: outputs,
        written: 0,
    };
    // The body's (error-sized) Result stays inside the closure, which records an error where
    // it happens and hands back only the status: wrapping the Result in catch_unwind's would
    // copy it on every call, and carrying it out in an Option costs its checks and drop glue.
    // A panic's payload is disposed of where a panic of its own cannot escape the C edge.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match body(&args, &mut outs) {
            Ok(()) => STATUS_OK,
            Err(error) => kernel_failed(op, error),
        }
    }));
    match caught {
        Ok(status) => status,
        Err(payload) => kernel_panicked(op, crate::panic::dispose(payload)),
    }
}

// The failure paths of `boxed_entry`, out of line so that its hot path stays short: each
// records the error for `take_last_error` and returns the status.

/// Why a stack was refused before the kernel ran.
enum Refusal {
    /// A count does not fit in usize.
    Overflow,
    /// (arguments, outputs) that differ from the schema's.
    Counts(usize, usize),
    /// A null stack for this many values.
    Null(usize),
}

/// A stack that does not match the schema.
#[cold]
#[inline(never)]
fn refuse(op: &'static BoxedOp, why: Refusal) -> i32 {
    let name = op.name();
    set_last_error(match why {
        Refusal::Overflow => {
            Error::InvalidArgument(format!("{name}: stack size does not fit in memory"))
        }
        Refusal::Null(values) => Error::InvalidArgument(format!(
            "{name}: the stack pointer is null, but the call passes {values} values"
        )),
        Refusal::Counts(num_args, _) if num_args != op.num_args() => {
            super::op::arg_count(op, num_args)
        }
        Refusal::Counts(_, num_outputs) => super::call::return_count_error(op, num_outputs),
    });
    STATUS_ERROR
}

#[cold]
#[inline(never)]
fn kernel_failed(op: &BoxedOp, error: Error) -> i32 {
    set_last_error(kernel_error(op.name(), error));
    STATUS_ERROR
}

#[cold]
#[inline(never)]
fn kernel_panicked(op: &BoxedOp, message: String) -> i32 {
    set_last_error(panic_error(op.name(), message));
    STATUS_PANIC
}

/// What a kernel's error becomes at the dispatcher, on the boxed and the typed path alike: it
/// keeps the op's name whatever its kind. A bare message becomes [`Error::Kernel`]; any other
/// error, an inner op's included, is wrapped whole in [`Error::InOp`], so nested calls chain
/// (outer -> inner -> message). An error already under this op's name is left as it is.
#[cold]
#[inline(never)]
pub(crate) fn kernel_error(op: &str, error: Error) -> Error {
    match error {
        Error::Message(message) => Error::Kernel {
            op: op.to_string(),
            message,
        },
        named if named.op() == Some(op) => named,
        other => Error::InOp {
            op: op.to_string(),
            source: Box::new(other),
        },
    }
}

/// The error a caught kernel panic (its message, from `crate::panic::dispose`) becomes, on the
/// boxed and the typed path alike.
#[cold]
#[inline(never)]
pub(crate) fn panic_error(op: &str, message: String) -> Error {
    Error::KernelPanic {
        op: op.to_string(),
        message,
    }
}
