//! The expansion of a checked declaration: a module named after the fn with `DECL` (the
//! `KernelDecl` as static data; every closure file is embedded with `include_str!` on its absolute
//! path, so cargo rebuilds when any of them changes), `HANDLE` (the per-declaration cache of loaded
//! kernels), `launch(cfg, args…)` and, with #[constexpr] params, `specialize`.

use opbox_codegen::cuda::{ElemType, ParamKind, ScalarType, ScannedFile};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, ForeignItemFn, Ident, LitStr, Type};

use super::attr::Args;
use crate::kernel_params::{KernelParam, ParamClass};
use crate::paths;

/// One params type per module: each constant_params kernel re-exports its params type into the
/// enclosing module as `OneConstantParamsTypePerModule`, through a glob. Globs naming one item agree; two
/// different types make the name ambiguous where it is used, a compile error that shows both
/// kernels' modules (`__opbox_constant_params_<kernel>`). Paths with generics are not checked.
fn constant_params_check(kernel: &Ident, params: &[KernelParam]) -> TokenStream {
    let [KernelParam {
        class: ParamClass::Arg(Type::Path(tp)),
        ..
    }] = params
    else {
        return TokenStream::new();
    };
    if tp.qself.is_some()
        || tp
            .path
            .segments
            .iter()
            .any(|s| !matches!(s.arguments, syn::PathArguments::None))
    {
        return TokenStream::new();
    }
    // From inside the generated child module.
    let used = paths::from_child(&tp.path);
    let m = format_ident!("__opbox_constant_params_{}", kernel);
    // Spanned at the type, so the ambiguity error points at both kernels' params types.
    let name = Ident::new("OneConstantParamsTypePerModule", tp.span());
    let check = quote_spanned! {tp.span()=>
        const _: ::core::marker::PhantomData<#name> = ::core::marker::PhantomData;
    };
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case)]
        mod #m {
            pub(super) use #used as #name;
        }
        #[allow(unused_imports)]
        use #m::*;
        #check
    }
}

