//! Default values: the syntax after `=`, and whether it fits the argument's type.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::borrow::Cow;
use std::ops::Range;

use super::enums::{named_int, parse_device, DEVICE_FORMS, NAMED_INT_CONSTANTS};
use super::lex::{Lexer, Tok, Token};
use super::{BaseType, DefaultValue, Layout, MemoryFormat, SchemaError, Type, TypeShape};

pub(super) const TENSOR_DEFAULT_MESSAGE: &str =
    "Tensor arguments can only default to None, and only when optional (`Tensor? x=None`)";

/// The identifiers a `ScalarType` argument may default to.
pub const SCALAR_TYPE_NAMES: [&str; 13] = [
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "float",
    "double", "half", "long", "int",
];

/// One literal: a number, an identifier (`True`, `None`, `float32`) or a string.
struct Atom {
    tok: Token,
    /// The unescaped value of a string literal; empty for other tokens.
    string: String,
}

enum Value {
    Single(Atom),
    List(Vec<Atom>),
}

/// A default as written, before it is checked against the argument's type.
pub(super) struct Syntax {
    range: Range<usize>,
    value: Value,
}

/// Parses the default after `=`.
pub(super) fn parse_default(lx: &mut Lexer<'_>) -> Result<Syntax, SchemaError> {
    let tok = lx.peek()?;
    match tok.kind {
        Tok::Int | Tok::Float | Tok::Ident | Tok::Str => {
            let atom = atom(lx, tok)?;
            Ok(Syntax {
                range: tok.range(),
                value: Value::Single(atom),
            })
        }
        Tok::LBracket => {
            lx.bump(tok);
            parse_list(lx, tok.start)
        }
        _ => Err(SchemaError::new(
            tok.range(),
            format!(
                "expected a default value after `=` (a number, `True`, `False`, `None`, a \
                 string or a list such as `[1, 2]`), found {}",
                lx.describe(tok)
            ),
        )),
    }
}

fn atom(lx: &mut Lexer<'_>, tok: Token) -> Result<Atom, SchemaError> {
    lx.bump(tok);
    let string = if tok.kind == Tok::Str {
        lx.string_value(tok)?
    } else {
        String::new()
    };
    Ok(Atom { tok, string })
}

fn parse_list(lx: &mut Lexer<'_>, start: usize) -> Result<Syntax, SchemaError> {
    let mut items = Vec::new();
    let first = lx.peek()?;
    if first.kind == Tok::RBracket {
        lx.bump(first);
        return Ok(Syntax {
            range: start..first.end,
            value: Value::List(items),
        });
    }
    loop {
        let tok = lx.peek()?;
        match tok.kind {
            Tok::Int | Tok::Float | Tok::Ident | Tok::Str => items.push(atom(lx, tok)?),
            Tok::LBracket => {
                return Err(SchemaError::new(
                    tok.range(),
                    "nested lists are not supported as default values",
                ))
            }
            _ => {
                return Err(SchemaError::new(
                    tok.range(),
                    format!(
                        "expected a list element (a number, `True` or `False`), found {}",
                        lx.describe(tok)
                    ),
                ))
            }
        }
        let sep = lx.next()?;
        match sep.kind {
            Tok::Comma => continue,
            Tok::RBracket => {
                return Ok(Syntax {
                    range: start..sep.end,
                    value: Value::List(items),
                })
            }
            _ => {
                return Err(SchemaError::new(
                    sep.range(),
                    format!(
                        "expected `,` or `]` in the list default, found {}",
                        lx.describe(sep)
                    ),
                ))
            }
        }
    }
}

/// Checks `syntax` against the declared type `ty` of argument `arg`, and builds the value.
pub(super) fn check(
    lx: &Lexer<'_>,
    syntax: &Syntax,
    ty: Type,
    arg: &str,
) -> Result<DefaultValue, SchemaError> {
    Fit {
        lx,
        syntax,
        declared: ty,
        arg,
    }
    .fit(ty)
}

struct Fit<'s, 'a> {
    lx: &'s Lexer<'a>,
    syntax: &'s Syntax,
    declared: Type,
    arg: &'s str,
}

impl Fit<'_, '_> {
    /// "default `D` does not fit argument `a` of type `T`; expected {expected}".
    fn mismatch(&self, range: Range<usize>, expected: &str) -> SchemaError {
        self.does_not_fit(range, &format!("expected {expected}"))
    }

