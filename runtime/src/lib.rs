//! opbox's runtime: the tagged [`StableValue`] stack, [`Tensor`], and the dispatcher.
#![warn(missing_docs)]

pub mod abi;
pub mod backend;
pub mod dispatch;
pub mod error;
pub mod graph;
#[cfg(all(target_os = "linux", not(miri)))]
mod huge_pages;
pub mod kernel;
mod live_counts;
pub mod native;
pub mod panic;
pub mod plugin;
pub mod random;
/// [`Scalar`]: a schema `Scalar` value (an int, a float or a bool).
pub mod scalar;
pub mod stream_value;
pub mod tensor;
pub mod typemap;
pub mod value;
pub mod warning;

pub use opbox_codegen::op_tag::OpTag;
pub use opbox_codegen::schema;
/// The element crates of the type table's `f16`/`bf16` and float8 rows, re-exported so a
/// declaration that names them needs no dependency of its own.
pub use {float8, half, num_complex};

pub use dispatch::{init, op, DispatchKey, Library, OpHandle};
pub use error::{Error, Result, Site};
pub use native::{BuildOptions, NativeField, NativeType};
pub use opbox_codegen::schema::{Layout, MemoryFormat};
pub use random::{Generator, PhiloxState};
pub use scalar::Scalar;
pub use stream_value::Stream;
pub use tensor::{DType, Device, Element, Tensor};
pub use value::{StableValue, Stack, Tag};
