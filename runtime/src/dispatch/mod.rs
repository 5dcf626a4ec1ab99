//! The dispatcher: registrations collected from `inventory`, a table per op indexed by
//! [`DispatchKey`], and the [`OpHandle`] callers resolve once and call many times.

mod boxed_op;
mod call;
pub(crate) mod fixed_list;
pub(crate) mod foreign;
mod kernel;
#[cfg(test)]
mod kernel_error_tests;
mod key;
mod library;
mod op;
mod registration;
pub(crate) mod registry;
mod shared_shim;
pub(crate) mod suggest;
mod table;
mod typed;

pub use boxed_op::{BoxedOp, SchemaCell};
pub use call::{FromOutput, FromStack, IntoStack};
pub use fixed_list::FixedList;
pub use kernel::{
    boxed_call, boxed_entry, take_last_error, BoxedKernelFn, KernelArgs, KernelBody, KernelBodyFn,
    KernelOutputs, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
};
pub use key::DispatchKey;
pub use library::Library;
pub use op::{init, op, OpHandle};
pub use registration::{
    KernelGroup, KernelRegistration, LibraryKind, LibraryRegistration, OpDef, OpExtras, OpSpec,
};
pub use registry::registered_ops;
pub use shared_shim::{BoxedKernel, ParamList, UnboxedBody};
