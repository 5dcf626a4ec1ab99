//! The slice views of a kernel declaration: which way each buffer parameter's data flows.
//!
//! In a declaration they are markers (a launch takes a `&Tensor` for each), and the one place a
//! parameter's direction is written: the signature check, the launch checks and the dependency
//! edges a graph derives all read it from the declaration these markers build.
//!
//! In the CPU build of a `#[kernel]` (DSL) body they are the buffers themselves: `x[i]` reads an
//! element, `y[i] = v` writes one, `x.len()` is the element count (a `u32`, as on the GPU). An
//! index outside the buffer ends the launch with [`Error::IndexOutOfBounds`](crate::Error), not a
//! panic. Indices may be any of `u32`, `i32`, `u64`, `i64` and `usize`.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use super::atomics::{AtomicAdd, AtomicExch, AtomicInt};
use super::vec4::F32x4;
use crate::native::NativeType;

/// A buffer as the CPU build of a DSL kernel sees it: base address, element count, and its
/// launch-argument index for the out-of-bounds report. 16 bytes, so a block's views stay in
/// registers.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct RawSlice {
    pub(crate) addr: usize,
    pub(crate) len: u32,
    pub(crate) arg: u32,
}

/// Why a DSL kernel's CPU build stopped: carried by an unwind that never runs the panic hook
/// (`resume_unwind`), caught by the grid runner and returned as an error.
#[derive(Debug)]
pub(crate) struct OutOfBounds {
    /// The buffer's launch-argument index.
    pub arg: u32,
    pub index: i128,
    pub len: u32,
}

#[cold]
#[inline(never)]
// Scalars, not the view: a reference would keep every view in memory, reloaded at each
// element, and a three-field struct is passed through the stack, stored at each element.
fn out_of_bounds(arg: u32, len: u32, index: i128) -> ! {
    std::panic::resume_unwind(Box::new(OutOfBounds { arg, index, len }))
}

macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<T: ?Sized> {
            raw: RawSlice,
            _elem: PhantomData<*const T>,
        }

        impl<T: ?Sized> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T: ?Sized> Copy for $name<T> {}

        impl<E> $name<[E]> {
            /// The view of a CPU build; only the generated code makes one.
            ///
            /// # Safety
            /// `raw` addresses `raw.len` initialized `E`s that stay valid, and are not accessed
            /// other than through views, for as long as the view is used.
            #[doc(hidden)]
            #[inline(always)]
            pub unsafe fn __from_raw(raw: RawSlice) -> Self {
                $name { raw, _elem: PhantomData }
            }

            /// The number of elements.
            #[inline(always)]
            #[allow(clippy::len_without_is_empty)]
            pub fn len(&self) -> u32 {
                self.raw.len
            }
        }

        // One impl over every index type, so `x[0]`'s element type is known before the
        // literal's type is (rustc picks `i32` for it at the end).
        impl<E, I: DslIndex> Index<I> for $name<[E]> {
            type Output = E;
            #[inline(always)]
            fn index(&self, i: I) -> &E {
                let at = checked(self.raw, i);
                // SAFETY: `at` is inside the buffer (`checked`), which `__from_raw`'s caller
                // keeps valid for the view's use.
                unsafe { &*(self.raw.addr as *const E).add(at) }
            }
        }

        impl<E, const FAST: bool, I: DslIndex> Index<Proven<FAST, I>> for $name<[E]> {
            type Output = E;
            #[inline(always)]
            fn index(&self, p: Proven<FAST, I>) -> &E {
                let at = p.offset(self.raw);
                // SAFETY: `at` is inside the buffer (`Proven::offset`), which `__from_raw`'s
                // caller keeps valid for the view's use.
                unsafe { &*(self.raw.addr as *const E).add(at) }
            }
        }
    };
    (@mutable $name:ident) => {
        impl<E, I: DslIndex> IndexMut<I> for $name<[E]> {
            #[inline(always)]
            fn index_mut(&mut self, i: I) -> &mut E {
                let at = checked(self.raw, i);
                // SAFETY: as for `index`; the buffer is written only through views, one element
                // per thread as on the GPU (two threads writing one element race there too).
                unsafe { &mut *(self.raw.addr as *mut E).add(at) }
            }
        }

        impl<E, const FAST: bool, I: DslIndex> IndexMut<Proven<FAST, I>> for $name<[E]> {
            #[inline(always)]
            fn index_mut(&mut self, p: Proven<FAST, I>) -> &mut E {
                let at = p.offset(self.raw);
                // SAFETY: as for `index_mut` above.
                unsafe { &mut *(self.raw.addr as *mut E).add(at) }
            }
        }
    };
}

