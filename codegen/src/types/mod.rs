//! The primitive types, from the one table in `table`: [`NativeScalar`] (every row),
//! [`ElemType`] (tensor dtypes and kernel slice elements), [`ScalarType`] (by-value launch and
//! `#[constexpr]` parameters), and [`ConstValue`], one scalar variant per `ScalarType`.

use std::fmt;

mod table;

pub use const_value::ConstValue;

mod const_value;

macro_rules! define_native_scalar {
    ($(($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $code:literal, $abi:tt, $dl:tt, [$($k:ident)*]))*) => {
        /// A scalar a native type's field (or a builtin's parameter) may hold: every row of
        /// the type table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum NativeScalar {
            $($v,)*
        }

        impl NativeScalar {
            pub const ALL: [NativeScalar; [$(stringify!($v)),*].len()] = [$(NativeScalar::$v),*];

            /// The short code that enters type codes: `f4`, `i8`, `u1`, `b`, `bf2`.
            pub const fn code(self) -> &'static str {
                match self { $(NativeScalar::$v => $code,)* }
            }

            /// The Rust spelling (`f16` and `bf16` are `half`'s types).
            pub const fn rust_name(self) -> &'static str {
                match self { $(NativeScalar::$v => $r,)* }
            }

            /// The C++ spelling.
            pub const fn c_name(self) -> &'static str {
                match self { $(NativeScalar::$v => $c,)* }
            }

            /// The Rust type as a path (`f32`, `half::f16`, `float8::F8E4M3`): what generated
            /// code names, under `::opbox::` when it has a crate.
            pub const fn rust_type_path(self) -> &'static str {
                match self { $(NativeScalar::$v => stringify!($t),)* }
            }

            /// Size in bytes, the same on both sides; every primitive is aligned to its size.
            #[inline]
            pub const fn size(self) -> usize {
                match self { $(NativeScalar::$v => $s,)* }
            }

            #[inline]
            pub const fn align(self) -> usize {
                self.size()
            }

            /// DLPack's `(type code, bits)`: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
            /// kDLBool 6.
            #[inline]
            pub const fn dlpack(self) -> (u8, u8) {
                match self { $(NativeScalar::$v => $dl,)* }
            }

            pub fn from_rust_name(name: &str) -> Option<NativeScalar> {
                NativeScalar::ALL.into_iter().find(|t| t.rust_name() == name)
            }
        }
    };
}

crate::for_each_primitive!(define_native_scalar);

/// `true` when the kinds list holds `float`.
macro_rules! is_float {
    ([$($k:ident)*]) => { false $(|| is_float!(@ $k))* };
    (@ float) => { true };
    (@ $other:ident) => { false };
}

/// `true` when the kinds list holds `complex`.
macro_rules! is_complex {
    ([$($k:ident)*]) => { false $(|| is_complex!(@ $k))* };
    (@ complex) => { true };
    (@ $other:ident) => { false };
}

macro_rules! define_elem_type {
    ($(($v:ident, $t:ty, $r:literal, $c:literal, $s:literal, $abi:literal, $dl:tt, $kinds:tt))*) => {
        /// The element type of an `In<[T]>`, `Out<[T]>` or `InOut<[T]>` parameter, and of a
        /// tensor (the runtime's `DType` is generated from the same rows).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ElemType {
            $($v,)*
        }

        impl ElemType {
            pub const ALL: [ElemType; [$(stringify!($v)),*].len()] = [$(ElemType::$v),*];

            /// The same type as a row of the whole table.
            #[inline]
            pub const fn primitive(self) -> NativeScalar {
                match self { $(ElemType::$v => NativeScalar::$v,)* }
            }

            /// The stable code of this type as a tensor dtype: PyTorch's `c10::ScalarType`
            /// value, so it can be handed to PyTorch's stable ABI unchanged. Never changes.
            #[inline]
            pub const fn abi_code(self) -> u32 {
                match self { $(ElemType::$v => $abi,)* }
            }

            /// The type with this ABI code.
            #[inline]
            pub const fn from_abi_code(code: u32) -> Option<ElemType> {
                match code {
                    $($abi => Some(ElemType::$v),)*
                    _ => None,
                }
            }

            /// `true` for the floating-point types.
            #[inline]
            pub const fn is_floating_point(self) -> bool {
                match self { $(ElemType::$v => is_float!($kinds),)* }
            }

            /// `true` for the complex types.
            #[inline]
            pub const fn is_complex(self) -> bool {
                match self { $(ElemType::$v => is_complex!($kinds),)* }
            }
        }
    };
}

crate::for_each_elem_type!(define_elem_type);

macro_rules! define_scalar_type {
    ($(($v:ident, $t:ty, $r:literal))*) => {
        /// The type of a by-value scalar parameter (launch argument or `#[constexpr]`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ScalarType {
            $($v,)*
        }

        impl ScalarType {
            pub const ALL: [ScalarType; [$(stringify!($v)),*].len()] = [$(ScalarType::$v),*];

            /// The same type as a row of the whole table.
            #[inline]
            pub const fn primitive(self) -> NativeScalar {
                match self { $(ScalarType::$v => NativeScalar::$v,)* }
            }
        }
    };
}

crate::for_each_scalar_type!(define_scalar_type);

impl ElemType {
    /// The Rust spelling, as written in the declaration (`f16` and `bf16` are `half`'s types).
    pub const fn rust_name(self) -> &'static str {
        self.primitive().rust_name()
    }

    /// The C++ type the kernel sees.
    pub const fn c_name(self) -> &'static str {
        self.primitive().c_name()
    }

    /// Size in bytes, the same on both sides.
    #[inline]
    pub const fn size(self) -> usize {
        self.primitive().size()
    }

    #[inline]
    pub const fn align(self) -> usize {
        self.primitive().align()
    }

    /// DLPack's `(type code, bits)`, one lane.
    #[inline]
    pub const fn dlpack(self) -> (u8, u8) {
        self.primitive().dlpack()
    }

    /// Parses the Rust spelling; the macro uses this, and names the supported list when it fails.
    pub fn from_rust_name(name: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.rust_name() == name)
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

impl ScalarType {
    pub const fn rust_name(self) -> &'static str {
        self.primitive().rust_name()
    }

    pub const fn c_name(self) -> &'static str {
        self.primitive().c_name()
    }

    #[inline]
    pub const fn size(self) -> usize {
        self.primitive().size()
    }

    /// The same type seen as a slice element (`usize` is none: no tensor holds it).
    pub fn elem(self) -> Option<ElemType> {
        ElemType::ALL
            .into_iter()
            .find(|e| e.primitive() == self.primitive())
    }

    /// Whether a `#[constexpr]` may have this type: C++ has a literal for it.
    pub fn can_be_constexpr(self) -> bool {
        ConstValue::TYPES.contains(&self)
    }

    /// Floats cannot be C++17 template arguments, so a float `#[constexpr]` is only allowed as a
    /// define.
    pub fn can_be_template_arg(self) -> bool {
        !self.elem().is_some_and(ElemType::is_floating_point)
    }

    pub fn from_rust_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.rust_name() == name)
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}
