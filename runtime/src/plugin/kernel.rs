//! A plugin's kernel as the host's dispatcher calls it: the stack lent across the ABI, the
//! kernel run, and its outputs taken back and checked against the schema.
//!
//! The checks come from the op's [`Plan`], made with the kernel when its op is first resolved.
//! An op whose arguments and returns are all tensors and plain values runs the plugin's
//! in-place kernel (ABI 1.4), when it has one, on the dispatcher's stack itself: a plain
//! `StableValue` is its ABI value bit for bit, and a tensor's handle is its header, so nothing
//! is lent or copied. Without one, an op of plain values still runs on the stack (`call_plain`),
//! and the rest lend their inputs as ABI objects (`call_lent`).

use opbox_codegen::schema::Schema;
use smallvec::SmallVec;

use super::convert;
use super::host::{clear_error, take_error_text, SendPtr};
use super::plan::Plan;
use crate::abi::plugin_v1::{KernelFn, Value, STATUS_OK, STATUS_PANIC};
use crate::dispatch::foreign::{self, ForeignKernel, ForeignKernels};
use crate::dispatch::registry::OpEntry;
use crate::value::{StableValue, Stack, Tag};
use crate::{Error, Result};

/// The values (outputs and the guard slot) a refused plain call keeps inline to describe.
const PLAIN_SLOTS: usize = 16;

/// A kernel as a plugin registered it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawKernel {
    pub(crate) kernel: KernelFn,
    /// The same kernel on the host's own values (ABI 1.4), if the plugin gave one.
    pub(crate) in_place: Option<KernelFn>,
    pub(crate) ctx: SendPtr,
}

/// One plugin's kernels, in the order of its impls, made into [`PluginKernel`]s as their ops
/// are first resolved.
pub(crate) struct PluginKernels {
    pub(crate) raw: Vec<RawKernel>,
    /// The plugin's path, for messages.
    pub(crate) image: &'static str,
}

impl ForeignKernels for PluginKernels {
    fn kernel(&self, index: usize, schema: &'static Schema) -> &'static dyn ForeignKernel {
        let RawKernel {
            kernel,
            in_place,
            ctx,
        } = self.raw[index];
        let plan = Plan::of(schema);
        Box::leak(
            PluginKernel {
                kernel,
                // Only an op of tensors and plain values can run on the host's stack as it is.
                in_place: in_place.filter(|_| plan.held()),
                ctx,
                image: self.image,
                plan,
            }
            .into_foreign(),
        )
    }
}

/// A [`PluginKernel`] of a plain op without an in-place kernel, which every call runs on the
/// stack as it is ([`PluginKernel::call_plain`]).
#[derive(Debug)]
struct PlainKernel(PluginKernel);

impl ForeignKernel for PlainKernel {
    fn call(&self, op: &'static OpEntry, stack: &mut Stack) -> Result<()> {
        // A C kernel cannot check tags as the in-process shims do: the host checks them here,
        // with the same message.
        if let Some(index) = self.0.plan.first_refused(stack.as_slice()) {
            return Err(arg_type_error(op, index, &stack.as_slice()[index]));
        }
        self.0.call_plain(op, stack)
    }
}

#[derive(Debug)]
pub(crate) struct PluginKernel {
    kernel: KernelFn,
    in_place: Option<KernelFn>,
    ctx: SendPtr,
    /// The plugin's path, for messages.
    image: &'static str,
    /// Its op's checks; a kernel is registered for one op, so they are made once.
    plan: Plan,
}

impl PluginKernel {
    /// Runs the kernel on `values`: the lent arguments, then `num_outputs + 1` Nones.
    fn run(&self, op: &'static OpEntry, values: &mut [Value]) -> i32 {
        clear_error();
        // SAFETY: `values` holds the lent arguments and `num_outputs + 1` Nones, valid and
        // unaliased for the call, as the kernel ABI asks; the plugin is never unloaded.
        unsafe {
            (self.kernel)(
                self.ctx.0,
                values.as_mut_ptr(),
                op.num_args() as u64,
                op.num_outputs() as u64,
            )
        }
    }
}

fn failed(op: &str, message: String) -> Error {
    Error::Kernel {
        op: op.to_string(),
        message,
    }
}

#[cold]
#[inline(never)]
fn arg_type_error(op: &'static OpEntry, index: usize, value: &StableValue) -> Error {
    let arg = &op.schema().arguments[index];
    Error::ArgType {
        op: op.name().to_string(),
        index,
        name: arg.name.to_string(),
        expected: arg.ty.to_string(),
        got: value.describe(),
    }
}

impl ForeignKernel for PluginKernel {
    fn call(&self, op: &'static OpEntry, stack: &mut Stack) -> Result<()> {
        debug_assert_eq!(
            stack.len(),
            op.num_args(),
            "the dispatcher matched the stack"
        );
        // A C kernel cannot check tags as the in-process shims do: the host checks them here,
        // with the same message.
        let refused = match self.in_place {
            Some(kernel) => match self.plan.held_args(stack.as_slice()) {
                Ok(true) => return self.call_in_place(op, kernel, stack),
                Ok(false) => None,
                Err(index) => Some(index),
            },
            None => self.plan.first_refused(stack.as_slice()),
        };
        if let Some(index) = refused {
            return Err(arg_type_error(op, index, &stack.as_slice()[index]));
        }
        foreign::with_outputs(op, stack, |stack| self.call_lent(op, stack))
    }
}

impl PluginKernel {
    /// The kernel as the dispatcher calls it. A plain op's calls go straight to their one path
    /// ([`PlainKernel`]), in a function of their own without the other paths' frame and tests.
    fn into_foreign(self) -> Box<dyn ForeignKernel> {
        if self.in_place.is_none() && self.plan.plain {
            Box::new(PlainKernel(self))
        } else {
            Box::new(self)
        }
    }

