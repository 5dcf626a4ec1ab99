//! [`DType`]: the element types a [`Tensor`](super::Tensor) can hold.

use std::fmt;
use std::str::FromStr;

use opbox_codegen::cuda::ElemType;

use crate::{Error, Result};

/// The element type of a tensor.
///
/// # Codes
///
/// [`DType::code`] gives each dtype a stable number that crosses the boxed ABI. The numbers are
/// PyTorch's `c10::ScalarType` values, so they can be handed to PyTorch's stable ABI unchanged.
/// They never change; a new dtype takes a new number.
///
/// | dtype  | code |
/// |--------|------|
/// | `u8`   | 0    |
/// | `i8`   | 1    |
/// | `i32`  | 3    |
/// | `i64`  | 4    |
/// | `f16`  | 5    |
/// | `f32`  | 6    |
/// | `f64`  | 7    |
/// | `bool` | 11   |
/// | `bf16` | 15   |
/// | `u32`  | 28   |
/// | `u64`  | 29   |
///
/// # One element table
///
/// The dtypes are exactly the kernel element types ([`ElemType`]): every `In<[T]>` / `Out<[T]>`
/// can be given a tensor. Sizes and names come from [`ElemType`] ([`DType::elem`]), so the two
/// cannot drift; only the stable codes, which are the ABI's, live here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I32,
    I64,
    U32,
    U64,
    U8,
    I8,
    /// Stored as one byte per element, always 0 or 1.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order (the order of [`ElemType::ALL`]).
    pub const ALL: [DType; 11] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U32,
        DType::U64,
        DType::U8,
        DType::I8,
        DType::Bool,
    ];

    /// The kernel element type a tensor of this dtype holds.
    pub const fn elem(self) -> ElemType {
        match self {
            DType::F32 => ElemType::F32,
            DType::F64 => ElemType::F64,
            DType::F16 => ElemType::F16,
            DType::BF16 => ElemType::BF16,
            DType::I32 => ElemType::I32,
            DType::I64 => ElemType::I64,
            DType::U32 => ElemType::U32,
            DType::U64 => ElemType::U64,
            DType::U8 => ElemType::U8,
            DType::I8 => ElemType::I8,
            DType::Bool => ElemType::Bool,
        }
    }

    /// The dtype of tensors a slice of `t` (`In<[t]>`, ...) takes: the inverse of [`DType::elem`].
    pub const fn from_elem(t: ElemType) -> DType {
        match t {
            ElemType::F32 => DType::F32,
            ElemType::F64 => DType::F64,
            ElemType::F16 => DType::F16,
            ElemType::BF16 => DType::BF16,
            ElemType::I32 => DType::I32,
            ElemType::I64 => DType::I64,
            ElemType::U32 => DType::U32,
            ElemType::U64 => DType::U64,
            ElemType::U8 => DType::U8,
            ElemType::I8 => DType::I8,
            ElemType::Bool => DType::Bool,
        }
    }

    /// The size of one element in bytes.
    pub const fn size(self) -> usize {
        self.elem().size()
    }

    /// The dtype's name as schemas and messages spell it: `"f32"`, `"bf16"`, `"bool"`, ...
    /// (the Rust element type's name).
    pub const fn name(self) -> &'static str {
        self.elem().rust_name()
    }

    /// The stable code of this dtype (see the table on [`DType`]).
    pub const fn code(self) -> u32 {
        match self {
            DType::U8 => 0,
            DType::I8 => 1,
            DType::I32 => 3,
            DType::I64 => 4,
            DType::F16 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
            DType::Bool => 11,
            DType::BF16 => 15,
            DType::U32 => 28,
            DType::U64 => 29,
        }
    }

    /// The dtype with this stable code, or `None` for a code that names no dtype.
    pub const fn from_code(code: u32) -> Option<DType> {
        match code {
            0 => Some(DType::U8),
            1 => Some(DType::I8),
            3 => Some(DType::I32),
            4 => Some(DType::I64),
            5 => Some(DType::F16),
            6 => Some(DType::F32),
            7 => Some(DType::F64),
            11 => Some(DType::Bool),
            15 => Some(DType::BF16),
            28 => Some(DType::U32),
            29 => Some(DType::U64),
            _ => None,
        }
    }

    /// `true` for f32, f64, f16 and bf16.
    pub const fn is_floating_point(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses the names [`DType::name`] prints.
    fn from_str(s: &str) -> Result<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown dtype '{s}'; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}
