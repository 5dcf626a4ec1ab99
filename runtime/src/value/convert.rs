//! Conversions between Rust values and [`StableValue`]s: [`IntoStable`] boxes, [`FromStable`]
//! unboxes (borrowing where it can, so `&Tensor`, `&str` and `&[i64]` cost no copy).

use super::lend::unboxed;
use super::list::List;
use super::stable_value::StableValue;
use super::typed_key::{RefKey, SliceKey, StrKey, TypedKey};
use crate::{DType, Device, Generator, Layout, MemoryFormat, Scalar, Stream, Tensor};

/// A value of the wrong kind; the caller knows what it expected and builds the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch;

/// Reads a Rust value out of a [`StableValue`], borrowing from it for `'a` where the type allows.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be unboxed as an op parameter",
    label = "use a type from the schema table: &Tensor or Tensor, i64, f64, bool, &str or String, DType, Device, Scalar, Layout, MemoryFormat, Generator, i8, Stream, &[T] or Vec<T>, Option<T>"
)]
pub trait FromStable<'a>: Sized {
    /// Reads the value, or [`Mismatch`] when it holds another type.
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch>;

    /// Reads a whole list of `Self`. Typed lists override this to copy without unboxing.
    fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
        match list {
            List::Values(values) => values.iter().map(Self::from_stable).collect(),
            _ => Err(Mismatch),
        }
    }
}

/// Turns a Rust value into an owned [`StableValue`]. Its [`TypedKey`] lets a typed call skip
/// the boxing when the value is exactly what the kernel takes.
pub trait IntoStable: TypedKey {
    /// The value, boxed and owned.
    fn into_stable(self) -> StableValue;

    /// Boxes for a call whose stack is dropped before the call returns, so borrowed handles
    /// need not be counted. Only `&Tensor` does anything different.
    ///
    /// # Safety
    /// The value must not outlive any borrow in `self`.
    #[doc(hidden)]
    unsafe fn into_stable_for_call(self) -> StableValue
    where
        Self: Sized,
    {
        self.into_stable()
    }

    /// Boxes a whole list. Plain types override this to build a typed list.
    fn into_list(items: Vec<Self>) -> List
    where
        Self: Sized,
    {
        List::Values(items.into_iter().map(IntoStable::into_stable).collect())
    }
}

macro_rules! plain {
    ($ty:ty, $as:ident, $make:path, $variant:ident) => {
        impl<'a> FromStable<'a> for $ty {
            fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
                v.$as().ok_or(Mismatch)
            }
            fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
                match list {
                    List::$variant(items) => Ok(items.clone()),
                    List::Values(values) => values.iter().map(Self::from_stable).collect(),
                    _ => Err(Mismatch),
                }
            }
        }
        impl IntoStable for $ty {
            fn into_stable(self) -> StableValue {
                $make(self)
            }
            fn into_list(items: Vec<Self>) -> List {
                List::$variant(items)
            }
        }
        impl<'a> FromStable<'a> for &'a [$ty] {
            fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
                match v.as_list() {
                    Some(List::$variant(items)) => Ok(items.as_slice()),
                    _ => Err(Mismatch),
                }
            }
        }
        unboxed!($ty => $ty, RefKey<SliceKey<$ty>> => &'a [$ty]);
    };
}

plain!(bool, as_bool, StableValue::bool, Bool);
plain!(i64, as_int, StableValue::int, Int);
plain!(Tensor, as_tensor_owned, StableValue::tensor, Tensor);

impl StableValue {
    fn as_tensor_owned(&self) -> Option<Tensor> {
        self.as_tensor().cloned()
    }
}

