//! Tensors of native values: `Vec<Color>` host ↔ device for `In<[Color]>` / `Out<[Pixel]>`.
//!
//! A native tensor is a `u8` tensor whose last dimension is the element's size, tagged with the
//! element's [`NativeSchema`]: `from_native_vec(colors, &[n])` has shape `[n, size_of::<Color>()]`.
//! Every byte operation (`to`, `copy_from`, `contiguous`, views) works on it unchanged and keeps
//! the tag; a launch checks the tag against the declared element ([`Tensor::native_schema`]).
//! Storage is aligned to [`super::CPU_ALIGN`] on the host and to 256 bytes on a device, enough
//! for any element's alignment.
//!
//! Padding bytes are never read from a Rust value: each element's exposed scalar fields
//! (recursively through nested types and arrays) are copied into zeroed bytes. An opaque type
//! exposes no fields, so its bytes are copied whole: an opaque type must have no padding.

use opbox_codegen::native::{FieldType, NativeScalar, NativeSchema};

use super::layout::Layout;
use super::storage::Storage;
use super::{DType, Tensor};
use crate::native::NativeType;
use crate::{Error, Result};

/// `(offset, len, is_bool)` of every initialized byte range of one element of `schema`.
fn leaf_ranges(schema: &NativeSchema, base: usize, out: &mut Vec<(usize, usize, bool)>) {
    if schema.fields.is_empty() {
        out.push((base, schema.size, false));
        return;
    }
    fn field(ty: &FieldType, at: usize, out: &mut Vec<(usize, usize, bool)>) {
        match ty {
            FieldType::Scalar(s) => out.push((at, s.size(), *s == NativeScalar::Bool)),
            FieldType::Native(n) => leaf_ranges(n, at, out),
            FieldType::Array(elem, len) => {
                for i in 0..*len {
                    field(elem, at + i * elem.size(), out);
                }
            }
        }
    }
    for f in schema.fields {
        field(&f.ty, base + f.offset, out);
    }
}

impl Tensor {
    /// A contiguous cpu tensor of native values of `shape` (row-major): `u8` bytes of shape
    /// `[..shape, size_of::<T>()]`, tagged with `T`'s schema. `data.len()` must equal the
    /// product of `shape`.
    pub fn from_native_vec<T: NativeType>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let schema = T::SCHEMA;
        let size = std::mem::size_of::<T>();
        let mut full: Vec<usize> = shape.to_vec();
        full.push(size);
        let layout = Layout::contiguous(&full, DType::U8)?;
        if data.len() * size != layout.numel {
            return Err(Error::Shape(format!(
                "{} {} values cannot fill a tensor of shape {shape:?}",
                data.len(),
                schema.rust_name
            )));
        }
        let mut ranges = Vec::new();
        leaf_ranges(schema, 0, &mut ranges);
        let mut bytes = vec![0u8; layout.numel];
        for (value, dst) in data.iter().zip(bytes.chunks_exact_mut(size.max(1))) {
            let src = (value as *const T).cast::<u8>();
            for &(at, len, _) in &ranges {
                // SAFETY: the schema describes `T` exactly (NativeType's contract), so
                // `at..at + len` is an initialized field of the value, inside it.
                let field = unsafe { std::slice::from_raw_parts(src.add(at), len) };
                dst[at..at + len].copy_from_slice(field);
            }
        }
        let storage = Storage::cpu_from_bytes(&bytes)?;
        Ok(Tensor::from_impl_native(
            storage,
            layout,
            DType::U8,
            Some(schema),
        ))
    }

    /// The native values, in row-major order (from any device). The tensor must hold `T`s: its
    /// tag has `T`'s schema.
    pub fn to_native_vec<T: NativeType>(&self) -> Result<Vec<T>> {
        if let Some(t) = self.adopted()? {
            return t.to_native_vec();
        }
        let want = T::SCHEMA;
        match self.native_schema() {
            Some(s) if s.native_name == want.native_name && s.same_contract(want) => {}
            other => {
                return Err(Error::DType {
                    expected: format!(
                        "{} values (asked for by to_native_vec::<{}>)",
                        want.native_name, want.rust_name
                    ),
                    got: other.map_or_else(
                        || format!("a {} tensor", self.dtype()),
                        |s| format!("a tensor of {} ({}) values", s.native_name, s.rust_name),
                    ),
                })
            }
        }
        let bytes: Vec<u8> = self.to_vec::<u8>()?;
        let size = std::mem::size_of::<T>();
        let mut ranges = Vec::new();
        leaf_ranges(want, 0, &mut ranges);
        let bools: Vec<usize> = ranges.iter().filter(|r| r.2).map(|r| r.0).collect();
        let mut out = Vec::with_capacity(bytes.len() / size.max(1));
        for (i, c) in bytes.chunks_exact(size.max(1)).enumerate() {
            // A bool is 0 or 1; a kernel may have written anything.
            if let Some(&at) = bools.iter().find(|&&at| c[at] > 1) {
                return Err(Error::InvalidArgument(format!(
                    "to_native_vec::<{}>: element {i} has byte {} at offset {at}, a bool field (0 or 1 expected)",
                    want.rust_name, c[at]
                )));
            }
            // SAFETY: `c` holds `size_of::<T>()` initialized bytes laid out as a `T` (the tag
            // says so). Every exposed scalar but bool accepts any bit pattern, and bools were
            // checked above; an opaque or skipped part is plain bytes by NativeType's contract.
            out.push(unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) });
        }
        Ok(out)
    }

    /// The element schema of a tensor of native values, `None` for any other tensor.
    pub fn native_schema(&self) -> Option<&'static NativeSchema> {
        self.inner().native
    }

    /// The shape in native elements (the shape without its last, byte dimension), or `None`
    /// for a tensor that does not hold native values.
    pub fn native_shape(&self) -> Option<&[usize]> {
        self.native_schema()?;
        self.shape().split_last().map(|(_, rest)| rest)
    }

    /// This tensor (same storage and layout) with the native tag `native`.
    pub(super) fn tagged(self, native: Option<&'static NativeSchema>) -> Tensor {
        if native.is_none() {
            return self;
        }
        Tensor::from_impl_native(
            self.inner().storage.clone(),
            self.layout().clone(),
            self.dtype(),
            native,
        )
    }
}
