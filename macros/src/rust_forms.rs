//! Which Rust types fit a schema type, as (spelling for messages, marker type for rustc). This
//! mirrors the table in `opbox_runtime::typemap`, which the markers name.

use opbox_codegen::schema::{BaseType, Type, TypeShape};
use proc_macro2::TokenStream;
use quote::quote;

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
    pub marker: TokenStream,
}

/// Every Rust form of `ty` at `position`, with markers deduplicated (`&str` and `String` share
/// one), so each marker is implemented once.
pub fn forms(ty: Type, position: Position) -> Vec<Form> {
    let mut out: Vec<Form> = Vec::new();
    for form in all_forms(ty, position) {
        let key = form.marker.to_string();
        match out.iter_mut().find(|f| f.marker.to_string() == key) {
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
    let ty_path = quote!(::opbox::__private::ty);
    match ty.shape() {
        TypeShape::Base(base) => base_forms(base, position)
            .into_iter()
            .map(|(spelling, marker)| {
                let marker = proc_macro2::Ident::new(marker, proc_macro2::Span::call_site());
                Form {
                    spelling: format!("`{spelling}`"),
                    marker: quote!(#ty_path::#marker),
                }
            })
            .collect(),
        TypeShape::List(inner) => {
            let inner_position = match position {
                Position::Param { .. } => Position::Param { in_place: false },
                Position::Return => Position::Return,
            };
            let mut out = Vec::new();
            for f in all_forms(inner, inner_position) {
                let marker = &f.marker;
                let inner_spelling = f.spelling.trim_matches('`').to_string();
                if position != Position::Return && slice_borrowable(inner) {
                    out.push(Form {
                        spelling: format!("`&[{inner_spelling}]`"),
                        marker: quote!(#ty_path::List<#marker>),
                    });
                }
                out.push(Form {
                    spelling: format!("`Vec<{inner_spelling}>`"),
                    marker: quote!(#ty_path::List<#marker>),
                });
            }
            out
        }
        TypeShape::Optional(inner) => all_forms(inner, position)
            .into_iter()
            .map(|f| {
                let marker = &f.marker;
                Form {
                    spelling: format!("`Option<{}>`", f.spelling.trim_matches('`')),
                    marker: quote!(#ty_path::Optional<#marker>),
                }
            })
            .collect(),
    }
}

/// Lists the runtime stores typed, so a kernel can borrow them as a slice.
fn slice_borrowable(inner: Type) -> bool {
    matches!(
        inner.shape(),
        TypeShape::Base(
            BaseType::Int | BaseType::Float | BaseType::Bool | BaseType::Tensor | BaseType::Str
        )
    )
}

fn base_forms(base: BaseType, position: Position) -> Vec<(&'static str, &'static str)> {
    match (base, position) {
        (BaseType::Tensor, Position::Param { in_place: true }) => vec![("&Tensor", "TensorRef")],
        (BaseType::Tensor, Position::Param { in_place: false }) => {
            vec![("&Tensor", "TensorRef"), ("Tensor", "TensorVal")]
        }
        (BaseType::Tensor, Position::Return) => vec![("Tensor", "TensorVal")],
        (BaseType::Int, _) => vec![("i64", "Int")],
        (BaseType::Float, _) => vec![("f64", "Float")],
        (BaseType::Bool, _) => vec![("bool", "Bool")],
        (BaseType::Str, Position::Param { .. }) => vec![("&str", "Str"), ("String", "Str")],
        (BaseType::Str, Position::Return) => vec![("String", "Str")],
        (BaseType::ScalarType, _) => vec![("DType", "ScalarType")],
        (BaseType::Device, _) => vec![("Device", "Device")],
        (BaseType::Scalar, _) => vec![("Scalar", "Scalar")],
    }
}