    fn does_not_fit(&self, range: Range<usize>, why: &str) -> SchemaError {
        SchemaError::new(
            range,
            format!(
                "default `{}` does not fit argument `{}` of type `{}`; {why}",
                self.lx.slice(self.syntax.range.clone()),
                self.arg,
                self.declared
            ),
        )
    }

    fn whole(&self) -> Range<usize> {
        self.syntax.range.clone()
    }

    fn is_none(&self) -> bool {
        match &self.syntax.value {
            Value::Single(a) => a.tok.kind == Tok::Ident && self.lx.text(a.tok) == "None",
            Value::List(_) => false,
        }
    }

    fn fit(&self, ty: Type) -> Result<DefaultValue, SchemaError> {
        if self.is_none() {
            if ty.is_optional() {
                return Ok(DefaultValue::None);
            }
            if ty == Type::TENSOR {
                return Err(SchemaError::new(self.whole(), TENSOR_DEFAULT_MESSAGE));
            }
            let why = format!("only optional types such as `{ty}?` can default to `None`");
            return Err(self.does_not_fit(self.whole(), &why));
        }
        match ty.shape() {
            TypeShape::Optional(inner) => self.fit(inner),
            TypeShape::Base(base) => self.single(base),
            TypeShape::List(inner) => match inner.shape() {
                TypeShape::Base(base)
                    if matches!(
                        base.concrete(),
                        BaseType::Int | BaseType::Float | BaseType::Bool
                    ) =>
                {
                    self.list(base.concrete(), ty.list_len())
                }
                _ => Err(SchemaError::new(
                    self.whole(),
                    format!(
                        "lists are only supported for int, SymInt, float or bool defaults; \
                         argument `{}` has type `{}`",
                        self.arg, self.declared
                    ),
                )),
            },
        }
    }

    fn single(&self, base: BaseType) -> Result<DefaultValue, SchemaError> {
        if base == BaseType::Tensor {
            return Err(SchemaError::new(self.whole(), TENSOR_DEFAULT_MESSAGE));
        }
        let expected = expected_single(base);
        let Value::Single(atom) = &self.syntax.value else {
            return Err(self.mismatch(self.whole(), &expected));
        };
        let text = self.lx.text(atom.tok);
        let range = atom.tok.range();
        let value = match (base.concrete(), atom.tok.kind) {
            (BaseType::Int | BaseType::DeviceIndex | BaseType::Scalar, Tok::Int) => {
                DefaultValue::Int(int(text, range)?)
            }
            (BaseType::Int, Tok::Ident) => match named_int(text) {
                Some(v) => DefaultValue::Int(v),
                None => return Err(self.mismatch(range, &expected)),
            },
            (BaseType::Float, Tok::Int | Tok::Float) | (BaseType::Scalar, Tok::Float) => {
                DefaultValue::Float(float(text, range)?)
            }
            (BaseType::Bool | BaseType::Scalar, Tok::Ident) => match bool_literal(text) {
                Some(b) => DefaultValue::Bool(b),
                None => return Err(self.mismatch(range, &expected)),
            },
            (BaseType::Device, Tok::Str) => {
                if parse_device(&atom.string).is_none() {
                    return Err(self.does_not_fit(
                        range,
                        &format!(
                            "`{}` is not a device; a device default is {DEVICE_FORMS}",
                            atom.string
                        ),
                    ));
                }
                DefaultValue::Str(Cow::Owned(atom.string.clone()))
            }
            (BaseType::Str | BaseType::Dimname, Tok::Str) => {
                DefaultValue::Str(Cow::Owned(atom.string.clone()))
            }
            (BaseType::ScalarType, Tok::Ident) if SCALAR_TYPE_NAMES.contains(&text) => {
                DefaultValue::Str(Cow::Owned(text.to_string()))
            }
            (BaseType::Layout, Tok::Ident) => match Layout::from_schema_name(text) {
                Some(l) => DefaultValue::Layout(l),
                None => return Err(self.mismatch(range, &expected)),
            },
            (BaseType::MemoryFormat, Tok::Ident) => match MemoryFormat::from_schema_name(text) {
                Some(m) => DefaultValue::MemoryFormat(m),
                None => return Err(self.mismatch(range, &expected)),
            },
            _ => return Err(self.mismatch(range, &expected)),
        };
        Ok(value)
    }

