//! The boxed calling convention: [`StableValue`], a 16-byte tagged value, and [`Stack`], the
//! array of them that every op is called through.
//!
//! # Ownership (the one rule)
//!
//! A `StableValue` that holds a handle (a Tensor reference, a string, a list) **owns** it, and
//! releases it when dropped. So:
//! - the [`Stack`] owns its values;
//! - a kernel **borrows** its inputs (slots `0..num_args`) and **writes owned** outputs into the
//!   slots after them (`num_args..num_args + num_outputs`), which the caller has set to None;
//! - whatever is left on the stack is released by the stack's owner, on success and on error
//!   alike. After a call the stack holds exactly the outputs: the dispatcher releases the inputs.
//!
//! One exception keeps calls cheap: a `&Tensor` pushed onto a `Stack<'a>` (by `Stack::push` or
//! a typed `OpHandle::call`) is boxed as a *borrowed* value (a flag in `aux`), which owns no
//! reference and releases nothing. The stack's lifetime `'a` keeps it from outliving the tensor,
//! and values leave the stack (`pop`, iteration, typed results) as owned ones; cloning such a
//! value makes an owned reference too. Kernels only ever borrow their inputs, so they cannot
//! tell the difference.
//!
//! [`live_handles`] counts every handle a value owns, so tests can prove that no call leaks or
//! frees twice.

mod convert;
mod lend;
mod list;
mod live;
mod slots;
mod stable_value;
mod stack;
mod tag;
mod typed;
mod typed_key;

#[cfg(test)]
pub(crate) mod tests;

pub use convert::{FromStable, IntoStable, Mismatch};
pub use lend::{ParamFamily, StrScratch, Unboxed};
pub use list::List;
pub use live::live_handles;
/// The plugin ABI's owned string and list boxes count as live handles too.
pub(crate) use live::{box_freed as live_box_freed, box_made as live_box_made};
pub use slots::{IntoIter as StackIntoIter, INLINE_SLOTS};
pub(crate) use stable_value::header_bits;
pub use stable_value::StableValue;
pub use stack::Stack;
pub use tag::Tag;
pub use typed_key::{Devices, RefKey, SliceKey, StrKey, TypedKey};
