//! [`ParamFamily`]: how a generated shim hands a kernel each argument, named by the parameter
//! type's lifetime-free [`TypedKey::Key`](super::TypedKey) (`RefKey<Tensor>` for `&Tensor`).
//!
//! A family names a parameter type at every lifetime (`Of<'x>`), so one function, generic over
//! the families of a kernel's parameters, can unbox for every kernel of that shape: it takes the
//! kernel as a `for<'x> fn(A::Of<'x>, ..)` pointer, and the families' `Of` normalise to the
//! kernel's own parameter types. That is what lets 1,000 ops share a few dozen compiled shims
//! (`dispatch::ParamList`).
//!
//! Most types unbox straight from the stack ([`Unboxed`], through [`FromStable`]); a `&[&str]`
//! (a `str[]` or `Dimname[]` taken as string slices) has no `[&str]` on the stack to borrow,
//! since the stack stores the list's strings owned, so the shim lends it a small list of `&str`
//! into those strings, which lives for the call.

use smallvec::SmallVec;

use super::convert::{FromStable, Mismatch};
use super::list::List;
use super::stable_value::StableValue;
use super::typed_key::{RefKey, SliceKey, StrKey, TypedKey};

/// The `&str`s a `&[&str]` parameter borrows: inline for up to 8 names, so a call with a short
/// list (dimension names) allocates nothing.
pub type StrScratch<'a> = SmallVec<[&'a str; 8]>;

/// A kernel parameter type at every lifetime, named by its lifetime-free key: what a generated
/// shim can unbox from a stack value `'a`, possibly borrowing a `Scratch` it keeps for the call.
#[diagnostic::on_unimplemented(
    message = "a parameter of this type cannot be unboxed from the stack",
    label = "use a type from the schema table: &Tensor or Tensor, i64, f64, bool, &str or String, DType, Device, Scalar, Layout, MemoryFormat, Generator, i8, Stream, &[T] or Vec<T>, Option<T>"
)]
pub trait ParamFamily: 'static {
    /// The parameter type, borrowing for `'x`; its typed key is the family, so a typed call's
    /// argument of that key is this type up to lifetimes.
    type Of<'x>: TypedKey<Key = Self>;
    /// What the shim holds while the kernel runs (`()` for a type that borrows the stack only).
    type Scratch<'a>: Default;
    /// The parameter from stack value `v`, or `Mismatch` when `v` holds another type.
    fn lend<'a: 'x, 'x>(
        v: &'a StableValue,
        scratch: &'x mut Self::Scratch<'a>,
    ) -> Result<Self::Of<'x>, Mismatch>;
}

/// A family whose every member unboxes straight from the stack value ([`FromStable`]). Written
/// beside each `FromStable` impl, with `unboxed!`.
#[diagnostic::on_unimplemented(
    message = "a kernel parameter whose typed key is `{Self}` cannot be unboxed",
    label = "a parameter of this kernel has no unboxed form",
    note = "`RefKey<SliceKey<T>>` is `&[T]`: a slice borrows a list that the stack stores typed, which it does for bool, int, float, str and Tensor lists only; take `Vec<T>` for a list of any other type"
)]
pub trait Unboxed: 'static {
    /// The parameter type, borrowing the stack value for `'a`.
    type Of<'a>: FromStable<'a> + TypedKey<Key = Self>;
}

impl<K: Unboxed> ParamFamily for K {
    type Of<'x> = K::Of<'x>;
    type Scratch<'a> = ();
    #[inline]
    fn lend<'a: 'x, 'x>(v: &'a StableValue, _: &'x mut ()) -> Result<K::Of<'x>, Mismatch> {
        <K::Of<'x>>::from_stable(v)
    }
}

impl<K: Unboxed> Unboxed for Option<K> {
    type Of<'a> = Option<K::Of<'a>>;
}

impl<K: Unboxed> Unboxed for Vec<K> {
    type Of<'a> = Vec<K::Of<'a>>;
}

/// `Unboxed` for a key whose parameter type is `$of` (which may borrow for `'a`).
macro_rules! unboxed {
    ($($key:ty => $of:ty),+ $(,)?) => {$(
        impl $crate::value::Unboxed for $key {
            type Of<'a> = $of;
        }
    )+};
}
pub(crate) use unboxed;

/// The key of `&[&str]`.
type StrSliceKey = RefKey<SliceKey<RefKey<StrKey>>>;

impl ParamFamily for StrSliceKey {
    type Of<'x> = &'x [&'x str];
    type Scratch<'a> = StrScratch<'a>;
    fn lend<'a: 'x, 'x>(
        v: &'a StableValue,
        scratch: &'x mut StrScratch<'a>,
    ) -> Result<&'x [&'x str], Mismatch> {
        fill(v.as_list().ok_or(Mismatch)?, scratch)?;
        Ok(scratch.as_slice())
    }
}

impl ParamFamily for Option<StrSliceKey> {
    type Of<'x> = Option<&'x [&'x str]>;
    type Scratch<'a> = StrScratch<'a>;
    fn lend<'a: 'x, 'x>(
        v: &'a StableValue,
        scratch: &'x mut StrScratch<'a>,
    ) -> Result<Option<&'x [&'x str]>, Mismatch> {
        if v.is_none() {
            return Ok(None);
        }
        StrSliceKey::lend(v, scratch).map(Some)
    }
}

/// Puts a list's strings into `scratch`: a typed `str[]` or boxed string values.
fn fill<'a>(list: &'a List, scratch: &mut StrScratch<'a>) -> Result<(), Mismatch> {
    scratch.clear();
    match list {
        List::Str(items) => scratch.extend(items.iter().map(String::as_str)),
        List::Values(values) => {
            for value in values {
                scratch.push(value.as_str().ok_or(Mismatch)?);
            }
        }
        _ => return Err(Mismatch),
    }
    Ok(())
}
