//! PyTorch function-schema syntax: `ns::name.overload(Tensor x, float a=1.0) -> Tensor`.
//!
//! [`parse`] turns a string into a [`Schema`]; [`Schema`]'s `Display` prints the canonical form,
//! and `parse(print(s)) == s` for every schema that parses.

mod class_name;
mod default;
mod enums;
mod error;
mod lex;
mod model;
mod names;
mod parse;
mod print;
mod type_hint;

pub use class_name::intern_class_name;
pub use default::SCALAR_TYPE_NAMES;
pub use enums::{
    named_int, parse_device, DeviceSpec, Layout, MemoryFormat, DEVICE_FORMS, NAMED_INT_CONSTANTS,
};
pub use error::SchemaError;
pub use model::{
    Alias, Argument, BaseType, DefaultValue, OperatorName, Return, Schema, Type, TypeShape,
    MAX_TYPE_DEPTH, TENSOR_MASK_BITS,
};
pub use parse::{parse, parse_operator_name};