/// The integer types a DSL buffer is indexed with.
pub trait DslIndex: Copy {
    /// The offset, or `None` when negative or past `u32::MAX` (never inside a buffer).
    #[doc(hidden)]
    fn offset(self) -> Result<u32, i128>;
}

macro_rules! dsl_index {
    ($($t:ty),*) => {$(
        impl DslIndex for $t {
            #[inline(always)]
            fn offset(self) -> Result<u32, i128> {
                u32::try_from(self).map_err(|_| self as i128)
            }
        }
    )*};
}
dsl_index!(u32, i32, u64, i64, usize);

/// Vector `i` (elements `4i..4i+3`) of an f32 view: its first element's offset, or the launch
/// stops with the index of the first element past the end.
#[inline(always)]
fn checked_vec4<I: DslIndex>(raw: RawSlice, i: I) -> usize {
    match i.offset() {
        Ok(at) if u64::from(at) * 4 + 3 < u64::from(raw.len) => at as usize * 4,
        Ok(at) => out_of_bounds(raw.arg, raw.len, i128::from(at) * 4 + 3),
        Err(wide) => out_of_bounds(raw.arg, raw.len, wide.saturating_mul(4)),
    }
}

macro_rules! vec4_views {
    (load: $($name:ident),*; store: $($w:ident),*) => {
        $(impl $name<[f32]> {
            /// Elements `4i..4i+3` as one [`F32x4`] (one 16-byte load on the GPU: the launch
            /// checks that the parameter starts at a 16-byte boundary).
            #[inline(always)]
            pub fn load4<I: DslIndex>(&self, i: I) -> F32x4 {
                let at = checked_vec4(self.raw, i);
                // SAFETY: `at..at + 4` is inside the buffer (`checked_vec4`), which
                // `__from_raw`'s caller keeps valid; one unaligned 16-byte read, as on the GPU.
                let [x, y, z, w] = unsafe {
                    (self.raw.addr as *const f32).add(at).cast::<[f32; 4]>().read_unaligned()
                };
                F32x4 { x, y, z, w }
            }
        })*
        $(impl $w<[f32]> {
            /// Writes `v` to elements `4i..4i+3`.
            #[inline(always)]
            pub fn store4<I: DslIndex>(&self, i: I, v: F32x4) {
                let at = checked_vec4(self.raw, i);
                // SAFETY: `at..at + 4` is inside the buffer, written only through views, each
                // element by one thread as on the GPU; one unaligned 16-byte write.
                unsafe {
                    (self.raw.addr as *mut f32)
                        .add(at)
                        .cast::<[f32; 4]>()
                        .write_unaligned([v.x, v.y, v.z, v.w]);
                }
            }
        })*
    };
}
vec4_views!(load: In, Out, InOut; store: Out, InOut);

/// Element `i` of a view whose element is a 16-byte native type: its offset, or the launch
/// stops with the index. The size is asserted at compile time, by the `#[kernel]` expansion
/// (with the parameter's name) and again here.
#[inline(always)]
fn checked_vec16<E, I: DslIndex>(raw: RawSlice, i: I) -> usize {
    const { assert!(std::mem::size_of::<E>() == 16) };
    checked(raw, i)
}

macro_rules! native_vec_views {
    (load: $($name:ident),*; store: $($w:ident),*) => {
        $(impl<E: NativeType> $name<[E]> {
            /// Element `i`, moved as one 16-byte access on the GPU (`E` is 16 bytes; the launch
            /// checks that the parameter starts at a 16-byte boundary).
            #[inline(always)]
            pub fn load4<I: DslIndex>(&self, i: I) -> E {
                let at = checked_vec16::<E, I>(self.raw, i);
                // SAFETY: element `at` is inside the buffer (`checked`), which `__from_raw`'s
                // caller keeps valid; read unaligned, as the bytes of a u8 tensor may be.
                unsafe { (self.raw.addr as *const E).add(at).read_unaligned() }
            }
        })*
        $(impl<E: NativeType> $w<[E]> {
            /// Writes `v` to element `i` (one 16-byte access on the GPU).
            #[inline(always)]
            pub fn store4<I: DslIndex>(&self, i: I, v: E) {
                let at = checked_vec16::<E, I>(self.raw, i);
                // SAFETY: element `at` is inside the buffer, written only through views, each
                // element by one thread as on the GPU.
                unsafe { (self.raw.addr as *mut E).add(at).write_unaligned(v) }
            }
        })*
    };
}
native_vec_views!(load: In, Out, InOut; store: Out, InOut);

