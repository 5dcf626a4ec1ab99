//! Lowered launch arguments, borrowed ([`LaunchArg`]) and owned ([`OwnedArg`]), and the scalar
//! parameter types' `KernelArg` and `ConstexprArg` impls: one scalar variant and one impl per
//! `scalar` row of codegen's type table, generated from it.

use std::mem::MaybeUninit;

use opbox_codegen::cuda::{ConstValue, ParamKind, ScalarType};
use opbox_codegen::native::NativeSchema;

use super::arg::{device_word, short_name, ConstexprArg, KernelArg, NativeBytes};
use crate::tensor::Tensor;

macro_rules! define_lowered_args {
    ($(($v:ident, $t:ty, $r:literal))*) => {
        /// One launch argument, lowered: what the checked launch pushes.
        #[derive(Clone, Copy, Debug)]
        pub enum LaunchArg<'a> {
            /// A tensor, passed as its device address.
            Tensor(&'a Tensor),
            /// `None` for an `Option<In<[T]>>` parameter: a null device pointer.
            Null,
            $(#[doc = concat!("A `", $r, "` by value.")] $v($t),)*
            /// A struct by value: its schema and its bytes.
            Native(NativeBytes<'a>),
        }

        /// A lowered argument that owns its value: what [`lower_any`](super::lower_any) and
        /// adapters return.
        #[derive(Clone, Debug)]
        pub enum OwnedArg {
            /// A tensor, passed as its device address.
            Tensor(Tensor),
            /// A null device pointer (`None` for an `Option<In<[T]>>`).
            Null,
            $(#[doc = concat!("A `", $r, "` by value.")] $v($t),)*
            /// A struct by value.
            Native {
                /// Its layout.
                schema: &'static NativeSchema,
                /// Its bytes (padding uninitialized).
                bytes: Vec<MaybeUninit<u8>>,
            },
        }

        impl LaunchArg<'_> {
            /// The scalar's type and its bytes (native order, zero-padded to 8), or `None` for
            /// a tensor or a struct.
            #[inline]
            pub fn scalar(&self) -> Option<(ScalarType, [u8; 8])> {
                match self {
                    $(LaunchArg::$v(v) => Some((ScalarType::$v, widen(bytemuck::bytes_of(v)))),)*
                    LaunchArg::Tensor(_) | LaunchArg::Null | LaunchArg::Native(_) => None,
                }
            }
        }

        impl LaunchArg<'static> {
            /// A number as the launch argument of type `t`, converted as
            /// [`Element::from_scalar`](crate::tensor::Element::from_scalar) converts (range
            /// checked); the runtime-typed launch path of the types that are not `#[constexpr]`
            /// types.
            pub(crate) fn from_number(t: ScalarType, s: crate::Scalar) -> crate::Result<LaunchArg<'static>> {
                match t {
                    $(ScalarType::$v => <$t as FromNumber>::from_number(s).map(LaunchArg::$v),)*
                }
            }
        }

        impl LaunchArg<'_> {
            /// The argument as an owned value (a tensor handle cloned, struct bytes copied):
            /// what a kernel graph keeps of a recorded launch.
            pub fn to_owned_arg(&self) -> OwnedArg {
                match self {
                    LaunchArg::Tensor(t) => OwnedArg::Tensor((*t).clone()),
                    LaunchArg::Null => OwnedArg::Null,
                    $(LaunchArg::$v(v) => OwnedArg::$v(*v),)*
                    LaunchArg::Native(n) => OwnedArg::Native {
                        schema: n.schema,
                        bytes: n.as_uninit().to_vec(),
                    },
                }
            }
        }

        impl OwnedArg {
            /// The borrowed form the launch pushes.
            pub fn as_launch_arg(&self) -> LaunchArg<'_> {
                match self {
                    OwnedArg::Tensor(t) => LaunchArg::Tensor(t),
                    OwnedArg::Null => LaunchArg::Null,
                    $(OwnedArg::$v(v) => LaunchArg::$v(*v),)*
                    OwnedArg::Native { schema, bytes } => {
                        LaunchArg::Native(NativeBytes::from_slice(schema, bytes))
                    }
                }
            }
        }

        $(
            impl KernelArg for $t {
                type Value<'v> = $t;
                const KIND: ParamKind = ParamKind::Scalar(ScalarType::$v);
                #[inline]
                fn lower<'a>(value: &'a $t) -> LaunchArg<'a> {
                    LaunchArg::$v(*value)
                }
            }

        )*
    };
}

opbox_codegen::for_each_scalar_type!(define_lowered_args);

/// `ConstexprArg` for the table's `constexpr` rows: the types C++ has literals for.
macro_rules! define_constexpr_args {
    ($(($v:ident, $t:ty, $r:literal))*) => {
        $(
            impl ConstexprArg for $t {
                const KIND: ParamKind = ParamKind::Constexpr(ScalarType::$v);
                #[inline]
                fn const_value(self) -> ConstValue {
                    ConstValue::$v(self)
                }
            }
        )*
    };
}

opbox_codegen::for_each_constexpr_type!(define_constexpr_args);

/// A by-value launch scalar made from a [`Scalar`](crate::Scalar).
trait FromNumber: Sized {
    fn from_number(s: crate::Scalar) -> crate::Result<Self>;
}

impl<T: crate::tensor::Element> FromNumber for T {
    fn from_number(s: crate::Scalar) -> crate::Result<T> {
        T::from_scalar(s)
    }
}

impl FromNumber for usize {
    fn from_number(s: crate::Scalar) -> crate::Result<usize> {
        <u64 as crate::tensor::Element>::from_scalar(s).and_then(|v| {
            usize::try_from(v).map_err(|_| {
                crate::Error::InvalidArgument(format!("{v} does not fit in usize on this host"))
            })
        })
    }
}

/// A scalar's bytes in the low end of 8.
#[inline]
fn widen(b: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..b.len()].copy_from_slice(b);
    out
}

impl LaunchArg<'_> {
    /// What the value is, as messages name it.
    pub fn describe(&self) -> String {
        match self {
            LaunchArg::Tensor(t) => match t.native_schema() {
                Some(n) => format!(
                    "{} tensor of {} ({}) values",
                    device_word(t.device()),
                    short_name(n.rust_name),
                    n.native_name
                ),
                None => format!("{} {} tensor", t.dtype(), device_word(t.device())),
            },
            LaunchArg::Native(n) => short_name(n.schema.rust_name).to_string(),
            LaunchArg::Null => "None (a null pointer)".to_string(),
            scalar => scalar
                .scalar()
                .map_or_else(String::new, |(t, _)| t.rust_name().to_string()),
        }
    }
}
