//! [`Layout`]: shape, strides and offset, and the arithmetic on them.
//!
//! Strides and the offset count elements, not bytes. Every layout the tensor module builds
//! stays inside its storage: each element's offset is below the storage's element count (checked
//! when a view is made, so data access never indexes out of bounds).

use smallvec::SmallVec;

use super::DType;
use crate::{Error, Result};

pub(crate) type Shape = SmallVec<[usize; 4]>;
pub(crate) type Strides = SmallVec<[isize; 4]>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) shape: Shape,
    pub(crate) strides: Strides,
    pub(crate) offset: usize,
    pub(crate) numel: usize,
    pub(crate) contiguous: bool,
}

/// The number of elements of `shape`, or a shape error when the product overflows.
#[inline]
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    match shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) {
        Some(n) => Ok(n),
        None => Err(numel_overflows(shape)),
    }
}

#[cold]
#[inline(never)]
fn numel_overflows(shape: &[usize]) -> Error {
    Error::Shape(format!(
        "shape {shape:?} has more elements than fit in usize (the product of its sizes overflows)"
    ))
}

/// The size in bytes of `numel` elements of `dtype`, which must fit in `isize` (Rust's limit on
/// one allocation).
#[inline]
pub(crate) fn checked_nbytes(shape: &[usize], numel: usize, dtype: DType) -> Result<usize> {
    match numel.checked_mul(dtype.size()) {
        Some(n) if n <= isize::MAX as usize => Ok(n),
        _ => Err(too_big(shape, numel, dtype)),
    }
}

#[cold]
#[inline(never)]
fn too_big(shape: &[usize], numel: usize, dtype: DType) -> Error {
    Error::Shape(format!(
        "a {dtype} tensor of shape {shape:?} has {numel} elements of {} bytes each: more than \
         isize::MAX bytes",
        dtype.size()
    ))
}

/// Row-major strides of `shape`. The caller has checked that its byte size fits in `isize`, so
/// no product overflows.
pub(crate) fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc: usize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc as isize;
        acc = acc.saturating_mul(d);
    }
    strides
}

/// PyTorch's rule: sizes of 1 place no constraint on their stride, and empty tensors are
/// contiguous. One pass, with no element count: a size of 0 anywhere makes the tensor empty.
pub(crate) fn is_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected: isize = 1;
    let mut packed = true;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d == 0 {
            return true;
        }
        if d != 1 {
            packed &= s == expected;
            expected = expected.saturating_mul(d as isize);
        }
    }
    packed
}

impl Layout {
    /// A packed row-major layout of `shape` for `dtype`; checks that its size fits.
    pub(crate) fn contiguous(shape: &[usize], dtype: DType) -> Result<Layout> {
        let numel = checked_numel(shape)?;
        checked_nbytes(shape, numel, dtype)?;
        Ok(Layout::packed(shape, numel))
    }

    /// The packed row-major layout of `shape`, whose element count (`numel`) and size the
    /// caller has already checked.
    pub(crate) fn packed(shape: &[usize], numel: usize) -> Layout {
        Layout {
            shape: SmallVec::from_slice(shape),
            strides: contiguous_strides(shape),
            offset: 0,
            numel,
            contiguous: true,
        }
    }

    /// A layout from parts whose element count the caller already knows to be `numel`.
    pub(crate) fn from_parts(
        shape: Shape,
        strides: Strides,
        offset: usize,
        numel: usize,
    ) -> Layout {
        let mut layout = Layout {
            shape,
            strides,
            ..Layout::default()
        };
        layout.set_extent(offset, numel);
        layout
    }

    /// Sets the offset and element count of a layout whose shape and strides are final, and
    /// its contiguity with them.
    pub(crate) fn set_extent(&mut self, offset: usize, numel: usize) {
        self.offset = offset;
        self.numel = numel;
        self.contiguous = is_contiguous(&self.shape, &self.strides);
    }