// `float` also accepts an int, as PyTorch's argument parser does: the conversion is exact for
// every int a caller is likely to pass, and it saves `2.0` vs `2` surprises in typed calls.
impl<'a> FromStable<'a> for f64 {
    #[inline]
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        v.as_float()
            .or_else(|| v.as_int().map(|i| i as f64))
            .ok_or(Mismatch)
    }
    fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
        match list {
            List::Float(items) => Ok(items.clone()),
            List::Int(items) => Ok(items.iter().map(|&i| i as f64).collect()),
            List::Values(values) => values.iter().map(Self::from_stable).collect(),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(f64 => f64);
impl IntoStable for f64 {
    fn into_stable(self) -> StableValue {
        StableValue::float(self)
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Float(items)
    }
}
impl<'a> FromStable<'a> for &'a [f64] {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        match v.as_list() {
            Some(List::Float(items)) => Ok(items.as_slice()),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(RefKey<SliceKey<f64>> => &'a [f64]);

impl<'a> FromStable<'a> for &'a Tensor {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        v.as_tensor().ok_or(Mismatch)
    }
    fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
        match list {
            List::Tensor(items) => Ok(items.iter().collect()),
            List::Values(values) => values.iter().map(Self::from_stable).collect(),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(RefKey<Tensor> => &'a Tensor);
impl IntoStable for &Tensor {
    fn into_stable(self) -> StableValue {
        StableValue::tensor(self.clone())
    }
    unsafe fn into_stable_for_call(self) -> StableValue {
        // SAFETY: forwarded from this method's own contract.
        unsafe { StableValue::tensor_borrowed(self) }
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Tensor(items.into_iter().cloned().collect())
    }
}

impl<'a> FromStable<'a> for &'a str {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        v.as_str().ok_or(Mismatch)
    }
    fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
        match list {
            List::Str(items) => Ok(items.iter().map(String::as_str).collect()),
            List::Values(values) => values.iter().map(Self::from_stable).collect(),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(RefKey<StrKey> => &'a str);
impl<'a> FromStable<'a> for String {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        v.as_str().map(str::to_string).ok_or(Mismatch)
    }
    fn vec_from_list(list: &'a List) -> Result<Vec<Self>, Mismatch> {
        match list {
            List::Str(items) => Ok(items.clone()),
            List::Values(values) => values.iter().map(Self::from_stable).collect(),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(String => String);
impl<'a> FromStable<'a> for &'a [String] {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        match v.as_list() {
            Some(List::Str(items)) => Ok(items.as_slice()),
            _ => Err(Mismatch),
        }
    }
}
unboxed!(RefKey<SliceKey<String>> => &'a [String]);
impl IntoStable for String {
    fn into_stable(self) -> StableValue {
        StableValue::str(self)
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Str(items)
    }
}
impl IntoStable for &str {
    fn into_stable(self) -> StableValue {
        StableValue::str(self)
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Str(items.into_iter().map(str::to_string).collect())
    }
}

macro_rules! untyped_list {
    ($ty:ty, $as:ident, $make:path) => {
        impl<'a> FromStable<'a> for $ty {
            fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
                v.$as().ok_or(Mismatch)
            }
        }
        impl IntoStable for $ty {
            fn into_stable(self) -> StableValue {
                $make(self)
            }
        }
        unboxed!($ty => $ty);
    };
}
untyped_list!(DType, as_dtype, StableValue::dtype);
untyped_list!(Generator, as_generator, StableValue::generator);
untyped_list!(Stream, as_stream, StableValue::stream);

// `Layout`, `MemoryFormat` and `DeviceIndex` box as an `int`, as PyTorch's IValue and stable
// ABI carry them: PyTorch's code for the value. Unboxing checks the range.
macro_rules! int_coded {
    ($ty:ty, $from:expr, $to:expr) => {
        impl<'a> FromStable<'a> for $ty {
            fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
                v.as_int().and_then($from).ok_or(Mismatch)
            }
        }
        impl IntoStable for $ty {
            fn into_stable(self) -> StableValue {
                StableValue::int($to(self))
            }
        }
        unboxed!($ty => $ty);
    };
}
int_coded!(Layout, Layout::from_code, Layout::code);
int_coded!(MemoryFormat, MemoryFormat::from_code, MemoryFormat::code);
int_coded!(i8, |v: i64| i8::try_from(v).ok(), i64::from);
untyped_list!(Device, as_device, StableValue::device);

// A `Scalar` parameter takes any number, as the schema type promises.
impl<'a> FromStable<'a> for Scalar {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        v.as_scalar()
            .or_else(|| v.as_int().map(Scalar::Int))
            .or_else(|| v.as_float().map(Scalar::Float))
            .or_else(|| v.as_bool().map(Scalar::Bool))
            .ok_or(Mismatch)
    }
}
unboxed!(Scalar => Scalar);
impl IntoStable for Scalar {
    fn into_stable(self) -> StableValue {
        StableValue::scalar(self)
    }
}

// Typed calls written with literals: `op.call((&x, 2))` infers `i32`, `2.0f32` is an `f32`.
impl IntoStable for i32 {
    fn into_stable(self) -> StableValue {
        StableValue::int(i64::from(self))
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Int(items.into_iter().map(i64::from).collect())
    }
}
impl IntoStable for f32 {
    fn into_stable(self) -> StableValue {
        StableValue::float(f64::from(self))
    }
    fn into_list(items: Vec<Self>) -> List {
        List::Float(items.into_iter().map(f64::from).collect())
    }
}

impl IntoStable for StableValue {
    fn into_stable(self) -> StableValue {
        self
    }
}

impl<'a, T: FromStable<'a>> FromStable<'a> for Option<T> {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        if v.is_none() {
            Ok(None)
        } else {
            T::from_stable(v).map(Some)
        }
    }
}
impl<T: IntoStable> IntoStable for Option<T> {
    fn into_stable(self) -> StableValue {
        match self {
            Some(v) => v.into_stable(),
            None => StableValue::none(),
        }
    }
}

impl<'a, T: FromStable<'a>> FromStable<'a> for Vec<T> {
    fn from_stable(v: &'a StableValue) -> Result<Self, Mismatch> {
        T::vec_from_list(v.as_list().ok_or(Mismatch)?)
    }
}
impl<T: IntoStable> IntoStable for Vec<T> {
    fn into_stable(self) -> StableValue {
        StableValue::list(T::into_list(self))
    }
}
impl<T: IntoStable + Clone> IntoStable for &[T] {
    fn into_stable(self) -> StableValue {
        StableValue::list(T::into_list(self.to_vec()))
    }
}
impl<T: IntoStable + Clone, const N: usize> IntoStable for [T; N] {
    fn into_stable(self) -> StableValue {
        StableValue::list(T::into_list(self.to_vec()))
    }
}
