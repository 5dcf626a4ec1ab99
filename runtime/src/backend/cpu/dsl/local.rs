//! A `#[kernel]`'s local arrays in the CPU build: `let mut v = [init; N];` is a [`LocalArray`]
//! of N copies of `init`, indexed with the DSL's integer types like a buffer, and checked like
//! one: an index outside it ends the launch with [`Error::IndexOutOfBounds`](crate::Error)
//! naming the array. On CUDA it is a C++ array `T v[N]` (in registers where every index is a
//! constant after unrolling).
//!
//! N is a literal or a `#[constexpr]` param, which the CPU build only knows at launch: the
//! elements sit inline up to `INLINE` (the literal, or a fixed capacity the macro picks for a
//! constexpr length) and on the heap past it.

use std::ops::{Index, IndexMut};

use smallvec::SmallVec;

use crate::kernel::view::DslIndex;

/// A kernel thread's array of `len` elements, `INLINE` of them without the heap.
#[derive(Clone, Debug)]
pub struct LocalArray<T, const INLINE: usize> {
    elems: SmallVec<[T; INLINE]>,
    name: &'static str,
}

/// Why a local array's index stopped the launch: carried by an unwind that never runs the panic
/// hook (`resume_unwind`), caught by the grid runner and returned as an error.
#[derive(Debug)]
pub(crate) struct LocalOutOfBounds {
    pub name: &'static str,
    pub index: i128,
    pub len: u32,
}

#[cold]
#[inline(never)]
fn out_of_bounds(name: &'static str, len: usize, index: i128) -> ! {
    std::panic::resume_unwind(Box::new(LocalOutOfBounds {
        name,
        index,
        len: len as u32,
    }))
}

impl<T: Clone, const INLINE: usize> LocalArray<T, INLINE> {
    /// `[init; len]`, bound to the local `name` (for the out-of-bounds report).
    #[inline(always)]
    pub fn new(init: T, len: usize, name: &'static str) -> Self {
        LocalArray {
            elems: SmallVec::from_elem(init, len),
            name,
        }
    }

    #[inline(always)]
    fn at<I: DslIndex>(&self, i: I) -> usize {
        match i.offset() {
            Ok(at) if (at as usize) < self.elems.len() => at as usize,
            Ok(at) => out_of_bounds(self.name, self.elems.len(), i128::from(at)),
            Err(wide) => out_of_bounds(self.name, self.elems.len(), wide),
        }
    }
}

impl<T: Clone, I: DslIndex, const INLINE: usize> Index<I> for LocalArray<T, INLINE> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: I) -> &T {
        let at = self.at(i);
        &self.elems[at]
    }
}

impl<T: Clone, I: DslIndex, const INLINE: usize> IndexMut<I> for LocalArray<T, INLINE> {
    #[inline(always)]
    fn index_mut(&mut self, i: I) -> &mut T {
        let at = self.at(i);
        &mut self.elems[at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_like_an_array_and_reports_the_name() {
        let mut v = LocalArray::<f32, 4>::new(1.5, 3, "v");
        v[2u32] += 1.0;
        assert_eq!((v[0i32], v[2u64]), (1.5, 2.5));
        let past = std::panic::catch_unwind(|| v[3u32]).unwrap_err();
        let oob = past.downcast::<LocalOutOfBounds>().unwrap();
        assert_eq!((oob.name, oob.index, oob.len), ("v", 3, 3));
        let negative = std::panic::catch_unwind(|| v[-1i32]).unwrap_err();
        assert_eq!(negative.downcast::<LocalOutOfBounds>().unwrap().index, -1);
        // A constexpr length past the inline capacity spills to the heap and still indexes.
        let mut long = LocalArray::<u32, 2>::new(7, 40, "long");
        long[39u32] = 1;
        assert_eq!((long[0u32], long[39u32]), (7, 1));
    }
}
