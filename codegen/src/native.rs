//! Native value types (Warp's `add_native_type`): the layout schema `#[derive(NativeType)]` emits
//! as static data, its type code, and the rules for native C++ names.
//!
//! The schema is built by the derive in a `const`, from rustc's own layout (`size_of`,
//! `align_of`, `offset_of!`). The type code is a SHA-256 over that schema. It cannot be computed by
//! the macro (sizes and offsets are known only to rustc, after expansion) and there is no const
//! SHA-256 in std, so the runtime computes it once per type from the const schema and caches it
//! (see `opbox_runtime::native::NativeType::type_code`).

use std::fmt;

use sha2::{Digest, Sha256};

use crate::cpp_ident;

pub use crate::types::NativeScalar;

/// The type of one exposed field: a scalar, a fixed array, or another native type.
#[derive(Clone, Copy, Debug)]
pub enum FieldType {
    Scalar(NativeScalar),
    /// `[T; N]`: the element type and the length.
    Array(&'static FieldType, usize),
    Native(&'static NativeSchema),
}

impl FieldType {
    /// The code that enters the enclosing type's code: a scalar's short code, `a<N><elem>` for an
    /// array, and a nested native type's own `nt…` code.
    pub fn type_code(&self) -> String {
        match self {
            FieldType::Scalar(s) => s.code().to_string(),
            FieldType::Array(elem, n) => format!("a{n}{}", elem.type_code()),
            FieldType::Native(schema) => type_code(schema),
        }
    }

    /// Size in bytes as both sides agree on it.
    /// Const, so that the derive can assert it equals rustc's `size_of` for the field.
    pub const fn size(&self) -> usize {
        match self {
            FieldType::Scalar(s) => s.size(),
            FieldType::Array(elem, n) => elem.size() * *n,
            FieldType::Native(schema) => schema.size,
        }
    }

    /// `f32`, `[f32; 3]`, or the nested type's Rust path.
    pub fn rust_name(&self) -> String {
        match self {
            FieldType::Scalar(s) => s.rust_name().to_string(),
            FieldType::Array(elem, n) => format!("[{}; {n}]", elem.rust_name()),
            FieldType::Native(schema) => schema.rust_name.to_string(),
        }
    }

    /// The C++ type-id: `float`, `float[2][3]` (outer bound first), `my_addon::Color`.
    pub fn c_type(&self) -> String {
        match self {
            FieldType::Scalar(s) => s.c_name().to_string(),
            FieldType::Native(schema) => schema.native_name.to_string(),
            FieldType::Array(elem, n) => {
                // The new bound goes before the element's own bounds: [[f32; 3]; 2] is float[2][3].
                let inner = elem.c_type();
                match inner.find('[') {
                    Some(i) => format!("{}[{n}]{}", &inner[..i], &inner[i..]),
                    None => format!("{inner}[{n}]"),
                }
            }
        }
    }

    /// Every scalar this type holds, nested types included.
    pub(crate) fn visit_scalars(&self, f: &mut dyn FnMut(NativeScalar)) {
        match self {
            FieldType::Scalar(s) => f(*s),
            FieldType::Array(elem, _) => elem.visit_scalars(f),
            FieldType::Native(schema) => {
                for field in schema.fields {
                    field.ty.visit_scalars(f);
                }
            }
        }
    }
}

/// How C++ (and, later, DSL kernels) may see the type's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Initializer {
    /// `#[native(opaque)]`: no field is exposed; values pass through kernels as bytes.
    Opaque,
    /// Fields are exposed (some may be `#[native(skip)]`ped); no initializer.
    None,
    /// `initializer = "aggregate"`: `T{f0, f1, …}` over every field in declaration order.
    Aggregate,
    /// A `#[derive(KernelArg)]` struct: an aggregate whose C++ definition opbox generates
    /// (before the kernel's sources, nested ones first) from this schema.
    Generated,
}

impl Initializer {
    /// The word that enters the type code (Warp's `str(initializer)`, plus `opaque`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Initializer::Opaque => "opaque",
            Initializer::None => "None",
            Initializer::Aggregate => "aggregate",
            Initializer::Generated => "generated",
        }
    }
}

