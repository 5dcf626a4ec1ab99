//! The CPU build's atomics on DSL buffers: `y.atomic_add(i, v)` and the others are real atomic
//! read-modify-writes on the element (`std::sync::atomic`, relaxed, as CUDA's are), so blocks
//! running in parallel across cores see what CUDA's threads see. Each returns the old value.
//! Which element types have which atomic is the table `opbox_codegen::cuda::dsl_prelude::
//! DSL_ATOMICS`; the traits here implement exactly its rows.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Elements with `atomic_add`.
pub trait AtomicAdd: Copy {
    /// # Safety
    /// `p` is valid, aligned, and every concurrent access to it is atomic.
    #[doc(hidden)]
    unsafe fn add(p: *mut Self, v: Self) -> Self;
}

/// Elements with `atomic_exch`.
pub trait AtomicExch: Copy {
    /// # Safety
    /// As [`AtomicAdd::add`].
    #[doc(hidden)]
    unsafe fn exch(p: *mut Self, v: Self) -> Self;
}

/// Integers: `atomic_min`, `atomic_max` and `atomic_cas` too.
pub trait AtomicInt: AtomicAdd + AtomicExch {
    /// # Safety
    /// As [`AtomicAdd::add`].
    #[doc(hidden)]
    unsafe fn min(p: *mut Self, v: Self) -> Self;
    /// # Safety
    /// As [`AtomicAdd::add`].
    #[doc(hidden)]
    unsafe fn max(p: *mut Self, v: Self) -> Self;
    /// Writes `v` if the element is `compare`; returns the element as it was.
    ///
    /// # Safety
    /// As [`AtomicAdd::add`].
    #[doc(hidden)]
    unsafe fn cas(p: *mut Self, compare: Self, v: Self) -> Self;
}

macro_rules! atomic_ints {
    ($($t:ty => $a:ty),*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn add(p: *mut $t, v: $t) -> $t {
                // SAFETY: the caller's contract; `$a` has `$t`'s size and alignment.
                unsafe { <$a>::from_ptr(p) }.fetch_add(v, Relaxed)
            }
        }
        impl AtomicExch for $t {
            #[inline(always)]
            unsafe fn exch(p: *mut $t, v: $t) -> $t {
                // SAFETY: as for `add`.
                unsafe { <$a>::from_ptr(p) }.swap(v, Relaxed)
            }
        }
        impl AtomicInt for $t {
            #[inline(always)]
            unsafe fn min(p: *mut $t, v: $t) -> $t {
                // SAFETY: as for `add`.
                unsafe { <$a>::from_ptr(p) }.fetch_min(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn max(p: *mut $t, v: $t) -> $t {
                // SAFETY: as for `add`.
                unsafe { <$a>::from_ptr(p) }.fetch_max(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn cas(p: *mut $t, compare: $t, v: $t) -> $t {
                // SAFETY: as for `add`.
                match unsafe { <$a>::from_ptr(p) }.compare_exchange(compare, v, Relaxed, Relaxed) {
                    Ok(old) | Err(old) => old,
                }
            }
        }
    )*};
}
atomic_ints!(i32 => AtomicI32, u32 => AtomicU32, i64 => AtomicI64, u64 => AtomicU64);

/// Float add as CUDA's `atomicAdd` computes it (one rounding of old + v), by compare-exchange on
/// the bits.
macro_rules! atomic_float_add {
    ($($t:ty => $a:ty),*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn add(p: *mut $t, v: $t) -> $t {
                // SAFETY: the caller's contract; the float and `$a` have one size and alignment.
                let a = unsafe { <$a>::from_ptr(p.cast()) };
                let old = a
                    .fetch_update(Relaxed, Relaxed, |bits| Some((<$t>::from_bits(bits) + v).to_bits()))
                    .unwrap_or_else(|bits| bits);
                <$t>::from_bits(old)
            }
        }
    )*};
}
atomic_float_add!(f32 => AtomicU32, f64 => AtomicU64);

impl AtomicExch for f32 {
    #[inline(always)]
    unsafe fn exch(p: *mut f32, v: f32) -> f32 {
        // SAFETY: the caller's contract; f32 and AtomicU32 have one size and alignment.
        f32::from_bits(unsafe { AtomicU32::from_ptr(p.cast()) }.swap(v.to_bits(), Relaxed))
    }
}
