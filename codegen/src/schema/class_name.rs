//! Custom class types, `__torch__.torch.classes.ns.Name` (TorchBind objects): the one place
//! that knows their form, and the interner that gives a name parsed at run time the `'static`
//! lifetime a [`Type`](super::Type) holds (a schema parsed by a macro names it as a literal).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use super::lex::{Lexer, Tok, Token};
use super::{SchemaError, Type};

/// The prefix of every custom class name; the parser reads it as identifiers between dots.
pub(super) const PREFIX: [&str; 3] = ["__torch__", "torch", "classes"];

/// What a custom class name must look like, for messages.
pub(super) const FORM: &str =
    "a custom class is written `__torch__.torch.classes.<namespace>.<Name>`";

/// The rest of a custom class type after its first identifier `first` (`__torch__`, already
/// consumed): `.torch.classes.ns.Name`, as PyTorch's schema type parser reads it. The type holds
/// the name as the schema writes it, without spaces.
pub(super) fn parse_class(lx: &mut Lexer<'_>, first: Token) -> Result<Type, SchemaError> {
    // After `__torch__`: `torch`, `classes`, then the namespace and the class's own name.
    let expected = [Some(PREFIX[1]), Some(PREFIX[2]), None, None];
    let mut name = String::from(PREFIX[0]);
    for part in expected {
        let dot = lx.next()?;
        let ident = lx.next()?;
        let fits = dot.kind == Tok::Dot
            && ident.kind == Tok::Ident
            && part.is_none_or(|p| lx.text(ident) == p);
        if !fits {
            let bad = if dot.kind == Tok::Dot { ident } else { dot };
            return Err(SchemaError::new(
                first.start..bad.end,
                format!("{FORM}; found {} after `{name}`", lx.describe(bad)),
            ));
        }
        name.push('.');
        name.push_str(lx.text(ident));
    }
    Ok(Type::class(intern_class_name(&name)))
}

/// `name` with the `'static` lifetime: each distinct name is allocated once and kept for the
/// process (class names are few, and a parsed schema may be kept as long).
pub fn intern_class_name(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(&known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_interned_once() {
        let a = intern_class_name("__torch__.torch.classes.ns.A");
        let again = intern_class_name(&String::from("__torch__.torch.classes.ns.A"));
        assert!(std::ptr::eq(a, again));
        assert_ne!(a, intern_class_name("__torch__.torch.classes.ns.B"));
    }
}
