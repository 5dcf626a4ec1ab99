//! `#[builtin(native = "my_addon::scale")]`: a C++ device function (from a preamble or a header)
//! with a Rust signature, which kernels may call.
//!
//! ```ignore
//! #[builtin(native = "my_addon::scale")]
//! fn scale(c: Color, s: f32) -> Color;                 // device only
//!
//! #[builtin(native = "my_addon::lerp")]
//! fn lerp(a: f32, b: f32, t: f32) -> f32 { a + (b - a) * t }   // the body is the CPU build
//! ```
//! The native name must be a qualified C++ identifier; it is split into namespace and function,
//! keeping a leading `::`. Parameters are `name: Type` with [`NativeField`] types (scalars,
//! halves, native types, fixed arrays), as is the return type; no generics, receivers or
//! patterns. Expansion: the fn itself when it has a body, a hidden
//! `const __opbox_builtin_<name>: &BuiltinDecl`, and an inventory registration; the registry
//! accepts an identical declaration again and refuses the same inputs with another return type
//! or native function, naming both sites.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{FnArg, ForeignItemFn, ItemFn, LitStr, Pat, ReturnType, Signature, Visibility};

use opbox_codegen::native::validate_native_name;

use crate::diagnostic::{field_type_of, field_type_trait};
use crate::errors::{with_item, Errors};
use crate::naming::unraw;
use crate::paths;

struct Args {
    native: LitStr,
}

/// The attribute's arguments, with every wrong one reported.
fn parse_args(attr: TokenStream, errors: &mut Errors) -> Option<Args> {
    let meta = errors.ok(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated.parse2(attr))?;
    let mut native = None;
    for m in meta {
        match &m {
            syn::Meta::NameValue(nv) if nv.path.is_ident("native") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => native = Some(s.clone()),
                other => errors.at(
                    other.span(),
                    "`native` takes a string: native = \"my_addon::scale\"",
                ),
            },
            _ => errors.at(
                m.span(),
                "unknown #[builtin] argument: expected native = \"ns::function\"",
            ),
        }
    }
    if native.is_none() && errors.is_empty() {
        errors.at(
            Span::call_site(),
            "#[builtin] needs the C++ function's name: #[builtin(native = \"my_addon::scale\")]",
        );
    }
    native.map(|native| Args { native })
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(tokens) => tokens,
        // A fn with a body is valid Rust on its own, so it stays; a declaration is not.
        Err(e) => match syn::parse2::<ItemFn>(item) {
            Ok(f) => with_item(e, f),
            Err(_) => e.to_compile_error(),
        },
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let args = parse_args(attr, &mut errors);
    if let Some(a) = &args {
        if let Err(e) = validate_native_name(&a.native.value()) {
            errors.at(a.native.span(), e);
        }
    }
    let decl = errors.ok(declaration(item)).map(|(vis, sig, body)| {
        check_sig(&sig, &mut errors);
        let params = params(&sig, &mut errors);
        (vis, sig, body, params)
    });
    let (args, (vis, sig, body, params)) = errors.finish_with(args.zip(decl))?;
    Ok(emit(&vis, &sig, body, &args.native, &params))
}

/// The fn, with its body (the CPU build) if it has one.
fn declaration(item: TokenStream) -> syn::Result<(Visibility, Signature, Option<ItemFn>)> {
    match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => Ok((f.vis.clone(), f.sig.clone(), Some(f))),
        Err(_) => syn::parse2::<ForeignItemFn>(item).map(|f| (f.vis, f.sig, None)),
    }
}

/// `name: Type` per parameter; C++ sees each by name.
fn params(sig: &Signature, errors: &mut Errors) -> Vec<(syn::Ident, syn::Type)> {
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => errors.at(
                r.span(),
                "a #[builtin] is a free C++ function: it takes no `self`",
            ),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    params.push((p.ident.clone(), (*t.ty).clone()))
                }
                other => errors.at(
                    other.span(),
                    "a #[builtin] parameter is `name: Type`: C++ sees it by name",
                ),
            },
        }
    }
    params
}

fn check_sig(sig: &Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            sig.generics.span(),
            "a #[builtin] cannot be generic: declare one #[builtin] per signature (same name, other inputs: an overload)",
        );
    }
    if let Some(a) = &sig.asyncness {
        errors.at(a.span, "a #[builtin] cannot be async");
    }
    if let Some(v) = &sig.variadic {
        errors.at(v.span(), "a #[builtin] cannot be variadic");
    }
}

fn emit(
    vis: &Visibility,
    sig: &Signature,
    body: Option<ItemFn>,
    native: &LitStr,
    params: &[(syn::Ident, syn::Type)],
) -> TokenStream {
    let p = quote!(::opbox::__private::native);
    let name = unraw(&sig.ident);
    let decl_ident = format_ident!("__opbox_builtin_{}", name);
    let dsl_ident = crate::naming::dsl_fn_const(&name, sig.ident.span());
    let dsl_cpp = format!("opbox_builtin_{name}");
    // One local trait per parameter (and the return), so that rustc's message for a type that
    // cannot cross names the parameter; each forwards to NativeField.
    let mut traits = Vec::new();
    let mut field_type = |what: String, ty: &syn::Type| {
        let tr = format_ident!("__OpboxBuiltinType{}", traits.len());
        traits.push(field_type_trait(
            &tr,
            &format!("{what} of #[builtin] `{name}` is a `{{Self}}`, which cannot cross to C++"),
            "not native-compatible",
            &["a #[builtin] takes and returns scalars (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16 (also opbox::native::f16, bf16), #[derive(NativeType)] types, or fixed arrays [T; N] of those"],
        ));
        field_type_of(ty, &tr)
    };
    let params: Vec<_> = params
        .iter()
        .map(|(ident, ty)| {
            let pname = ident.to_string();
            let ft = field_type(format!("parameter `{pname}`"), ty);
            quote!(#p::BuiltinParam { name: #pname, ty: #ft })
        })
        .collect();
    let ret = match &sig.output {
        ReturnType::Default => quote!(::core::option::Option::None),
        ReturnType::Type(_, ty) if matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty()) => {
            quote!(::core::option::Option::None)
        }
        ReturnType::Type(_, ty) => {
            let ft = field_type("the return type".to_string(), ty);
            quote!(::core::option::Option::Some(#ft))
        }
    };
    let site = paths::site(Span::call_site());
    quote! {
        #body

        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis const #decl_ident: &'static #p::BuiltinDecl = {
            #(#traits)*
            &#p::BuiltinDecl {
                name: #name,
                native_name: #native,
                params: &[#(#params),*],
                ret: #ret,
            }
        };

        // What a #[kernel] that calls it reads: the C++ name calls use, and the wrapper.
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis const #dsl_ident: &'static ::opbox::__private::dsl::DslFn = &::opbox::__private::dsl::DslFn {
            cpp_name: #dsl_cpp,
            body: ::opbox::__private::dsl::DslBody::Builtin(#decl_ident),
        };

        ::opbox::__private::inventory::submit! {
            #p::BuiltinRegistration {
                decl: #decl_ident,
                site: #site,
            }
        }
    }
}
