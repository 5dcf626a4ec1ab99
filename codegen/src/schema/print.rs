//! The canonical printer: `ns::name.overload(Tensor(a!) x, float a=1.0, *, int? dim=None) -> Tensor`.
//!
//! One space after each comma, `*` before the first keyword-only argument, ` -> ` before the
//! returns, a single return bare, several in parentheses, none as `()`. Floats print with `{:?}`
//! (the shortest text that reads back as the same `f64`), strings double-quoted with escapes,
//! and `ScalarType` defaults as bare names. `parse(&s.to_string()) == Ok(s)` for every schema
//! that `parse` returns.

use std::fmt::{self, Display, Formatter, Write};

use super::{Alias, Argument, BaseType, DefaultValue, OperatorName, Return, Schema, Type};

impl Display for OperatorName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}::")?;
        }
        f.write_str(&self.name)?;
        if !self.overload.is_empty() {
            write!(f, ".{}", self.overload)?;
        }
        Ok(())
    }
}

/// Prints the annotation as it follows `Tensor`: `(a)`, `(a!)`, `(a|b)`, `(a! -> *)`.
impl Display for Alias {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        write_sets(f, &self.sets)?;
        if self.is_write {
            f.write_char('!')?;
        }
        if !self.after.is_empty() {
            f.write_str(" -> ")?;
            write_sets(f, &self.after)?;
        }
        f.write_char(')')
    }
}

fn write_sets(f: &mut Formatter<'_>, sets: &[std::borrow::Cow<'static, str>]) -> fmt::Result {
    for (i, set) in sets.iter().enumerate() {
        if i > 0 {
            f.write_char('|')?;
        }
        f.write_str(set)?;
    }
    Ok(())
}

/// `ty` with `alias` placed after the base name: `Tensor(a!)[]?`.
fn write_type(f: &mut Formatter<'_>, ty: Type, alias: Option<&Alias>) -> fmt::Result {
    let base = ty.base_name();
    f.write_str(base)?;
    if let Some(alias) = alias {
        write!(f, "{alias}")?;
    }
    // The type's own Display writes the suffixes (`[2]`, `[]`, `?`) after the base name.
    let whole = ty.to_string();
    f.write_str(whole.get(base.len()..).unwrap_or(""))
}

fn write_list<T>(
    f: &mut Formatter<'_>,
    items: &[T],
    item: impl Fn(&mut Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    f.write_char('[')?;
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        item(f, x)?;
    }
    f.write_char(']')
}

fn write_bool(f: &mut Formatter<'_>, b: bool) -> fmt::Result {
    f.write_str(if b { "True" } else { "False" })
}

fn write_str_literal(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

impl Display for DefaultValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::None => f.write_str("None"),
            DefaultValue::Bool(b) => write_bool(f, *b),
            DefaultValue::Int(i) => write!(f, "{i}"),
            DefaultValue::Float(x) => write!(f, "{x:?}"),
            DefaultValue::Str(s) => write_str_literal(f, s),
            DefaultValue::IntList(v) => write_list(f, v, |f, i| write!(f, "{i}")),
            DefaultValue::FloatList(v) => write_list(f, v, |f, x| write!(f, "{x:?}")),
            DefaultValue::BoolList(v) => write_list(f, v, |f, b| write_bool(f, *b)),
            DefaultValue::Layout(l) => f.write_str(l.schema_name()),
            DefaultValue::MemoryFormat(m) => f.write_str(m.schema_name()),
        }
    }
}

/// `Tensor(a!) x`, `float alpha=1.0`, `ScalarType? dtype=float32`. The `*` that marks
/// keyword-only arguments belongs to the [`Schema`]'s printer.
impl Display for Argument {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_type(f, self.ty, self.alias.as_ref())?;
        write!(f, " {}", self.name)?;
        match &self.default {
            None => Ok(()),
            // A dtype default is a bare name (`float32`), not a string.
            Some(DefaultValue::Str(name)) if self.ty.base_type() == BaseType::ScalarType => {
                write!(f, "={name}")
            }
            Some(value) => write!(f, "={value}"),
        }
    }
}

impl Display for Return {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_type(f, self.ty, self.alias.as_ref())?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

impl Display for Schema {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        let mut star_written = false;
        for (i, arg) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if arg.kw_only && !star_written {
                f.write_str("*, ")?;
                star_written = true;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        match &*self.returns {
            [one] => write!(f, "{one}"),
            many => {
                f.write_char('(')?;
                for (i, ret) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{ret}")?;
                }
                f.write_char(')')
            }
        }
    }
}

impl Schema {
    /// `ns::name` or `ns::name.overload`, with the schema's own namespace when it names one and
    /// `default_ns` (the enclosing library's) otherwise.
    pub fn qualified_name(&self, default_ns: &str) -> String {
        let ns = self.name.namespace.as_deref().unwrap_or(default_ns);
        let mut out = format!("{ns}::{}", self.name.name);
        if !self.name.overload.is_empty() {
            out.push('.');
            out.push_str(&self.name.overload);
        }
        out
    }

    /// The operator name as written in the schema: `name`, `name.overload`, or with `ns::` when
    /// the schema names its namespace. For messages.
    pub fn display_name(&self) -> String {
        self.name.to_string()
    }
}

impl Type {
    /// This type printed with an alias annotation after its base: `Tensor(a!)[]`.
    pub fn display_with_alias(self, alias: Option<&Alias>) -> impl Display + '_ {
        struct WithAlias<'a>(Type, Option<&'a Alias>);
        impl Display for WithAlias<'_> {
            fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
                write_type(f, self.0, self.1)
            }
        }
        WithAlias(self, alias)
    }
}
