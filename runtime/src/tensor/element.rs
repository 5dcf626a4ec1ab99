//! [`Element`]: the Rust types that match a [`DType`].

use std::fmt;

use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

use super::DType;
use crate::{Error, Result, Scalar};

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose values a tensor of dtype [`Element::DTYPE`] holds.
///
/// Implemented for `f32`, `f64`, [`half::f16`], [`half::bf16`], `i32`, `i64`, `u32`, `u64`, `u8`,
/// `i8`, `i16`, `u16`, `bool`, [`float8::F8E4M3`], [`float8::F8E5M2`] and
/// [`num_complex::Complex32`]/[`num_complex::Complex64`] (the kernel element types), and sealed: no other type can implement it. Every
/// element type is a plain bit pattern ([`bytemuck::NoUninit`]); reading one from bytes is checked
/// ([`bytemuck::CheckedBitPattern`]), which costs nothing except for `bool`, whose byte must be 0
/// or 1.
pub trait Element:
    sealed::Sealed
    + bytemuck::NoUninit
    + bytemuck::CheckedBitPattern
    + Copy
    + PartialEq
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The dtype of tensors that hold this type.
    const DTYPE: DType;

    /// Converts a [`Scalar`] to this type. Float to integer truncates toward zero, anything to
    /// `bool` is "nonzero". A value out of range (or NaN/infinity into an integer) is an
    /// [`Error::InvalidArgument`].
    fn from_scalar(value: Scalar) -> Result<Self>;

    /// This value as a [`Scalar`]: floats as `Float`, integers as `Int`, `bool` as `Bool`.
    /// `Scalar` has no complex value: a complex element gives its real part (see
    /// [`Element::is_exact_scalar`]).
    fn to_scalar(self) -> Scalar;

    /// Whether [`Element::to_scalar`] keeps the whole value: `false` for a complex element with
    /// an imaginary part.
    fn is_exact_scalar(self) -> bool {
        true
    }

    /// The value as `Debug` prints it in a tensor.
    fn display(self) -> String {
        self.to_scalar().to_string()
    }
}

fn overflow(value: Scalar, dtype: DType) -> Error {
    Error::InvalidArgument(format!(
        "value {value} cannot be converted to {dtype} without overflow"
    ))
}

/// A float scalar into an integer type: finite, truncated toward zero, in range.
fn float_to_int<T: TryFrom<i128>>(f: f64, dtype: DType) -> Result<T> {
    let t = f.trunc();
    // [-2^63, 2^64) holds every integer dtype's range (i64's low end, u64's high end), and
    // every finite f64 in it converts to i128 exactly.
    const LO: f64 = i64::MIN as f64;
    const HI: f64 = -2.0 * (i64::MIN as f64);
    if !t.is_finite() || !(LO..HI).contains(&t) {
        return Err(overflow(Scalar::Float(f), dtype));
    }
    T::try_from(t as i128).map_err(|_| overflow(Scalar::Float(f), dtype))
}

/// An integer that fits i64 as a [`Scalar`].
fn int_scalar<T: Into<i64>>(v: T) -> Scalar {
    Scalar::Int(v.into())
}

/// A u64 above i64::MAX has no `Scalar::Int`; it becomes the nearest float, which keeps its
/// magnitude for printing and `item_scalar` (Scalar has no unsigned variant). Exact values come
/// from `to_vec::<u64>` / `item::<u64>`.
fn u64_scalar(v: u64) -> Scalar {
    i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int)
}

/// Implements [`Element`] for an integer type; `$to_scalar` turns a value into a [`Scalar`].
macro_rules! int_element {
    ($t:ty, $dtype:expr) => {
        int_element!($t, $dtype, int_scalar);
    };
    ($t:ty, $dtype:expr, $to_scalar:path) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $dtype;
            fn from_scalar(value: Scalar) -> Result<$t> {
                match value {
                    Scalar::Int(i) => <$t>::try_from(i).map_err(|_| overflow(value, $dtype)),
                    Scalar::Float(f) => float_to_int(f, $dtype),
                    Scalar::Bool(b) => Ok(<$t>::from(b)),
                }
            }
            fn to_scalar(self) -> Scalar {
                $to_scalar(self)
            }
        }
    };
}

