//! The schema model. Every field is const-constructible (`Cow::Borrowed`, `Copy` types), so the
//! macros can emit a parsed schema as a `static` and the runtime reads it without re-parsing.

use std::borrow::Cow;

pub use super::enums::{Layout, MemoryFormat};

/// Calls `$callback! { (Variant, "schema spelling") ... }` with every schema base type: the one
/// list [`BaseType`], its spellings and `ALL` are generated from, so a new type is one row.
///
/// The `Sym*` types are PyTorch's symbolic-shape integers, floats and bools. opbox has no
/// symbolic shapes: they are plain `i64`, `f64` and `bool` at run time, and exist in the model so
/// that a PyTorch schema parses, prints and round-trips unchanged.
///
/// `Class` is a custom class (a TorchBind object, `__torch__.torch.classes.ns.Name`): its spelling
/// here is the prefix every such name starts with, and the [`Type`] holds the whole name.
#[macro_export]
macro_rules! for_each_base_type {
    ($callback:ident) => {
        $callback! {
            (Tensor, "Tensor")
            (Int, "int")
            (Float, "float")
            (Bool, "bool")
            (Str, "str")
            (ScalarType, "ScalarType")
            (Device, "Device")
            (Scalar, "Scalar")
            (SymInt, "SymInt")
            (SymFloat, "SymFloat")
            (SymBool, "SymBool")
            (Layout, "Layout")
            (MemoryFormat, "MemoryFormat")
            (Generator, "Generator")
            (Dimname, "Dimname")
            (DeviceIndex, "DeviceIndex")
            (Stream, "Stream")
            (Storage, "Storage")
            (QScheme, "QScheme")
            (DimVector, "DimVector")
            (GraphModule, "GraphModule")
            (Class, "__torch__.torch.classes")
        }
    };
}

macro_rules! define_base_type {
    ($(($variant:ident, $name:literal))*) => {
        /// A schema base type: every type name PyTorch's function-schema language has (see
        /// [`for_each_base_type!`](crate::for_each_base_type)).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BaseType {
            $($variant,)*
        }

        impl BaseType {
            pub const ALL: [BaseType; [$($name),*].len()] = [$(BaseType::$variant),*];

            /// The spelling used in schema strings.
            pub const fn schema_name(self) -> &'static str {
                match self {
                    $(BaseType::$variant => $name,)*
                }
            }

            /// The variant's own name (`SymInt`, `Int`), as generated code spells it.
            pub const fn variant_name(self) -> &'static str {
                match self {
                    $(BaseType::$variant => ::core::stringify!($variant),)*
                }
            }
        }
    };
}

for_each_base_type!(define_base_type);

impl BaseType {
    pub fn from_schema_name(s: &str) -> Option<BaseType> {
        BaseType::ALL.into_iter().find(|b| b.schema_name() == s)
    }

    /// How a schema writes the type, for lists of types: its spelling, or for `Class` the form
    /// of a custom class's name.
    pub const fn written(self) -> &'static str {
        match self {
            BaseType::Class => "__torch__.torch.classes.ns.Name",
            other => other.schema_name(),
        }
    }

    /// The base type whose values this one holds at run time: `SymInt` is `int`, `SymFloat` is
    /// `float`, `SymBool` is `bool` (opbox has no symbolic shapes); every other type is itself.
    pub const fn concrete(self) -> BaseType {
        match self {
            BaseType::SymInt => BaseType::Int,
            BaseType::SymFloat => BaseType::Float,
            BaseType::SymBool => BaseType::Bool,
            other => other,
        }
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
    /// `Some(n)` for a fixed-size list `T[n]`. Only the innermost wrapper can be one (every
    /// PyTorch schema has it there: `int[2]`, `SymInt[1]?`), so one field holds it.
    fixed_len: Option<u32>,
    /// For a custom class, its qualified name, `__torch__.torch.classes.ns.Name` (see
    /// [`Type::class`]); `None` for every other base type.
    class: Option<&'static str>,
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
            fixed_len: None,
            class: None,
        }
    }

    /// The custom class `qualified`, a whole name such as `__torch__.torch.classes.ns.Name` (the
    /// parser checks the form; a name parsed at run time is interned by
    /// [`intern_class_name`](super::intern_class_name)). `Type::base(BaseType::Class)` is a
    /// class of no name, which prints as the bare prefix and does not parse back.
    pub const fn class(qualified: &'static str) -> Type {
        Type {
            base: BaseType::Class,
            depth: 0,
            optional_bits: 0,
            fixed_len: None,
            class: Some(qualified),
        }
    }

    /// The custom class's qualified name, for a type whose base is [`BaseType::Class`].
    pub const fn class_name(self) -> Option<&'static str> {
        self.class
    }

    /// The base type as a schema writes it: a custom class's whole name, else the base type's
    /// spelling.
    pub const fn base_name(self) -> &'static str {
        match self.class {
            Some(name) => name,
            None => self.base.schema_name(),
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
            fixed_len: self.fixed_len,
            class: self.class,
        })
    }

    /// `self[len]`: a list of `len` elements. `None` unless `self` is a base type (a fixed size
    /// goes on the innermost list only) or when `len` is 0.
    pub const fn fixed_list(self, len: u32) -> Option<Type> {
        if self.depth != 0 || len == 0 {
            return None;
        }
        Some(Type {
            base: self.base,
            depth: 1,
            optional_bits: 0,
            fixed_len: Some(len),
            class: self.class,
        })
    }

    /// `Some(n)` when the outermost layer is a fixed-size list `T[n]`.
    pub const fn list_len(self) -> Option<u32> {
        if self.depth == 1 && self.optional_bits & 1 == 0 {
            self.fixed_len
        } else {
            None
        }
    }

    /// The fixed size of the innermost list, wherever it sits: `int[2]?` has 2.
    pub const fn inner_list_len(self) -> Option<u32> {
        self.fixed_len
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
            fixed_len: self.fixed_len,
            class: self.class,
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
            // Peeling the innermost list leaves the bare base type.
            fixed_len: if top == 0 { None } else { self.fixed_len },
            class: self.class,
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
        f.write_str(self.base_name())?;
        for i in 0..self.depth {
            if self.optional_bits & (1 << i) != 0 {
                f.write_str("?")?;
            } else {
                match self.fixed_len {
                    Some(n) if i == 0 => write!(f, "[{n}]")?,
                    _ => f.write_str("[]")?,
                }
            }
        }
        Ok(())
    }
}

