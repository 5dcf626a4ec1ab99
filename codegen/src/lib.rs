//! The code model opbox shares between its macros (at compile time) and its runtime.
//!
//! Nothing here depends on proc-macro types: the macros turn this model into tokens, and the
//! runtime reads the same model back as static data.

pub mod build_options;
pub mod builtin;
pub mod cpp_ident;
pub mod cuda;
pub mod dispatch_key;
pub mod native;
pub mod op_name_hash;
pub mod op_tag;
pub mod rust_forms;
pub mod schema;
pub mod shared_shim;
pub mod types;
