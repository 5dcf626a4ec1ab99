//! [`DType`]: the element types a [`Tensor`](super::Tensor) can hold.

use std::fmt;
use std::str::FromStr;

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
/// | `i32`  | 3    |
/// | `i64`  | 4    |
/// | `f16`  | 5    |
/// | `f32`  | 6    |
/// | `f64`  | 7    |
/// | `bool` | 11   |
/// | `bf16` | 15   |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I32,
    I64,
    U8,
    /// Stored as one byte per element, always 0 or 1.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ];

    /// The size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// The dtype's name as schemas and messages spell it: `"f32"`, `"bf16"`, `"bool"`, ...
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    /// The stable code of this dtype (see the table on [`DType`]).
    pub const fn code(self) -> u32 {
        match self {
            DType::U8 => 0,
            DType::I32 => 3,
            DType::I64 => 4,
            DType::F16 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
            DType::Bool => 11,
            DType::BF16 => 15,
        }
    }

    /// The dtype with this stable code, or `None` for a code that names no dtype.
    pub const fn from_code(code: u32) -> Option<DType> {
        match code {
            0 => Some(DType::U8),
            3 => Some(DType::I32),
            4 => Some(DType::I64),
            5 => Some(DType::F16),
            6 => Some(DType::F32),
            7 => Some(DType::F64),
            11 => Some(DType::Bool),
            15 => Some(DType::BF16),
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
                Error::InvalidArgument(format!(
                    "unknown dtype '{s}'; expected one of f32, f64, f16, bf16, i32, i64, u8, bool"
                ))
            })
    }
}