    /// The call of an op whose arguments and returns are all plain values (their tags checked
    /// by the caller): the stack itself is the kernel's, with nothing copied, as a plain
    /// `StableValue` is its ABI value bit for bit (the layouts are asserted equal in
    /// `value::stable_value`). The outputs and the guard slot are the stack's spare slots past
    /// its arguments, which it does not own while the kernel runs. What the kernel wrote is
    /// checked before the stack takes it: outputs of the schema's plain types, the guard still
    /// None, the inputs still plain. Then the outputs move down over the inputs, which own
    /// nothing to release. On any failure the slots it may have written are reset to None
    /// without being dropped, so no handle a kernel made up is ever released.
    #[inline]
    fn call_plain(&self, op: &'static OpEntry, stack: &mut Stack) -> Result<()> {
        let (num_args, num_outputs) = (op.num_args(), op.num_outputs());
        let used = num_args + num_outputs + 1;
        let base = stack.spare_nones(num_outputs + 1).cast::<Value>();
        clear_error();
        // SAFETY: the stack's `num_args` values are plain (their tags checked by the caller) and
        // the `num_outputs + 1` spare slots after them None, so each is a valid `Value` with
        // the same fields (the layouts are asserted equal); they are valid and unaliased for the
        // call, as the kernel ABI asks. The plugin is never unloaded.
        let status =
            unsafe { (self.kernel)(self.ctx.0, base, num_args as u64, num_outputs as u64) };
        // SAFETY: as above; `stack` is not touched until `values` is done with.
        let values = unsafe { std::slice::from_raw_parts_mut(base, used) };
        let (inputs, written) = values.split_at_mut(num_args);
        if status == STATUS_OK
            && written[num_outputs] == Value::default()
            && self.plan.returns_admit(written)
            && inputs.iter().all(|v| convert::is_plain_number(v.tag))
        {
            // SAFETY: the inputs are plain, so they own nothing; the outputs are the spare
            // slots from `num_args` on, which hold plain values (checked just above).
            unsafe { stack.replace_with_spare(num_args, num_outputs) };
            return Ok(());
        }
        Err(self.plain_refused(op, status, inputs, written))
    }

