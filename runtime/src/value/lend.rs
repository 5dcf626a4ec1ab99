//! [`Lend`]: how a generated shim hands a kernel each argument. Most types unbox straight from
//! the stack ([`FromStable`]); a `&[&str]` (a `str[]` or `Dimname[]` taken as string slices) has
//! no `[&str]` on the stack to borrow, since the stack stores the list's strings owned, so the
//! shim lends it a small list of `&str` into those strings, which lives for the call.

use smallvec::SmallVec;

use super::convert::{FromStable, Mismatch};
use super::list::List;
use super::stable_value::StableValue;

/// The `&str`s a `&[&str]` parameter borrows: inline for up to 8 names, so a call with a short
/// list (dimension names) allocates nothing.
pub type StrScratch<'a> = SmallVec<[&'a str; 8]>;

/// A parameter type a generated shim can pass: unboxed from a stack value `'a`, possibly
/// borrowing a `Scratch` the shim keeps for the call (`'x`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be unboxed as an op parameter",
    label = "use a type from the schema table: &Tensor or Tensor, i64, f64, bool, &str or String, DType, Device, Scalar, Layout, MemoryFormat, Generator, i8, Stream, &[T] or Vec<T>, Option<T>"
)]
pub trait Lend<'a, 'x>: Sized {
    /// What the shim holds while the kernel runs (`()` for a type that borrows the stack only).
    type Scratch: Default;
    /// The parameter from stack value `v`, or `Mismatch` when `v` holds another type.
    fn lend(v: &'a StableValue, scratch: &'x mut Self::Scratch) -> Result<Self, Mismatch>;
}

impl<'a, 'x, T: FromStable<'a>> Lend<'a, 'x> for T {
    type Scratch = ();
    #[inline]
    fn lend(v: &'a StableValue, _: &'x mut ()) -> Result<Self, Mismatch> {
        T::from_stable(v)
    }
}

impl<'a: 'x, 'x> Lend<'a, 'x> for &'x [&'a str] {
    type Scratch = StrScratch<'a>;
    fn lend(v: &'a StableValue, scratch: &'x mut StrScratch<'a>) -> Result<Self, Mismatch> {
        fill(v.as_list().ok_or(Mismatch)?, scratch)?;
        Ok(scratch.as_slice())
    }
}

impl<'a: 'x, 'x> Lend<'a, 'x> for Option<&'x [&'a str]> {
    type Scratch = StrScratch<'a>;
    fn lend(v: &'a StableValue, scratch: &'x mut StrScratch<'a>) -> Result<Self, Mismatch> {
        if v.is_none() {
            return Ok(None);
        }
        <&[&str]>::lend(v, scratch).map(Some)
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
