//! A plugin's kernel as the host's dispatcher calls it: the stack lent across the ABI, the
//! kernel run, and its outputs taken back and checked against the schema.
//!
//! The checks come from the op's [`Plan`], made with the kernel when its op is first resolved.
//! An op whose arguments and returns are all plain values (the common scalar op) skips the
//! general lending: its values are copied bit for bit into a small array on this frame, and its
//! outputs copied back.

use std::mem::MaybeUninit;

use opbox_codegen::schema::Schema;

use super::convert;
use super::host::{clear_error, take_error_text, SendPtr};
use super::plan::Plan;
use crate::abi::plugin_v1::{KernelFn, Value, STATUS_OK, STATUS_PANIC};
use crate::dispatch::foreign::{ForeignKernel, ForeignKernels};
use crate::dispatch::registry::OpEntry;
use crate::value::{StableValue, Tag};
use crate::{Error, Result};

/// The most values (arguments, outputs and the guard slot) a plain op copies onto the frame;
/// a larger op takes the general path.
const PLAIN_SLOTS: usize = 16;

/// A kernel as a plugin registered it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawKernel {
    pub(crate) kernel: KernelFn,
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
        let RawKernel { kernel, ctx } = self.raw[index];
        Box::leak(Box::new(PluginKernel {
            kernel,
            ctx,
            image: self.image,
            plan: Plan::of(schema),
        }))
    }
}

#[derive(Debug)]
pub(crate) struct PluginKernel {
    kernel: KernelFn,
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
                op.num_args as u64,
                op.num_outputs as u64,
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
    let arg = &op.schema.arguments[index];
    Error::ArgType {
        op: op.name.to_string(),
        index,
        name: arg.name.to_string(),
        expected: arg.ty.to_string(),
        got: value.describe(),
    }
}

impl ForeignKernel for PluginKernel {
    fn call(&self, op: &'static OpEntry, stack: &mut [StableValue]) -> Result<()> {
        let (num_args, num_outputs) = (op.num_args, op.num_outputs);
        let plan = &self.plan;
        let (inputs, outputs) = stack.split_at_mut(num_args);
        // A C kernel cannot check tags as the in-process shims do: the host checks them here,
        // with the same message.
        for (index, (value, expect)) in inputs.iter().zip(plan.args.iter()).enumerate() {
            if !expect.admits(value.raw_tag()) {
                return Err(arg_type_error(op, index, value));
            }
        }
        // One slot past the outputs catches a kernel that writes one too many.
        let used = num_args + num_outputs + 1;
        if plan.plain && used <= PLAIN_SLOTS {
            return self.call_plain(op, inputs, outputs);
        }
        convert::with_lent(inputs, num_outputs + 1, |values| {
            let status = self.run(op, values);
            self.take_outputs(op, plan, status, &values[num_args..], outputs)
        })?
    }
}

impl PluginKernel {
    /// The call of an op whose arguments and returns are all plain values (checked by the
    /// caller, with `num_args + num_outputs + 1 <= PLAIN_SLOTS`): their fields are their ABI
    /// values (see `convert`), copied onto this frame and back with no conversion.
    #[inline]
    fn call_plain(
        &self,
        op: &'static OpEntry,
        inputs: &[StableValue],
        outputs: &mut [StableValue],
    ) -> Result<()> {
        let (num_args, num_outputs) = (inputs.len(), outputs.len());
        let used = num_args + num_outputs + 1;
        // Only the `used` slots are written (all of them): zeroing the whole array would cost
        // more than the copies.
        let mut slots = [const { MaybeUninit::<Value>::uninit() }; PLAIN_SLOTS];
        for (slot, v) in slots.iter_mut().zip(inputs) {
            slot.write(Value {
                tag: v.raw_tag(),
                aux: v.aux(),
                payload: v.raw_bits(),
            });
        }
        for slot in &mut slots[num_args..used] {
            slot.write(Value::default());
        }
        // SAFETY: the first `used` slots were all written just above.
        let values = unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast(), used) };
        let status = self.run(op, values);
        let written = &values[num_args..];
        if status != STATUS_OK || written[num_outputs] != Value::default() {
            // Plain outputs own nothing, but a misbehaving kernel may have written a handle.
            return Err(self.outputs_refused(op, status, written));
        }
        let plan = &self.plan;
        for (i, ((v, expect), out)) in written
            .iter()
            .zip(plan.returns.iter())
            .zip(outputs)
            .enumerate()
        {
            if !expect.admits(v.tag) {
                return Err(wrong_output(op, written, i));
            }
            // SAFETY: every return of a plain op is plain, and `v.tag` is one of its tags.
            unsafe { out.overwrite_plain(v.tag, v.aux, v.payload) };
        }
        Ok(())
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
            // SAFETY: an owned value the kernel wrote, taken once.
            outputs[i] = match unsafe { convert::take(*v) } {
                Ok(value) => value,
                Err(e) => {
                    discard_from(written, i + 1);
                    return Err(failed(op.name, format!("output #{i}: {e}")));
                }
            };
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
            let num_outputs = written.len() - 1;
            return failed(
                op.name,
                format!("the kernel wrote more than the {num_outputs} outputs its schema declares"),
            );
        }
        let message = take_error_text();
        if status == STATUS_PANIC {
            return Error::KernelPanic {
                op: op.name.to_string(),
                message: message.unwrap_or_else(|| "(no message)".to_string()),
            };
        }
        failed(
            op.name,
            message.unwrap_or_else(|| {
                format!(
                    "the kernel in plugin '{}' failed with status {status} and set no error",
                    self.image
                )
            }),
        )
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
    let ty = op.schema.returns[i].ty;
    let message = match taken {
        Ok(value) if value.is_none() => {
            format!("the kernel wrote {i} of the {num_outputs} outputs its schema declares")
        }
        Ok(value) => format!(
            "output #{i} is {}, but the schema returns {ty}",
            value.describe()
        ),
        Err(e) => format!("output #{i}: {e}"),
    };
    failed(op.name, message)
}
