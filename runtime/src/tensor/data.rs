//! Element access: `to_vec`, `with_slice`, `with_slice_mut`, `copy_from`, `fill_`, `item`.
//!
//! Reading or writing elements needs host-visible storage; on a meta tensor it is
//! [`Error::Unsupported`]. The exceptions are `fill_` and `copy_from` between meta tensors, which
//! check their arguments and then have nothing to do.

use bytemuck::checked::{self, CheckedCastError};
use bytemuck::Pod;

use super::layout::Layout;
use super::storage::Storage;
use super::{with_dtype, with_width, DType, Element, Tensor};
use crate::{Error, Result, Scalar};

/// Bytes as elements of `T`, checking that each is a valid `T` (only `bool` can fail).
fn as_elems<'a, T: Element>(op: &str, bytes: &'a [u8]) -> Result<&'a [T]> {
    checked::try_cast_slice(bytes).map_err(|e| cast_error(op, T::DTYPE, e))
}

fn as_elems_mut<'a, T: Element>(op: &str, bytes: &'a mut [u8]) -> Result<&'a mut [T]> {
    checked::try_cast_slice_mut(bytes).map_err(|e| cast_error(op, T::DTYPE, e))
}

fn cast_error(op: &str, dtype: DType, e: CheckedCastError) -> Error {
    match e {
        CheckedCastError::InvalidBitPattern => Error::InvalidArgument(format!(
            "{op}: this {dtype} tensor holds a byte that is not a valid {dtype} (a bool must be 0 or \
             1); whatever wrote it broke the dtype's invariant"
        )),
        CheckedCastError::PodCastError(e) => Error::InvalidArgument(format!(
            "{op}: internal error: the {dtype} tensor's bytes cannot be read as {dtype} ({e:?})"
        )),
    }
}

/// Bytes as plain unsigned integers of one element's width, for moving elements around.
fn as_width<W: Pod>(bytes: &[u8]) -> Result<&[W]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| {
        Error::InvalidArgument(format!(
            "internal error: tensor bytes are misaligned ({e:?})"
        ))
    })
}

fn as_width_mut<W: Pod>(bytes: &mut [u8]) -> Result<&mut [W]> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| {
        Error::InvalidArgument(format!(
            "internal error: tensor bytes are misaligned ({e:?})"
        ))
    })
}

/// Copies the elements of `src` (at `src_layout`) to `dst` (at `dst_layout`), matching them in
/// row-major index order. Both layouts have the same shape, and lie inside their slices.
fn copy_elems<W: Copy>(src: &[W], src_layout: &Layout, dst: &mut [W], dst_layout: &Layout) {
    let n = src_layout.numel;
    if n == 0 {
        return;
    }
    if src_layout.contiguous && dst_layout.contiguous {
        let (s, d) = (src_layout.offset, dst_layout.offset);
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
    } else {
        for (s, d) in src_layout.offsets().zip(dst_layout.offsets()) {
            dst[d] = src[s];
        }
    }
}

impl Tensor {
    fn check_dtype<T: Element>(&self, op: &str) -> Result<()> {
        if T::DTYPE == self.dtype() {
            Ok(())
        } else {
            Err(Error::DType {
                expected: format!("{} (asked for by {op}::<{}>)", T::DTYPE, T::DTYPE),
                got: format!("a {} tensor", self.dtype()),
            })
        }
    }

