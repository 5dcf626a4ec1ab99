//! Which Rust types fit a schema type, as (spelling for messages, form code for rustc), read
//! from `opbox_codegen::rust_forms`: the table the runtime's `typemap` impls are built from.

use opbox_codegen::rust_forms::{
    base_forms, form_code, stored_typed, wrapped_form_code, RustForm, Wrapper,
};
use opbox_codegen::schema::{Type, TypeShape};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// A parameter; `in_place` for `Tensor(a!)`, which must be borrowed.
    Param {
        in_place: bool,
    },
    Return,
}

pub struct Form {
    pub spelling: String,
    /// The form's code, as the runtime's `RustParam::FORM` gives it for each of its Rust types.
    pub code: u64,
}

/// Every Rust form of `ty` at `position`, with codes deduplicated (`&str` and `String` share
/// one), so each code is listed once.
pub fn forms(ty: Type, position: Position) -> Vec<Form> {
    let mut out: Vec<Form> = Vec::new();
    for form in all_forms(ty, position) {
        match out.iter_mut().find(|f| f.code == form.code) {
            Some(existing) => {
                existing.spelling = format!("{} or {}", existing.spelling, form.spelling)
            }
            None => out.push(form),
        }
    }
    out
}

/// The spellings joined for a message: "`&Tensor` or `Tensor`".
pub fn spelled(forms: &[Form]) -> String {
    forms
        .iter()
        .map(|f| f.spelling.as_str())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn all_forms(ty: Type, position: Position) -> Vec<Form> {
    let table = |forms: &'static [RustForm], returns: &'static [RustForm]| match position {
        Position::Param { .. } => forms,
        Position::Return => returns,
    };
    match ty.shape() {
        TypeShape::Base(base) => {
            let forms = base_forms(base);
            let in_place = position == Position::Param { in_place: true };
            table(forms.params, forms.returns)
                .iter()
                .filter(|f| !in_place || f.borrows())
                .map(|f| Form {
                    spelling: format!("`{}`", f.spelling()),
                    code: form_code(f.marker),
                })
                .collect()
        }
        TypeShape::List(inner) => {
            // The elements of a list written in place are not borrowed one by one.
            let inner_position = match position {
                Position::Param { .. } => Position::Param { in_place: false },
                Position::Return => Position::Return,
            };
            wrapped(Wrapper::List, inner, inner_position, table)
        }
        TypeShape::Optional(inner) => wrapped(Wrapper::Optional, inner, position, table),
    }
}

/// The wrapper's forms around each of the element's.
fn wrapped(
    wrapper: Wrapper,
    inner: Type,
    inner_position: Position,
    table: impl Fn(&'static [RustForm], &'static [RustForm]) -> &'static [RustForm],
) -> Vec<Form> {
    let forms = wrapper.forms();
    // A borrowed list (`&[i64]`) is a slice of what the runtime stores, so only typed lists have one.
    let typed = matches!(inner.shape(), TypeShape::Base(base) if stored_typed(base));
    let mut out = Vec::new();
    for element in all_forms(inner, inner_position) {
        let element_spelling = element.spelling.trim_matches('`');
        for w in table(forms.params, forms.returns) {
            if w.borrows() && !typed {
                continue;
            }
            out.push(Form {
                spelling: format!("`{}`", w.wrap(element_spelling)),
                code: wrapped_form_code(wrapper, element.code),
            });
        }
    }
    out
}
