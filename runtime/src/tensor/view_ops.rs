//! Views: new tensors over the same storage (`reshape`, `permute`, `transpose`, `narrow`), and
//! `contiguous`.

use smallvec::SmallVec;

use super::layout::{checked_numel, Layout, Shape, Strides};
use super::Tensor;
use crate::{Error, Result};

impl Tensor {
    fn check_dim(&self, op: &str, dim: usize) -> Result<()> {
        if dim < self.dim() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{op}: dim {dim} is out of range for a tensor with {} dims (shape {:?})",
                self.dim(),
                self.shape()
            )))
        }
    }

    /// This tensor's elements, in row-major order, with shape `shape` (same element count).
    ///
    /// A view sharing storage when the elements' layout allows it (always when contiguous);
    /// otherwise a contiguous copy.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if let Some(t) = self.adopted()? {
            return t.reshape(shape);
        }
        let numel = checked_numel(shape)?;
        if numel != self.numel() {
            return Err(Error::Shape(format!(
                "cannot reshape a tensor of shape {:?} ({} elements) into shape {shape:?} ({numel} \
                 elements)",
                self.shape(),
                self.numel()
            )));
        }
        match self.layout().view_strides(shape) {
            Some(strides) => {
                let layout =
                    Layout::from_parts(SmallVec::from_slice(shape), strides, self.offset(), numel);
                self.checked_view(layout)
            }
            None => self.contiguous()?.reshape(shape),
        }
    }

    /// A view with the dims reordered: dim `i` of the result is dim `dims[i]` of this tensor.
    /// `dims` must name every dim exactly once.
    pub fn permute(&self, dims: &[usize]) -> Result<Tensor> {
        if let Some(t) = self.adopted()? {
            return t.permute(dims);
        }
        if dims.len() != self.dim() {
            return Err(Error::Shape(format!(
                "permute of a tensor with {} dims (shape {:?}) needs {} dims, but got {dims:?}",
                self.dim(),
                self.shape(),
                self.dim()
            )));
        }
        let mut seen: SmallVec<[bool; 8]> = SmallVec::from_elem(false, dims.len());
        let mut shape = Shape::with_capacity(dims.len());
        let mut strides = Strides::with_capacity(dims.len());
        for &d in dims {
            self.check_dim("permute", d)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::InvalidArgument(format!(
                    "permute: dim {d} appears more than once in {dims:?}"
                )));
            }
            shape.push(self.shape()[d]);
            strides.push(self.strides()[d]);
        }
        let layout = Layout::from_parts(shape, strides, self.offset(), self.numel());
        self.checked_view(layout)
    }

    /// A view with dims `dim0` and `dim1` swapped.
    pub fn transpose(&self, dim0: usize, dim1: usize) -> Result<Tensor> {
        if let Some(t) = self.adopted()? {
            return t.transpose(dim0, dim1);
        }
        self.check_dim("transpose", dim0)?;
        self.check_dim("transpose", dim1)?;
        let mut layout = self.layout().clone();
        layout.shape.swap(dim0, dim1);
        layout.strides.swap(dim0, dim1);
        let layout = Layout::from_parts(layout.shape, layout.strides, layout.offset, layout.numel);
        self.checked_view(layout)
    }

    /// A view of `len` elements of dim `dim`, starting at `start`. `start + len` must not exceed
    /// the dim's size; `len` may be 0.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        if let Some(t) = self.adopted()? {
            return t.narrow(dim, start, len);
        }
        self.check_dim("narrow", dim)?;
        let size = self.shape()[dim];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::InvalidArgument(format!(
                "narrow: start {start} + length {len} exceeds the size {size} of dim {dim} (shape \
                 {:?})",
                self.shape()
            )));
        }
        let mut shape = Shape::from_slice(self.shape());
        shape[dim] = len;
        let numel = checked_numel(&shape)?;
        // The offset only moves when there are elements: an empty view keeps its parent's
        // offset, so it never points past the storage.
        let offset = if numel == 0 {
            self.offset()
        } else {
            let step = isize::try_from(start)
                .ok()
                .and_then(|s| s.checked_mul(self.strides()[dim]))
                .and_then(|s| (self.offset() as isize).checked_add(s))
                .and_then(|o| usize::try_from(o).ok());
            step.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "narrow: start {start} of dim {dim} moves the offset out of range"
                ))
            })?
        };
        let layout = Layout::from_parts(shape, Strides::from_slice(self.strides()), offset, numel);
        self.checked_view(layout)
    }

    /// This tensor if it is already contiguous (another handle, no copy), else a packed
    /// row-major copy in new storage.
    pub fn contiguous(&self) -> Result<Tensor> {
        // Asked first: another image's header answers in place, so a plugin's
        // `x.contiguous()?` on a host tensor that already is wraps nothing.
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        if let Some(t) = self.adopted()? {
            return t.contiguous();
        }
        let out = self.empty_like()?;
        if !self.device().is_meta() {
            out.copy_from(self)?;
        }
        Ok(out)
    }

    /// A view with `layout`, after checking that it stays inside the storage.
    fn checked_view(&self, layout: Layout) -> Result<Tensor> {
        layout.check_within(self.storage().nbytes() / self.dtype().size())?;
        Ok(self.view_with(layout))
    }
}
