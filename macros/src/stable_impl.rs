//! `#[stable_impl(path, KEY)]` on a module of kernels or on one kernel fn.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, Ident, Item, ItemFn, ItemMod, Path, PathArguments, ReturnType, Token, Type};

use crate::naming;

const KEYS: [&str; 4] = ["CPU", "CUDA", "Meta", "CompositeExplicit"];

struct Args {
    path: Path,
    key: Ident,
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Args> {
        let path: Path = input.parse()?;
        input.parse::<Token![,]>()?;
        let key: Ident = input.parse()?;
        if !input.is_empty() {
            return Err(input.error(
                "expected `#[stable_impl(mylib, CPU)]` or `#[stable_impl(mylib::op, CPU)]`",
            ));
        }
        Ok(Args { path, key })
    }
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(tokens) => tokens,
        Err(error) => {
            let error = error.to_compile_error();
            quote!(#error #item)
        }
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args: Args = syn::parse2(attr).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected `#[stable_impl(mylib, CPU)]` on a module or `#[stable_impl(mylib::op, CPU)]` on a fn; the keys are CPU, CUDA, Meta, CompositeExplicit",
        )
    })?;
    check_key(&args.key)?;
    match syn::parse2::<Item>(item)? {
        Item::Mod(module) => expand_module(&args, module),
        Item::Fn(func) => expand_single(&args, func),
        other => Err(syn::Error::new(
            other.span(),
            "#[stable_impl] goes on an inline module of kernels (`mod cpu { fn op(..) {..} }`) or on one kernel fn",
        )),
    }
}

fn check_key(key: &Ident) -> syn::Result<()> {
    let name = key.to_string();
    if KEYS.contains(&name.as_str()) {
        return Ok(());
    }
    let hint = KEYS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(&name))
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    Err(syn::Error::new(
        key.span(),
        format!("unknown dispatch key `{name}`: the keys are CPU, CUDA, Meta and CompositeExplicit{hint}"),
    ))
}

