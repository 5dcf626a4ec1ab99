//! [`Bindings`]: what a replay changes, tensors by their recorded handle and by-value
//! arguments by node and parameter name. A binding stays in force for later replays until
//! bound again.

use super::NodeId;
use crate::kernel::{KernelArg, OwnedArg};
use crate::tensor::Tensor;

/// New tensors and values for a replay ([`GraphExec::replay`](super::GraphExec::replay)).
///
/// A tensor is named by the handle that was recorded (or a clone of it): every launch that
/// used it reads the new tensor instead, which must have its shape and dtype, be on the same
/// device and be contiguous, and must not share memory with another tensor of the graph unless
/// the recorded ones did (that would change the dependencies).
#[derive(Default)]
pub struct Bindings<'a> {
    pub(crate) tensors: Vec<(&'a Tensor, &'a Tensor)>,
    pub(crate) values: Vec<(NodeId, &'a str, OwnedArg)>,
}

impl<'a> Bindings<'a> {
    pub fn new() -> Bindings<'a> {
        Bindings::default()
    }

    /// Every use of `recorded` reads (and writes) `tensor` from now on.
    pub fn tensor(mut self, recorded: &'a Tensor, tensor: &'a Tensor) -> Bindings<'a> {
        self.tensors.push((recorded, tensor));
        self
    }

    /// `node`'s by-value parameter `param` (a scalar, or a `#[derive(NativeType)]` struct) is
    /// `value` from now on; it must have the declared type (for a group: in every member).
    pub fn scalar<T>(mut self, node: NodeId, param: &'a str, value: T) -> Bindings<'a>
    where
        T: for<'v> KernelArg<Value<'v> = T>,
    {
        self.values
            .push((node, param, T::lower(&value).to_owned_arg()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty() && self.values.is_empty()
    }
}