fn elem_tokens(t: ElemType) -> TokenStream {
    let v = format_ident!("{}", format!("{t:?}"));
    quote!(::opbox::__private::cuda::ElemType::#v)
}

fn scalar_tokens(t: ScalarType) -> TokenStream {
    let v = format_ident!("{}", format!("{t:?}"));
    quote!(::opbox::__private::cuda::ScalarType::#v)
}

/// The Rust type of a scalar row (`f32`, `::opbox::half::f16`): a type from a crate is named
/// through opbox's re-export, so the user's crate needs no dependency of its own on it.
fn scalar_type_tokens(t: ScalarType) -> TokenStream {
    let path = t.primitive().rust_type_path();
    match syn::parse_str::<syn::Path>(path) {
        Ok(p) if p.segments.len() > 1 => quote!(::opbox::#p),
        Ok(p) => quote!(#p),
        Err(_) => {
            let ident = format_ident!("{}", t.rust_name());
            quote!(#ident)
        }
    }
}

fn kind_tokens(k: ParamKind) -> TokenStream {
    let (variant, of) = match k {
        ParamKind::In(t) => ("In", elem_tokens(t)),
        ParamKind::Out(t) => ("Out", elem_tokens(t)),
        ParamKind::InOut(t) => ("InOut", elem_tokens(t)),
        ParamKind::Scalar(t) => ("Scalar", scalar_tokens(t)),
        ParamKind::Constexpr(t) => ("Constexpr", scalar_tokens(t)),
        // Never built by the macro: these come from trait consts (class_tokens).
        ParamKind::Native(_)
        | ParamKind::ConstexprEnum(_)
        | ParamKind::NativeIn(_)
        | ParamKind::NativeOut(_)
        | ParamKind::NativeInOut(_) => return quote!(()),
    };
    let variant = format_ident!("{variant}");
    quote!(::opbox::__private::cuda::ParamKind::#variant(#of))
}

fn class_tokens(class: &ParamClass) -> TokenStream {
    match class {
        ParamClass::Known(k) => kind_tokens(*k),
        ParamClass::Arg(ty) => {
            quote_spanned!(ty.span()=> <#ty as ::opbox::__private::cuda::KernelArg>::KIND)
        }
        ParamClass::Constexpr(ty) => {
            quote_spanned!(ty.span()=> <#ty as ::opbox::__private::cuda::ConstexprArg>::KIND)
        }
        ParamClass::NativeSlice(access, ty) => {
            let v = format_ident!("Native{}", access.name());
            quote_spanned!(ty.span()=> ::opbox::__private::cuda::ParamKind::#v(
                ::opbox::__private::cuda::NativeParam {
                    schema: <#ty as ::opbox::__private::native::NativeType>::SCHEMA,
                    generated: false,
                }
            ))
        }
    }
}

/// The Rust type of a launch argument, and the value it becomes.
pub(crate) fn rust_arg(p: &KernelParam) -> (TokenStream, TokenStream) {
    let name = &p.name;
    let tensor = || {
        (
            quote!(&::opbox::__private::Tensor),
            quote!(::opbox::__private::cuda::LaunchArg::Tensor(#name)),
        )
    };
    let kind = match &p.class {
        ParamClass::Known(k) => *k,
        ParamClass::Arg(ty) => {
            return (
                quote_spanned!(ty.span()=> <#ty as ::opbox::__private::cuda::KernelArg>::Value<'_>),
                quote_spanned!(ty.span()=> <#ty as ::opbox::__private::cuda::KernelArg>::lower(&#name)),
            )
        }
        ParamClass::NativeSlice(..) => return tensor(),
        ParamClass::Constexpr(ty) => {
            return (
                quote!(#ty),
                quote_spanned!(ty.span()=> <#ty as ::opbox::__private::cuda::ConstexprArg>::const_value(#name)),
            )
        }
    };
    let scalar = |t: ScalarType, wrap: &str| {
        let ty = scalar_type_tokens(t);
        let v = format_ident!("{}", format!("{t:?}"));
        let wrap = format_ident!("{wrap}");
        (
            quote!(#ty),
            quote!(::opbox::__private::cuda::#wrap::#v(#name)),
        )
    };
    match kind {
        ParamKind::In(_) | ParamKind::Out(_) | ParamKind::InOut(_) => tensor(),
        ParamKind::Scalar(t) => scalar(t, "LaunchArg"),
        ParamKind::Constexpr(t) => scalar(t, "ConstValue"),
        // Only reached through ParamClass::Arg / ParamClass::Constexpr / ParamClass::NativeSlice.
        ParamKind::Native(_)
        | ParamKind::ConstexprEnum(_)
        | ParamKind::NativeIn(_)
        | ParamKind::NativeOut(_)
        | ParamKind::NativeInOut(_) => (quote!(()), quote!(())),
    }
}

/// The kernel's module (`DECL`, `HANDLE`, `launch`, and `specialize` with #[constexpr] params).
pub(super) fn emit(
    func: &ForeignItemFn,
    args: &Args,
    params: &[KernelParam],
    files: &[ScannedFile],
) -> TokenStream {
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let rust_name = ident.to_string();
    let entry: String = args
        .entry
        .as_ref()
        .map_or_else(|| rust_name.clone(), LitStr::value);
    let docs: Vec<&Attribute> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let sources: Vec<TokenStream> = files.iter().map(source_file).collect();
    let options = args
        .options
        .iter()
        .map(|o| quote!(::opbox::__private::Cow::Borrowed(#o)));
    let options = quote!(&[#(#options),*]);
    let style = if args.template {
        quote!(::opbox::__private::cuda::ConstexprStyle::TemplateArgs)
    } else {
        quote!(::opbox::__private::cuda::ConstexprStyle::Defines)
    };
    let launch_doc = format!(
        " Launches the CUDA entry `{entry}` of `{}`; checks every tensor's dtype and device first.",
        files.first().map_or("", |f| f.name.as_str())
    );
    let abi = if args.constant_params {
        quote!(::opbox::__private::cuda::EntryAbi::ConstantParams)
    } else {
        quote!(::opbox::__private::cuda::EntryAbi::Params)
    };
    let module_check = if args.constant_params {
        constant_params_check(ident, params)
    } else {
        TokenStream::new()
    };
    let module = kernel_module(
        &ModuleSpec {
            vis,
            ident,
            docs,
            entry,
            style,
            sources,
            options,
            build: build_ref(args.build.as_ref()),
            abi,
            handle: quote!(::opbox::__private::cuda::KernelHandle::new(&DECL)),
            launch_doc,
            extra: TokenStream::new(),
        },
        params,
    );
    quote! {
        #module_check
        #module
    }
}

/// What differs between the modules of an `#[extern_kernel]` and a `#[kernel]`.
pub(crate) struct ModuleSpec<'a> {
    pub vis: &'a syn::Visibility,
    pub ident: &'a Ident,
    pub docs: Vec<&'a Attribute>,
    pub entry: String,
    pub style: TokenStream,
    pub sources: Vec<TokenStream>,
    /// The options slice expression (`&[..]`).
    pub options: TokenStream,
    pub build: TokenStream,
    pub abi: TokenStream,
    /// The `KernelHandle` expression (`KernelHandle::new(&DECL)`).
    pub handle: TokenStream,
    pub launch_doc: String,
    /// More items inside the module (a DSL kernel's CPU build).
    pub extra: TokenStream,
}

/// A kernel's module: `DECL`, `HANDLE`, its registration, `launch`, and `specialize` with
/// #[constexpr] params. One shape for extern and DSL kernels, so every launch path, check and
/// tool applies to both.
pub(crate) fn kernel_module(spec: &ModuleSpec<'_>, params: &[KernelParam]) -> TokenStream {
    let ModuleSpec {
        vis,
        ident,
        docs,
        entry,
        style,
        sources,
        options,
        build,
        abi,
        handle,
        launch_doc,
        extra,
    } = spec;
    let rust_name = ident.to_string();
    let param_items = params.iter().map(|p| {
        let name = p.name.to_string();
        let kind = class_tokens(&p.class);
        match &p.class {
            ParamClass::Arg(ty) => {
                quote_spanned!(ty.span()=> ::opbox::__private::cuda::Param::with_nullable(
                    #name,
                    #kind,
                    <#ty as ::opbox::__private::cuda::KernelArg>::NULLABLE,
                ))
            }
            _ => quote!(::opbox::__private::cuda::Param::new(#name, #kind)),
        }
    });
    let mut fn_params = Vec::new();
    let mut launch_args = Vec::new();
    let mut const_args = Vec::new();
    let mut runtime_params = Vec::new();
    let mut const_params = Vec::new();
    for p in params {
        let name = &p.name;
        let (ty, value) = rust_arg(p);
        fn_params.push(quote!(#name: #ty));
        if p.class.is_constexpr() {
            const_args.push(value);
            const_params.push(quote!(#name: #ty));
        } else {
            launch_args.push(value);
            runtime_params.push(quote!(#name: #ty));
        }
    }
    let specialized = (!const_args.is_empty()).then(|| {
        specialized(
            &rust_name,
            launch_doc,
            (&const_params, &const_args),
            (&runtime_params, &launch_args),
        )
    });
    quote! {
        #(#docs)*
        #[allow(non_snake_case)]
        #vis mod #ident {
            // The declaration's own types (kernel argument structs, constexpr enums) are named
            // as the user wrote them, from the enclosing module.
            #[allow(unused_imports)]
            use super::*;

            /// The declaration, as static data: signature, sources and options.
            pub static DECL: ::opbox::__private::cuda::KernelDecl = ::opbox::__private::cuda::KernelDecl {
                rust_name: ::opbox::__private::Cow::Borrowed(#rust_name),
                entry: ::opbox::__private::Cow::Borrowed(#entry),
                params: ::opbox::__private::Cow::Borrowed(&[#(#param_items),*]),
                constexpr_style: #style,
                sources: ::opbox::__private::Cow::Borrowed(&[#(#sources),*]),
                options: ::opbox::__private::Cow::Borrowed(#options),
                preamble: ::opbox::__private::Cow::Borrowed(""),
                declared_at: ::opbox::__private::Cow::Borrowed(::core::concat!(::core::file!(), ":", ::core::line!())),
                build: #build,
                abi: #abi,
            };

            /// The loaded kernel per device (and per #[constexpr] value set), loaded on first use.
            pub static HANDLE: ::opbox::__private::cuda::KernelHandle = #handle;

            // Every kernel is listed, so `opbox aot` can compile a whole binary's.
            ::opbox::__private::inventory::submit! {
                ::opbox::__private::cuda::ExternKernelRegistration {
                    decl: &DECL,
                    module_path: ::core::module_path!(),
                }
            }

            #specialized

            #[doc = #launch_doc]
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn launch(cfg: ::opbox::__private::cuda::LaunchConfig, #(#fn_params),*) -> ::opbox::__private::Result<()> {
                ::opbox::__private::cuda::launch(&HANDLE, &cfg, &[#(#launch_args),*], &[#(#const_args),*])
            }

            /// Records this launch into a kernel graph (`opbox::graph::record`) instead of
            /// running it: the same checks as `launch`; returns the graph node.
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn launch_in(r: &mut ::opbox::__private::cuda::Recorder, cfg: ::opbox::__private::cuda::LaunchConfig, #(#fn_params),*) -> ::opbox::__private::Result<::opbox::__private::cuda::NodeId> {
                r.launch(&HANDLE, &cfg, &[#(#launch_args),*], &[#(#const_args),*])
            }

            #extra
        }
    }
}

/// A closure file, its content embedded with `include_str!` so cargo rebuilds when it changes.
fn source_file(f: &ScannedFile) -> TokenStream {
    let name = &f.name;
    let path = f.path.display().to_string();
    let edges = f.includes.iter().map(|e| {
        let (line, file) = (e.line, e.file);
        quote!(::opbox::__private::cuda::IncludeEdge { line: #line, file: #file })
    });
    quote! {
        ::opbox::__private::cuda::SourceFile {
            name: ::opbox::__private::Cow::Borrowed(#name),
            content: ::opbox::__private::Cow::Borrowed(::core::include_str!(#path)),
            includes: ::opbox::__private::Cow::Borrowed(&[#(#edges),*]),
        }
    }
}

/// `build = path::to::OPTIONS` as a `BuildRef`: the path for messages and a fn that reads it.
fn build_ref(path: Option<&syn::Path>) -> TokenStream {
    match path {
        None => quote!(::core::option::Option::None),
        Some(path) => {
            let shown = crate::naming::shown(path);
            quote! {
                ::core::option::Option::Some(::opbox::__private::cuda::BuildRef {
                    path: #shown,
                    get: {
                        fn __opbox_build_options() -> &'static ::opbox::__private::BuildOptions {
                            &#path
                        }
                        __opbox_build_options
                    },
                })
            }
        }
    }
}

/// With #[constexpr] params: `specialize(constexprs…)` fixes them once and gives a launcher that
/// takes the runtime params only (CuTe's compiled function, which excludes its Constexpr args):
/// passing a constexpr to it is a rustc arity error. Each pair is (params, the values they
/// become).
fn specialized(
    rust_name: &str,
    launch_doc: &str,
    (const_params, const_args): (&[TokenStream], &[TokenStream]),
    (runtime_params, launch_args): (&[TokenStream], &[TokenStream]),
) -> TokenStream {
    let n_const = const_args.len();
    let doc = format!(
        " `{rust_name}` with its #[constexpr] params fixed: `launch` takes the runtime params only."
    );
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        pub struct Specialized {
            values: [::opbox::__private::cuda::ConstValue; #n_const],
        }

        /// Fixes the #[constexpr] params (one specialization, compiled at its first launch and
        /// cached in memory and on disk); the result launches with the runtime params only.
        #[inline]
        pub fn specialize(#(#const_params),*) -> Specialized {
            Specialized { values: [#(#const_args),*] }
        }

        impl Specialized {
            /// The constexpr values, in declaration order.
            pub fn values(&self) -> &[::opbox::__private::cuda::ConstValue] {
                &self.values
            }

            #[doc = #launch_doc]
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn launch(&self, cfg: ::opbox::__private::cuda::LaunchConfig, #(#runtime_params),*) -> ::opbox::__private::Result<()> {
                ::opbox::__private::cuda::launch(&HANDLE, &cfg, &[#(#launch_args),*], &self.values)
            }

            /// Records this launch into a kernel graph instead of running it; returns the node.
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn launch_in(&self, r: &mut ::opbox::__private::cuda::Recorder, cfg: ::opbox::__private::cuda::LaunchConfig, #(#runtime_params),*) -> ::opbox::__private::Result<::opbox::__private::cuda::NodeId> {
                r.launch(&HANDLE, &cfg, &[#(#launch_args),*], &self.values)
            }
        }
    }
}
