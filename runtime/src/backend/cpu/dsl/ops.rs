//! The CPU build's operators: the Rust twins of the C++ helpers in
//! `opbox_codegen::cuda::dsl_prelude`, so that one DSL body computes the same bits on both
//! sides. The `#[kernel]` macro rewrites `a + b` to `ops::add(a, b)`, `x as T` to
//! `ops::cast::<T, _>(x)` and `x.sqrt()` to `ops::Float::sqrt(x)`; comparisons, `& | ^ !` and
//! indexing stay Rust's own, which already agree with C++.
//!
//! The rules (documented once, in `dsl_prelude`): integer arithmetic wraps in every build
//! profile; `x / 0 == x % 0 == 0`, `MIN / -1 == MIN`; shifts mask their count; float-to-int
//! casts saturate (Rust's `as`); `f16`/`bf16` compute and cast through `f32`.
//!
//! Every impl is generated from the one type table (`for_each_elem_type!`), one kind of row at a
//! time (integer, float, half, bool, told apart by the row's Rust name).

use half::{bf16, f16};

/// What a cast goes through: an integer's value, or a float.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Repr {
    Int(i128),
    F32(f32),
    F64(f64),
}

/// A DSL scalar: every element type of the table.
pub trait Scalar: Copy {
    #[doc(hidden)]
    fn repr(self) -> Repr;
}

/// A type an `as` cast may produce (every scalar but `bool`, as in Rust).
pub trait FromRepr: Scalar {
    #[doc(hidden)]
    fn from_repr(r: Repr) -> Self;
}

/// `x as T`, for every pair of DSL scalars (`f16`/`bf16` included, through `f32`).
#[inline(always)]
pub fn cast<T: FromRepr, U: Scalar>(x: U) -> T {
    T::from_repr(x.repr())
}

/// `+ - * / %` and unary `-` with the DSL's rules.
pub trait Arith: Copy {
    /// `self + o`, wrapping for integers.
    fn add(self, o: Self) -> Self;
    /// `self - o`, wrapping for integers.
    fn sub(self, o: Self) -> Self;
    /// `self * o`, wrapping for integers.
    fn mul(self, o: Self) -> Self;
    /// `self / o`: 0 for an integer divided by 0, `MIN` for `MIN / -1`.
    fn div(self, o: Self) -> Self;
    /// `self % o`: 0 for an integer remainder by 0 and for `MIN % -1`.
    fn rem(self, o: Self) -> Self;
    /// `-self`, wrapping for integers.
    fn neg(self) -> Self;
}

/// `<<` and `>>` with a count of any integer type, masked to the bit width.
pub trait Shift<R>: Copy {
    /// `self << r`, the count masked to the bit width.
    fn shl(self, r: R) -> Self;
    /// `self >> r` (arithmetic for signed types), the count masked to the bit width.
    fn shr(self, r: R) -> Self;
}

/// The shift count as Rust's `wrapping_shl` takes it (its low bits are all that matter).
#[doc(hidden)]
pub trait ShiftCount: Copy {
    fn count(self) -> u32;
}

/// Numeric methods of integers and floats.
pub trait Num: Copy {
    /// The absolute value (wrapping: `MIN.abs() == MIN`).
    fn abs(self) -> Self;
    /// The smaller of the two (for floats, the other operand when one is NaN).
    fn min(self, o: Self) -> Self;
    /// The larger of the two (for floats, the other operand when one is NaN).
    fn max(self, o: Self) -> Self;
    /// `self` limited to `lo..=hi`.
    fn clamp(self, lo: Self, hi: Self) -> Self;
}

