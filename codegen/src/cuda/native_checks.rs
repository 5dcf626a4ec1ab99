//! C++ ABI checks for native value types: the `static_assert`s that a C++ definition matches the
//! layout rustc gave the `#[derive(NativeType)]` struct.
//!
//! For every native type a kernel references (as a parameter, a slice element, or a field of
//! another native type, recursively; nested types first) it emits, as Warp does:
//! - `__is_trivially_copyable`, `__is_standard_layout`, `sizeof`, `alignof`;
//! - each exposed field's type, through a type-equality helper emitted once (and only when some
//!   type exposes fields); `long` and `long long` are the same where both are 64 bits, so
//!   `int64_t` fields match an `i64`;
//! - each field's offset: `__builtin_offsetof` on a host C++ build. NVRTC has no
//!   `__builtin_offsetof` (the reason Warp checks only sizes there); its EDG front end folds
//!   `__INTADDR__(&((T*)0)->f)` to a constant instead, so under NVRTC opbox checks each field's
//!   size (as Warp does) and its offset too, which is what catches two fields declared in a
//!   different order.
//!
//! Every message starts with `opbox:` and names the native type, the Rust type, and the field.
//! Quotes are `'…'`: NVRTC prints backticks as `?`. The text goes after the user's sources (the
//! types must be defined) and depends only on the schemas, so it is stable for the cache key.

use std::fmt::{self, Write as _};

use super::cstr::escape;
use crate::native::{FieldType, Initializer, NativeScalar, NativeSchema};

/// Which compiler reads the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckTarget {
    /// NVRTC: field sizes, and offsets through `__INTADDR__`.
    Nvrtc,
    /// A host C++ compiler (g++, clang++): offsets through `__builtin_offsetof`.
    HostCxx,
}

/// The emitted checks and what the translation unit needs for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeChecks {
    /// The C++ text, starting with a `#line` directive naming `<opbox-native-checks>`.
    pub source: String,
    /// Some field is a `__half` / `__nv_bfloat16`: include opbox's half prelude.
    pub needs_f16: bool,
    pub needs_bf16: bool,
    /// The native names checked, in emission order (nested types before their users).
    pub checked: Vec<&'static str>,
}

/// Two different schemas under one native name in one translation unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeCheckError {
    pub native_name: String,
    pub first: String,
    pub second: String,
}

impl fmt::Display for NativeCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "native C++ type name '{}' is used with two different definitions in one kernel: {} and {}",
            self.native_name, self.first, self.second
        )
    }
}

impl std::error::Error for NativeCheckError {}

/// The type-equality helper; guarded, so that two check blocks in one unit define it once.
const HELPER: &str = r#"#ifndef OPBOX_NATIVE_CHECK_HELPER
#define OPBOX_NATIVE_CHECK_HELPER 1
namespace opbox_native_detail {
template <class A, class B> struct is_same { enum : bool { value = false }; };
template <class A> struct is_same<A, A> { enum : bool { value = true }; };
template <bool LongIs64> struct long_as { typedef long type; typedef unsigned long utype; };
template <> struct long_as<true> { typedef long long type; typedef unsigned long long utype; };
template <class T> struct norm { typedef T type; };
template <> struct norm<long> { typedef long_as<sizeof(long) == 8>::type type; };
template <> struct norm<unsigned long> { typedef long_as<sizeof(long) == 8>::utype type; };
template <class T, decltype(sizeof(0)) N> struct norm<T[N]> { typedef typename norm<T>::type type[N]; };
template <class A, class B> struct same_field {
  enum : bool { value = is_same<typename norm<A>::type, typename norm<B>::type>::value };
};
}  // namespace opbox_native_detail
#endif
"#;

