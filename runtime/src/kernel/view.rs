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

/// A buffer as the CPU build of a DSL kernel sees it: base address, element count, and the
/// parameter's name for the out-of-bounds report.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct RawSlice {
    pub(crate) addr: usize,
    pub(crate) len: u32,
    pub(crate) name: &'static str,
}

/// Why a DSL kernel's CPU build stopped: carried by an unwind that never runs the panic hook
/// (`resume_unwind`), caught by the grid runner and returned as an error.
#[derive(Debug)]
pub(crate) struct OutOfBounds {
    pub name: &'static str,
    pub index: i128,
    pub len: u32,
}

#[cold]
#[inline(never)]
fn out_of_bounds(raw: &RawSlice, index: i128) -> ! {
    std::panic::resume_unwind(Box::new(OutOfBounds {
        name: raw.name,
        index,
        len: raw.len,
    }))
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

        view!(@each $name [u32 i32 u64 i64 usize]);
    };
    (@each $name:ident [$($i:ty)*]) => {
        $(
            impl<E> Index<$i> for $name<[E]> {
                type Output = E;
                #[inline(always)]
                #[allow(unused_comparisons, clippy::cast_possible_wrap)]
                fn index(&self, i: $i) -> &E {
                    if i < 0 as $i || (i as u64) >= u64::from(self.raw.len) {
                        out_of_bounds(&self.raw, i as i128);
                    }
                    // SAFETY: `i` is inside the buffer (checked above), which `__from_raw`'s
                    // caller keeps valid for the view's use.
                    unsafe { &*(self.raw.addr as *const E).add(i as usize) }
                }
            }
        )*
    };
    (@mutable $name:ident [$($i:ty)*]) => {$(
        impl<E> IndexMut<$i> for $name<[E]> {
            #[inline(always)]
            #[allow(unused_comparisons, clippy::cast_possible_wrap)]
            fn index_mut(&mut self, i: $i) -> &mut E {
                if i < 0 as $i || (i as u64) >= u64::from(self.raw.len) {
                    out_of_bounds(&self.raw, i as i128);
                }
                // SAFETY: as for `index`; the buffer is written only through views, one element
                // per thread as on the GPU (two threads writing one element race there too).
                unsafe { &mut *(self.raw.addr as *mut E).add(i as usize) }
            }
        }
    )*};
}

view!(
    /// `In<[T]>`: a read-only device buffer (`const T*`).
    In
);
view!(
    /// `Out<[T]>`: a written device buffer (`T*`).
    Out
);
view!(@mutable Out [u32 i32 u64 i64 usize]);
view!(
    /// `InOut<[T]>`: a read and written device buffer (`T*`).
    InOut
);
view!(@mutable InOut [u32 i32 u64 i64 usize]);
