//! One op's marker module: the marker type with its `OpSpec` (name, and static data in the library's table),
//! and the `Signature` `#[stable_impl]` checks a kernel's arity, parameters and return against,
//! each with a message that names the op, the argument and the Rust types that fit.

use proc_macro2::TokenStream;
use quote::quote;

use super::OpDef;
use crate::naming;
use crate::rust_forms::{forms, spelled, Position};
use opbox_codegen::rust_forms::unsupported;

/// The marker type of one op, its `OpSpec`, and the signature kernels are checked against.
/// `index` is the op's place in its library's table of `OpDef`s, which holds its static data.
pub(super) fn items(op: &OpDef, index: usize, ns: &str) -> TokenStream {
    let span = op.lit.span();
    let marker_name = &op.marker;
    let marker = naming::marker_type(span);
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
        quote!(::opbox::__private::ParamSignature { fits: &[#(#fits),*], error: #error })
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
        quote!(&[#(#codes),*])
    });
    let signature = naming::signature_const(span);
    let op_module = naming::op_module(marker_name, span);
    let boxed = naming::boxed_const(span);
    let table = naming::op_table(span);
    // No doc comments inside: at 1,000 ops each one is 1,000 attributes for rustc to lower on
    // every build. The module's doc is the schema; `Op` is the marker for typed calls
    // (`OpSpec`), `BOXED` the op's static data (its schema as text, parsed on first use) in its
    // library's table, and `SIGNATURE` what `#[stable_impl]` checks each kernel against.
    quote! {
        #[doc = #printed]
        #[allow(non_snake_case)]
        pub mod #op_module {
            pub struct #marker;

            pub const #boxed: &'static ::opbox::__private::BoxedOp = &super::#table[#index].op;

            impl ::opbox::__private::OpSpec for #marker {
                const NAME: &'static str = #full;
                const BOXED: &'static ::opbox::__private::BoxedOp = #boxed;
            }

            pub const #signature: ::opbox::__private::Signature = ::opbox::__private::Signature {
                params: &[#(#params),*],
                arity_error: #arity_error,
                returns: &[#(#returns),*],
                returns_error: #returns_error,
            };
        }
    }
}
