//! Native value types, external builtins and build options: Warp's `build_experimental`.
//!
//! - [`NativeType`], implemented by `#[derive(NativeType)]` on a `#[repr(C)]` struct: the layout
//!   rustc gave it, as a const [`NativeSchema`], and its `nt…` type code. The C++ side is checked
//!   against the schema by `opbox_codegen::cuda::native_checks` in every translation unit that
//!   uses the type.
//! - [`NativeField`]: what a native type's field may be (scalars, halves, other native types,
//!   fixed arrays of those).
//! - The registries: every derived type and every `#[builtin]` registers itself (inventory); they
//!   are collected once, at first use. An equal schema (or builtin) registered again is accepted;
//!   one native name with two layouts, or one builtin overload with two results or targets, is an
//!   error naming both.
//! - [`BuildOptions`] for a group of kernels (see `opbox_codegen::build_options`).

mod registry;

/// The half types a native field may hold, for crates that do not depend on `half` themselves.
pub use half::{bf16, f16};
pub use opbox_codegen::build_options::{
    BuildInputsError, BuildOptions, Dependency, ResolvedBuildOptions,
};
pub use opbox_codegen::builtin::{BuiltinDecl, BuiltinParam, Overload};
pub use opbox_codegen::native::{
    split_native_name, type_code, validate_native_name, FieldType, Initializer, NativeFieldSchema,
    NativeFn, NativeNameError, NativeScalar, NativeSchema,
};
pub use registry::{
    builtins, native_types, register_builtin, register_native_type, BuiltinRegistration,
    BuiltinRegistry, NativeRegistry, NativeTypeRegistration,
};

use crate::error::Error;

/// A Rust value type with a C++ twin of the same layout.
///
/// Implement it with `#[derive(NativeType)]`, which also checks the layout at compile time,
/// implements [`NativeField`] (so the type can nest) and registers the type.
///
/// # Safety
/// `SCHEMA` must describe `Self` exactly: its size, alignment and every exposed field's offset
/// and type. Kernels copy values as raw bytes on the strength of it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a native type: it has no #[derive(NativeType)]",
    label = "not a #[derive(NativeType)] type",
    note = "a native type is a #[repr(C)] struct with #[derive(Clone, Copy, NativeType)] and #[native(name = \"ns::Type\", initializer = \"aggregate\")] (or #[native(name = \"...\", opaque)]); kernel parameters also take scalars, In/Out/InOut<[T]> and #[derive(KernelArg)] structs"
)]
pub unsafe trait NativeType: Copy + 'static {
    /// The type's layout, fields and C++ name.
    const SCHEMA: &'static NativeSchema;

    /// `nt` + 16 hex digits of SHA-256 over the schema. Computed once per type, at first use:
    /// the schema's sizes and offsets are known only to rustc (after the macro ran) and std has
    /// no const SHA-256, so the derive cannot compute it at compile time.
    fn type_code() -> &'static str;
}

/// What may be a field of a native type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a native type",
    label = "this field's type is not native-compatible",
    note = "a #[derive(NativeType)] field must be a scalar (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16 (also opbox::native::f16, bf16), another #[derive(NativeType)] type, or a fixed array [T; N] of those",
    note = "to keep a field out of C++'s view, mark it #[native(skip)] (not allowed with initializer = \"aggregate\"), or make the whole type #[native(opaque)]"
)]
pub trait NativeField: Copy + 'static {
    /// The field's type in the native schema.
    const FIELD_TYPE: FieldType;
}

macro_rules! scalar_fields {
    ($($t:ty => $s:ident),* $(,)?) => {
        $(impl NativeField for $t {
            const FIELD_TYPE: FieldType = FieldType::Scalar(NativeScalar::$s);
        })*
    };
}

scalar_fields! {
    bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64,
}

impl<T: NativeField, const N: usize> NativeField for [T; N] {
    const FIELD_TYPE: FieldType = FieldType::Array(&T::FIELD_TYPE, N);
}

impl From<BuildInputsError> for Error {
    fn from(e: BuildInputsError) -> Error {
        Error::BuildInputs(e.to_string())
    }
}

/// Checks the options' paths and reads their dependencies: what a kernel group does when it is
/// built.
pub fn resolve_build_options(options: &BuildOptions) -> crate::Result<ResolvedBuildOptions> {
    Ok(options.resolve()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_and_array_field_types_match_their_rust_sizes() {
        fn check<T: NativeField>() {
            assert_eq!(
                T::FIELD_TYPE.size(),
                std::mem::size_of::<T>(),
                "{}",
                T::FIELD_TYPE.rust_name()
            );
        }
        check::<bool>();
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
        check::<half::f16>();
        check::<half::bf16>();
        check::<f32>();
        check::<f64>();
        check::<[[f32; 3]; 2]>();
        assert_eq!(<[[f32; 3]; 2]>::FIELD_TYPE.c_type(), "float[2][3]");
        assert_eq!(<[u8; 4]>::FIELD_TYPE.type_code(), "a4u1");
    }

    #[test]
    fn build_option_errors_become_build_inputs() {
        let e = resolve_build_options(&BuildOptions::new().dependency("rel.h")).unwrap_err();
        assert_eq!(
            e,
            Error::BuildInputs(
                "build dependencies must be absolute existing files: 'rel.h' (not absolute)".into()
            )
        );
        assert_eq!(
            e.to_string(),
            "invalid build options: build dependencies must be absolute existing files: 'rel.h' (not absolute)"
        );
    }
}
