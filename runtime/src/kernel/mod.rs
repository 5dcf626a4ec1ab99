//! Kernels, independent of any backend (no cudarc here; it builds without the `cuda` feature):
//! the argument protocol, the launch checks and packing, stack lowering, and the registry.
//!
//! - [`view`]: `In<[T]>`, `Out<[T]>`, `InOut<[T]>`, the directions of buffer parameters.
//! - [`arg`]: [`KernelArg`] (how each parameter type crosses), constexprs, adapters.
//! - [`config`]: [`LaunchConfig`] and the backend-neutral [`Stream`] handle.
//! - [`plan`]: a plain kernel's launch checks, worked out at compile time: its repeat launches'
//!   short path.
//! - [`prepare`](mod@prepare): check and pack, giving a [`PreparedLaunch`] that a backend submits and a graph
//!   records.
//! - [`launch`](mod@launch): prepare, then submit to the tensors' backend.
//! - [`stack`]: runtime-typed launches from a `StableValue` stack.
//! - [`group`]: kernels dispatched as one unit ([`KernelGroupDecl`]).
//! - [`handle`]: the per-declaration [`KernelHandle`] where backends cache what they loaded.
//! - [`registry`]: every `#[extern_kernel]` linked in.

pub mod arg;
pub mod atomics;
pub mod config;
pub mod group;
pub mod handle;
pub mod launch;
pub mod lowered;
pub mod plan;
pub mod prepare;
pub mod registry;
pub mod stack;
pub mod vec4;
pub mod view;

pub use arg::{
    kernel_arg_adapters, lower_any, lower_value, register_kernel_arg_adapter, ConstexprArg,
    ConstexprEnum, DerivedKernelArg, KernelArg, KernelArgAdapter, KernelArgStruct, LaunchArg,
    NativeBytes, OwnedArg,
};
pub use config::{LaunchConfig, Stream};
pub use group::{launch_group, KernelGroupDecl};
pub use handle::{KernelHandle, SpecTable, VectorParam};
pub use launch::{launch, submit};
pub use prepare::{
    prepare, Access, ParamBuffer, PreparedLaunch, MAX_LAUNCH_ARGS, MAX_PARAM_BYTES, VECTOR_ALIGN,
};
pub use registry::{registered_kernels, select_kernels, ExternKernelRegistration};
pub use stack::{launch_stack, lower_stack, struct_bytes, StackArgs, StructBytes};
pub use view::{In, InOut, Out};
