//! The CUDA side of the code model: extern-kernel declarations, the include-closure scanner, the
//! C++ translation-unit emitter with its signature check, and the JIT cache key.
//!
//! The macro scans and builds a [`KernelDecl`] at compile time and emits it as static data; the
//! runtime emits the translation unit from that data, keys it, and hands it to NVRTC.

mod cstr;
mod decl;
mod directive;
pub mod dsl;
pub mod dsl_prelude;
mod emit;
mod error;
mod guard;
pub mod host_headers;
mod key;
mod module;
pub mod native_checks;
mod prelude;
mod scan;
mod signature_check;

pub use crate::types::{ConstValue, ElemType, ScalarType};
pub use decl::{
    BuildRef, ConstexprStyle, EntryAbi, EnumParam, IncludeEdge, KernelDecl, NativeParam, Param,
    ParamKind, SourceFile, LEN_C_TYPE, LEN_SUFFIX,
};
pub use directive::{directives, Directive, DirectiveKind};
pub use emit::{emit, emit_module, emit_with_structs, TranslationUnit};
pub use error::{EmitError, ScanError};
pub use key::{alias_key, cache_key, AliasInputs, CacheKey, KeyInputs};
pub use module::{shares_module, ModuleMember};
pub use scan::{scan_closure, Closure, ScanRequest, ScannedFile, Unresolved};
pub use signature_check::{check_file, explain_check_failures};