macro_rules! atomic_views {
    ($($name:ident),*) => {$(
        impl<E: AtomicAdd> $name<[E]> {
            /// `atomicAdd`: adds `v` to element `i` atomically; returns the old value.
            #[inline(always)]
            pub fn atomic_add<I: DslIndex>(&self, i: I, v: E) -> E {
                // SAFETY: `checked` keeps the element inside the buffer, which `__from_raw`'s
                // caller keeps valid and aligned; concurrent accesses to it are the kernel's
                // atomics (a plain access racing with them races on the GPU too).
                unsafe { E::add(self.element(i), v) }
            }
        }
        impl<E: AtomicExch> $name<[E]> {
            /// `atomicExch`: writes `v` to element `i`; returns the old value.
            #[inline(always)]
            pub fn atomic_exch<I: DslIndex>(&self, i: I, v: E) -> E {
                // SAFETY: as for `atomic_add`.
                unsafe { E::exch(self.element(i), v) }
            }
        }
        impl<E: AtomicInt> $name<[E]> {
            /// `atomicMin`: element `i` becomes the smaller of it and `v`; returns the old value.
            #[inline(always)]
            pub fn atomic_min<I: DslIndex>(&self, i: I, v: E) -> E {
                // SAFETY: as for `atomic_add`.
                unsafe { E::min(self.element(i), v) }
            }
            /// `atomicMax`: element `i` becomes the larger of it and `v`; returns the old value.
            #[inline(always)]
            pub fn atomic_max<I: DslIndex>(&self, i: I, v: E) -> E {
                // SAFETY: as for `atomic_add`.
                unsafe { E::max(self.element(i), v) }
            }
            /// `atomicCAS`: writes `v` if element `i` is `compare`; returns the old value.
            #[inline(always)]
            pub fn atomic_cas<I: DslIndex>(&self, i: I, compare: E, v: E) -> E {
                // SAFETY: as for `atomic_add`.
                unsafe { E::cas(self.element(i), compare, v) }
            }
        }
        impl<E> $name<[E]> {
            /// Element `i`'s address, or the launch stops (see [`OutOfBounds`]).
            #[inline(always)]
            fn element<I: DslIndex>(&self, i: I) -> *mut E {
                let at = checked(self.raw, i);
                // SAFETY: `at` is inside the buffer.
                unsafe { (self.raw.addr as *mut E).add(at) }
            }
        }
    )*};
}
atomic_views!(Out, InOut);

/// An index of the CPU build's split thread loop (`backend::cpu::dsl::ranged`): with `FAST`, one
/// the macro proved inside its buffer for every thread the loop runs that way, used unchecked so
/// that the loop vectorizes; without, an ordinary checked index.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Proven<const FAST: bool, I>(I);

impl<const FAST: bool, I: DslIndex> Proven<FAST, I> {
    /// # Safety
    /// With `FAST`, `i` is inside (`0 <= i < len`) every buffer it indexes.
    #[inline(always)]
    pub unsafe fn new(i: I) -> Self {
        Proven(i)
    }

    #[inline(always)]
    fn offset(self, raw: RawSlice) -> usize {
        if !FAST {
            return checked(raw, self.0);
        }
        match self.0.offset() {
            Ok(at) => {
                // A wrong proof is the macro's bug: debug builds (the tests) report it.
                debug_assert!(
                    at < raw.len,
                    "opbox: proven index {at} outside a buffer of {}",
                    raw.len
                );
                at as usize
            }
            // SAFETY: `new`'s caller proved the index inside the buffer, so not negative nor
            // past `u32::MAX`.
            Err(_) => unsafe { std::hint::unreachable_unchecked() },
        }
    }
}

/// `i` as an offset into `raw`, or the launch stops (see [`OutOfBounds`]).
#[inline(always)]
fn checked<I: DslIndex>(raw: RawSlice, i: I) -> usize {
    match i.offset() {
        Ok(at) if at < raw.len => at as usize,
        Ok(at) => out_of_bounds(raw.arg, raw.len, i128::from(at)),
        Err(wide) => out_of_bounds(raw.arg, raw.len, wide),
    }
}

view!(
    /// `In<[T]>`: a read-only device buffer (`const T*`).
    In
);
view!(
    /// `Out<[T]>`: a written device buffer (`T*`).
    Out
);
view!(@mutable Out);
view!(
    /// `InOut<[T]>`: a read and written device buffer (`T*`).
    InOut
);
view!(@mutable InOut);