    fn check_contiguous(&self, op: &str) -> Result<()> {
        if self.is_contiguous() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{op} needs a contiguous tensor, but this {} tensor of shape {:?} has strides {:?}; \
                 call .contiguous() first (it copies)",
                self.dtype(),
                self.shape(),
                self.strides()
            )))
        }
    }

    /// The elements, in row-major order of their indices, whatever the strides. `T` must match
    /// the dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_dtype::<T>("to_vec")?;
        if let Some(elems) = self.lent_elements::<T>() {
            return Ok(elems.to_vec());
        }
        // Before adopting: another image's CUDA tensor comes over by its maker's `to` (plugin
        // ABI 1.6), as one read in place.
        if self.device().is_cuda() {
            return self.to(super::Device::Cpu)?.to_vec();
        }
        if let Some(t) = self.adopted()? {
            return t.to_vec();
        }
        let guard = self.storage().read("to_vec")?;
        let Some((range, lo)) = self.byte_span() else {
            return Ok(Vec::new());
        };
        let elems: &[T] = as_elems("to_vec", &guard.bytes()[range])?;
        if self.is_contiguous() {
            return Ok(elems.to_vec());
        }
        Ok(self.layout().offsets().map(|o| elems[o - lo]).collect())
    }

    /// Calls `f` with the elements as one slice. Contiguous cpu tensors only; `T` must match the
    /// dtype. Other readers share the storage while `f` runs; writers on other threads wait, and
    /// a write from inside `f` is [`Error::StorageBusy`].
    pub fn with_slice<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        self.check_dtype::<T>("with_slice")?;
        self.check_contiguous("with_slice")?;
        if let Some(elems) = self.lent_elements::<T>() {
            return Ok(f(elems));
        }
        if let Some(t) = self.adopted()? {
            return t.with_slice(f);
        }
        let guard = self.storage().read("with_slice")?;
        let Some((range, _)) = self.byte_span() else {
            return Ok(f(&[]));
        };
        let elems = as_elems("with_slice", &guard.bytes()[range])?;
        Ok(f(elems))
    }

    /// Calls `f` with the elements as one mutable slice. Contiguous cpu tensors only; `T` must
    /// match the dtype. While `f` runs, other threads that use the storage (through this tensor or
    /// a view) wait for it; this thread's own use of it inside `f` gets [`Error::StorageBusy`]
    /// (waiting for itself would never end). Two threads whose closures each use the other's
    /// tensor can deadlock, as with any two locks taken in opposite orders.
    pub fn with_slice_mut<T: Element, R>(&self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        self.check_dtype::<T>("with_slice_mut")?;
        self.check_contiguous("with_slice_mut")?;
        if let (false, Some((first, n))) = (self.is_read_only(), self.lent_elements_mut::<T>()) {
            // SAFETY: another image's writable (checked) elements of `T`, in place, kept by their
            // maker while the handle lives; the slice lives for this call only. Like the lock of
            // a tensor of this image's, nothing else here writes them meanwhile; the maker's own
            // uses are its to order, as for any memory it lends.
            return Ok(f(unsafe { std::slice::from_raw_parts_mut(first, n) }));
        }
        if let Some(t) = self.adopted()? {
            return t.with_slice_mut(f);
        }
        let mut guard = self.storage().write("with_slice_mut")?;
        let Some((range, _)) = self.byte_span() else {
            return Ok(f(&mut []));
        };
        let elems = as_elems_mut("with_slice_mut", &mut guard.bytes_mut()[range])?;
        Ok(f(elems))
    }

    /// Copies `src`'s elements into this tensor's, index by index. Same shape and dtype (and the
    /// same native type when both hold native values); either may be strided, and they may share
    /// storage (the copy goes through a temporary then).
    pub fn copy_from(&self, src: &Tensor) -> Result<()> {
        if let Some(t) = self.adopted()? {
            return t.copy_from(src);
        }
        if let Some(src) = src.adopted()? {
            return self.copy_from(&src);
        }
        if self.shape() != src.shape() {
            return Err(Error::Shape(format!(
                "copy_from: the source's shape {:?} does not match the destination's shape {:?}",
                src.shape(),
                self.shape()
            )));
        }
        if self.dtype() != src.dtype() {
            return Err(Error::DType {
                expected: format!("{} (the destination's dtype)", self.dtype()),
                got: format!("{} (copy_from's source)", src.dtype()),
            });
        }
        // Both hold native values: they must be of one native type, or the destination would
        // hold bytes of another layout under its tag (Warp refuses this too: "Invalid source
        // data type for native array"). Plain bytes on either side carry no type to compare.
        if let (Some(d), Some(s)) = (self.native_schema(), src.native_schema()) {
            if d.native_name != s.native_name || !d.same_contract(s) {
                return Err(Error::DType {
                    expected: format!(
                        "{} (the destination's native type, {})",
                        d.native_name, d.rust_name
                    ),
                    got: format!("{} (copy_from's source, {})", s.native_name, s.rust_name),
                });
            }
        }
        if self.device().is_meta() && src.device().is_meta() {
            return Ok(());
        }
        if self.device().is_cuda() || src.device().is_cuda() {
            return self.copy_from_cuda(src);
        }
        with_width!(self.dtype(), W => self.copy_from_as::<W>(src))
    }

    fn copy_from_as<W: Pod>(&self, src: &Tensor) -> Result<()> {
        if self.same_storage(src) {
            // Gather the source into a packed temporary first, so overlapping views copy as if
            // the source were read entirely before the destination is written.
            let tmp: Vec<W> = {
                let guard = src.storage().read("copy_from")?;
                let elems = as_width::<W>(guard.bytes())?;
                src.layout().offsets().map(|o| elems[o]).collect()
            };
            let packed = Layout::contiguous(self.shape(), self.dtype())?;
            let mut guard = self.storage().write("copy_from")?;
            copy_elems(
                &tmp,
                &packed,
                as_width_mut::<W>(guard.bytes_mut())?,
                self.layout(),
            );
        } else {
            let (src_guard, mut dst_guard) =
                Storage::read_write_pair(src.storage(), self.storage(), "copy_from")?;
            copy_elems(
                as_width::<W>(src_guard.bytes())?,
                src.layout(),
                as_width_mut::<W>(dst_guard.bytes_mut())?,
                self.layout(),
            );
        }
        Ok(())
    }

    /// Sets every element to `value`, converted to the dtype (an error when it does not fit).
    /// Works on strided views. On a meta tensor it only checks the value.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<()> {
        if let Some(t) = self.adopted()? {
            return t.fill_(value);
        }
        let value = value.into();
        if self.device().is_cuda() {
            let host = Tensor::full(self.shape(), value, self.dtype(), super::Device::Cpu)?;
            return self.copy_from(&host);
        }
        with_dtype!(self.dtype(), T => self.fill_as::<T>(T::from_scalar(value)?))
    }

    fn fill_as<T: Element>(&self, v: T) -> Result<()> {
        if self.device().is_meta() {
            return Ok(());
        }
        let mut guard = self.storage().write("fill_")?;
        let Some((range, lo)) = self.byte_span() else {
            return Ok(());
        };
        let elems: &mut [T] = as_elems_mut("fill_", &mut guard.bytes_mut()[range])?;
        if self.is_contiguous() {
            elems.fill(v);
        } else {
            for o in self.layout().offsets() {
                elems[o - lo] = v;
            }
        }
        Ok(())
    }

    /// The one element of a tensor with exactly one element (any number of dims). `T` must
    /// match the dtype.
    pub fn item<T: Element>(&self) -> Result<T> {
        self.check_dtype::<T>("item")?;
        if self.numel() != 1 {
            return Err(Error::Shape(format!(
                "item() needs a tensor with exactly one element, but this one has shape {:?} ({} \
                 elements)",
                self.shape(),
                self.numel()
            )));
        }
        if self.device().is_cuda() {
            return self.to(super::Device::Cpu)?.item();
        }
        if let Some(&[v]) = self.lent_elements::<T>() {
            return Ok(v);
        }
        if let Some(t) = self.adopted()? {
            return t.item();
        }
        let guard = self.storage().read("item")?;
        let size = self.dtype().size();
        let at = self.offset() * size;
        checked::try_pod_read_unaligned(&guard.bytes()[at..at + size])
            .map_err(|e| cast_error("item", T::DTYPE, e))
    }

    /// [`Tensor::item`] as a [`Scalar`], whatever the dtype. A complex value with an imaginary
    /// part has no `Scalar`: that is an error naming `item::<Complex32>()` (or `Complex64`).
    pub fn item_scalar(&self) -> Result<Scalar> {
        with_dtype!(self.dtype(), T => {
            let v = self.item::<T>()?;
            if !v.is_exact_scalar() {
                return Err(Error::InvalidArgument(format!(
                    "{} is a {} value with an imaginary part, which a Scalar cannot hold; read it with item::<{}>()",
                    v.display(),
                    self.dtype(),
                    self.dtype().name()
                )));
            }
            Ok(v.to_scalar())
        })
    }
}
