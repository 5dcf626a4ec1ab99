//! `#[stable_library(ns)]` and `#[stable_fragment(ns)]`.

use std::collections::HashMap;

use opbox_codegen::schema::{self, Schema};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprMethodCall, Ident, ItemFn, Lit, LitStr, Stmt};

use crate::naming;
use crate::rust_forms::{forms, spelled, Position};
use crate::schema_error::to_syn_error;
use crate::schema_tokens;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Library,
    Fragment,
}

impl Kind {
    fn attr_name(self) -> &'static str {
        match self {
            Kind::Library => "stable_library",
            Kind::Fragment => "stable_fragment",
        }
    }
}

struct OpDef {
    lit: LitStr,
    schema: Schema,
    marker: String,
}

pub fn expand(attr: TokenStream, item: TokenStream, kind: Kind) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let message = format!(
                "#[{}] goes on a function: `fn {}(m: &mut Library) {{ m.def(\"...\"); }}`",
                kind.attr_name(),
                "mylib"
            );
            return with_item(syn::Error::new(Span::call_site(), message), item);
        }
    };
    match try_expand(attr, &func, kind) {
        Ok(tokens) => tokens,
        Err(error) => with_item(error, item),
    }
}

/// The error, plus the item as written, so the user sees this error and not a cascade.
fn with_item(error: syn::Error, item: TokenStream) -> TokenStream {
    let error = error.to_compile_error();
    quote!(#error #item)
}

fn try_expand(attr: TokenStream, func: &ItemFn, kind: Kind) -> syn::Result<TokenStream> {
    let namespace: Ident = syn::parse2(attr.clone()).map_err(|_| {
        syn::Error::new(
            if attr.is_empty() {
                Span::call_site()
            } else {
                attr.span()
            },
            format!(
                "#[{}] takes the namespace as a plain identifier: #[{}(mylib)]",
                kind.attr_name(),
                kind.attr_name()
            ),
        )
    })?;
    let ns = namespace.to_string();
    if ns == "_" {
        return Err(syn::Error::new(
            namespace.span(),
            "a library cannot define the wildcard namespace `_`",
        ));
    }
    let ops = collect_defs(func, &ns)?;
    let vis = &func.vis;
    // The markers live in a module named after the function: a library and its fragments can
    // then sit side by side in one Rust module without their marker modules colliding.
    let markers_mod = &func.sig.ident;
    let markers = ops.iter().map(|op| marker_items(op, &ns));
    let library_kind = match kind {
        Kind::Library => quote!(Def),
        Kind::Fragment => quote!(Fragment),
    };
    let op_defs = ops.iter().map(|op| {
        let marker = format_ident!("{}", op.marker, span = op.lit.span());
        quote_spanned! {op.lit.span()=>
            ::opbox::__private::OpDef {
                schema: <#markers_mod::#marker::Op as ::opbox::__private::OpSpec>::SCHEMA,
                site: ::opbox::__private::Site { file: ::core::file!(), line: ::core::line!() },
            }
        }
    });
    let site_span = func.sig.ident.span();
    let site = quote_spanned! {site_span=>
        ::opbox::__private::Site { file: ::core::file!(), line: ::core::line!() }
    };
    Ok(quote! {
        #[allow(dead_code)]
        #func

        #[allow(non_camel_case_types, dead_code)]
        #vis mod #markers_mod {
            #(#markers)*
        }

        ::opbox::__private::inventory::submit! {
            ::opbox::__private::LibraryRegistration {
                namespace: #ns,
                kind: ::opbox::__private::LibraryKind::#library_kind,
                site: #site,
                ops: &[#(#op_defs),*],
            }
        }
    })
}

/// Every `m.def("...")` in the body, parsed; all problems reported together.
fn collect_defs(func: &ItemFn, ns: &str) -> syn::Result<Vec<OpDef>> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let mut literals = Vec::new();
    for stmt in &func.block.stmts {
        match stmt {
            Stmt::Expr(expr, _) => collect_calls(expr, &mut literals, &mut push),
            other => push(syn::Error::new(
                other.span(),
                "a library body holds only `m.def(\"schema\");` calls, so every schema is known at compile time",
            )),
        }
    }
    let mut ops: Vec<OpDef> = Vec::new();
    let mut seen: HashMap<String, LitStr> = HashMap::new();
    for lit in literals {
        let schema = match schema::parse(&lit.value()) {
            Ok(s) => s,
            Err(e) => {
                push(to_syn_error(&lit, &e));
                continue;
            }
        };
        if let Some(explicit) = &schema.name.namespace {
            if explicit != ns {
                push(syn::Error::new(
                    lit.span(),
                    format!("this schema names namespace `{explicit}`, but it is inside #[stable_library({ns})]: drop the `{explicit}::` prefix or move it to the library for `{explicit}`"),
                ));
                continue;
            }
        }
        let marker = naming::marker_name(&schema.name.name, &schema.name.overload);
        let full = schema.qualified_name(ns);
        if let Some(first) = seen.get(&marker) {
            let line = first.span().start().line;
            let message = if line > 0 {
                format!("operator `{full}` is already defined in this library (line {line}); give this one an overload name, e.g. `{}.other(...)`", schema.name.name)
            } else {
                format!("operator `{full}` is already defined in this library; give this one an overload name, e.g. `{}.other(...)`", schema.name.name)
            };
            push(syn::Error::new(lit.span(), message));
            continue;
        }
        seen.insert(marker.clone(), lit.clone());
        ops.push(OpDef {
            lit,
            schema,
            marker,
        });
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(ops),
    }
}