    /// What failed in a plain call, with every slot the kernel wrote (`written`: the outputs
    /// and the guard) taken out and reset to None, and any input it overwrote with a handle
    /// reset too: the stack then holds nothing the host would release.
    #[cold]
    #[inline(never)]
    fn plain_refused(
        &self,
        op: &'static OpEntry,
        status: i32,
        inputs: &mut [Value],
        written: &mut [Value],
    ) -> Error {
        let taken: SmallVec<[Value; PLAIN_SLOTS]> = written.iter().copied().collect();
        written.fill(Value::default());
        for input in inputs {
            if !convert::is_plain_number(input.tag) {
                // SAFETY: the kernel wrote this handle over a borrowed input: released as the
                // owned value it claims to be, once.
                unsafe { convert::discard(*input) };
                *input = Value::default();
            }
        }
        if status != STATUS_OK || taken[taken.len() - 1] != Value::default() {
            return self.outputs_refused(op, status, &taken);
        }
        if let Some(i) = taken
            .iter()
            .zip(self.plan.returns.iter())
            .position(|(v, expect)| !expect.admits(v.tag))
        {
            return wrong_output(op, &taken, i);
        }
        // The status, the guard and the outputs were right, so an input was overwritten.
        discard_from(&taken, 0);
        failed(
            op.name(),
            "the kernel overwrote a borrowed input with a handle".to_string(),
        )
    }

    /// The call of the in-place kernel on the stack as it is: the arguments (plain values and
    /// tensors, each tensor's handle being its header), then `num_outputs` Nones and the guard
    /// in the stack's spare slots, which it does not own while the kernel runs. What the kernel
    /// wrote is this image's values too, bit for bit; a tensor another image made is wrapped as
    /// `take` wraps one, and anything else in the wrong place is refused. On success the
    /// outputs take the arguments' place, which are released.
    #[inline]
    fn call_in_place(
        &self,
        op: &'static OpEntry,
        kernel: KernelFn,
        stack: &mut Stack,
    ) -> Result<()> {
        let (num_args, num_outputs) = (op.num_args(), op.num_outputs());
        let base = stack.spare_nones(num_outputs + 1);
        clear_error();
        // SAFETY: the stack's `num_args` values then `num_outputs + 1` Nones, valid and
        // unaliased for the call; every argument is plain or a tensor whose handle is a live
        // header (checked by the caller), as ABI 1.4's in-place kernel takes them. The plugin
        // is never unloaded.
        let status = unsafe {
            kernel(
                self.ctx.0,
                base.cast::<Value>(),
                num_args as u64,
                num_outputs as u64,
            )
        };
        // SAFETY: the spare slots just lent, initialised; `stack` is not touched until
        // `written` is done with.
        let written =
            unsafe { std::slice::from_raw_parts_mut(base.add(num_args), num_outputs + 1) };
        if status != STATUS_OK || !written[num_outputs].is_none() {
            return Err(self.in_place_refused(op, status, written, None));
        }
        for (i, (slot, expect)) in written.iter_mut().zip(self.plan.returns.iter()).enumerate() {
            // A held plan's returns admit only tensors and plain values.
            if !expect.admits(slot.raw_tag()) {
                return Err(self.in_place_refused(op, status, written, Some(i)));
            }
            if slot
                .as_tensor()
                .is_some_and(|t| t.foreign_header().is_some())
            {
                if let Err(e) = adopt_output(slot) {
                    discard_written(written);
                    return Err(failed(op.name(), format!("output #{i}: {e}")));
                }
            }
        }
        // SAFETY: the `num_outputs` spare slots hold the outputs, checked above.
        unsafe { stack.release_for_spare(num_outputs) };
        Ok(())
    }

    /// The error of an in-place call that failed, wrote past its outputs, or wrote output
    /// `wrong` of the wrong type. Then every slot it wrote is released when it is a tensor or a
    /// plain value and set back to None unreleased otherwise (a string or list would be another
    /// allocator's): the spare slots are left holding nothing.
    #[cold]
    #[inline(never)]
    fn in_place_refused(
        &self,
        op: &'static OpEntry,
        status: i32,
        written: &mut [StableValue],
        wrong: Option<usize>,
    ) -> Error {
        let num_outputs = written.len() - 1;
        let error = if status != STATUS_OK {
            self.failure(op, status)
        } else if !written[num_outputs].is_none() {
            too_many_outputs(op, num_outputs)
        } else {
            let i = wrong.unwrap_or_default();
            output_of_wrong_type(op, i, num_outputs, &written[i])
        };
        discard_written(written);
        error
    }