    pub(crate) fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The lowest and one past the highest element offset this layout touches, or `None` when it
    /// has no elements (or the arithmetic overflows, which a valid layout never does).
    pub(crate) fn span(&self) -> Option<(usize, usize)> {
        if self.numel == 0 {
            return None;
        }
        let mut lo = isize::try_from(self.offset).ok()?;
        let mut hi = lo;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = isize::try_from(d - 1).ok()?.checked_mul(s)?;
            if reach < 0 {
                lo = lo.checked_add(reach)?;
            } else {
                hi = hi.checked_add(reach)?;
            }
        }
        Some((
            usize::try_from(lo).ok()?,
            usize::try_from(hi).ok()?.checked_add(1)?,
        ))
    }

    /// Checks that every element lies inside a storage of `storage_elems` elements.
    pub(crate) fn check_within(&self, storage_elems: usize) -> Result<()> {
        if self.numel == 0 {
            return Ok(());
        }
        match self.span() {
            Some((_, end)) if end <= storage_elems => Ok(()),
            _ => Err(Error::Shape(format!(
                "a view of shape {:?}, strides {:?} and offset {} reaches outside its storage of \
                 {storage_elems} elements",
                self.shape, self.strides, self.offset
            ))),
        }
    }

    /// The element offsets of this layout, in row-major order of its indices.
    pub(crate) fn offsets(&self) -> Offsets<'_> {
        Offsets {
            shape: &self.shape,
            strides: &self.strides,
            index: SmallVec::from_elem(0, self.shape.len()),
            cur: self.offset as isize,
            remaining: self.numel,
        }
    }

    /// Strides that view this layout's elements with `new_shape` without moving them, if any
    /// exist (PyTorch's `computeStride`). `new_shape` has the same element count.
    pub(crate) fn view_strides(&self, new_shape: &[usize]) -> Option<Strides> {
        if self.contiguous {
            return Some(contiguous_strides(new_shape));
        }
        let (old, old_strides) = (&self.shape[..], &self.strides[..]);
        let mut new_strides: Strides = SmallVec::from_elem(0, new_shape.len());
        // Walk the old dims from the last, in chunks of dims that are contiguous with each other;
        // each chunk must be covered exactly by a run of new dims.
        let mut view_d = new_shape.len();
        let mut chunk_base_stride = *old_strides.last()?;
        let mut tensor_numel: usize = 1;
        let mut view_numel: usize = 1;
        for tensor_d in (0..old.len()).rev() {
            tensor_numel = tensor_numel.checked_mul(old[tensor_d])?;
            let chunk_ends = tensor_d == 0 || {
                let next = isize::try_from(tensor_numel)
                    .ok()?
                    .checked_mul(chunk_base_stride)?;
                old[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != next
            };
            if chunk_ends {
                while view_d > 0 && (view_numel < tensor_numel || new_shape[view_d - 1] == 1) {
                    new_strides[view_d - 1] = isize::try_from(view_numel)
                        .ok()?
                        .checked_mul(chunk_base_stride)?;
                    view_numel = view_numel.checked_mul(new_shape[view_d - 1])?;
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        (view_d == 0).then_some(new_strides)
    }
}

/// Iterator over a layout's element offsets (see [`Layout::offsets`]).
pub(crate) struct Offsets<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    index: SmallVec<[usize; 4]>,
    cur: isize,
    remaining: usize,
}

impl Iterator for Offsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        let out = self.cur as usize;
        self.remaining -= 1;
        if self.remaining > 0 {
            // Step the index like an odometer, last dim fastest.
            for d in (0..self.shape.len()).rev() {
                self.index[d] += 1;
                self.cur += self.strides[d];
                if self.index[d] < self.shape[d] {
                    break;
                }
                self.cur -= self.strides[d] * self.shape[d] as isize;
                self.index[d] = 0;
            }
        }
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets<'_> {}