fn expand_module(args: &Args, mut module: ItemMod) -> syn::Result<TokenStream> {
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new(
            module.span(),
            "#[stable_impl] needs the module's body inline (`mod cpu { ... }`): attribute macros cannot see into `mod cpu;` files",
        ));
    };
    // Inside the module, the library path as written at the attribute resolves one level up.
    let library = path_from_child(&args.path);
    let mut generated = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for item in items.iter_mut() {
        let Item::Fn(func) = item else { continue };
        let op_ident = func.sig.ident.clone();
        match kernel_items(&library, &op_ident, func, &args.key) {
            Ok(tokens) => generated.push(tokens),
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
        func.attrs.push(syn::parse_quote!(#[allow(non_snake_case)]));
    }
    if let Some(e) = errors {
        return Err(e);
    }
    for tokens in generated {
        items.push(Item::Verbatim(tokens));
    }
    Ok(quote!(#module))
}

fn expand_single(args: &Args, func: ItemFn) -> syn::Result<TokenStream> {
    let mut library = args.path.clone();
    let Some(op) = library.segments.pop() else {
        return Err(syn::Error::new(
            args.path.span(),
            "expected a path to the op, e.g. `mylib::axpby`",
        ));
    };
    let op_ident = op.into_value().ident;
    if library.segments.is_empty() {
        return Err(syn::Error::new(
            args.path.span(),
            format!(
                "name the op through its library, e.g. `#[stable_impl(mylib::{op_ident}, {})]`",
                args.key
            ),
        ));
    }
    // Drop the trailing `::` that popping left behind.
    let library = Path {
        leading_colon: library.leading_colon,
        segments: library.segments.into_iter().collect(),
    };
    let tokens = kernel_items(&library, &op_ident, &func, &args.key)?;
    Ok(quote!(#func #tokens))
}

/// `mylib` → `super::mylib`, `self::x` → `super::x`, `super::x` → `super::super::x`;
/// `crate::` and `::` paths stay as they are.
fn path_from_child(path: &Path) -> Path {
    if path.leading_colon.is_some() {
        return path.clone();
    }
    let first = path
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    match first.as_str() {
        "crate" => path.clone(),
        "self" => {
            let mut p = path.clone();
            if let Some(mut seg) = p.segments.first_mut() {
                seg.ident = Ident::new("super", seg.ident.span());
                let _ = &mut seg;
            }
            p
        }
        _ => {
            let mut p: Path = syn::parse_quote!(super);
            for seg in &path.segments {
                p.segments.push(seg.clone());
            }
            p
        }
    }
}

/// Replaces every lifetime with `'_`, so a parameter type can be named inside a check fn
/// where the kernel's own lifetime parameters are not in scope.
struct EraseLifetimes;
impl VisitMut for EraseLifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut syn::Lifetime) {
        *lifetime = syn::Lifetime::new("'_", lifetime.span());
    }
}

fn kernel_items(
    library: &Path,
    op: &Ident,
    func: &ItemFn,
    key: &Ident,
) -> syn::Result<TokenStream> {
    let sig = &func.sig;
    if let Some(bad) = sig
        .asyncness
        .as_ref()
        .map(|t| t.span())
        .or_else(|| sig.generics.type_params().next().map(|t| t.span()))
        .or_else(|| sig.generics.const_params().next().map(|t| t.span()))
        .or_else(|| sig.variadic.as_ref().map(|v| v.span()))
    {
        return Err(syn::Error::new(
            bad,
            "an op kernel is a plain fn: no async, no type or const generics",
        ));
    }
    let fn_ident = &sig.ident;
    let op_name = op.to_string();
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Typed(pat) => {
                let mut ty: Type = (*pat.ty).clone();
                EraseLifetimes.visit_type_mut(&mut ty);
                params.push((pat.ty.span(), ty));
            }
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "an op kernel is a free fn; it cannot take `self`",
                ));
            }
        }
    }
    let arity = params.len();
    // Everything below names the op through this one import: if the op does not exist, that is
    // a single unresolved-import error, and rustc stays quiet about the paths through it.
    let ops_module = trait_path(library, naming::op_module(&op_name, op.span()));
    let ops_module = respan(&ops_module, op.span());
    let ops: Path = syn::parse_quote!(__opbox_op);
    let marker: &Path = &trait_path(&ops, naming::marker_type(op.span()));
    let library = &ops;
    let arity_trait = trait_path(library, naming::arity_trait(op.span()));
    let ident_span = sig.ident.span();
    let arity_marker = respan(marker, ident_span);
    let arity_trait = respan(&arity_trait, ident_span);
    let arity_check = quote_spanned! {ident_span=>
        fn arity<M: #arity_trait<#arity>>() {}
        arity::<#arity_marker>();
    };
    let arg_checks = params.iter().enumerate().map(|(index, (span, ty))| {
        let arg_trait = trait_path(library, naming::arg_trait(index, *span));
        let check = format_ident!("arg{}", index, span = *span);
        let arg_trait = respan(&arg_trait, *span);
        let marker = respan(marker, *span);
        quote_spanned! {*span=>
            fn #check<M: #arg_trait<S>, S>() {}
            #check::<#marker, <#ty as ::opbox::__private::RustParam>::Schema>();
        }
    });
    let (ret_span, ret_ty) = match &sig.output {
        ReturnType::Default => (sig.ident.span(), quote!(())),
        ReturnType::Type(_, ty) => {
            let mut ty: Type = (**ty).clone();
            EraseLifetimes.visit_type_mut(&mut ty);
            (ty.span(), quote!(#ty))
        }
    };
    let returns_trait = trait_path(library, naming::returns_trait(ret_span));
    let returns_trait = respan(&returns_trait, ret_span);
    let returns_marker = respan(marker, ret_span);
    let returns_check = quote_spanned! {ret_span=>
        fn returns<M: #returns_trait<S>, S>() {}
        returns::<#returns_marker, <#ret_ty as ::opbox::__private::KernelReturn>::Schema>();
    };
    let gets = params
        .iter()
        .enumerate()
        .map(|(i, (span, _))| quote_spanned!(*span=> __opbox_args.get(#i)?));
    let site = quote_spanned! {sig.ident.span()=>
        ::opbox::__private::Site { file: ::core::file!(), line: ::core::line!() }
    };
    let fn_name = fn_ident.to_string();
    Ok(quote! {
        const _: () = {
            use #ops_module as __opbox_op;

            #[allow(dead_code)]
            fn __opbox_signature_check() {
                #arity_check
                #(#arg_checks)*
                #returns_check
            }

            unsafe extern "C" fn __opbox_boxed(
                stack: *mut ::opbox::StableValue,
                num_args: u64,
                num_outputs: u64,
            ) -> i32 {
                // SAFETY: the dispatcher calls this through the BoxedKernelFn contract, which is
                // exactly boxed_call's precondition.
                unsafe {
                    ::opbox::__private::boxed_call::<#marker>(stack, num_args, num_outputs, |__opbox_args, __opbox_outs| {
                        ::opbox::__private::KernelReturn::write(#fn_ident(#(#gets),*), __opbox_outs)
                    })
                }
            }

            ::opbox::__private::inventory::submit! {
                ::opbox::__private::KernelRegistration {
                    op: <#marker as ::opbox::__private::OpSpec>::NAME,
                    key: ::opbox::DispatchKey::#key,
                    kernel: __opbox_boxed,
                    site: #site,
                    function: ::core::concat!(::core::module_path!(), "::", #fn_name),
                }
            }
        };
    })
}

fn trait_path(library: &Path, trait_ident: Ident) -> Path {
    let mut p = library.clone();
    p.segments.push(syn::PathSegment {
        ident: trait_ident,
        arguments: PathArguments::None,
    });
    p
}

/// The path with every token moved to `span`, so rustc reports a failed check at the kernel's
/// parameter rather than at the attribute.
fn respan(path: &Path, span: Span) -> TokenStream {
    path.to_token_stream()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}