/// An alias annotation on a Tensor, as torchgen's `Annotation` models it: `Tensor(a)` (may
/// alias set `a`), `Tensor(a!)` (in set `a`, and written to), `Tensor(a|b)` (may alias either),
/// and `Tensor(a -> *)` (after the call, also aliases the sets after `->`; `*` is the wildcard
/// set, as in `chunk(Tensor(a -> *) self, ...) -> Tensor(a)[]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Alias {
    /// The sets before `->`: one or more, never empty.
    pub sets: Cow<'static, [Cow<'static, str>]>,
    pub is_write: bool,
    /// The sets after `->`; empty when there is no `->`. `*` is [`Alias::WILDCARD`].
    pub after: Cow<'static, [Cow<'static, str>]>,
}

impl Alias {
    /// The wildcard alias set, `*`.
    pub const WILDCARD: &'static str = "*";

    /// `(set)` or `(set!)`: the common one-set annotation.
    pub fn single(set: impl Into<Cow<'static, str>>, is_write: bool) -> Alias {
        Alias {
            sets: Cow::Owned(vec![set.into()]),
            is_write,
            after: Cow::Borrowed(&[]),
        }
    }
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
    /// A named `Layout` default: `Layout layout=strided`.
    Layout(Layout),
    /// A named `MemoryFormat` default: `MemoryFormat memory_format=contiguous_format`.
    MemoryFormat(MemoryFormat),
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

/// How many arguments an op's tensor-argument mask covers (see
/// [`Schema::tensor_argument_mask`]).
pub const TENSOR_MASK_BITS: usize = 64;

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

    /// [`tensor_arguments`](Self::tensor_arguments) as an op's static data stores them: bit `i`
    /// of the mask for each such argument `i` below [`TENSOR_MASK_BITS`], and the indices from
    /// there on, which only an op of more arguments than that can have.
    pub fn tensor_argument_mask(&self) -> (u64, Vec<usize>) {
        let mut mask = 0u64;
        let mut beyond = Vec::new();
        for i in self.tensor_arguments() {
            if i < TENSOR_MASK_BITS {
                mask |= 1 << i;
            } else {
                beyond.push(i);
            }
        }
        (mask, beyond)
    }

    /// The fixed-size list arguments (`T[N]` and `T[N]?`) as (index, N): the ones the boxed
    /// boundary checks and broadcasts. Only a list directly under at most one `?` counts;
    /// deeper nesting has no schema in PyTorch and is left to the kernel. The macros compute
    /// them into each op's registration.
    pub fn fixed_list_arguments(&self) -> Vec<(usize, u32)> {
        self.arguments
            .iter()
            .enumerate()
            .filter_map(|(index, arg)| {
                let len = arg.ty.inner_list_len()?;
                let plain = match arg.ty.shape() {
                    TypeShape::List(_) => true,
                    TypeShape::Optional(inner) => inner.list_len().is_some(),
                    TypeShape::Base(_) => false,
                };
                plain.then_some((index, len))
            })
            .collect()
    }
}
