//! A plugin's kernel as the host's dispatcher calls it: the stack lent across the ABI, the
//! kernel run, and its outputs taken back and checked against the schema.

use std::ffi::c_void;

use super::convert;
use super::host::{clear_error, take_error_text, SendPtr};
use crate::abi::plugin_v1::{KernelFn, Value, STATUS_OK, STATUS_PANIC};
use crate::dispatch::foreign::ForeignKernel;
use crate::dispatch::registry::OpEntry;
use crate::value::StableValue;
use crate::{Error, Result};

#[derive(Debug)]
pub(crate) struct PluginKernel {
    kernel: KernelFn,
    ctx: SendPtr,
    /// The plugin's path, for messages.
    image: &'static str,
}

impl PluginKernel {
    pub(crate) fn new(kernel: KernelFn, ctx: *mut c_void, image: &'static str) -> PluginKernel {
        PluginKernel {
            kernel,
            ctx: SendPtr(ctx),
            image,
        }
    }
}

fn failed(op: &str, message: String) -> Error {
    Error::Kernel {
        op: op.to_string(),
        message,
    }
}

impl ForeignKernel for PluginKernel {
    fn call(&self, op: &'static OpEntry, stack: &mut [StableValue]) -> Result<()> {
        let (num_args, num_outputs) = (op.num_args, op.num_outputs);
        let (inputs, outputs) = stack.split_at_mut(num_args);
        // A C kernel cannot check tags as the in-process shims do: the host checks them here,
        // with the same message.
        for (index, (value, arg)) in inputs.iter().zip(op.schema.arguments.iter()).enumerate() {
            if !convert::fits(arg.ty, value) {
                return Err(Error::ArgType {
                    op: op.name.to_string(),
                    index,
                    name: arg.name.to_string(),
                    expected: arg.ty.to_string(),
                    got: value.describe(),
                });
            }
        }
        // One slot past the outputs catches a kernel that writes one too many.
        convert::with_lent(inputs, num_outputs + 1, |values| {
            clear_error();
            // SAFETY: `values` holds the lent arguments and `num_outputs + 1` Nones, valid and
            // unaliased for the call, as the kernel ABI asks; the plugin is never unloaded.
            let status = unsafe {
                (self.kernel)(
                    self.ctx.0,
                    values.as_mut_ptr(),
                    num_args as u64,
                    num_outputs as u64,
                )
            };
            self.take_outputs(op, status, &values[num_args..], outputs)
        })?
    }
}

impl PluginKernel {
    /// Moves the kernel's outputs (`written`: its output slots and the guard slot) into
    /// `outputs`, or releases all of them and says what went wrong.
    fn take_outputs(
        &self,
        op: &'static OpEntry,
        status: i32,
        written: &[Value],
        outputs: &mut [StableValue],
    ) -> Result<()> {
        let num_outputs = outputs.len();
        let discard_all = |from: usize| {
            for v in &written[from..] {
                // SAFETY: each slot the kernel wrote holds an owned value, taken by no one.
                unsafe { convert::discard(*v) };
            }
        };
        if status != STATUS_OK {
            discard_all(0);
            let message = take_error_text();
            return Err(if status == STATUS_PANIC {
                Error::KernelPanic {
                    op: op.name.to_string(),
                    message: message.unwrap_or_else(|| "(no message)".to_string()),
                }
            } else {
                failed(
                    op.name,
                    message.unwrap_or_else(|| {
                        format!(
                            "the kernel in plugin '{}' failed with status {status} and set no \
                             error",
                            self.image
                        )
                    }),
                )
            });
        }
        if written[num_outputs] != Value::default() {
            discard_all(0);
            return Err(failed(
                op.name,
                format!("the kernel wrote more than the {num_outputs} outputs its schema declares"),
            ));
        }
        for (i, v) in written[..num_outputs].iter().enumerate() {
            // SAFETY: an owned value the kernel wrote, taken once.
            let value = match unsafe { convert::take(*v) } {
                Ok(value) => value,
                Err(e) => {
                    discard_all(i + 1);
                    return Err(failed(op.name, format!("output #{i}: {e}")));
                }
            };
            let ty = op.schema.returns[i].ty;
            if !convert::fits(ty, &value) {
                discard_all(i + 1);
                let message = if value.is_none() {
                    format!("the kernel wrote {i} of the {num_outputs} outputs its schema declares")
                } else {
                    format!(
                        "output #{i} is {}, but the schema returns {ty}",
                        value.describe()
                    )
                };
                return Err(failed(op.name, message));
            }
            outputs[i] = value;
        }
        Ok(())
    }
}