    /// The call of an op with a tensor, string or list among its arguments or returns: the
    /// inputs are lent as ABI objects, and the outputs taken back from ABI values.
    #[inline(never)]
    fn call_lent(&self, op: &'static OpEntry, stack: &mut [StableValue]) -> Result<()> {
        let (num_args, num_outputs) = (op.num_args(), op.num_outputs());
        let (inputs, rest) = stack.split_at_mut(num_args);
        let outputs = rest.get_mut(..num_outputs).unwrap_or_default();
        convert::with_lent(inputs, num_outputs + 1, |values| {
            let status = self.run(op, values);
            let (lent, written) = values.split_at(num_args);
            let given = Given { lent, inputs };
            self.take_outputs(op, &self.plan, status, written, &given, outputs)
        })?
    }

    /// Moves the kernel's outputs (`written`: its output slots and the guard slot) into
    /// `outputs`, or releases all of them and says what went wrong.
    #[inline]
    fn take_outputs(
        &self,
        op: &'static OpEntry,
        plan: &Plan,
        status: i32,
        written: &[Value],
        given: &Given<'_>,
        outputs: &mut [StableValue],
    ) -> Result<()> {
        let num_outputs = outputs.len();
        if status != STATUS_OK || written[num_outputs] != Value::default() {
            return Err(self.outputs_refused(op, status, written));
        }
        for (i, (v, expect)) in written.iter().zip(plan.returns.iter()).enumerate() {
            if !expect.admits(v.tag) {
                return Err(wrong_output(op, written, i));
            }
            if convert::is_plain(Tag::from_u32(v.tag)) {
                // SAFETY: a plain tag, checked just above.
                unsafe { outputs[i].overwrite_plain(v.tag, v.aux, v.payload) };
                continue;
            }
            if let Some(input) = given.input_back(v) {
                outputs[i].set(StableValue::tensor(input.clone()));
                continue;
            }
            // SAFETY: an owned value the kernel wrote, taken once.
            match unsafe { convert::take(*v) } {
                Ok(value) => outputs[i].set(value),
                Err(e) => {
                    discard_from(written, i + 1);
                    return Err(failed(op.name(), format!("output #{i}: {e}")));
                }
            }
        }
        Ok(())
    }

    /// The error of a kernel that returned a status other than OK, or wrote past its outputs
    /// into the guard slot; every value it wrote is released.
    #[cold]
    #[inline(never)]
    fn outputs_refused(&self, op: &'static OpEntry, status: i32, written: &[Value]) -> Error {
        discard_from(written, 0);
        if status == STATUS_OK {
            return too_many_outputs(op, written.len() - 1);
        }
        self.failure(op, status)
    }

    /// The error of a kernel that returned `status`, not OK, with the text it set.
    fn failure(&self, op: &'static OpEntry, status: i32) -> Error {
        let message = take_error_text();
        if status == STATUS_PANIC {
            return Error::KernelPanic {
                op: op.name().to_string(),
                message: message.unwrap_or_else(|| "(no message)".to_string()),
            };
        }
        failed(
            op.name(),
            message.unwrap_or_else(|| {
                format!(
                    "the kernel in plugin '{}' failed with status {status} and set no error",
                    self.image
                )
            }),
        )
    }
}

/// Wraps the tensor another image made, in the output `slot`, as this image's (see
/// `tensor::take`); on error the slot is None and the reference released.
fn adopt_output(slot: &mut StableValue) -> Result<()> {
    let Some(made) = slot.take_tensor() else {
        return Ok(());
    };
    // SAFETY: an owned reference to another image's header, handed over once.
    let t = unsafe { super::tensor::take(made.into_raw().cast()) }?;
    slot.set(StableValue::tensor(t));
    Ok(())
}

/// Empties the spare slots an in-place kernel wrote (`written`, which the stack does not own):
/// a tensor or plain value is released, anything else set back to None unreleased (a string or
/// list would be another allocator's).
#[cold]
fn discard_written(written: &mut [StableValue]) {
    for slot in written.iter_mut() {
        let value = std::mem::take(slot);
        if !convert::is_held(value.raw_tag()) {
            std::mem::forget(value);
        }
    }
}

/// A call's inputs as lent to the kernel and as the dispatcher passed them.
struct Given<'a> {
    lent: &'a [Value],
    inputs: &'a [StableValue],
}

