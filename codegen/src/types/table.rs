//! THE table of primitive types: every element, scalar and native-field type opbox knows, each
//! written once. Everything else is generated from it: [`NativeScalar`](super::NativeScalar)
//! (all rows), [`ElemType`](super::ElemType) (rows marked `elem`: tensor dtypes and kernel slice
//! elements), [`ScalarType`](super::ScalarType) (rows marked `scalar`: by-value launch and
//! `#[constexpr]` parameters), and, in the runtime, `DType`, the launch-argument enums and the
//! `Element` impls, through [`for_each_elem_type!`](crate::for_each_elem_type) and
//! [`for_each_scalar_type!`](crate::for_each_scalar_type).
//!
//! Columns: variant, Rust type, Rust name, C++ spelling, size (= alignment), native type-code
//! fragment, ABI code (PyTorch's `c10::ScalarType`, the tensor dtype code that crosses the boxed
//! ABI; `_` for rows that are not dtypes), DLPack `(type code, bits)`, and the row's kinds.
//!
//! 64-bit integers are spelled `long long`, the one spelling that is 64 bits on every host NVRTC
//! targets (the signature check also accepts `long`, and so `int64_t`, where that is 64 bits).
//!
//! Kinds: `elem` (a tensor dtype and slice element), `scalar` (a by-value launch argument),
//! `constexpr` (a `#[constexpr]` value: C++ has a literal for it), `float`, `complex`. They are written in
//! that order, as the row filters below match them by position.
//!
//! `usize` is a by-value `size_t` (64 bits on every target CUDA supports), not a dtype. The float8
//! rows are `float8`'s e4m3fn and e5m2, CUDA's `__nv_fp8_e4m3` and `__nv_fp8_e5m2`, with PyTorch's
//! and DLPack 1.1's codes (`kDLFloat8_e4m3fn` 10, `kDLFloat8_e5m2` 12).
//!
//! The complex rows are `num_complex`'s `Complex32`/`Complex64` (PyTorch's complex64/complex128,
//! ABI codes 9 and 10, DLPack `kDLComplex` 5), spelled `float2`/`double2` in C++: the types that
//! `cuComplex.h`'s `cuFloatComplex`/`cuDoubleComplex` name. They are storage and conversion only
//! (no by-value scalar: `Scalar` has no complex value).
//!
//! A new row, and every enum, name and code above follows.

/// Calls `$callback! { (Variant, rust_type, "rust", "c++", size, "code", abi, (dlpack_code,
/// bits), [kinds]) ... }` with every row, for tables generated from this one. Extra tokens in
/// brackets after the callback are passed through first: `for_each_primitive!(cb [x])` calls
/// `cb! { [x] rows... }`.
#[macro_export]
macro_rules! for_each_primitive {
    ($callback:path $([$($pass:tt)*])?) => {
        $callback! {
            $([$($pass)*])?
            (F32, f32, "f32", "float", 4, "f4", 6, (2, 32), [elem scalar constexpr float])
            (F64, f64, "f64", "double", 8, "f8", 7, (2, 64), [elem scalar constexpr float])
            (F16, half::f16, "f16", "__half", 2, "f2", 5, (2, 16), [elem scalar float])
            (BF16, half::bf16, "bf16", "__nv_bfloat16", 2, "bf2", 15, (4, 16), [elem scalar float])
            (I32, i32, "i32", "int", 4, "i4", 3, (0, 32), [elem scalar constexpr])
            (I64, i64, "i64", "long long", 8, "i8", 4, (0, 64), [elem scalar constexpr])
            (U32, u32, "u32", "unsigned int", 4, "u4", 28, (1, 32), [elem scalar constexpr])
            (U64, u64, "u64", "unsigned long long", 8, "u8", 29, (1, 64), [elem scalar constexpr])
            (U8, u8, "u8", "unsigned char", 1, "u1", 0, (1, 8), [elem scalar])
            (I8, i8, "i8", "signed char", 1, "i1", 1, (0, 8), [elem scalar])
            (Bool, bool, "bool", "bool", 1, "b", 11, (6, 8), [elem scalar constexpr])
            (I16, i16, "i16", "short", 2, "i2", 2, (0, 16), [elem scalar])
            (U16, u16, "u16", "unsigned short", 2, "u2", 27, (1, 16), [elem scalar])
            (F8E4M3, float8::F8E4M3, "F8E4M3", "__nv_fp8_e4m3", 1, "f1e4m3", 24, (10, 8), [elem scalar float])
            (F8E5M2, float8::F8E5M2, "F8E5M2", "__nv_fp8_e5m2", 1, "f1e5m2", 23, (12, 8), [elem scalar float])
            (Complex32, num_complex::Complex32, "Complex32", "float2", 8, "c8", 9, (5, 64), [elem complex])
            (Complex64, num_complex::Complex64, "Complex64", "double2", 16, "c16", 10, (5, 128), [elem complex])
            (Usize, usize, "usize", "size_t", 8, "uz", _, (1, 64), [scalar])
        }
    };
}