int_element!(i32, DType::I32);
int_element!(i64, DType::I64);
int_element!(u32, DType::U32);
int_element!(u8, DType::U8);
int_element!(i8, DType::I8);
int_element!(i16, DType::I16);
int_element!(u16, DType::U16);
int_element!(u64, DType::U64, u64_scalar);

/// A scalar as f64, for the float dtypes.
fn scalar_f64(value: Scalar) -> f64 {
    value.to_f64()
}

macro_rules! float_element {
    ($t:ty, $dtype:expr, $from_f64:expr, $to_f64:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $dtype;
            fn from_scalar(value: Scalar) -> Result<$t> {
                let v = scalar_f64(value);
                let out: $t = $from_f64(v);
                // NaN and infinity pass through; a finite value must not become infinite.
                if v.is_finite() && !$to_f64(out).is_finite() {
                    return Err(overflow(value, $dtype));
                }
                Ok(out)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float($to_f64(self))
            }
        }
    };
}

float_element!(f64, DType::F64, |v: f64| v, |x: f64| x);
float_element!(f32, DType::F32, |v: f64| v as f32, f64::from);
float_element!(f16, DType::F16, f16::from_f64, f64::from);
float_element!(bf16, DType::BF16, bf16::from_f64, f64::from);
// e4m3fn has no infinity: a finite value out of its range becomes NaN, which the check refuses.
float_element!(F8E4M3, DType::F8E4M3, F8E4M3::from_f64, |x: F8E4M3| x
    .to_f64());
float_element!(F8E5M2, DType::F8E5M2, F8E5M2::from_f64, |x: F8E5M2| x
    .to_f64());

/// The complex types: a real `Scalar` becomes `re + 0i`; `to_scalar` is the real part.
macro_rules! complex_element {
    ($t:ty, $re:ty, $dtype:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $dtype;
            fn from_scalar(value: Scalar) -> Result<$t> {
                let re =
                    <$re as Element>::from_scalar(value).map_err(|_| overflow(value, $dtype))?;
                Ok(<$t>::new(re, 0.0))
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(f64::from(self.re))
            }
            fn is_exact_scalar(self) -> bool {
                self.im == 0.0
            }
            fn display(self) -> String {
                format!("{:?}{:+?}j", self.re, self.im)
            }
        }
    };
}

complex_element!(Complex32, f32, DType::Complex32);
complex_element!(Complex64, f64, DType::Complex64);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn from_scalar(value: Scalar) -> Result<bool> {
        Ok(match value {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        })
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
}

/// Runs `$body` with `$T` a type alias for the [`Element`] type of `$dtype`.
///
/// ```ignore
/// let zero: Scalar = with_dtype!(t.dtype(), T => <T as Element>::to_scalar(T::from_scalar(0i64.into())?));
/// ```
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::tensor::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::tensor::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::tensor::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::tensor::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::tensor::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::tensor::DType::F8E4M3 => {
                type $T = float8::F8E4M3;
                $body
            }
            $crate::tensor::DType::F8E5M2 => {
                type $T = float8::F8E5M2;
                $body
            }
            $crate::tensor::DType::Complex32 => {
                type $T = num_complex::Complex32;
                $body
            }
            $crate::tensor::DType::Complex64 => {
                type $T = num_complex::Complex64;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;

/// Runs `$body` with `$T` a plain unsigned integer type as wide as one element of `$dtype`:
/// moving elements around needs only their width.
macro_rules! with_width {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::U8
            | $crate::tensor::DType::I8
            | $crate::tensor::DType::Bool
            | $crate::tensor::DType::F8E4M3
            | $crate::tensor::DType::F8E5M2 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::F16
            | $crate::tensor::DType::BF16
            | $crate::tensor::DType::I16
            | $crate::tensor::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::tensor::DType::F32
            | $crate::tensor::DType::I32
            | $crate::tensor::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::tensor::DType::F64
            | $crate::tensor::DType::I64
            | $crate::tensor::DType::U64
            | $crate::tensor::DType::Complex32 => {
                type $T = u64;
                $body
            }
            $crate::tensor::DType::Complex64 => {
                type $T = u128;
                $body
            }
        }
    };
}
pub(crate) use with_width;