/// Numeric methods of floats; `f16`/`bf16` compute each in `f32` and round once.
pub trait Float: Num {
    /// The square root.
    fn sqrt(self) -> Self;
    /// `e^self`.
    fn exp(self) -> Self;
    /// `2^self`.
    fn exp2(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// The base-2 logarithm.
    fn log2(self) -> Self;
    /// The base-10 logarithm.
    fn log10(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The sine (radians).
    fn sin(self) -> Self;
    /// The cosine (radians).
    fn cos(self) -> Self;
    /// `self^e`.
    fn powf(self, e: Self) -> Self;
    /// `self * a + b`, rounded once (C++'s `fma`).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Rounded toward negative infinity.
    fn floor(self) -> Self;
    /// Rounded toward positive infinity.
    fn ceil(self) -> Self;
    /// Rounded to the nearest integer, halves away from zero.
    fn round(self) -> Self;
    /// Rounded toward zero.
    fn trunc(self) -> Self;
    /// `1 / self`.
    fn recip(self) -> Self;
    /// Whether `self` is NaN.
    fn is_nan(self) -> bool;
}

macro_rules! binop_fns {
    ($($f:ident),*) => {$(
        #[doc = concat!("`", stringify!($f), "(a, b)`: the rewrite of the binary operator, [`Arith::", stringify!($f), "`].")]
        #[inline(always)]
        pub fn $f<T: Arith>(a: T, b: T) -> T {
            a.$f(b)
        }
    )*};
}
binop_fns!(add, sub, mul, div, rem);

/// `-a`: the rewrite of unary `-`.
#[inline(always)]
pub fn neg<T: Arith>(a: T) -> T {
    a.neg()
}

/// `a << r`: the rewrite of `<<`.
#[inline(always)]
pub fn shl<T: Shift<R>, R>(a: T, r: R) -> T {
    a.shl(r)
}

/// `a >> r`: the rewrite of `>>`.
#[inline(always)]
pub fn shr<T: Shift<R>, R>(a: T, r: R) -> T {
    a.shr(r)
}

/// `a += b` and the other compound assignments: `place` is evaluated once.
macro_rules! assign_fns {
    ($($f:ident => $op:ident),*) => {$(
        #[doc = concat!("The rewrite of the compound assignment: `*place = ", stringify!($op), "(*place, b)`.")]
        #[inline(always)]
        pub fn $f<T: Arith>(place: &mut T, b: T) {
            *place = place.$op(b);
        }
    )*};
}
assign_fns!(add_assign => add, sub_assign => sub, mul_assign => mul, div_assign => div, rem_assign => rem);

/// `place <<= r`.
#[inline(always)]
pub fn shl_assign<T: Shift<R>, R>(place: &mut T, r: R) {
    *place = place.shl(r);
}

/// `place >>= r`.
#[inline(always)]
pub fn shr_assign<T: Shift<R>, R>(place: &mut T, r: R) {
    *place = place.shr(r);
}

/// The float `max` of the DSL: the other operand for one NaN, `+0.0` over `-0.0`, and for two
/// NaNs the GPU's: an f32 pair gives `max.f32`'s canonical NaN (`0x7fffffff`, so the f32 build
/// can be one `fmaxf`), an f64 pair the right operand. Written so that only rare cases branch
/// (a NaN on the left, equal operands): the usual case is std's branch-free `max`, where a
/// comparison chain mispredicts on data.
macro_rules! float_min_max {
    ($t:ty) => {
        #[inline(always)]
        fn max(self, o: $t) -> $t {
            if self.is_nan() {
                o.after_nan()
            } else if self == o {
                // Equal: the same bits, or zeros of both signs, of which +0.0 has the bits
                // both share.
                <$t>::from_bits(self.to_bits() & o.to_bits())
            } else {
                <$t>::max(self, o)
            }
        }
        #[inline(always)]
        fn min(self, o: $t) -> $t {
            if self.is_nan() {
                o.after_nan()
            } else if self == o {
                <$t>::from_bits(self.to_bits() | o.to_bits())
            } else {
                <$t>::min(self, o)
            }
        }
    };
}

/// What `max`/`min` give with a NaN on the left: the right operand, unless it is a NaN too and
/// the GPU's f32 `fmaxf`/`fminf` give their canonical NaN.
trait AfterNan {
    fn after_nan(self) -> Self;
}

impl AfterNan for f32 {
    #[inline(always)]
    fn after_nan(self) -> f32 {
        if self.is_nan() {
            f32::from_bits(GPU_F32_NAN)
        } else {
            self
        }
    }
}

impl AfterNan for f64 {
    #[inline(always)]
    fn after_nan(self) -> f64 {
        self
    }
}

/// The NaN an H200's `max.f32`/`min.f32` return for two NaNs (measured).
const GPU_F32_NAN: u32 = 0x7fff_ffff;

macro_rules! dsl_scalars {
    ($(($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $abi:tt, $dl:tt, $kinds:tt))*) => {
        $( dsl_scalars!(@row $v $t); )*
        dsl_shift_all!([$(($v $t))*] [$($v $t),*]);
    };
    (@row Bool $t:ty) => {
        impl Scalar for bool {
            #[inline(always)]
            fn repr(self) -> Repr { Repr::Int(self as i128) }
        }
    };
    (@row F16 $t:ty) => { dsl_scalars!(@half f16); };
    (@row BF16 $t:ty) => { dsl_scalars!(@half bf16); };
    // The DSL has no fp8 arithmetic: `#[kernel]` refuses the float8 types.
    (@row F8E4M3 $t:ty) => {};
    (@row F8E5M2 $t:ty) => {};
    // Nor complex arithmetic.
    (@row Complex32 $t:ty) => {};
    (@row Complex64 $t:ty) => {};
    (@row F32 $t:ty) => { dsl_scalars!(@float f32 F32); };
    (@row F64 $t:ty) => { dsl_scalars!(@float f64 F64); };
    (@row $v:ident $t:ty) => { dsl_scalars!(@int $t); };
    (@int $t:ty) => {
        impl Scalar for $t {
            #[inline(always)]
            fn repr(self) -> Repr { Repr::Int(self as i128) }
        }
        impl FromRepr for $t {
            #[inline(always)]
            fn from_repr(r: Repr) -> $t {
                match r { Repr::Int(v) => v as $t, Repr::F32(f) => f as $t, Repr::F64(f) => f as $t }
            }
        }
        impl Arith for $t {
            #[inline(always)] fn add(self, o: $t) -> $t { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: $t) -> $t { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: $t) -> $t { self.wrapping_mul(o) }
            #[inline(always)] fn div(self, o: $t) -> $t { if o == 0 { 0 } else { self.wrapping_div(o) } }
            #[inline(always)] fn rem(self, o: $t) -> $t { if o == 0 { 0 } else { self.wrapping_rem(o) } }
            #[inline(always)] fn neg(self) -> $t { (0 as $t).wrapping_sub(self) }
        }
        impl ShiftCount for $t {
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            fn count(self) -> u32 { self as u32 }
        }
        impl Num for $t {
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn abs(self) -> $t { if self < 0 as $t { self.neg() } else { self } }
            #[inline(always)] fn min(self, o: $t) -> $t { if self < o { self } else { o } }
            #[inline(always)] fn max(self, o: $t) -> $t { if self > o { self } else { o } }
            #[inline(always)] fn clamp(self, lo: $t, hi: $t) -> $t { if self < lo { lo } else if self > hi { hi } else { self } }
        }
    };
    (@float $t:ident $variant:ident) => {
        impl Scalar for $t {
            #[inline(always)]
            fn repr(self) -> Repr { Repr::$variant(self) }
        }
        impl FromRepr for $t {
            #[inline(always)]
            fn from_repr(r: Repr) -> $t {
                match r { Repr::Int(v) => v as $t, Repr::F32(f) => f as $t, Repr::F64(f) => f as $t }
            }
        }
        impl Arith for $t {
            #[inline(always)] fn add(self, o: $t) -> $t { self + o }
            #[inline(always)] fn sub(self, o: $t) -> $t { self - o }
            #[inline(always)] fn mul(self, o: $t) -> $t { self * o }
            #[inline(always)] fn div(self, o: $t) -> $t { self / o }
            #[inline(always)] fn rem(self, o: $t) -> $t { self % o }
            #[inline(always)] fn neg(self) -> $t { -self }
        }
        impl Num for $t {
            #[inline(always)]
            fn abs(self) -> $t { <$t>::abs(self) }
            float_min_max!($t);
            #[inline(always)] fn clamp(self, lo: $t, hi: $t) -> $t { if self < lo { lo } else if self > hi { hi } else { self } }
        }
        impl Float for $t {
            #[inline(always)] fn sqrt(self) -> $t { <$t>::sqrt(self) }
            #[inline(always)] fn exp(self) -> $t { <$t>::exp(self) }
            #[inline(always)] fn exp2(self) -> $t { <$t>::exp2(self) }
            #[inline(always)] fn ln(self) -> $t { <$t>::ln(self) }
            #[inline(always)] fn log2(self) -> $t { <$t>::log2(self) }
            #[inline(always)] fn log10(self) -> $t { <$t>::log10(self) }
            #[inline(always)] fn tanh(self) -> $t { <$t>::tanh(self) }
            #[inline(always)] fn sin(self) -> $t { <$t>::sin(self) }
            #[inline(always)] fn cos(self) -> $t { <$t>::cos(self) }
            #[inline(always)] fn powf(self, e: $t) -> $t { <$t>::powf(self, e) }
            #[inline(always)] fn mul_add(self, a: $t, b: $t) -> $t { <$t>::mul_add(self, a, b) }
            #[inline(always)] fn floor(self) -> $t { <$t>::floor(self) }
            #[inline(always)] fn ceil(self) -> $t { <$t>::ceil(self) }
            #[inline(always)] fn round(self) -> $t { <$t>::round(self) }
            #[inline(always)] fn trunc(self) -> $t { <$t>::trunc(self) }
            #[inline(always)] fn recip(self) -> $t { 1.0 / self }
            #[inline(always)] fn is_nan(self) -> bool { <$t>::is_nan(self) }
        }
    };
    (@half $t:ident) => {
        impl Scalar for $t {
            #[inline(always)]
            fn repr(self) -> Repr { Repr::F32(self.to_f32()) }
        }
        impl FromRepr for $t {
            #[inline(always)]
            fn from_repr(r: Repr) -> $t {
                $t::from_f32(match r { Repr::Int(v) => v as f32, Repr::F32(f) => f, Repr::F64(f) => f as f32 })
            }
        }
        impl Arith for $t {
            #[inline(always)] fn add(self, o: $t) -> $t { $t::from_f32(self.to_f32() + o.to_f32()) }
            #[inline(always)] fn sub(self, o: $t) -> $t { $t::from_f32(self.to_f32() - o.to_f32()) }
            #[inline(always)] fn mul(self, o: $t) -> $t { $t::from_f32(self.to_f32() * o.to_f32()) }
            #[inline(always)] fn div(self, o: $t) -> $t { $t::from_f32(self.to_f32() / o.to_f32()) }
            #[inline(always)] fn rem(self, o: $t) -> $t { $t::from_f32(self.to_f32() % o.to_f32()) }
            #[inline(always)] fn neg(self) -> $t { $t::from_bits(self.to_bits() ^ 0x8000) }
        }
        impl Num for $t {
            #[inline(always)] fn abs(self) -> $t { $t::from_bits(self.to_bits() & 0x7fff) }
            #[inline(always)] fn min(self, o: $t) -> $t { $t::from_f32(Num::min(self.to_f32(), o.to_f32())) }
            #[inline(always)] fn max(self, o: $t) -> $t { $t::from_f32(Num::max(self.to_f32(), o.to_f32())) }
            #[inline(always)] fn clamp(self, lo: $t, hi: $t) -> $t { $t::from_f32(Num::clamp(self.to_f32(), lo.to_f32(), hi.to_f32())) }
        }
        impl Float for $t {
            #[inline(always)] fn sqrt(self) -> $t { $t::from_f32(self.to_f32().sqrt()) }
            #[inline(always)] fn exp(self) -> $t { $t::from_f32(self.to_f32().exp()) }
            #[inline(always)] fn exp2(self) -> $t { $t::from_f32(self.to_f32().exp2()) }
            #[inline(always)] fn ln(self) -> $t { $t::from_f32(self.to_f32().ln()) }
            #[inline(always)] fn log2(self) -> $t { $t::from_f32(self.to_f32().log2()) }
            #[inline(always)] fn log10(self) -> $t { $t::from_f32(self.to_f32().log10()) }
            #[inline(always)] fn tanh(self) -> $t { $t::from_f32(self.to_f32().tanh()) }
            #[inline(always)] fn sin(self) -> $t { $t::from_f32(self.to_f32().sin()) }
            #[inline(always)] fn cos(self) -> $t { $t::from_f32(self.to_f32().cos()) }
            #[inline(always)] fn powf(self, e: $t) -> $t { $t::from_f32(self.to_f32().powf(e.to_f32())) }
            #[inline(always)] fn mul_add(self, a: $t, b: $t) -> $t { $t::from_f32(self.to_f32().mul_add(a.to_f32(), b.to_f32())) }
            #[inline(always)] fn floor(self) -> $t { $t::from_f32(self.to_f32().floor()) }
            #[inline(always)] fn ceil(self) -> $t { $t::from_f32(self.to_f32().ceil()) }
            #[inline(always)] fn round(self) -> $t { $t::from_f32(self.to_f32().round()) }
            #[inline(always)] fn trunc(self) -> $t { $t::from_f32(self.to_f32().trunc()) }
            #[inline(always)] fn recip(self) -> $t { $t::from_f32(1.0 / self.to_f32()) }
            #[inline(always)] fn is_nan(self) -> bool { self.to_f32().is_nan() }
        }
    };
}

/// `dsl_shift_rhs` for each row in turn, with all rows as the count types.
macro_rules! dsl_shift_all {
    ([] $all:tt) => {};
    ([($v:ident $t:ty) $($rest:tt)*] $all:tt) => {
        dsl_shift_rhs!($v $t, $all);
        dsl_shift_all!([$($rest)*] $all);
    };
}

/// `Shift<R>` for every integer `$t` and integer count type `R` (rows told apart by variant).
macro_rules! dsl_shift_rhs {
    (Bool $t:ty, $all:tt) => {};
    (F16 $t:ty, $all:tt) => {};
    (BF16 $t:ty, $all:tt) => {};
    (F8E4M3 $t:ty, $all:tt) => {};
    (F8E5M2 $t:ty, $all:tt) => {};
    (Complex32 $t:ty, $all:tt) => {};
    (Complex64 $t:ty, $all:tt) => {};
    (F32 $t:ty, $all:tt) => {};
    (F64 $t:ty, $all:tt) => {};
    ($v:ident $t:ty, [$($rv:ident $rt:ty),*]) => {
        $( dsl_shift_rhs!(@pair $t, $rv $rt); )*
    };
    (@pair $t:ty, Bool $rt:ty) => {};
    (@pair $t:ty, F16 $rt:ty) => {};
    (@pair $t:ty, BF16 $rt:ty) => {};
    (@pair $t:ty, F8E4M3 $rt:ty) => {};
    (@pair $t:ty, F8E5M2 $rt:ty) => {};
    (@pair $t:ty, Complex32 $rt:ty) => {};
    (@pair $t:ty, Complex64 $rt:ty) => {};
    (@pair $t:ty, F32 $rt:ty) => {};
    (@pair $t:ty, F64 $rt:ty) => {};
    (@pair $t:ty, $rv:ident $rt:ty) => {
        impl Shift<$rt> for $t {
            #[inline(always)] fn shl(self, r: $rt) -> $t { self.wrapping_shl(r.count()) }
            #[inline(always)] fn shr(self, r: $rt) -> $t { self.wrapping_shr(r.count()) }
        }
    };
}

opbox_codegen::for_each_elem_type!(dsl_scalars);

#[cfg(test)]
mod tests {
    use super::Num;

    /// CUDA's `fmaxf`/`fminf` as the comparison chain that defines them, as an H200 computes
    /// them: the other operand for one NaN, the canonical `0x7fffffff` for two, `+0.0` over
    /// `-0.0` for max and `-0.0` for min.
    fn max_chain(a: f32, b: f32) -> f32 {
        if a.is_nan() && b.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else if a.is_nan() {
            b
        } else if b.is_nan() || a > b {
            a
        } else if b > a || a.is_sign_negative() {
            b
        } else {
            a
        }
    }

    fn min_chain(a: f32, b: f32) -> f32 {
        if a.is_nan() && b.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else if a.is_nan() {
            b
        } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
            a
        } else {
            b
        }
    }

    #[test]
    fn float_min_max_match_cudas_definition_bit_for_bit() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc0_1234),
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::MAX,
            f32::MIN,
            3.5,
        ];
        for a in specials {
            for b in specials {
                let (got, want) = (Num::max(a, b), max_chain(a, b));
                assert_eq!(got.to_bits(), want.to_bits(), "max({a:?}, {b:?})");
                let (got, want) = (Num::min(a, b), min_chain(a, b));
                assert_eq!(got.to_bits(), want.to_bits(), "min({a:?}, {b:?})");
            }
        }
        let (a, b) = (0.0f64, -0.0f64);
        assert_eq!(Num::max(b, a).to_bits(), 0.0f64.to_bits());
        assert_eq!(Num::min(a, b).to_bits(), (-0.0f64).to_bits());
    }
}