impl Given<'_> {
    /// The input tensor whose lent header the kernel wrote back, unretained, as output `v`
    /// (ABI 1.3): the host takes its own reference, and its header needs no release.
    #[inline]
    fn input_back(&self, v: &Value) -> Option<&crate::Tensor> {
        if v.tag != Tag::Tensor as u32 {
            return None;
        }
        let at = self.lent.iter().position(|l| l == v)?;
        self.inputs.get(at)?.as_tensor()
    }
}

/// Releases the owned values the kernel wrote into `written[from..]` (outputs and guard slot).
fn discard_from(written: &[Value], from: usize) {
    for v in &written[from..] {
        // SAFETY: each slot the kernel wrote holds an owned value, taken by no one.
        unsafe { convert::discard(*v) };
    }
}

/// Output `i` is not of its schema type: every output from `i` on is released.
#[cold]
#[inline(never)]
fn wrong_output(op: &'static OpEntry, written: &[Value], i: usize) -> Error {
    let num_outputs = written.len() - 1;
    // SAFETY: an owned value the kernel wrote, taken once (to describe it).
    let taken = unsafe { convert::take(written[i]) };
    discard_from(written, i + 1);
    match taken {
        Ok(value) => output_of_wrong_type(op, i, num_outputs, &value),
        Err(e) => failed(op.name(), format!("output #{i}: {e}")),
    }
}

/// A kernel wrote into the guard slot past its `num_outputs` outputs.
fn too_many_outputs(op: &'static OpEntry, num_outputs: usize) -> Error {
    failed(
        op.name(),
        format!("the kernel wrote more than the {num_outputs} outputs its schema declares"),
    )
}

