//! [`DType`]: the element types a [`Tensor`](super::Tensor) can hold.

use std::fmt;
use std::str::FromStr;

use opbox_codegen::types::ElemType;

use crate::{Error, Result};

macro_rules! define_dtype {
    ($(($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $abi:literal, $dl:tt, $kinds:tt))*) => {
        /// The element type of a tensor.
        ///
        /// # Codes
        ///
        /// [`DType::code`] gives each dtype a stable number that crosses the boxed ABI. The numbers are
        /// PyTorch's `c10::ScalarType` values, so they can be handed to PyTorch's stable ABI unchanged.
        /// They never change; a new dtype takes a new number. The codes are the ABI column of
        /// codegen's type table, and `DType::ALL` lists them in its order.
        ///
        /// # One type table
        ///
        /// The dtypes are generated from the `elem` rows of codegen's type table (`opbox_codegen::types`),
        /// the same rows as the kernel element types ([`ElemType`]): every `In<[T]>` / `Out<[T]>` can be
        /// given a tensor, and names, sizes and codes come from that one table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DType {
            $(#[doc = concat!("`", $r, "` elements.")] $v,)*
        }

        impl DType {
            /// Every dtype, in the type table's order (the order of [`ElemType::ALL`]).
            pub const ALL: [DType; ElemType::ALL.len()] = [$(DType::$v),*];

            /// The kernel element type a tensor of this dtype holds.
            #[inline]
            pub const fn elem(self) -> ElemType {
                match self { $(DType::$v => ElemType::$v,)* }
            }

            /// The dtype of tensors a slice of `t` (`In<[t]>`, ...) takes: the inverse of
            /// [`DType::elem`].
            #[inline]
            pub const fn from_elem(t: ElemType) -> DType {
                match t { $(ElemType::$v => DType::$v,)* }
            }
        }
    };
}

opbox_codegen::for_each_elem_type!(define_dtype);

impl DType {
    /// The size of one element in bytes.
    #[inline]
    pub const fn size(self) -> usize {
        self.elem().size()
    }

    /// The dtype's name as schemas and messages spell it: `"f32"`, `"bf16"`, `"bool"`, ...
    /// (the Rust element type's name).
    pub const fn name(self) -> &'static str {
        self.elem().rust_name()
    }

    /// The stable code of this dtype (see the table on [`DType`]).
    #[inline]
    pub const fn code(self) -> u32 {
        self.elem().abi_code()
    }

    /// The dtype with this stable code, or `None` for a code that names no dtype.
    #[inline]
    pub const fn from_code(code: u32) -> Option<DType> {
        match ElemType::from_abi_code(code) {
            Some(t) => Some(DType::from_elem(t)),
            None => None,
        }
    }

    /// `true` for f32, f64, f16 and bf16.
    #[inline]
    pub const fn is_floating_point(self) -> bool {
        self.elem().is_floating_point()
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
