//! One kernel: the checks rustc runs on its signature (arity, each parameter, the return, against
//! the op's `SIGNATURE`, in consts), and what the facade's `kernel_items!` needs to write its
//! registration under the dispatch key, with the entries the dispatcher calls.

use opbox_codegen::shared_shim::SHARED_SHIM_MAX_PARAMS;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, Ident, Path, ReturnType, Signature, Type};

use crate::errors::Errors;
use crate::naming;
use crate::paths::{join, respan};

/// Replaces every lifetime with `'_`, so a parameter type can be named inside a check fn
/// where the kernel's own lifetime parameters are not in scope.
struct EraseLifetimes;
impl VisitMut for EraseLifetimes {
    fn visit_lifetime_mut(&mut self, lifetime: &mut syn::Lifetime) {
        *lifetime = syn::Lifetime::new("'_", lifetime.span());
    }
}

/// What makes a fn no kernel, each at its own span.
pub(super) fn check(sig: &Signature, errors: &mut Errors) {
    let plain = sig
        .asyncness
        .iter()
        .map(|t| t.span())
        .chain(sig.generics.type_params().map(|t| t.span()))
        .chain(sig.generics.const_params().map(|t| t.span()))
        .chain(sig.variadic.iter().map(|v| v.span()));
    for bad in plain {
        errors.at(
            bad,
            "an op kernel is a plain fn: no async, no type or const generics",
        );
    }
    for input in &sig.inputs {
        if let FnArg::Receiver(r) = input {
            errors.at(r.span(), "an op kernel is a free fn; it cannot take `self`");
        }
    }
}

/// The kernel's entry in its `#[stable_impl]`'s `kernel_items!` (`super::registrations_of`), for
/// a fn that passed [`check`]: the name of its registration const (returned too), the op's
/// module, the signature checks with the user's spans, and what the macro writes the
/// registration from (with a body of the kernel's own where its parameter list is too long to
/// share the boxed entry of its shape). The caller submits the consts of one
/// `#[stable_impl]` together (`super::submit`).
pub(super) fn items(
    library: &Path,
    op: &Ident,
    sig: &Signature,
    key: &Ident,
) -> (TokenStream, Ident) {
    let fn_ident = &sig.ident;
    // A kernel for op `where` is `fn r#where`: the module is found by the name without `r#`.
    let op_name = naming::unraw(op);
    let params: Vec<(Span, Type)> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pat) => {
                let mut ty: Type = (*pat.ty).clone();
                EraseLifetimes.visit_type_mut(&mut ty);
                Some((pat.ty.span(), ty))
            }
            FnArg::Receiver(_) => None,
        })
        .collect();
    let arity = params.len();
    // The op's module, which `kernel_items!` imports as `__opbox_op` for everything to name it by.
    let ops_module = join(library, naming::op_module(&op_name, op.span()));
    let ops_module = respan(&ops_module, op.span());
    let ops: Path = syn::parse_quote!(__opbox_op);
    // The checks: one `const` for the kernel, with one call each, spanned at what it checks;
    // the first that fails is the error, there, with the op's message for it (the `check_*` fns
    // panic, at compile time). The arity goes first: with it wrong, the rest would be misread.
    // A const per check would report every mismatch at once, but costs a clean build 7% more
    // type-checking time (5,000 consts to evaluate at 1,000 ops instead of 1,000).
    let signature = join(&ops, naming::signature_const(op.span()));
    let ident_span = sig.ident.span();
    let check = |span: Span, call: TokenStream| {
        let signature = respan(&signature, span);
        quote_spanned!(span=> #signature.#call;)
    };
    let arity_check = check(ident_span, quote_spanned!(ident_span=> check_arity(#arity)));
    let arg_checks = params.iter().enumerate().map(|(index, (span, ty))| {
        check(
            *span,
            quote_spanned!(*span=> check_param(#index, <#ty as ::opbox::__private::RustParam>::FORM)),
        )
    });
    let (ret_span, ret_ty) = match &sig.output {
        ReturnType::Default => (sig.ident.span(), quote!(())),
        ReturnType::Type(_, ty) => {
            let mut ty: Type = (**ty).clone();
            EraseLifetimes.visit_type_mut(&mut ty);
            (ty.span(), quote!(#ty))
        }
    };
    // The kernel's return as its `KernelReturn`, at the return's span.
    let returns = quote_spanned!(ret_span=> <#ret_ty as ::opbox::__private::KernelReturn>);
    let returns_check = check(
        ret_span,
        quote_spanned!(ret_span=> check_returns(#returns::FORMS)),
    );
    // Each parameter's family (`ParamFamily`), named through `RustParam::Key` and spanned as the
    // signature check names the type, so a type that is not a parameter is one error, there.
    let families: Vec<TokenStream> = params
        .iter()
        .map(|(span, ty)| quote_spanned!(*span=> <#ty as ::opbox::__private::RustParam>::Key))
        .collect();
    // The kernel's parameter list, whose shared entries call it, or, past the longest list that
    // shares them, `UnboxedBody` and a body of its own that unboxes for it.
    let (list, kernel, body) = if arity <= SHARED_SHIM_MAX_PARAMS {
        (
            quote!((#(#families,)*)),
            fn_ident.clone(),
            TokenStream::new(),
        )
    } else {
        let body = format_ident!("__opbox_body");
        let args = format_ident!("__opbox_args");
        let scratches: Vec<Ident> = (0..arity)
            .map(|i| format_ident!("__opbox_s{}", i))
            .collect();
        let lends = families.iter().enumerate().map(|(i, family)| {
            let scratch = &scratches[i];
            quote!(#args.lend::<#family>(#i, &mut #scratch)?)
        });
        let item = quote! {
            #[allow(clippy::let_unit_value)]
            fn #body(
                #args: &::opbox::__private::KernelArgs<'_>,
                outs: &mut ::opbox::__private::KernelOutputs<'_>,
            ) -> ::opbox::__private::Result<()> {
                #(let mut #scratches = ::core::default::Default::default();)*
                let returned = #fn_ident(#(#lends),*);
                #returns::write(returned, outs)
            }
        };
        (quote!(::opbox::__private::UnboxedBody), body, item)
    };
    let line = quote_spanned!(sig.ident.span()=> ::core::line!());
    let registration = format_ident!("__opbox_kernel_{}_{}", fn_ident, key);
    let tokens = quote! {
        #registration [#ops_module] {
            #arity_check
            #(#arg_checks)*
            #returns_check
        } {#body}
        #key (#line) -> #ret_ty, #list, #kernel;
    };
    (tokens, registration)
}
