//! `#[device] fn helper(x: f32) -> f32 { .. }`: a helper that `#[kernel]`s (and other helpers)
//! call. The fn stays, built with the DSL's operators, for the CPU build; its C++ becomes a
//! `__device__ inline` function `opbox_dev_<name>` in every kernel that reaches it, through the
//! hidden const `mark_<name>_with_device_or_builtin` (`naming::dsl_fn_const`) (a `#[builtin]` has one too, so a kernel's call reaches
//! either kind without knowing which it is).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use super::cpp::Cpp;
use super::cpu::rewrite;
use super::expand::{body_param, escape_file, param_ty, slot_tokens};
use super::ir::Ty;
use super::lower::Lowering;
use crate::errors::Errors;
use crate::extern_kernel::SourceLoader;
use crate::kernel_params::{classify, KernelMacro};

const DEVICE: KernelMacro = KernelMacro {
    attr: "#[device]",
    an: "a #[device]",
};

pub(super) fn expand(
    attr: TokenStream,
    func: &syn::ItemFn,
    files: &dyn SourceLoader,
) -> Result<TokenStream, syn::Error> {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.at(attr.span(), "#[device] takes no arguments");
    }
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        errors.at(
            sig.generics.span(),
            "a #[device] fn takes no generics or traits: declare one fn per type",
        );
    }
    let name = crate::naming::unraw(&sig.ident);
    let file = super::expand::normalize(&files.declaring_file().shown);
    let mut low = Lowering::new(&mut errors, name.clone());
    let mut cparams = Vec::new();
    let mut rparams = Vec::new();
    let mut param_errors = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            param_errors.push(syn::Error::new(
                input.span(),
                "a #[device] fn is a free function: it takes no `self`",
            ));
            continue;
        };
        let syn::Pat::Ident(pi) = &*pt.pat else {
            param_errors.push(syn::Error::new(
                pt.pat.span(),
                "name each #[device] parameter with a plain identifier",
            ));
            continue;
        };
        let ty = match classify(&pt.ty, None, DEVICE) {
            Ok(class) => param_ty(&class, &mut low),
            Err(e) => {
                param_errors.push(e);
                Ty::Unknown
            }
        };
        let cname = low.bind_param(&pi.ident, ty.clone());
        cparams.push((cname, ty.clone()));
        rparams.push(body_param(pt, &ty));
    }
    low.ret = match &sig.output {
        syn::ReturnType::Default => Ty::Unit,
        syn::ReturnType::Type(_, t) => low.ty(t),
    };
    let ret = low.ret.clone();
    let body = low.body(&func.block);
    let named = low.named.clone();
    let callees = low.callees.clone();
    let infer = std::mem::take(&mut low.infer);
    drop(low);
    for e in param_errors {
        errors.push(e);
    }
    errors.finish()?;

    let named_strings: Vec<String> = named.iter().map(|p| quote!(#p).to_string()).collect();
    let line_file = escape_file(&file);
    let mut cpp = Cpp::new(&infer, &named_strings, &line_file);
    cpp.block_body(&body);
    let params: Vec<String> = cparams
        .iter()
        .map(|(n, t)| format!("{} {n}", cpp.ty(t)))
        .collect();
    let cpp_name = format!("opbox_dev_{name}");
    let text = format!(
        "// #[device] {name}, generated from {file}\n__device__ inline {} {cpp_name}({}) {{\n{}}}\n",
        cpp.ty(&ret),
        params.join(", "),
        cpp.out
    );
    let (callee_list, named_list) = slot_tokens(&named, &callees);
    let needs = opbox_codegen::cuda::dsl::needed_sections(&text);
    // The const is read from the kernels' generated modules, one level down: its own paths are
    // written as from a child, so they resolve from here through a child module of its own.
    let holder = format_ident!("__opbox_dsl_holder_{}", name);
    let konst = crate::naming::dsl_fn_const(&name.to_string(), sig.ident.span());
    let vis = &func.vis;
    let attrs = &func.attrs;
    let ident = &sig.ident;
    let output = &sig.output;
    let body = rewrite(&func.block);
    Ok(quote! {
        #(#attrs)*
        #[allow(unused_mut, unused_parens, clippy::all)]
        #vis fn #ident(#(#rparams),*) #output #body

        #[doc(hidden)]
        #[allow(non_snake_case)]
        mod #holder {
            #[allow(unused_imports)]
            use super::*;
            pub(super) static CODE: ::opbox::__private::dsl::DslFn = ::opbox::__private::dsl::DslFn {
                cpp_name: #cpp_name,
                body: ::opbox::__private::dsl::DslBody::Code(::opbox::__private::dsl::DslCode {
                    template: #text,
                    callees: #callee_list,
                    named: #named_list,
                    needs: &[#(#needs),*],
                }),
            };
        }

        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis const #konst: &'static ::opbox::__private::dsl::DslFn = &#holder::CODE;
    })
}