    /// A list default; for a fixed-size list `T[n]`, a lone value is `n` copies of it, as in
    /// PyTorch (`int[2] stride=1` is `[1, 1]`). A list of another length is kept as written:
    /// PyTorch's own schemas give `int[1] dim=[-2,-1]`, so the size is the broadcast count, and
    /// the runtime accepts the default's length beside `n`.
    fn list(&self, base: BaseType, fixed: Option<u32>) -> Result<DefaultValue, SchemaError> {
        let expected = match base {
            BaseType::Int => "a list of integers such as `[0, 1]`",
            BaseType::Float => "a list of numbers such as `[0.5, 1.0]`",
            _ => "a list of `True`/`False` such as `[True, False]`",
        };
        let (items, copies) = match (&self.syntax.value, fixed) {
            (Value::List(items), _) => (items.as_slice(), 1),
            (Value::Single(atom), Some(n)) => (std::slice::from_ref(atom), n as usize),
            (Value::Single(_), None) => {
                return Err(self.mismatch(
                    self.whole(),
                    &format!(
                        "{expected} (a lone value repeats only into a fixed-size list such as \
                         `int[2] x=1`)"
                    ),
                ))
            }
        };
        let mut ints = Vec::new();
        let mut floats = Vec::new();
        let mut bools = Vec::new();
        for atom in items {
            let text = self.lx.text(atom.tok);
            let range = atom.tok.range();
            match (base, atom.tok.kind) {
                (BaseType::Int, Tok::Int) => ints.push(int(text, range)?),
                (BaseType::Float, Tok::Int | Tok::Float) => floats.push(float(text, range)?),
                (BaseType::Bool, Tok::Ident) => match bool_literal(text) {
                    Some(b) => bools.push(b),
                    None => return Err(self.mismatch(range, expected)),
                },
                _ => return Err(self.mismatch(range, expected)),
            }
        }
        Ok(match base {
            BaseType::Int => DefaultValue::IntList(Cow::Owned(ints.repeat(copies))),
            BaseType::Float => DefaultValue::FloatList(Cow::Owned(floats.repeat(copies))),
            _ => DefaultValue::BoolList(Cow::Owned(bools.repeat(copies))),
        })
    }
}

fn expected_single(base: BaseType) -> String {
    let fixed = match base.concrete() {
        BaseType::Tensor => "`None`",
        BaseType::Int => {
            let names: Vec<String> = NAMED_INT_CONSTANTS
                .iter()
                .map(|(n, v)| format!("`{n}` ({v})"))
                .collect();
            return format!(
                "an integer such as `0` or `-1`, or a named constant: {}",
                names.join(", ")
            );
        }
        BaseType::DeviceIndex => "a device index such as `0` or `-1`",
        BaseType::Float => "a number such as `1.0`, `-2.5` or `1e-3`",
        BaseType::Bool => "`True` or `False`",
        BaseType::Str | BaseType::Dimname => "a string literal such as `\"mean\"`",
        BaseType::Device => return format!("a device string: {DEVICE_FORMS}"),
        BaseType::ScalarType => {
            "a dtype name: float32, float64, float16, bfloat16, int32, int64, uint8, bool, \
             float, double, half, long or int"
        }
        BaseType::Scalar => "a number, `True` or `False`",
        BaseType::Layout => return format!("a layout: {}", Layout::names_list()),
        BaseType::MemoryFormat => {
            return format!("a memory format: {}", MemoryFormat::names_list())
        }
        BaseType::Class => {
            "`None`: a custom class has no other default, and takes that one only when \
             optional (`__torch__.torch.classes.ns.Name? name=None`)"
        }
        BaseType::Generator
        | BaseType::Stream
        | BaseType::Storage
        | BaseType::QScheme
        | BaseType::DimVector
        | BaseType::GraphModule => {
            return format!(
                "`None`: a `{0}` has no other default, and takes that one only when optional \
                 (`{0}? name=None`)",
                base.schema_name()
            )
        }
        // `concrete` maps these to int, float and bool above.
        BaseType::SymInt | BaseType::SymFloat | BaseType::SymBool => "a number",
    };
    fixed.to_string()
}

fn bool_literal(text: &str) -> Option<bool> {
    match text {
        "True" => Some(true),
        "False" => Some(false),
        _ => None,
    }
}

fn int(text: &str, range: Range<usize>) -> Result<i64, SchemaError> {
    text.parse().map_err(|_| {
        SchemaError::new(
            range,
            format!("integer `{text}` is out of range for `int` (i64)"),
        )
    })
}

fn float(text: &str, range: Range<usize>) -> Result<f64, SchemaError> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(SchemaError::new(
            range,
            format!("number `{text}` is out of range for `float` (f64)"),
        )),
    }
}
