//! One kernel: the checks rustc runs on its signature (arity, each parameter, the return, against
//! the op's `SIGNATURE`, in consts) and its registration under the dispatch key, with the boxed shim the
//! dispatcher calls.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, Ident, ItemFn, Path, ReturnType, Signature, Type};

use crate::errors::Errors;
use crate::naming;
use crate::paths::{join, respan, respan_tokens};

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

/// The kernel's signature checks, its boxed shim and typed entry, and its registration, for a
/// fn that passed [`check`]: all inside one const, named by the returned ident, whose value is
/// the registration. The caller submits the consts of one `#[stable_impl]` together
/// (`super::submit`).
pub(super) fn items(
    library: &Path,
    op: &Ident,
    func: &ItemFn,
    key: &Ident,
) -> (TokenStream, Ident) {
    let sig = &func.sig;
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
    // Everything below names the op through this one import: if the op does not exist, that is
    // a single unresolved-import error, and rustc stays quiet about the paths through it.
    let ops_module = join(library, naming::op_module(&op_name, op.span()));
    let ops_module = respan(&ops_module, op.span());
    let ops: Path = syn::parse_quote!(__opbox_op);
    let boxed = naming::boxed_const(op.span());
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
    // The kernel's return as its `KernelReturn`, at the return's span: the check, the shim's
    // write and the typed entry all name it so.
    let returns = quote_spanned!(ret_span=> <#ret_ty as ::opbox::__private::KernelReturn>);
    let returns_check = check(
        ret_span,
        quote_spanned!(ret_span=> check_returns(#returns::FORMS)),
    );
    // One scratch per argument, declared before the call so that what a kernel borrows from it
    // (a `&[&str]`'s names) lives for the call; `()` for every type that borrows the stack only.
    let scratches: Vec<Ident> = (0..arity)
        .map(|i| format_ident!("__opbox_s{}", i))
        .collect();
    // Every trait call names its type: rustc then selects one impl instead of inferring it
    // (a fifth of the type-checking of 1,000 kernels). The type is moved to the span of the call
    // around it, so that a type that cannot be lent is one error there, not one for the bound
    // and one for the scratch.
    let gets = params
        .iter()
        .zip(&scratches)
        .enumerate()
        .map(|(i, ((span, ty), scratch))| {
            let ty = respan_tokens(ty.to_token_stream(), *span);
            quote_spanned!(*span=> __opbox_args.lend::<#ty>(#i, &mut #scratch)?)
        });
    let (typed, erased) = typed_entry(fn_ident, &params, &returns);
    let line = quote_spanned!(sig.ident.span()=> ::core::line!());
    let registration = format_ident!("__opbox_kernel_{}_{}", fn_ident, key);
    let tokens = quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #registration: ::opbox::__private::KernelRegistration = {
            use #ops_module as __opbox_op;

            const _: () = {
                #arity_check
                #(#arg_checks)*
                #returns_check
            };

            // Not generic over the op: the shared code behind the ABI (`boxed_entry`) is compiled
            // once, and this shim only hands it the op's static data and the unboxing call.
            #[allow(clippy::let_unit_value)]
            fn __opbox_body(
                __opbox_args: &::opbox::__private::KernelArgs<'_>,
                __opbox_outs: &mut ::opbox::__private::KernelOutputs<'_>,
            ) -> ::opbox::__private::Result<()> {
                #(let mut #scratches = ::core::default::Default::default();)*
                #returns::write(#fn_ident(#(#gets),*), __opbox_outs)
            }

            unsafe extern "C" fn __opbox_boxed(
                stack: *mut ::opbox::__private::StableValue,
                num_args: u64,
                num_outputs: u64,
            ) -> i32 {
                // SAFETY: the dispatcher calls this through the BoxedKernelFn contract, which is
                // exactly boxed_entry_fn's precondition.
                unsafe {
                    ::opbox::__private::boxed_entry_fn(
                        __opbox_op::#boxed,
                        stack,
                        num_args,
                        num_outputs,
                        __opbox_body,
                    )
                }
            }

            #typed

            ::opbox::__private::KernelRegistration {
                op: __opbox_op::#boxed,
                key: ::opbox::__private::DispatchKey::#key,
                kernel: __opbox_boxed,
                typed: ::core::option::Option::Some(#erased),
                line: #line,
            }
        };
    };
    (tokens, registration)
}

/// The kernel's typed entry: the fn `__opbox_typed`, which takes the parameters as one tuple and
/// returns the value without its `Result`, and the expression that erases it behind the key of
/// those types (in the registration itself: a const of its own cost rustc a body to check).
/// Each key is named through `RustParam` (and the return through `KernelReturn`) at the span the
/// signature check uses, so a type that is no parameter gets the check's one error, not another.
fn typed_entry(
    fn_ident: &Ident,
    params: &[(Span, Type)],
    returns: &TokenStream,
) -> (TokenStream, TokenStream) {
    let binds: Vec<Ident> = (0..params.len())
        .map(|i| format_ident!("__opbox_a{}", i))
        .collect();
    let tys: Vec<&Type> = params.iter().map(|(_, ty)| ty).collect();
    let keys = params.iter().map(|(span, ty)| {
        quote_spanned! {*span=> <#ty as ::opbox::__private::RustParam>::Key }
    });
    let value = quote!(#returns::Value);
    let entry = quote! {
        fn __opbox_typed((#(#binds,)*): (#(#tys,)*)) -> ::opbox::__private::Result<#value> {
            #returns::into_value(#fn_ident(#(#binds),*))
        }
    };
    // SAFETY (of the `unsafe` emitted): the key is the TypedKey key of `__opbox_typed`'s
    // parameter tuple, element by element (RustParam::Key is TypedKey::Key), and the fn's
    // lifetimes are all its own (the parameter types were written with every lifetime elided).
    // The tuple is spelled out too, so rustc checks the coercion instead of inferring it.
    let erased = quote! {
        unsafe {
            ::opbox::__private::TypedKernel::new::<(#(#keys,)*), (#(#tys,)*), #value>(__opbox_typed)
        }
    };
    (entry, erased)
}
