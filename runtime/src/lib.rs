//! opbox's runtime: the tagged [`StableValue`] stack, [`Tensor`], and the dispatcher.

pub mod abi;
pub mod backend;
pub mod dispatch;
pub mod error;
pub mod kernel;
pub mod native;
pub mod panic;
pub mod scalar;
pub mod tensor;
pub mod typemap;
pub mod value;
pub mod warning;

pub use opbox_codegen::schema;

pub use dispatch::{init, op, DispatchKey, Library, OpHandle};
pub use error::{Error, Result, Site};
pub use native::{BuildOptions, NativeField, NativeType};
pub use scalar::Scalar;
pub use tensor::{DType, Device, Element, Tensor};
pub use value::{StableValue, Stack, Tag};
