//! The schema model. Every field is const-constructible (`Cow::Borrowed`, `Copy` types), so the
//! macros can emit a parsed schema as a `static` and the runtime reads it without re-parsing.

use std::borrow::Cow;

/// A schema base type. `Tensor`, `int`, `float`, `bool`, `str`, `ScalarType`, `Device`, `Scalar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    ScalarType,
    Device,
    Scalar,
}

impl BaseType {
    pub const ALL: [BaseType; 8] = [
        BaseType::Tensor,
        BaseType::Int,
        BaseType::Float,
        BaseType::Bool,
        BaseType::Str,
        BaseType::ScalarType,
        BaseType::Device,
        BaseType::Scalar,
    ];

    /// The spelling used in schema strings.
    pub const fn schema_name(self) -> &'static str {
        match self {
            BaseType::Tensor => "Tensor",
            BaseType::Int => "int",
            BaseType::Float => "float",
            BaseType::Bool => "bool",
            BaseType::Str => "str",
            BaseType::ScalarType => "ScalarType",
            BaseType::Device => "Device",
            BaseType::Scalar => "Scalar",
        }
    }

    pub fn from_schema_name(s: &str) -> Option<BaseType> {
        BaseType::ALL.into_iter().find(|b| b.schema_name() == s)
    }
}

/// The most wrappers (`[]` and `?`) a type may carry. Deeper nesting is a schema error.
pub const MAX_TYPE_DEPTH: u8 = 8;

/// A schema type: a base type wrapped, innermost first, in up to [`MAX_TYPE_DEPTH`] list (`[]`)
/// or optional (`?`) layers. `int[]?` is `Int` wrapped in List, then Optional.
///
/// Kept `Copy` and flat (a bit string rather than boxes) so it can live in `static` data.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Type {
    base: BaseType,
    depth: u8,
    /// Bit `i` set means wrapper `i` (0 = innermost) is Optional; clear means List.
    optional_bits: u8,
}

/// One layer of a [`Type`], seen from the outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeShape {
    Base(BaseType),
    List(Type),
    Optional(Type),
}

impl Type {
    pub const fn base(base: BaseType) -> Type {
        Type {
            base,
            depth: 0,
            optional_bits: 0,
        }
    }
    pub const TENSOR: Type = Type::base(BaseType::Tensor);
    pub const INT: Type = Type::base(BaseType::Int);
    pub const FLOAT: Type = Type::base(BaseType::Float);
    pub const BOOL: Type = Type::base(BaseType::Bool);
    pub const STR: Type = Type::base(BaseType::Str);

    /// `self[]`, or `None` when that would exceed [`MAX_TYPE_DEPTH`].
    pub const fn list(self) -> Option<Type> {
        if self.depth >= MAX_TYPE_DEPTH {
            return None;
        }
        Some(Type {
            base: self.base,
            depth: self.depth + 1,
            optional_bits: self.optional_bits,
        })
    }

    /// `self?`, or `None` when that would exceed [`MAX_TYPE_DEPTH`].
    pub const fn optional(self) -> Option<Type> {
        if self.depth >= MAX_TYPE_DEPTH {
            return None;
        }
        Some(Type {
            base: self.base,
            depth: self.depth + 1,
            optional_bits: self.optional_bits | (1 << self.depth),
        })
    }

    /// The innermost base type.
    pub const fn base_type(self) -> BaseType {
        self.base
    }

    pub const fn depth(self) -> u8 {
        self.depth
    }

    /// The outermost layer.
    pub const fn shape(self) -> TypeShape {
        if self.depth == 0 {
            return TypeShape::Base(self.base);
        }
        let top = self.depth - 1;
        let inner = Type {
            base: self.base,
            depth: top,
            optional_bits: self.optional_bits & !(1 << top),
        };
        if self.optional_bits & (1 << top) != 0 {
            TypeShape::Optional(inner)
        } else {
            TypeShape::List(inner)
        }
    }

    pub const fn is_optional(self) -> bool {
        matches!(self.shape(), TypeShape::Optional(_))
    }

    /// True when this type is or contains a Tensor (`Tensor`, `Tensor?`, `Tensor[]`, ...).
    pub const fn mentions_tensor(self) -> bool {
        matches!(self.base, BaseType::Tensor)
    }
}

impl std::fmt::Debug for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Type({self})")
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.base.schema_name())?;
        for i in 0..self.depth {
            f.write_str(if self.optional_bits & (1 << i) != 0 {
                "?"
            } else {
                "[]"
            })?;
        }
        Ok(())
    }
}

/// An alias annotation on a Tensor: `Tensor(a)` (may alias set `a`) or `Tensor(a!)` (in set
/// `a`, and written to).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Alias {
    pub set: Cow<'static, str>,
    pub is_write: bool,
}

/// A default value, as written after `=` in a schema.
#[derive(Clone, Debug, PartialEq)]
pub enum DefaultValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'static, str>),
    IntList(Cow<'static, [i64]>),
    FloatList(Cow<'static, [f64]>),
    BoolList(Cow<'static, [bool]>),
}

/// One argument: `Tensor(a!) x`, `float alpha=1.0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    pub name: Cow<'static, str>,
    pub ty: Type,
    pub alias: Option<Alias>,
    pub default: Option<DefaultValue>,
    /// Declared after a bare `*`: callers must pass it by name.
    pub kw_only: bool,
}

impl Argument {
    /// True for `Tensor(a!)`: the kernel writes this argument in place.
    pub fn is_mutable(&self) -> bool {
        self.alias.as_ref().is_some_and(|a| a.is_write)
    }
}

/// One return value: `Tensor`, `Tensor(a!)`, or a named field `Tensor values`.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    pub name: Option<Cow<'static, str>>,
    pub ty: Type,
    pub alias: Option<Alias>,
}

/// `ns::name.overload`. The namespace is optional inside a library block, which supplies it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OperatorName {
    pub namespace: Option<Cow<'static, str>>,
    pub name: Cow<'static, str>,
    /// Empty for the default overload.
    pub overload: Cow<'static, str>,
}

/// A whole schema: `name.overload(args) -> returns`.
///
/// `returns` holds one entry per returned value: `-> ()` is empty, `-> Tensor` has one, and
/// `-> (Tensor, Tensor)` has two. A parenthesised single return `-> (Tensor)` is the same as
/// `-> Tensor`.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    pub name: OperatorName,
    pub arguments: Cow<'static, [Argument]>,
    pub returns: Cow<'static, [Return]>,
}

impl Schema {
    /// The indices of the arguments whose type mentions Tensor: the only ones dispatch reads to
    /// pick a key. The macros compute them into each op's registration.
    pub fn tensor_arguments(&self) -> Vec<usize> {
        self.arguments
            .iter()
            .enumerate()
            .filter(|(_, a)| a.ty.mentions_tensor())
            .map(|(i, _)| i)
            .collect()
    }
}
