//! One op's marker module: the marker type with its `OpSpec` (name, and static data in the library's table),
//! and the `Signature` `#[stable_impl]` checks a kernel's arity, parameters and return against,
//! each with a message that names the op, the argument and the Rust types that fit.

use proc_macro2::{Span, TokenStream};
use quote::quote;

use super::OpDef;
use crate::naming;
use crate::rust_forms::{forms, spelled, Position};
use opbox_codegen::rust_forms::unsupported;

/// The entry of one op in its library's `op_markers!`: its marker module's name, and the
/// signature kernels are checked against, with every message. `index` is the op's place in its
/// library's table of `OpDef`s, which holds its static data.
pub(super) fn items(op: &OpDef, index: usize, ns: &str) -> TokenStream {
    let span = op.lit.span();
    let marker_name = &op.marker;
    let printed = op.text.as_str();
    let full = op.schema.qualified_name(ns);
    let arity = op.schema.arguments.len();
    let arity_message = format!(
        "`{full}` takes {arity} argument{}, so its kernel must take {arity} parameter{}",
        if arity == 1 { "" } else { "s" },
        if arity == 1 { "" } else { "s" }
    );
    let schema_note = format!("schema: {printed}");

    let params = op.schema.arguments.iter().enumerate().map(|(index, arg)| {
        let in_place = arg.is_mutable();
        let fits = forms(arg.ty, Position::Param { in_place });
        let shown_ty = arg.ty.display_with_alias(arg.alias.as_ref()).to_string();
        let unsupported = unsupported(arg.ty.base_type());
        let message = match unsupported {
            // No Rust type fits: say so, instead of listing an empty set of forms.
            Some(why) => format!(
                "`{full}` takes argument #{index} ({}) as `{shown_ty}`, which opbox cannot pass to a kernel: {why}",
                arg.name
            ),
            None => format!(
                "`{full}` expects argument #{index} ({}) to be `{shown_ty}`, taken as {}",
                arg.name,
                spelled(&fits)
            ),
        };
        let note = if unsupported.is_some() {
            format!("the op can be defined, and called with a boxed kernel registered by hand, but `#[stable_impl]` cannot implement it\n{schema_note}")
        } else if in_place {
            format!("`{shown_ty}` is written in place: borrow it as `&Tensor` so the caller's tensor is the one that changes\n{schema_note}")
        } else {
            schema_note.clone()
        };
        let error = format!("{message}\n{note}");
        let fits = fits.iter().map(|f| f.code);
        quote!(([#(#fits)*] #error))
    });

    let return_forms: Vec<_> = op
        .schema
        .returns
        .iter()
        .map(|r| forms(r.ty, Position::Return))
        .collect();
    let return_spelled = match return_forms.len() {
        0 => "`()`".to_string(),
        1 => spelled(&return_forms[0]),
        _ => format!(
            "a tuple ({})",
            return_forms
                .iter()
                .map(|f| spelled(f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let unsupported_return = op
        .schema
        .returns
        .iter()
        .find_map(|r| unsupported(r.ty.base_type()).map(|why| (r.ty.base_name(), why)));
    let returns_message = match unsupported_return {
        Some((base, why)) => format!(
            "`{full}` returns `{base}`, which opbox cannot return from a kernel: {why}; `#[stable_impl]` cannot implement this op"
        ),
        None => format!(
        "`{full}` returns {}, so its kernel must return {return_spelled} (or a Result of it)",
        match op.schema.returns.len() {
            0 => "nothing".to_string(),
            1 => format!("`{}`", op.schema.returns[0].ty),
            _ => format!(
                "({})",
                op.schema
                    .returns
                    .iter()
                    .map(|r| r.ty.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    ),
    };
    let arity_error = format!("{arity_message}\n{schema_note}");
    let returns_error = format!("{returns_message}\n{schema_note}");
    let returns = return_forms.iter().map(|forms| {
        let codes = forms.iter().map(|f| f.code);
        quote!([#(#codes)*])
    });
    let op_module = naming::op_module(marker_name, span);
    // One entry of `op_markers!`, which writes the module (see its docs).
    quote! {
        #printed #op_module [#index] #full [#(#params)*] #arity_error [#(#returns)*] #returns_error;
    }
}

/// The marker modules of a library's ops: one `op_markers!`, with the names `#[stable_impl]`
/// and the runtime read, from `naming`.
pub(super) fn modules(entries: impl Iterator<Item = TokenStream>) -> TokenStream {
    let span = Span::call_site();
    let marker = naming::marker_type(span);
    let boxed = naming::boxed_const(span);
    let signature = naming::signature_const(span);
    let table = naming::op_table(span);
    quote! {
        ::opbox::__private::op_markers! {
            #marker, #boxed, #signature, #table;
            #(#entries)*
        }
    }
}
