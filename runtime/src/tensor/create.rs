//! Constructors.

use super::layout::{checked_nbytes, checked_numel, Layout};
use super::storage::Storage;
use super::{DType, Device, Element, Tensor};
use crate::{Error, Result, Scalar};

impl Tensor {
    /// A new contiguous tensor of `shape`. Its elements are unspecified (today they are zero;
    /// do not rely on it, use [`Tensor::zeros`]).
    pub fn empty(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        // In a loaded plugin, memory comes from the host (its allocator, its CUDA context).
        if let Some(made) = crate::plugin::guest::host_empty(shape, dtype, device) {
            return made;
        }
        let layout = Layout::contiguous(shape, dtype)?;
        let storage = Storage::zeroed(layout.numel * dtype.size(), device)?;
        Ok(Tensor::from_impl(storage, layout, dtype))
    }

    /// A new contiguous tensor of `shape` filled with zeros (`false` for bool).
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        // Storage is zero-filled on allocation, and zero bytes are 0, 0.0 and false in every
        // dtype.
        Tensor::empty(shape, dtype, device)
    }

    /// A new contiguous tensor of `shape` with every element `value`, converted to `dtype` (an
    /// error when it does not fit: 300 into u8, 1e300 into f32, NaN into i32).
    pub fn full(
        shape: &[usize],
        value: impl Into<Scalar>,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let value = value.into();
        let t = Tensor::empty(shape, dtype, device)?;
        if device.is_meta() {
            // No data to fill, but the value must still fit the dtype.
            super::with_dtype!(dtype, T => T::from_scalar(value).map(|_| ()))?;
        } else {
            t.fill_(value)?;
        }
        Ok(t)
    }

    /// A 0-dim tensor holding `value`, converted to `dtype`.
    pub fn scalar_tensor(value: impl Into<Scalar>, dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full(&[], value, dtype, device)
    }

    /// A contiguous cpu tensor of `shape` holding `data` (row-major). `data.len()` must equal
    /// the product of `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_slice(&data, shape)
    }

    /// A contiguous cpu tensor of `shape` holding a copy of `data` (row-major). `data.len()`
    /// must equal the product of `shape`.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_bytes(bytemuck::cast_slice::<T, u8>(data), shape, T::DTYPE)
    }

    /// A contiguous cpu tensor of `shape` and `dtype` holding a copy of `bytes`, which must be
    /// exactly its size.
    pub(crate) fn from_bytes(bytes: &[u8], shape: &[usize], dtype: DType) -> Result<Tensor> {
        // In a loaded plugin, the host makes it (ABI 1.5) and checks the size as
        // `packed_numel` does: the tensor is then the host's own. Only a refusal is checked
        // again here, for its typed error.
        if let Some(made) = crate::plugin::guest::host_from_bytes(bytes, shape, dtype) {
            return made.map_err(|refused| match packed_numel(bytes, shape, dtype) {
                Err(e) => e,
                Ok(_) => refused,
            });
        }
        let numel = packed_numel(bytes, shape, dtype)?;
        let storage = Storage::cpu_from_bytes(bytes)?;
        Ok(Tensor::from_impl(
            storage,
            Layout::packed(shape, numel),
            dtype,
        ))
    }

    /// A new contiguous tensor with this tensor's shape, dtype and device; elements unspecified.
    pub fn empty_like(&self) -> Result<Tensor> {
        Ok(Tensor::empty(self.shape(), self.dtype(), self.device())?.tagged(self.native_schema()))
    }

    /// A new contiguous tensor of zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), self.dtype(), self.device())
    }

    /// A new contiguous tensor with this tensor's shape, dtype and device, filled with `value`.
    pub fn full_like(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        Tensor::full(self.shape(), value, self.dtype(), self.device())
    }
}

/// The element count of a contiguous tensor of `shape` and `dtype`, checked to be exactly what
/// `bytes` holds.
fn packed_numel(bytes: &[u8], shape: &[usize], dtype: DType) -> Result<usize> {
    let numel = checked_numel(shape)?;
    let size = dtype.size();
    if checked_nbytes(shape, numel, dtype)? == bytes.len() {
        return Ok(numel);
    }
    Err(Error::Shape(if bytes.len().is_multiple_of(size) {
        format!(
            "{} values cannot fill a tensor of shape {shape:?}, which has {numel} elements",
            bytes.len() / size,
        )
    } else {
        format!(
            "{} bytes are not a whole number of {dtype} elements",
            bytes.len()
        )
    }))
}