/// Output `i` of `num_outputs`, `value`, is not of its schema type (None: it was not written).
fn output_of_wrong_type(
    op: &'static OpEntry,
    i: usize,
    num_outputs: usize,
    value: &StableValue,
) -> Error {
    let message = if value.is_none() {
        format!("the kernel wrote {i} of the {num_outputs} outputs its schema declares")
    } else {
        format!(
            "output #{i} is {}, but the schema returns {}",
            value.describe(),
            op.schema().returns[i].ty
        )
    };
    failed(op.name(), message)
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;
    use std::sync::OnceLock;

    use super::*;
    use crate::abi::plugin_v1::{TensorHeader, STATUS_ERROR};
    use crate::dispatch::{BoxedOp, LibraryKind, LibraryRegistration, OpDef, SchemaCell};
    use crate::error::Site;

    static LIBRARY: LibraryRegistration = LibraryRegistration {
        namespace: "t",
        kind: LibraryKind::Def,
        python_module: None,
        site: Site {
            file: "test.c",
            line: 1,
        },
        ops: &[],
    };

    /// An op of one argument and one return, `name` its qualified name in `text`.
    const fn def(
        text: &'static str,
        name: &'static str,
        tensor_args: u64,
        parsed: &'static SchemaCell,
    ) -> OpDef {
        OpDef {
            op: BoxedOp {
                text,
                name_len: name.len() as u32,
                name_hash: opbox_codegen::op_name_hash::op_name_hash(name),
                num_args: 1,
                num_outputs: 1,
                parsed,
            },
            tensor_args,
            extras: None,
            line: 1,
        }
    }

    /// `t::f(int x) -> int`, kept in statics (an entry is `&'static`; nothing leaks).
    fn op() -> &'static OpEntry {
        static CELL: SchemaCell = SchemaCell::new();
        static DEF: OpDef = def("t::f(int x) -> int", "t::f", 0, &CELL);
        static ENTRY: OnceLock<OpEntry> = OnceLock::new();
        ENTRY.get_or_init(|| OpEntry::new(&LIBRARY, &DEF, Some(&"test.so")))
    }

    /// The result, the stack after the call, and the output and guard slots past the
    /// argument as the kernel and the checks left them (spare slots after a failure).
    fn call(kernel: KernelFn, x: StableValue) -> (Result<()>, Stack<'static>, [Value; 2]) {
        let op = op();
        let k = PluginKernel {
            kernel,
            in_place: None,
            ctx: SendPtr(std::ptr::null_mut()),
            image: "test.so",
            plan: Plan::of(op.schema()),
        };
        // The argument, as the dispatcher passes it; the output and guard slots past it are set
        // to None first, so they read as such when the call fails before lending them.
        let mut stack = Stack::new();
        stack.push_value(x);
        stack.spare_nones(2);
        let result = k.into_foreign().call(op, &mut stack);
        let base = stack.spare_nones(0).cast::<Value>();
        // SAFETY: the call left the output and guard slots initialised (spare, or the output
        // moved down); a Value is plain data, copied.
        let slots = unsafe { [base.add(1).read(), base.add(2).read()] };
        (result, stack, slots)
    }

    unsafe extern "C" fn add_one(_: *mut c_void, s: *mut Value, n: u64, _: u64) -> i32 {
        // SAFETY: the kernel ABI: `n` inputs, then the output slot.
        unsafe {
            let x = (*s).payload as i64;
            s.add(n as usize).write(Value {
                tag: Tag::Int as u32,
                aux: 0,
                payload: (x + 1) as u64,
            });
            // An input overwritten with another plain value is the kernel's business.
            (*s).payload = 0;
        }
        STATUS_OK
    }

    unsafe extern "C" fn one_too_many(_: *mut c_void, s: *mut Value, n: u64, m: u64) -> i32 {
        for i in 0..=m {
            // SAFETY: the outputs and the guard slot after them.
            unsafe {
                s.add((n + i) as usize).write(Value {
                    tag: Tag::Int as u32,
                    aux: 0,
                    payload: 7,
                })
            };
        }
        STATUS_OK
    }

    unsafe extern "C" fn a_float(_: *mut c_void, s: *mut Value, n: u64, _: u64) -> i32 {
        // SAFETY: the output slot.
        unsafe {
            s.add(n as usize).write(Value {
                tag: Tag::Float as u32,
                aux: 0,
                payload: 1.5f64.to_bits(),
            })
        };
        STATUS_OK
    }

    unsafe extern "C" fn says_no(_: *mut c_void, s: *mut Value, n: u64, _: u64) -> i32 {
        super::super::host::set_error_text("no, says the kernel".to_string());
        // SAFETY: the output slot, written before failing (the host must drop it).
        unsafe {
            s.add(n as usize).write(Value {
                tag: Tag::Int as u32,
                aux: 0,
                payload: 3,
            })
        };
        STATUS_ERROR
    }

    fn message(result: Result<()>) -> String {
        result.expect_err("the call fails").to_string()
    }

    #[test]
    fn a_plain_kernel_runs_on_the_stack_and_what_it_wrote_is_checked_in_place() {
        let (result, stack, [_, guard]) = call(add_one, StableValue::int(41));
        result.expect("runs");
        assert_eq!(stack.len(), 1, "the output replaced the argument");
        assert_eq!(stack[0].as_int(), Some(42));
        assert_eq!(guard, Value::default(), "the guard is untouched");

        let (result, stack, slots) = call(one_too_many, StableValue::int(1));
        assert_eq!(
            message(result),
            call_error("the kernel wrote more than the 1 outputs its schema declares")
        );
        assert_eq!(slots, [Value::default(); 2], "reset, not kept");
        assert_eq!(stack.len(), 1, "the argument, for the caller to release");

        let (result, _, [output, _]) = call(a_float, StableValue::int(1));
        assert_eq!(
            message(result),
            call_error("output #0 is float, but the schema returns int")
        );
        assert_eq!(output, Value::default());

        let (result, _, [output, _]) = call(says_no, StableValue::int(1));
        assert_eq!(message(result), call_error("no, says the kernel"));
        assert_eq!(output, Value::default());

        // The host checks the arguments' tags before a C kernel sees them.
        let (result, _, _) = call(add_one, StableValue::float(1.0));
        assert_eq!(
            message(result),
            "t::f expects argument #0 (x) to be int, but got float"
        );
    }

    fn call_error(message: &str) -> String {
        Error::Kernel {
            op: "t::f".to_string(),
            message: message.to_string(),
        }
        .to_string()
    }

    /// `t::g(Tensor x) -> Tensor`, kept in statics as `op` is.
    fn tensor_op() -> &'static OpEntry {
        static CELL: SchemaCell = SchemaCell::new();
        static DEF: OpDef = def("t::g(Tensor x) -> Tensor", "t::g", 1, &CELL);
        static ENTRY: OnceLock<OpEntry> = OnceLock::new();
        ENTRY.get_or_init(|| OpEntry::new(&LIBRARY, &DEF, Some(&"test.so")))
    }

    /// The in-place kernel of `t::g`: gives back its input, retained through its vtable, and
    /// writes `extra` more values past it (the guard, when 1). Handles are read and written as
    /// pointers, keeping their provenance, as the Rust plugin's shim does.
    unsafe fn give_back(s: *mut Value, n: u64, extra: u64) -> i32 {
        let payload = |v: *mut Value| {
            // SAFETY: a value's payload field, 8 bytes that hold a handle for a tensor.
            unsafe { std::ptr::addr_of_mut!((*v).payload).cast::<*mut TensorHeader>() }
        };
        // SAFETY: the in-place ABI: a tensor input, a live header, then the output slots.
        unsafe {
            let h = payload(s).read();
            for i in 0..=extra {
                let kept = ((*(*h).vtable).retain)(h);
                let slot = s.add((n + i) as usize);
                slot.write(Value {
                    tag: Tag::Tensor as u32,
                    aux: 0,
                    payload: 0,
                });
                payload(slot).write(kept);
            }
        }
        STATUS_OK
    }

    unsafe extern "C" fn gives_back(_: *mut c_void, s: *mut Value, n: u64, _: u64) -> i32 {
        // SAFETY: forwarded.
        unsafe { give_back(s, n, 0) }
    }

    unsafe extern "C" fn gives_back_twice(_: *mut c_void, s: *mut Value, n: u64, _: u64) -> i32 {
        // SAFETY: forwarded.
        unsafe { give_back(s, n, 1) }
    }

    unsafe extern "C" fn lent_kernel(_: *mut c_void, _: *mut Value, _: u64, _: u64) -> i32 {
        super::super::host::set_error_text("the lent kernel ran".to_string());
        STATUS_ERROR
    }

    fn call_tensor(in_place: KernelFn, x: StableValue) -> (Result<()>, Stack<'static>) {
        let op = tensor_op();
        let k = PluginKernel {
            kernel: lent_kernel,
            in_place: Some(in_place),
            ctx: SendPtr(std::ptr::null_mut()),
            image: "test.so",
            plan: Plan::of(op.schema()),
        };
        let mut stack = Stack::new();
        stack.push_value(x);
        let result = k.into_foreign().call(op, &mut stack);
        (result, stack)
    }

    #[test]
    fn an_in_place_kernel_reads_the_hosts_own_header_and_gives_back_owned_tensors() {
        let x = crate::Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let (result, stack) = call_tensor(gives_back, StableValue::tensor(x.clone()));
        result.expect("runs in place");
        let y = stack[0].as_tensor().expect("a tensor output");
        assert!(y.ptr_eq(&x), "the host's own tensor, as the handle it lent");
        assert_eq!(x.ref_count(), 2, "the argument released, the output kept");
        drop(stack);
        assert_eq!(x.ref_count(), 1);

        let (result, stack) = call_tensor(gives_back_twice, StableValue::tensor(x.clone()));
        assert_eq!(
            message(result),
            "t::g: the kernel wrote more than the 1 outputs its schema declares"
        );
        drop(stack);
        assert_eq!(
            x.ref_count(),
            1,
            "what it wrote is released, the argument with the stack"
        );

        // A tensor DLPack cannot describe has no header to pass as it is: the op takes the
        // lending path, which says why it cannot lend it.
        let meta = crate::Tensor::empty(&[2], crate::DType::F32, crate::Device::Meta).unwrap();
        let (result, _) = call_tensor(gives_back, StableValue::tensor(meta));
        let text = message(result);
        assert!(text.contains("meta"), "{text}");
    }
}
