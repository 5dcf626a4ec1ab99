//! The schema-to-Rust table as traits, so rustc checks every kernel signature against its
//! schema.
//!
//! [`RustParam`] gives a Rust parameter type's form code (`opbox_codegen::rust_forms::form_code`);
//! `#[stable_library]` lists, per op and argument, which codes fit the schema type, in the op's
//! [`Signature`]; `#[stable_impl]` compares the kernel's codes against it in a `const`, which
//! fails the build with the op's own message. The same goes for returns through
//! [`KernelReturn`]. The impls are built from `opbox_codegen::rust_forms!`, the table the macros
//! read too (which types fit each schema type is listed there).

use crate::dispatch::KernelOutputs;
use crate::value::{FromStable, IntoStable, Mismatch, StableValue, TypedKey};
use crate::{
    DType, Device, Error, Generator, Layout, MemoryFormat, Result, Scalar, Stream, Tensor,
};
use opbox_codegen::rust_forms::{form_code, wrapped_form_code, Wrapper, NO_SCHEMA_FORM};

mod signature;
pub use signature::{ParamSignature, Signature};

/// A Rust type a kernel can take as a parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an op parameter",
    label = "not a type the boxed ABI can pass",
    note = "schema types map to Rust types: Tensor → &Tensor or Tensor, int and SymInt → i64, float and SymFloat → f64, bool and SymBool → bool, str and Dimname → &str or String, ScalarType → DType, Device → Device, Scalar → Scalar, Layout → Layout, MemoryFormat → MemoryFormat, Generator → Generator, DeviceIndex → i8, Stream → Stream, T[] and T[N] → &[T] or Vec<T>, T? → Option<T>"
)]
pub trait RustParam: TypedKey {
    /// The code of the schema-side form the type stands for (`form_code`; `NO_SCHEMA_FORM`
    /// for none).
    const FORM: u64;
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
    /// The code of the return's schema-side form (`form_code`).
    const FORM: u64;
}

/// One `RustParam` / `ReturnValue` impl per row of the table, with the code of the row's marker.
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
            $(impl RustParam for $p {
                const FORM: u64 = form_code(stringify!($pm));
                type Key = <Self as TypedKey>::Key;
            })+
            $(impl ReturnValue for $r { const FORM: u64 = form_code(stringify!($rm)); })+
        )+
        $(
            $(impl<T: RustParam> RustParam for $wp {
                const FORM: u64 = wrapped_form_code(Wrapper::$w, T::FORM);
                type Key = <Self as TypedKey>::Key;
            })+
            $(impl<T: ReturnValue> ReturnValue for $wr {
                const FORM: u64 = wrapped_form_code(Wrapper::$w, T::FORM);
            })+
        )+
    };
}
opbox_codegen::rust_forms!(impl_rust_forms);

// Rust types with no schema type. `#[stable_impl]`'s signature check rejects them at compile
// time with a message naming the op and argument; their `FromStable` (and `Unboxed`) impls never unbox anything
// and only keep the boxing shim from adding a second, less helpful error for the same parameter.
macro_rules! not_schema {
    ($($rust:ty),+) => {$(
        impl RustParam for $rust { const FORM: u64 = NO_SCHEMA_FORM; type Key = $rust; }
        impl<'a> FromStable<'a> for $rust {
            fn from_stable(_: &'a StableValue) -> Result<Self, Mismatch> {
                Err(Mismatch)
            }
        }
        impl crate::value::Unboxed for $rust {
            type Of<'a> = $rust;
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
    /// The returns' form codes, in order.
    const FORMS: &'static [u64];
    /// What a typed call receives: the return without its `Result` (and what a fused boxed
    /// call writes).
    type Value: KernelReturn + 'static;
    /// Writes the returned values into the kernel's output slots.
    fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()>;
    /// The returned value, for a typed call, without boxing it.
    fn into_value(self) -> Result<Self::Value>;

    /// Pushes the returned values onto `stack`, which holds nothing, as the op's
    /// `num_outputs` results: how a fused boxed call ends. By default through
    /// [`write`](Self::write), on that many reserved slots.
    #[doc(hidden)]
    #[inline(always)]
    fn push_results(self, stack: &mut crate::Stack<'_>, num_outputs: usize) -> Result<()>
    where
        Self: Sized,
    {
        let base = stack.reserve_outputs(num_outputs);
        // SAFETY: `reserve_outputs` made the stack's `num_outputs` values the Nones at `base`,
        // which nothing else touches while the slice lives.
        let slots = unsafe { std::slice::from_raw_parts_mut(base, num_outputs) };
        self.write(&mut KernelOutputs::new(slots))
    }
}

impl KernelReturn for () {
    const FORMS: &'static [u64] = &[];
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
    const FORMS: &'static [u64] = &[T::FORM];
    type Value = T;
    // Inlined: its callers are the shared entries, one per kernel shape rather than per op, so
    // a copy per shape is cheap, and the call with its error-sized Result through memory was
    // 29 of a boxed int call's 304 instructions (callgrind).
    #[inline(always)]
    fn write(self, outs: &mut KernelOutputs<'_>) -> Result<()> {
        outs.push(self.into_stable())
    }
    #[inline]
    fn into_value(self) -> Result<T> {
        Ok(self)
    }
    // One value onto an empty stack: a push, with no output slots to reserve and overwrite.
    // `push`, not `push_value`: it makes room before the value is boxed, so the value is built
    // in its slot instead of waiting in memory across the room check (a store-forwarding
    // stall that cost the tensor op about 2 ns here).
    #[inline(always)]
    fn push_results(self, stack: &mut crate::Stack<'_>, num_outputs: usize) -> Result<()> {
        debug_assert_eq!(num_outputs, 1, "a single return is one output");
        stack.push(self);
        Ok(())
    }
}

macro_rules! return_tuple {
    ($($name:ident),+) => {
        impl<$($name: ReturnValue),+> KernelReturn for ($($name,)+) {
            const FORMS: &'static [u64] = &[$($name::FORM,)+];
            type Value = Self;
            #[inline]
            fn into_value(self) -> Result<Self> {
                Ok(self)
            }
            // Inlined, as the single return's write is.
            #[inline(always)]
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
    const FORMS: &'static [u64] = R::FORMS;
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