/// Every native type `roots` reference, nested types first, each once.
pub fn collect_native_types(
    roots: &[&'static NativeSchema],
) -> Result<Vec<&'static NativeSchema>, NativeCheckError> {
    fn visit(
        schema: &'static NativeSchema,
        out: &mut Vec<&'static NativeSchema>,
    ) -> Result<(), NativeCheckError> {
        if let Some(seen) = out.iter().find(|s| s.native_name == schema.native_name) {
            if seen.same_contract(schema) {
                return Ok(());
            }
            return Err(NativeCheckError {
                native_name: schema.native_name.to_string(),
                first: seen.rust_name.to_string(),
                second: schema.rust_name.to_string(),
            });
        }
        for f in schema.fields {
            visit_field(&f.ty, out)?;
        }
        out.push(schema);
        Ok(())
    }
    fn visit_field(
        ty: &'static FieldType,
        out: &mut Vec<&'static NativeSchema>,
    ) -> Result<(), NativeCheckError> {
        match ty {
            FieldType::Scalar(_) => Ok(()),
            FieldType::Array(elem, _) => visit_field(elem, out),
            FieldType::Native(schema) => visit(schema, out),
        }
    }
    let mut out = Vec::new();
    for root in roots {
        visit(root, &mut out)?;
    }
    Ok(out)
}

/// The checks for `roots` and everything they reference.
pub fn native_checks(
    roots: &[&'static NativeSchema],
    target: CheckTarget,
) -> Result<NativeChecks, NativeCheckError> {
    let types = collect_native_types(roots)?;
    let mut src = String::from("#line 1 \"<opbox-native-checks>\"\n");
    if types.iter().any(|t| !t.fields.is_empty()) {
        src.push_str(HELPER);
    }
    for t in &types {
        emit_type(&mut src, t, target);
    }
    Ok(NativeChecks {
        source: src,
        needs_f16: types.iter().any(|t| t.uses_scalar(NativeScalar::F16)),
        needs_bf16: types.iter().any(|t| t.uses_scalar(NativeScalar::BF16)),
        checked: types.iter().map(|t| t.native_name).collect(),
    })
}

fn emit_type(src: &mut String, t: &NativeSchema, target: CheckTarget) {
    let n = t.native_name;
    let ty_msg = |what: &str| {
        escape(&format!(
            "opbox: native type '{n}' (Rust type '{}') {what}",
            t.rust_name
        ))
    };
    let _ = writeln!(src, "// native type '{n}' ({})", t.rust_name);
    let _ = writeln!(
        src,
        "static_assert(__is_trivially_copyable({n}), \"{}\");",
        ty_msg("must be trivially copyable")
    );
    let _ = writeln!(
        src,
        "static_assert(__is_standard_layout({n}), \"{}\");",
        ty_msg("must be standard-layout")
    );
    let _ = writeln!(
        src,
        "static_assert(sizeof({n}) == {}, \"{}\");",
        t.size,
        ty_msg(&format!(
            "has an incompatible size: the Rust type is {} bytes",
            t.size
        ))
    );
    let _ = writeln!(
        src,
        "static_assert(alignof({n}) == {}, \"{}\");",
        t.align,
        ty_msg(&format!(
            "has an incompatible alignment: the Rust type is aligned to {} bytes",
            t.align
        ))
    );
    if t.initializer == Initializer::Opaque {
        return;
    }
    for f in t.fields {
        let field = f.name;
        let member = format!("((({n}*)0)->{field})");
        let f_msg = |what: &str| {
            escape(&format!(
                "opbox: native field '{n}::{field}' (Rust field '{}::{field}': {}) {what}",
                t.rust_name,
                f.ty.rust_name()
            ))
        };
        let c_type = f.ty.c_type();
        let _ = writeln!(
            src,
            "static_assert(opbox_native_detail::same_field<decltype{member}, {c_type}>::value, \"{}\");",
            f_msg(&format!("has an incompatible type: expected {c_type}"))
        );
        let offset_msg = f_msg(&format!(
            "has an incompatible offset: the Rust field is at byte {} (are the fields declared in the same order?)",
            f.offset
        ));
        match target {
            CheckTarget::HostCxx => {
                let _ = writeln!(
                    src,
                    "static_assert(__builtin_offsetof({n}, {field}) == {}, \"{offset_msg}\");",
                    f.offset
                );
            }
            CheckTarget::Nvrtc => {
                let _ = writeln!(
                    src,
                    "static_assert(sizeof{member} == {}, \"{}\");",
                    f.ty.size(),
                    f_msg(&format!(
                        "has an incompatible size: the Rust field is {} bytes",
                        f.ty.size()
                    ))
                );
                let _ = writeln!(
                    src,
                    "static_assert(__INTADDR__(&{member}) == {}, \"{offset_msg}\");",
                    f.offset
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