/// One exposed field.
#[derive(Clone, Copy, Debug)]
pub struct NativeFieldSchema {
    pub name: &'static str,
    pub ty: FieldType,
    /// Byte offset in the Rust (`repr(C)`) layout.
    pub offset: usize,
}

/// What `#[derive(NativeType)]` knows about one type, as `const` data.
#[derive(Clone, Copy, Debug)]
pub struct NativeSchema {
    /// The Rust path (`my_crate::color::Color`): names the type in messages, never in the code.
    pub rust_name: &'static str,
    /// The C++ name (`my_addon::Color`).
    pub native_name: &'static str,
    pub size: usize,
    pub align: usize,
    pub initializer: Initializer,
    /// The exposed fields in declaration order; empty when opaque.
    pub fields: &'static [NativeFieldSchema],
}

impl NativeSchema {
    /// The text the type code hashes, Warp's shape:
    /// `name:size:align:initializer` then `:field:code:offset` per exposed field.
    pub fn contract_text(&self) -> String {
        let mut s = format!(
            "{}:{}:{}:{}",
            self.native_name,
            self.size,
            self.align,
            self.initializer.as_str()
        );
        for f in self.fields {
            s.push_str(&format!(":{}:{}:{}", f.name, f.ty.type_code(), f.offset));
        }
        s
    }

    /// Whether two schemas describe the same C++ contract (the Rust names may differ).
    pub fn same_contract(&self, other: &NativeSchema) -> bool {
        self.contract_text() == other.contract_text()
    }

    /// Whether any field (nested types included) is a half or a bfloat16: the translation unit
    /// then needs opbox's half prelude.
    pub fn uses_scalar(&self, scalar: NativeScalar) -> bool {
        let mut found = false;
        for f in self.fields {
            f.ty.visit_scalars(&mut |s| found |= s == scalar);
        }
        found
    }
}

/// `nt` + the first 16 hex digits of SHA-256 over [`NativeSchema::contract_text`]. Nested native
/// types enter through their own code, so a change anywhere below changes every code above.
pub fn type_code(schema: &NativeSchema) -> String {
    let digest = Sha256::digest(schema.contract_text().as_bytes());
    let mut s = String::with_capacity(18);
    s.push_str("nt");
    for b in &digest[..8] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A native C++ name that is not a qualified identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeNameError {
    pub name: String,
}

impl fmt::Display for NativeNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "native name must be a qualified C++ identifier (like my_addon::Color, or ::scale with a leading ::), got '{}'",
            self.name
        )
    }
}

impl std::error::Error for NativeNameError {}

/// Checks Warp's rule ([`cpp_ident::is_qualified_name`]).
pub fn validate_native_name(name: &str) -> Result<(), NativeNameError> {
    if cpp_ident::is_qualified_name(name) {
        Ok(())
    } else {
        Err(NativeNameError {
            name: name.to_string(),
        })
    }
}

/// A validated native function name, split as Warp splits it: `my_addon::scale` is namespace
/// `my_addon::` and function `scale`; `::scale` keeps its leading `::` as the namespace; a bare
/// `scale` has an empty namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NativeFn<'a> {
    pub namespace: &'a str,
    pub function: &'a str,
}

pub fn split_native_name(name: &str) -> Result<NativeFn<'_>, NativeNameError> {
    validate_native_name(name)?;
    Ok(match name.rfind("::") {
        Some(i) => NativeFn {
            namespace: &name[..i + 2],
            function: &name[i + 2..],
        },
        None => NativeFn {
            namespace: "",
            function: name,
        },
    })
}

// Its Color and Pixel schemas are the fixtures of the native checks' tests too.
#[cfg(test)]
pub(crate) mod tests;
