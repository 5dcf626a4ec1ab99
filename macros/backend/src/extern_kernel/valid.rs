//! The checks on the declaration as a whole: a body-less, non-generic, plain fn that returns
//! nothing, and what the attribute's `constexpr` and `abi` choices ask of its parameters.

use opbox_codegen::cuda::ParamKind;
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{ForeignItemFn, ItemFn, ReturnType, Signature};

use super::attr::Args;
use crate::errors::Errors;
use crate::kernel_params::{KernelParam, ParamClass};

/// The declaration, which has no body: its body is the CUDA entry.
pub(super) fn declaration(item: TokenStream) -> syn::Result<ForeignItemFn> {
    syn::parse2::<ForeignItemFn>(item.clone()).map_err(|e| match syn::parse2::<ItemFn>(item) {
        Ok(with_body) => syn::Error::new(
            with_body.block.span(),
            format!(
                "an #[extern_kernel] fn has no body: its body is the CUDA entry in the source file; write `{};` instead",
                signature_text(&with_body.sig)
            ),
        ),
        Err(_) => e,
    })
}

/// `fn axpby(x: In<[f32]>, n: i64)`, as a user would write it.
fn signature_text(sig: &Signature) -> String {
    let params: Vec<String> = sig
        .inputs
        .iter()
        .map(|a| quote!(#a).to_string().replace(" : ", ": "))
        .collect();
    format!("fn {}({})", sig.ident, params.join(", "))
        .replace(" < ", "<")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace("[ ", "[")
        .replace(" ]", "]")
}

/// What a `__global__` entry cannot be. The parameters are checked on their own
/// ([`crate::kernel_params::classify_inputs`]).
pub(super) fn check_signature(sig: &Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() {
        errors.at(
            sig.generics.span(),
            "an #[extern_kernel] fn takes no generics: declare one fn per element type (axpby_f32, axpby_f16), or make the choice a #[constexpr] param",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        errors.at(
            ty.span(),
            "an #[extern_kernel] fn returns nothing (a __global__ function returns void): write results through Out<[T]> params",
        );
    }
    if let Some(c) = &sig.constness {
        errors.at(c.span(), "an #[extern_kernel] fn cannot be const");
    }
    if let Some(a) = &sig.asyncness {
        errors.at(a.span(), "an #[extern_kernel] fn cannot be async");
    }
}

pub(super) fn check_variadic(sig: &Signature, errors: &mut Errors) {
    if let Some(v) = &sig.variadic {
        errors.at(v.span(), "an #[extern_kernel] fn is not variadic");
    }
}

/// What `constexpr = "template"` and `abi = "constant_params"` ask of the parameters.
pub(super) fn check_params(
    args: &Args,
    sig: &Signature,
    params: &[KernelParam],
    errors: &mut Errors,
) {
    if args.template {
        for p in params {
            if let ParamClass::Known(ParamKind::Constexpr(t)) = p.class {
                if !t.can_be_template_arg() {
                    errors.at(
                        p.name.span(),
                        format!("#[constexpr] {}: {t} cannot be a C++17 template argument; use an integer, or constexpr = \"define\"", p.name),
                    );
                }
            }
        }
    }
    if args.constant_params {
        let ok = matches!(
            params,
            [KernelParam {
                class: ParamClass::Arg(_),
                ..
            }]
        ) && sig.inputs.len() == 1;
        if !ok {
            errors.at(
                sig.inputs.span(),
                format!(
                    "abi = \"constant_params\": the kernel must take exactly one struct parameter (a #[derive(NativeType)] or #[derive(KernelArg)] type, read from the __constant__ symbol `params`); this one takes {}",
                    describe_params(params, sig.inputs.len())
                ),
            );
        }
    }
}

/// `2 parameters`, `a slice parameter`, `no parameters`: for the constant_params message.
fn describe_params(params: &[KernelParam], declared: usize) -> String {
    match (params, declared) {
        (_, 0) => "no parameters".into(),
        ([p], 1) => match &p.class {
            c if c.is_constexpr() => "a #[constexpr] parameter".into(),
            ParamClass::Known(ParamKind::Scalar(t)) => format!("a scalar ({t})"),
            _ => "a buffer parameter".into(),
        },
        (_, n) => format!("{n} parameters"),
    }
}