fn collect_calls(expr: &Expr, out: &mut Vec<LitStr>, push: &mut impl FnMut(syn::Error)) {
    let Expr::MethodCall(ExprMethodCall {
        receiver,
        method,
        args,
        ..
    }) = expr
    else {
        push(syn::Error::new(
            expr.span(),
            "a library body holds only `m.def(\"schema\");` calls, so every schema is known at compile time",
        ));
        return;
    };
    if let Expr::MethodCall(_) = receiver.as_ref() {
        collect_calls(receiver, out, push);
    }
    if method != "def" {
        push(syn::Error::new(
            method.span(),
            format!("unknown library method `{method}`; use `m.def(\"schema\")`"),
        ));
        return;
    }
    match (args.len(), args.first()) {
        (1, Some(Expr::Lit(lit))) => match &lit.lit {
            Lit::Str(s) => out.push(s.clone()),
            other => push(syn::Error::new(
                other.span(),
                "m.def takes the schema as a string literal",
            )),
        },
        _ => push(syn::Error::new(
            args.span(),
            "m.def takes one string literal, the schema, so it can be checked at compile time",
        )),
    }
}

/// The marker type of one op, its `OpSpec`, and the traits that check kernel signatures.
fn marker_items(op: &OpDef, ns: &str) -> TokenStream {
    let span = op.lit.span();
    let marker_name = &op.marker;
    let marker = naming::marker_type(span);
    let schema_expr = schema_tokens::schema(&op.schema, ns);
    let mut printed = op.schema.clone();
    printed.name.namespace = Some(ns.to_string().into());
    let printed = printed.to_string();
    let full = op.schema.qualified_name(ns);
    let arity = op.schema.arguments.len();
    let arity_trait = naming::arity_trait(span);
    let arity_message = format!(
        "`{full}` takes {arity} argument{}, so its kernel must take {arity} parameter{}",
        if arity == 1 { "" } else { "s" },
        if arity == 1 { "" } else { "s" }
    );
    let schema_note = format!("schema: {printed}");

    let arg_traits = (0..arity.max(naming::ARG_TRAIT_MIN)).map(|index| {
        let trait_ident = naming::arg_trait(index, span);
        let Some(arg) = op.schema.arguments.get(index) else {
            let message = format!("`{full}` has only {arity} argument{}: remove this parameter", if arity == 1 { "" } else { "s" });
            return quote! {
                #[diagnostic::on_unimplemented(message = #message, label = "not in the schema", note = #schema_note)]
                pub trait #trait_ident<S> {}
            };
        };
        let in_place = arg.is_mutable();
        let fits = forms(arg.ty, Position::Param { in_place });
        let shown_ty = match &arg.alias {
            Some(a) => format!("{}({}{})", arg.ty, a.set, if a.is_write { "!" } else { "" }),
            None => arg.ty.to_string(),
        };
        let message = format!(
            "`{full}` expects argument #{index} ({}) to be `{shown_ty}`, taken as {}",
            arg.name,
            spelled(&fits)
        );
        let label = format!("expected {} here", spelled(&fits));
        let note = if in_place {
            format!("`{shown_ty}` is written in place: borrow it as `&Tensor` so the caller's tensor is the one that changes; {schema_note}")
        } else {
            schema_note.clone()
        };
        let impls = fits.iter().map(|f| {
            let m = &f.marker;
            quote!(impl #trait_ident<#m> for #marker {})
        });
        quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            pub trait #trait_ident<S> {}
            #(#impls)*
        }
    });

    let returns_trait = naming::returns_trait(span);
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
    let returns_message = format!(
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
    );
    let return_impls = cartesian(&return_forms)
        .into_iter()
        .map(|markers| quote!(impl #returns_trait<(#(#markers,)*)> for #marker {}));

    let op_module = naming::op_module(marker_name, span);
    quote! {
        #[doc = #printed]
        #[allow(non_snake_case)]
        pub mod #op_module {
            /// The op's marker type, which `#[stable_impl]` checks kernels against.
            pub struct #marker;

            impl ::opbox::__private::OpSpec for #marker {
                const NAME: &'static str = #full;
                const SCHEMA: &'static ::opbox::__private::schema::Schema = &#schema_expr;
            }

            #[diagnostic::on_unimplemented(message = #arity_message, label = "the schema has a different number of arguments", note = #schema_note)]
            pub trait #arity_trait<const N: usize> {}
            impl #arity_trait<#arity> for #marker {}

            #(#arg_traits)*

            #[diagnostic::on_unimplemented(message = #returns_message, label = "does not match the schema's return", note = #schema_note)]
            pub trait #returns_trait<S> {}
            #(#return_impls)*
        }
    }
}

/// Every combination of one form per return.
fn cartesian(per_return: &[Vec<crate::rust_forms::Form>]) -> Vec<Vec<TokenStream>> {
    let mut out: Vec<Vec<TokenStream>> = vec![Vec::new()];
    for options in per_return {
        let mut next = Vec::new();
        for prefix in &out {
            for f in options {
                let mut row = prefix.clone();
                row.push(f.marker.clone());
                next.push(row);
            }
        }
        out = next;
    }
    out
}
