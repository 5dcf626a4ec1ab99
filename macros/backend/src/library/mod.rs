//! `#[stable_library(ns)]` and `#[stable_fragment(ns)]`: the `m.def("schema")` calls of the body
//! (`defs.rs`, parsed and checked with opbox-codegen's schema parser), then a module of op
//! markers with their signatures (`markers.rs`) and the library's registration. The modules and
//! the op table are written by the facade's `op_markers!` and `op_table!` from what this emits.

mod defs;
mod markers;

use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema::Schema;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitStr};

use crate::errors::{with_item, Errors};
use crate::{naming, paths};

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
    /// The schema printed with its namespace: what the op's static data stores.
    text: String,
    marker: String,
    tags: Vec<OpTag>,
}

pub fn expand(attr: TokenStream, item: TokenStream, kind: Kind) -> TokenStream {
    try_expand(attr, item.clone(), kind)
        .unwrap_or_else(|error| with_item(error, without_body(item)))
}

/// The library function with an empty body, for the error path: its `m.def` calls are what the
/// errors are about, and left in they would add rustc's own errors for the same calls (a wrong
/// argument count, an unknown method). The signature stays, so the IDE keeps the item.
fn without_body(item: TokenStream) -> TokenStream {
    match syn::parse2::<ItemFn>(item.clone()) {
        Ok(mut func) => {
            func.block.stmts.clear();
            quote!(#[allow(unused_variables, dead_code)] #func)
        }
        Err(_) => item,
    }
}

fn try_expand(attr: TokenStream, item: TokenStream, kind: Kind) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let ns = errors.ok(namespace(attr, kind));
    let func = errors.ok(syn::parse2::<ItemFn>(item).map_err(|_| {
        syn::Error::new(
            Span::call_site(),
            format!(
                "#[{}] goes on a function: `fn mylib(m: &mut Library) {{ m.def(\"...\"); }}`",
                kind.attr_name()
            ),
        )
    }));
    // Without a namespace the defs are still checked, against the one they name if any.
    let mut extras = defs::Extras::default();
    let ops = func
        .as_ref()
        .map(|func| defs::collect(func, ns.as_deref(), &mut extras, &mut errors));
    let parts = match (ns, func, ops) {
        (Some(ns), Some(func), Some(ops)) => Some((ns, func, ops)),
        _ => None,
    };
    let (ns, func, ops) = errors.finish_with(parts)?;
    Ok(emit(&ns, &func, &ops, &extras, kind))
}

fn emit(ns: &str, func: &ItemFn, ops: &[OpDef], extras: &defs::Extras, kind: Kind) -> TokenStream {
    let vis = &func.vis;
    // The markers live in a module named after the function: a library and its fragments can
    // then sit side by side in one Rust module without their marker modules colliding.
    let markers_mod = &func.sig.ident;
    let markers = markers::modules(
        ops.iter()
            .enumerate()
            .map(|(i, op)| markers::items(op, i, ns)),
    );
    let table = naming::op_table(Span::call_site());
    let cells = naming::schema_cells(Span::call_site());
    let count = ops.len();
    let library_kind = match kind {
        Kind::Library => quote!(Def),
        Kind::Fragment => quote!(Fragment),
    };
    let op_defs = ops.iter().enumerate().map(|(index, op)| {
        let text = &op.text;
        let name = op.schema.qualified_name(ns);
        let name_len = name.len() as u32;
        let name_hash = opbox_codegen::op_name_hash::op_name_hash(&name);
        let num_args = op.schema.arguments.len() as u32;
        let num_outputs = op.schema.returns.len() as u32;
        let (tensor_args, more_tensor_args) = op.schema.tensor_argument_mask();
        let fixed_lists: Vec<TokenStream> = op
            .schema
            .fixed_list_arguments()
            .into_iter()
            .map(|(index, len)| quote!(::opbox::__private::FixedList::new(#index, #len)))
            .collect();
        let tags: Vec<TokenStream> = op
            .tags
            .iter()
            .map(|t| {
                let variant = Ident::new(t.variant_name(), op.lit.span());
                quote!(::opbox::__private::OpTag::#variant)
            })
            .collect();
        // Most ops have none of these: their entry then holds no pointer for them.
        let extras = if fixed_lists.is_empty() && tags.is_empty() && more_tensor_args.is_empty() {
            quote!(::core::option::Option::None)
        } else {
            quote!(::core::option::Option::Some(&::opbox::__private::OpExtras {
                fixed_lists: &[#(#fixed_lists),*],
                tags: &[#(#tags),*],
                more_tensor_args: &[#(#more_tensor_args),*],
            }))
        };
        // The line of the op's `m.def`.
        let line = quote_spanned!(op.lit.span()=> ::core::line!());
        quote! {
            (#index #text #name_len #name_hash #num_args #num_outputs #tensor_args #extras, #line)
        }
    });
    let site = paths::site(func.sig.ident.span());
    let python_module = match &extras.python_module {
        Some(m) => quote!(::core::option::Option::Some(#m)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #[allow(dead_code)]
        #func

        #[allow(non_camel_case_types, dead_code)]
        #vis mod #markers_mod {
            #markers

            ::opbox::__private::op_table! {
                #cells, #table, #count;
                #(#op_defs)*
            }
        }

        ::opbox::__private::inventory::submit! {
            ::opbox::__private::LibraryRegistration {
                namespace: #ns,
                kind: ::opbox::__private::LibraryKind::#library_kind,
                python_module: #python_module,
                site: #site,
                ops: &#markers_mod::#table,
            }
        }
    }
}

fn usage(kind: Kind) -> String {
    format!(
        "#[{}] takes the namespace as a plain identifier: #[{}(mylib)]",
        kind.attr_name(),
        kind.attr_name()
    )
}

/// The namespace the attribute names.
fn namespace(attr: TokenStream, kind: Kind) -> syn::Result<String> {
    let span = if attr.is_empty() {
        Span::call_site()
    } else {
        attr.span()
    };
    let namespace: Ident = syn::parse2(attr).map_err(|_| syn::Error::new(span, usage(kind)))?;
    let ns = namespace.to_string();
    if ns == "_" {
        return Err(syn::Error::new(
            namespace.span(),
            "a library cannot define the wildcard namespace `_`",
        ));
    }
    Ok(ns)
}