/// Calls `$callback! { (Variant, rust_type, "rust", "c++", size, abi, (dlpack_code, bits),
/// [kinds]) ... }` with the `elem` rows: the tensor dtypes and kernel slice elements.
#[macro_export]
macro_rules! for_each_elem_type {
    ($callback:ident) => {
        $crate::for_each_primitive!($crate::__keep_elem_rows [$callback []]);
    };
}

/// Calls `$callback! { (Variant, rust_type, "rust") ... }` with the `scalar` rows: the by-value
/// launch-argument types.
#[macro_export]
macro_rules! for_each_scalar_type {
    ($callback:ident) => {
        $crate::for_each_primitive!($crate::__keep_scalar_rows [$callback []]);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __keep_elem_rows {
    ([$cb:ident [$($acc:tt)*]]) => {
        $cb! { $($acc)* }
    };
    ([$cb:ident [$($acc:tt)*]]
        ($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $code:literal, $abi:tt, $dl:tt, [elem $($k:ident)*])
        $($rest:tt)*) => {
        $crate::__keep_elem_rows! {
            [$cb [$($acc)* ($v, $t, $r, $c, $s, $abi, $dl, [elem $($k)*])]]
            $($rest)*
        }
    };
    ([$cb:ident [$($acc:tt)*]] $row:tt $($rest:tt)*) => {
        $crate::__keep_elem_rows! { [$cb [$($acc)*]] $($rest)* }
    };
}

/// Calls `$callback! { (Variant, rust_type, "rust") ... }` with the `constexpr` rows: the
/// `#[constexpr]` parameter types, which have C++ literals.
#[macro_export]
macro_rules! for_each_constexpr_type {
    ($callback:ident) => {
        $crate::for_each_primitive!($crate::__keep_constexpr_rows [$callback []]);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __keep_constexpr_rows {
    ([$cb:ident [$($acc:tt)*]]) => {
        $cb! { $($acc)* }
    };
    ([$cb:ident [$($acc:tt)*]]
        ($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $code:literal, $abi:tt, $dl:tt, [elem scalar constexpr $($k:ident)*])
        $($rest:tt)*) => {
        $crate::__keep_constexpr_rows! { [$cb [$($acc)* ($v, $t, $r)]] $($rest)* }
    };
    ([$cb:ident [$($acc:tt)*]] $row:tt $($rest:tt)*) => {
        $crate::__keep_constexpr_rows! { [$cb [$($acc)*]] $($rest)* }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __keep_scalar_rows {
    ([$cb:ident [$($acc:tt)*]]) => {
        $cb! { $($acc)* }
    };
    ([$cb:ident [$($acc:tt)*]]
        ($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $code:literal, $abi:tt, $dl:tt, [elem scalar $($k:ident)*])
        $($rest:tt)*) => {
        $crate::__keep_scalar_rows! { [$cb [$($acc)* ($v, $t, $r)]] $($rest)* }
    };
    ([$cb:ident [$($acc:tt)*]]
        ($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $code:literal, $abi:tt, $dl:tt, [scalar $($k:ident)*])
        $($rest:tt)*) => {
        $crate::__keep_scalar_rows! { [$cb [$($acc)* ($v, $t, $r)]] $($rest)* }
    };
    ([$cb:ident [$($acc:tt)*]] $row:tt $($rest:tt)*) => {
        $crate::__keep_scalar_rows! { [$cb [$($acc)*]] $($rest)* }
    };
}
