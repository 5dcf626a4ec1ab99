//! The schema-to-Rust table as traits, so rustc checks every kernel signature against its
//! schema.
//!
//! [`RustParam`] maps a Rust parameter type to a marker in [`ty`]; `#[stable_library]` says,
//! per op and argument, which markers fit the schema type; `#[stable_impl]` asks rustc whether
//! the kernel's types do. The same goes for returns through [`KernelReturn`]. The impls are built
//! from `opbox_codegen::rust_forms!`, the table the macros read too (which types fit each schema
//! type is listed there).

use crate::dispatch::KernelOutputs;
use crate::value::{FromStable, IntoStable, Mismatch, StableValue, TypedKey};
use crate::{
    DType, Device, Error, Generator, Layout, MemoryFormat, Result, Scalar, Stream, Tensor,
};

pub mod extra_params;

/// Markers for the schema-side shape of a Rust type. Only rustc sees them.
pub mod ty {
    use std::marker::PhantomData;

    /// `&Tensor`: a borrowed tensor.
    pub struct TensorRef;
    /// `Tensor`: an owned tensor.
    pub struct TensorVal;
    /// `int` (and `SymInt`).
    pub struct Int;
    /// `float` (and `SymFloat`).
    pub struct Float;
    /// `bool` (and `SymBool`).
    pub struct Bool;
    /// `str` (and `Dimname`).
    pub struct Str;
    /// `ScalarType`.
    pub struct ScalarType;
    /// `Device`.
    pub struct Device;
    /// `Scalar`.
    pub struct Scalar;
    /// `Layout`.
    pub struct Layout;
    /// `MemoryFormat`.
    pub struct MemoryFormat;
    /// `Generator`.
    pub struct Generator;
    /// `DeviceIndex`.
    pub struct DeviceIndex;
    /// `Stream`.
    pub struct Stream;
    /// `T[]` and `T[N]`.
    pub struct List<T>(PhantomData<T>);
    /// `T?`.
    pub struct Optional<T>(PhantomData<T>);
    /// A Rust type with no schema type, such as `f32`: its error names the expected type.
    pub struct Rust<T>(PhantomData<T>);
}

/// A Rust type a kernel can take as a parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an op parameter",
    label = "not a type the boxed ABI can pass",
    note = "schema types map to Rust types: Tensor → &Tensor or Tensor, int and SymInt → i64, float and SymFloat → f64, bool and SymBool → bool, str and Dimname → &str or String, ScalarType → DType, Device → Device, Scalar → Scalar, Layout → Layout, MemoryFormat → MemoryFormat, Generator → Generator, DeviceIndex → i8, Stream → Stream, T[] and T[N] → &[T] or Vec<T>, T? → Option<T>"
)]
pub trait RustParam: TypedKey {
    /// The schema-side marker the type stands for ([`ty`]).
    type Schema;
    /// The type's [`TypedKey::Key`], reachable through this trait so that a kernel's typed entry
    /// names it under the same obligation as the signature check (one error, not two).
    type Key: 'static;
}

/// A Rust type a kernel can return as one value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an op",
    label = "not a type the boxed ABI can return",
    note = "return types map as: Tensor → Tensor, int → i64, float → f64, bool → bool, str → String, T[] → Vec<T>, T? → Option<T>; several returns are a tuple, none is ()"
)]
pub trait ReturnValue: IntoStable + 'static {
    /// The schema-side marker of the return ([`ty`]).
    type Schema;
}

/// One `RustParam` / `ReturnValue` impl per row of the table, naming the row's marker.
macro_rules! impl_rust_forms {
    (
        base { $($base:ident: param [$($p:ty => $pm:ident),+], ret [$($r:ty => $rm:ident),+], typed_list $typed:literal;)+ }
        same { $($same:ident: $target:ident;)+ }
        none { $($none:ident: $why:literal;)+ }
        wrap { $($w:ident: param [$($wp:ty),+], ret [$($wr:ty),+];)+ }
    ) => {
        // `same` rows reuse a `base` row's types and `none` rows have none: only `base` rows
        // own impls.
        $(
            $(impl RustParam for $p { type Schema = ty::$pm; type Key = <Self as TypedKey>::Key; })+
            $(impl ReturnValue for $r { type Schema = ty::$rm; })+
        )+
        $(
            $(impl<T: RustParam> RustParam for $wp {
                type Schema = ty::$w<T::Schema>;
                type Key = <Self as TypedKey>::Key;
            })+
            $(impl<T: ReturnValue> ReturnValue for $wr { type Schema = ty::$w<T::Schema>; })+
        )+
    };
}
opbox_codegen::rust_forms!(impl_rust_forms);

// Rust types with no schema type. `#[stable_impl]`'s signature check rejects them at compile
// time with a message naming the op and argument; their `FromStable` impls never unbox anything
// and only keep the boxing shim from adding a second, less helpful error for the same parameter.
macro_rules! not_schema {
    ($($rust:ty),+) => {$(
        impl RustParam for $rust { type Schema = ty::Rust<$rust>; type Key = $rust; }
        impl<'a> FromStable<'a> for $rust {
            fn from_stable(_: &'a StableValue) -> Result<Self, Mismatch> {
                Err(Mismatch)
            }
        }
    )+};
}
not_schema!(f32, i16, i32, u8, u16, u32, u64, usize, isize, char);

/// What a kernel function returns: one value, a tuple, `()`, or any of them in a `Result`
/// whose error converts into `opbox::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from an op kernel",
    label = "return one value, a tuple of values, or (), optionally inside Result<_, E> with E: Into<opbox::Error>"
)]
pub trait KernelReturn {
    /// A tuple of the returns' schema markers.
    type Schema;
    /// What a typed call receives: the return without its `Result`.
    type Value: 'static;
    /// Writes the returned values into the kernel's output slots.
    fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()>;
    /// The returned value, for a typed call, without boxing it.
    fn into_value(self) -> Result<Self::Value>;
}

impl KernelReturn for () {
    type Schema = ();
    type Value = ();
    fn write(self, _: &mut KernelOutputs<'_>) -> Result<()> {
        Ok(())
    }
    #[inline]
    fn into_value(self) -> Result<()> {
        Ok(())
    }
}

impl<T: ReturnValue> KernelReturn for T {
    type Schema = (T::Schema,);
    type Value = T;
    #[inline]
    fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()> {
        outs.push(self.into_stable())
    }
    #[inline]
    fn into_value(self) -> Result<T> {
        Ok(self)
    }
}

macro_rules! return_tuple {
    ($($name:ident),+) => {
        impl<$($name: ReturnValue),+> KernelReturn for ($($name,)+) {
            type Schema = ($($name::Schema,)+);
            type Value = Self;
            #[inline]
            fn into_value(self) -> Result<Self> {
                Ok(self)
            }
            #[allow(non_snake_case)]
            fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()> {
                let ($($name,)+) = self;
                $(outs.push($name.into_stable())?;)+
                Ok(())
            }
        }
    };
}
return_tuple!(A, B);
return_tuple!(A, B, C);
return_tuple!(A, B, C, D);
return_tuple!(A, B, C, D, E);
return_tuple!(A, B, C, D, E, F);

impl<R: KernelReturn, E: Into<Error>> KernelReturn for Result<R, E> {
    type Schema = R::Schema;
    type Value = R::Value;
    #[inline]
    fn into_value(self) -> Result<R::Value> {
        match self {
            Ok(r) => r.into_value(),
            Err(e) => Err(e.into()),
        }
    }
    #[inline]
    fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()> {
        match self {
            Ok(r) => r.write(outs),
            Err(e) => Err(e.into()),
        }
    }
}
