//! `#[extern_kernel(source = "...", include_dirs = [...], entry = "...")]` on a body-less fn.
//!
//! parse (attribute + signature) → model (`opbox_codegen::cuda` param kinds, the scanned include
//! closure) → validate (every error collected, each at its own span) → expand: a module named
//! after the fn with `DECL` (a `KernelDecl` of static data; every closure file is embedded with
//! `include_str!` on its absolute path, so cargo rebuilds when any of them changes), `HANDLE` (the
//! per-declaration cache of loaded kernels) and `launch(cfg, args…)`.

use crate::errors::Errors;
use std::path::{Path, PathBuf};

use opbox_codegen::cuda::{
    scan_closure, ElemType, ParamKind, ScalarType, ScanError, ScanRequest, ScannedFile,
};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprArray, ExprLit, FnArg, ForeignItemFn, GenericArgument, Ident, ItemFn, Lit,
    LitStr, Pat, PathArguments, ReturnType, Token, Type,
};

/// What the attribute says.
struct Args {
    source: LitStr,
    include_dirs: Vec<LitStr>,
    entry: Option<LitStr>,
    options: Vec<LitStr>,
    template: bool,
    /// `build = path::to::OPTIONS`: a static that derefs to `opbox::BuildOptions`.
    build: Option<syn::Path>,
    /// `abi = "constant_params"`.
    constant_params: bool,
}

const USAGE: &str = "expected `#[extern_kernel(source = \"kernels/x.cu\", include_dirs = [\"kernels/include\"], entry = \"x\")]`; only `source` is required (also: `options = [\"--use_fast_math\"]`, `constexpr = \"define\" | \"template\"`, `build = path::to::OPTIONS`, a static deref'ing to opbox::BuildOptions, `abi = \"constant_params\"`)";

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Args> {
        let pairs = Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated(input)?;
        let mut source = None;
        let mut include_dirs = Vec::new();
        let mut entry = None;
        let mut options = Vec::new();
        let mut template = false;
        let mut build = None;
        let mut constant_params = false;
        for pair in pairs {
            let key = pair
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "source" => source = Some(lit_str(&pair.value)?),
                "entry" => entry = Some(lit_str(&pair.value)?),
                "include_dirs" => include_dirs = lit_str_list(&pair.value)?,
                "options" => options = lit_str_list(&pair.value)?,
                "abi" => {
                    let abi = lit_str(&pair.value)?;
                    constant_params = match abi.value().as_str() {
                        "params" => false,
                        "constant_params" => true,
                        _ => {
                            return Err(syn::Error::new(
                                abi.span(),
                                "`abi` is \"params\" (the default: the entry takes the parameters) or \"constant_params\" (an extern \"C\" entry with no parameters reads its one struct from the __constant__ symbol `params`)",
                            ))
                        }
                    }
                }
                "build" => match &pair.value {
                    Expr::Path(p) if p.qself.is_none() => build = Some(p.path.clone()),
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "`build` names a static holding the group's options: `build = path::to::OPTIONS`, e.g. a `static OPTIONS: LazyLock<opbox::BuildOptions>`",
                        ))
                    }
                },
                "constexpr" => {
                    let style = lit_str(&pair.value)?;
                    template = match style.value().as_str() {
                        "define" => false,
                        "template" => true,
                        _ => {
                            return Err(syn::Error::new(
                                style.span(),
                                "`constexpr` is \"define\" (each #[constexpr] param becomes a #define, the default) or \"template\" (the entry is a template over them, in order)",
                            ))
                        }
                    }
                }
                _ => {
                    return Err(syn::Error::new(
                        pair.path.span(),
                        format!("unknown #[extern_kernel] argument `{key}`; {USAGE}"),
                    ))
                }
            }
        }
        let source = source.ok_or_else(|| syn::Error::new(Span::call_site(), USAGE))?;
        Ok(Args {
            source,
            include_dirs,
            entry,
            options,
            template,
            build,
            constant_params,
        })
    }
}

fn lit_str(e: &Expr) -> syn::Result<LitStr> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "expected a string literal, e.g. \"kernels/axpby.cu\"",
        )),
    }
}

fn lit_str_list(e: &Expr) -> syn::Result<Vec<LitStr>> {
    match e {
        Expr::Array(ExprArray { elems, .. }) => elems.iter().map(lit_str).collect(),
        other => Err(syn::Error::new(
            other.span(),
            "expected a list of string literals, e.g. [\"kernels/include\"]",
        )),
    }
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    // On error only the errors are emitted: the item is a body-less fn, which is not valid Rust
    // on its own, so emitting it would add a second, confusing error.
    try_expand(attr, item).unwrap_or_else(|e| e.to_compile_error())
}

/// One declared parameter, checked.
struct DeclParam {
    name: Ident,
    kind: DeclKind,
}

/// What the macro knows of a parameter's kind.
enum DeclKind {
    /// A spelling the macro knows (slice views, scalars).
    Known(ParamKind),
    /// Any other type: its `KernelArg` impl says how it crosses (native and derived structs).
    Arg(Type),
    /// A `#[constexpr]` of any other type: its `ConstexprArg` impl (derived enums).
    Constexpr(Type),
    /// `In<[T]>` / `Out<[T]>` / `InOut<[T]>` of another type: a `#[derive(NativeType)]` element
    /// (`"In"`, `"Out"` or `"InOut"`, and the element type).
    NativeSlice(String, Type),
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let func = match syn::parse2::<ForeignItemFn>(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            return Err(match syn::parse2::<ItemFn>(item) {
                Ok(with_body) => syn::Error::new(
                    with_body.block.span(),
                    format!(
                        "an #[extern_kernel] fn has no body: its body is the CUDA entry in the source file; write `{};` instead",
                        signature_text(&with_body.sig)
                    ),
                ),
                Err(_) => e,
            });
        }
    };
    let mut errors = Errors::default();
    let args = match syn::parse2::<Args>(attr) {
        Ok(a) => Some(a),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            "an #[extern_kernel] fn takes no generics: declare one fn per element type (axpby_f32, axpby_f16), or make the choice a #[constexpr] param",
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        errors.push(syn::Error::new(
            ty.span(),
            "an #[extern_kernel] fn returns nothing (a __global__ function returns void): write results through Out<[T]> params",
        ));
    }
    if let Some(c) = &sig.constness {
        errors.push(syn::Error::new(
            c.span(),
            "an #[extern_kernel] fn cannot be const",
        ));
    }
    if let Some(a) = &sig.asyncness {
        errors.push(syn::Error::new(
            a.span(),
            "an #[extern_kernel] fn cannot be async",
        ));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => errors.push(syn::Error::new(
                r.span(),
                "an #[extern_kernel] fn is a free function: it takes no `self`",
            )),
            FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    Pat::Ident(p) => Some(p.ident.clone()),
                    other => {
                        errors.push(syn::Error::new(
                            other.span(),
                            "name each #[extern_kernel] parameter with a plain identifier",
                        ));
                        None
                    }
                };
                let constexpr = constexpr_attr(&pt.attrs);
                match (name, classify(&pt.ty, constexpr)) {
                    (Some(name), Ok(kind)) => params.push(DeclParam { name, kind }),
                    (_, Err(e)) => errors.push(e),
                    (None, Ok(_)) => {}
                }
                for a in &pt.attrs {
                    if !a.path().is_ident("constexpr") {
                        errors.push(syn::Error::new(
                            a.span(),
                            "the only attribute an #[extern_kernel] parameter takes is #[constexpr]",
                        ));
                    }
                }
            }
        }
    }
    if let Some(v) = &sig.variadic {
        errors.push(syn::Error::new(
            v.span(),
            "an #[extern_kernel] fn is not variadic",
        ));
    }
    let Some(args) = args else {
        errors.finish()?;
        return Err(syn::Error::new(Span::call_site(), USAGE));
    };
    if args.template {
        for p in &params {
            if let DeclKind::Known(ParamKind::Constexpr(t)) = p.kind {
                if !t.can_be_template_arg() {
                    errors.push(syn::Error::new(
                        p.name.span(),
                        format!("#[constexpr] {}: {t} cannot be a C++17 template argument; use an integer, or constexpr = \"define\"", p.name),
                    ));
                }
            }
        }
    }

    if args.constant_params {
        let ok = matches!(
            params.as_slice(),
            [DeclParam {
                kind: DeclKind::Arg(_),
                ..
            }]
        ) && sig.inputs.len() == 1;
        if !ok {
            errors.push(syn::Error::new(
                sig.inputs.span(),
                format!(
                    "abi = \"constant_params\": the kernel must take exactly one struct parameter (a #[derive(NativeType)] or #[derive(KernelArg)] type, read from the __constant__ symbol `params`); this one takes {}",
                    describe_params(&params, sig.inputs.len())
                ),
            ));
        }
    }

    let site = DeclaringFile::of_call_site();
    let include_dirs: Vec<String> = args.include_dirs.iter().map(LitStr::value).collect();
    let include_refs: Vec<&str> = include_dirs.iter().map(String::as_str).collect();
    let scanned = scan_closure(&ScanRequest {
        source: &args.source.value(),
        include_dirs: &include_refs,
        base_dir: &site.dir,
        declared_in: &site.shown,
    });
    let closure = match scanned {
        Ok(c) => Some(c),
        Err(e) => {
            errors.push(scan_error(&e, &args, &site));
            None
        }
    };
    errors.finish()?;
    let Some(closure) = closure else {
        return Err(syn::Error::new(args.source.span(), USAGE));
    };
    Ok(emit(&func, &args, &params, &closure.files))
}

/// `2 parameters`, `a slice parameter`, `no parameters`: for the constant_params message.
fn describe_params(params: &[DeclParam], declared: usize) -> String {
    match (params, declared) {
        (_, 0) => "no parameters".into(),
        ([p], 1) => match &p.kind {
            DeclKind::Known(ParamKind::Constexpr(_)) | DeclKind::Constexpr(_) => {
                "a #[constexpr] parameter".into()
            }
            DeclKind::Known(ParamKind::Scalar(t)) => format!("a scalar ({t})"),
            _ => "a buffer parameter".into(),
        },
        (_, n) => format!("{n} parameters"),
    }
}

fn signature_text(sig: &syn::Signature) -> String {
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

fn constexpr_attr(attrs: &[Attribute]) -> Option<Span> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("constexpr"))
        .map(|a| a.path().span())
}

const ELEM_LIST: &str = "f32, f64, f16, bf16, i32, i64, u32, u64, u8, i8, bool";
const SCALAR_LIST: &str = "i32, i64, u32, u64, f32, f64, bool";

/// The param kind a declared type means, or the error at the part of the type that is wrong.
fn classify(ty: &Type, constexpr: Option<Span>) -> syn::Result<DeclKind> {
    let Type::Path(tp) = ty else {
        return Err(syn::Error::new(
            ty.span(),
            format!("unsupported #[extern_kernel] parameter type: use In<[T]>, Out<[T]> or InOut<[T]> for device buffers (T one of {ELEM_LIST}), or a scalar by value ({SCALAR_LIST})"),
        ));
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(syn::Error::new(ty.span(), "expected a type"));
    };
    let wrapper = last.ident.to_string();
    if matches!(wrapper.as_str(), "In" | "Out" | "InOut") {
        if let Some(at) = constexpr {
            return Err(syn::Error::new(
                at,
                format!("#[constexpr] goes on an integer or bool scalar (it becomes a template argument or a #define), but this parameter is a buffer ({wrapper}<..>), which is passed at launch: remove #[constexpr]"),
            ));
        }
        let inner = match &last.arguments {
            PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
                Some(GenericArgument::Type(t)) => t,
                _ => {
                    return Err(syn::Error::new(
                        last.arguments.span(),
                        format!("{wrapper} takes one slice type: {wrapper}<[f32]>"),
                    ))
                }
            },
            _ => {
                return Err(syn::Error::new(
                    last.span(),
                    format!("{wrapper} takes one slice type: {wrapper}<[f32]>"),
                ))
            }
        };
        let Type::Slice(slice) = inner else {
            let shown = quote!(#inner).to_string();
            let fix = if wrapper == "In" {
                format!("an input scalar is passed by value: write `{shown}` instead of `In<{shown}>`, or `In<[{shown}]>` for a buffer")
            } else {
                format!("a kernel cannot write back through a by-value scalar; to return one value, declare `{wrapper}<[{shown}]>` and pass a one-element tensor")
            };
            return Err(syn::Error::new(
                inner.span(),
                format!("`{wrapper}<{shown}>`: {wrapper} takes a slice of elements, `{wrapper}<[{shown}]>`; {fix}"),
            ));
        };
        let elem = &*slice.elem;
        let name = single_ident(elem);
        let Some(t) = name.as_deref().and_then(ElemType::from_rust_name) else {
            if matches!(elem, Type::Path(p) if p.qself.is_none()) && !is_primitive(name.as_deref())
            {
                // A native element: its NativeType impl decides, and rustc names a missing one.
                return Ok(DeclKind::NativeSlice(wrapper.clone(), elem.clone()));
            }
            let shown = quote!(#elem).to_string();
            return Err(syn::Error::new(
                elem.span(),
                format!("unsupported element type `{shown}` in {wrapper}<[{shown}]>: the element types are {ELEM_LIST} (f16 and bf16 are half's types)"),
            ));
        };
        return Ok(DeclKind::Known(match wrapper.as_str() {
            "In" => ParamKind::In(t),
            "Out" => ParamKind::Out(t),
            _ => ParamKind::InOut(t),
        }));
    }
    let name = single_ident(ty);
    match name.as_deref().and_then(ScalarType::from_rust_name) {
        Some(t) if constexpr.is_some() => Ok(DeclKind::Known(ParamKind::Constexpr(t))),
        Some(t) => Ok(DeclKind::Known(ParamKind::Scalar(t))),
        // A path the macro does not know (a native or derived struct, a derived enum): its trait
        // impl decides, and rustc names the missing impl at this type.
        None if !is_primitive(name.as_deref()) && tp.qself.is_none() => {
            Ok(if constexpr.is_some() {
                DeclKind::Constexpr(ty.clone())
            } else {
                DeclKind::Arg(ty.clone())
            })
        }
        None => {
            let shown = quote!(#ty).to_string();
            let hint = if name.as_deref().and_then(ElemType::from_rust_name).is_some() {
                format!(" ({shown} is an element type for buffers, In<[{shown}]>, not a by-value scalar)")
            } else {
                String::new()
            };
            Err(syn::Error::new(
                ty.span(),
                format!("unsupported #[extern_kernel] parameter type `{shown}`: scalars are {SCALAR_LIST}; buffers are In<[T]>, Out<[T]> or InOut<[T]>{hint}"),
            ))
        }
    }
}

/// Rust's primitive names (and `f16`/`bf16`): these get the macro's own message.
fn is_primitive(name: Option<&str>) -> bool {
    matches!(
        name,
        Some(
            "i8" | "i16"
                | "i32"
                | "i64"
                | "i128"
                | "isize"
                | "u8"
                | "u16"
                | "u32"
                | "u64"
                | "u128"
                | "usize"
                | "f16"
                | "bf16"
                | "f32"
                | "f64"
                | "bool"
                | "char"
                | "str"
                | "String"
                | "Tensor"
        )
    )
}

fn single_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp.path.get_ident().map(Ident::to_string),
        _ => None,
    }
}

/// The file that declares the kernel: where relative paths start.
struct DeclaringFile {
    /// The directory relative paths are resolved against.
    dir: PathBuf,
    /// The declaring file as messages show it: relative to the compiler's working directory
    /// when inside it, else its file name (never a machine-specific absolute path).
    shown: String,
}

impl DeclaringFile {
    fn of_call_site() -> DeclaringFile {
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
        let file = proc_macro::Span::call_site().local_file();
        let cwd = std::env::current_dir().ok();
        match file {
            Some(file) => {
                let absolute = match (&cwd, file.is_absolute()) {
                    (Some(cwd), false) => cwd.join(&file),
                    _ => file.clone(),
                };
                let shown = cwd
                    .as_deref()
                    .and_then(|c| absolute.strip_prefix(c).ok())
                    .map(Path::to_path_buf)
                    .or_else(|| file.file_name().map(PathBuf::from))
                    .unwrap_or(file);
                DeclaringFile {
                    dir: absolute.parent().map(Path::to_path_buf).unwrap_or_default(),
                    shown: shown.display().to_string(),
                }
            }
            None => DeclaringFile {
                dir: manifest.unwrap_or_default(),
                shown: "the crate root (CARGO_MANIFEST_DIR)".into(),
            },
        }
    }
}

/// A scan error at the literal it is about, with a message free of absolute paths.
fn scan_error(e: &ScanError, args: &Args, site: &DeclaringFile) -> syn::Error {
    match e {
        ScanError::SourceNotFound { written, .. } => syn::Error::new(
            args.source.span(),
            format!(
                "kernel source `{written}` not found: paths are relative to the declaring file's directory ({}), as with include_str!",
                site.shown
            ),
        ),
        ScanError::IncludeDirNotFound { written, .. } => {
            let at = args
                .include_dirs
                .iter()
                .find(|l| l.value() == *written)
                .map_or(args.source.span(), LitStr::span);
            syn::Error::new(
                at,
                format!(
                    "include dir `{written}` not found (or not a directory): paths are relative to the declaring file's directory ({}), as with include_str!",
                    site.shown
                ),
            )
        }
        other => syn::Error::new(args.source.span(), other.to_string()),
    }
}

/// One params type per module: each constant_params kernel re-exports its params type into the
/// enclosing module as `OneConstantParamsTypePerModule`, through a glob. Globs naming one item agree; two
/// different types make the name ambiguous where it is used, a compile error that shows both
/// kernels' modules (`__opbox_constant_params_<kernel>`). Paths with generics are not checked.
fn constant_params_check(kernel: &Ident, params: &[DeclParam]) -> TokenStream {
    let [DeclParam {
        kind: DeclKind::Arg(Type::Path(tp)),
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
    let path = &tp.path;
    let first = path.segments.first().map(|s| s.ident.to_string());
    // From inside the generated child module: relative paths gain a `super::`.
    let used = match first.as_deref() {
        _ if path.leading_colon.is_some() => quote!(#path),
        Some("crate") => quote!(#path),
        Some("self") => {
            let rest = path.segments.iter().skip(1);
            quote!(super #(:: #rest)*)
        }
        _ => quote!(super::#path),
    };
    let m = format_ident!("__opbox_constant_params_{}", kernel);
    // Spanned at the type, so the ambiguity error points at both kernels' params types.
    let name = Ident::new("OneConstantParamsTypePerModule", tp.span());
    let check = quote::quote_spanned! {tp.span()=>
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

fn kind_tokens(k: ParamKind) -> TokenStream {
    match k {
        ParamKind::In(t) => {
            let t = elem_tokens(t);
            quote!(::opbox::__private::cuda::ParamKind::In(#t))
        }
        ParamKind::Out(t) => {
            let t = elem_tokens(t);
            quote!(::opbox::__private::cuda::ParamKind::Out(#t))
        }
        ParamKind::InOut(t) => {
            let t = elem_tokens(t);
            quote!(::opbox::__private::cuda::ParamKind::InOut(#t))
        }
        ParamKind::Scalar(t) => {
            let t = scalar_tokens(t);
            quote!(::opbox::__private::cuda::ParamKind::Scalar(#t))
        }
        ParamKind::Constexpr(t) => {
            let t = scalar_tokens(t);
            quote!(::opbox::__private::cuda::ParamKind::Constexpr(#t))
        }
        // Never built by the macro: these come from trait consts (decl_kind_tokens).
        ParamKind::Native(_)
        | ParamKind::ConstexprEnum(_)
        | ParamKind::NativeIn(_)
        | ParamKind::NativeOut(_)
        | ParamKind::NativeInOut(_) => quote!(()),
    }
}

fn decl_kind_tokens(k: &DeclKind) -> TokenStream {
    match k {
        DeclKind::Known(k) => kind_tokens(*k),
        DeclKind::Arg(ty) => {
            quote::quote_spanned!(ty.span()=> <#ty as ::opbox::cuda::KernelArg>::KIND)
        }
        DeclKind::Constexpr(ty) => {
            quote::quote_spanned!(ty.span()=> <#ty as ::opbox::cuda::ConstexprArg>::KIND)
        }
        DeclKind::NativeSlice(wrapper, ty) => {
            let v = format_ident!("Native{wrapper}");
            quote::quote_spanned!(ty.span()=> ::opbox::__private::cuda::ParamKind::#v(
                ::opbox::__private::cuda::NativeParam {
                    schema: <#ty as ::opbox::NativeType>::SCHEMA,
                    generated: false,
                }
            ))
        }
    }
}

/// The Rust type of a launch argument, and the value it becomes.
fn rust_arg(p: &DeclParam) -> (TokenStream, TokenStream) {
    let name = &p.name;
    let kind = match &p.kind {
        DeclKind::Known(k) => *k,
        DeclKind::Arg(ty) => {
            return (
                quote::quote_spanned!(ty.span()=> <#ty as ::opbox::cuda::KernelArg>::Value<'_>),
                quote::quote_spanned!(ty.span()=> <#ty as ::opbox::cuda::KernelArg>::lower(&#name)),
            )
        }
        DeclKind::NativeSlice(..) => {
            return (
                quote!(&::opbox::Tensor),
                quote!(::opbox::cuda::LaunchArg::Tensor(#name)),
            )
        }
        DeclKind::Constexpr(ty) => {
            return (
                quote!(#ty),
                quote::quote_spanned!(ty.span()=> <#ty as ::opbox::cuda::ConstexprArg>::const_value(#name)),
            )
        }
    };
    let scalar = |t: ScalarType, wrap: &str| {
        let ty = format_ident!("{}", t.rust_name());
        let v = format_ident!("{}", format!("{t:?}"));
        let wrap = format_ident!("{wrap}");
        (
            quote!(#ty),
            quote!(::opbox::__private::cuda::#wrap::#v(#name)),
        )
    };
    match kind {
        ParamKind::In(_) | ParamKind::Out(_) | ParamKind::InOut(_) => (
            quote!(&::opbox::Tensor),
            quote!(::opbox::cuda::LaunchArg::Tensor(#name)),
        ),
        ParamKind::Scalar(t) => scalar(t, "LaunchArg"),
        ParamKind::Constexpr(t) => scalar(t, "ConstValue"),
        // Only reached through DeclKind::Arg / DeclKind::Constexpr / DeclKind::NativeSlice.
        ParamKind::Native(_)
        | ParamKind::ConstexprEnum(_)
        | ParamKind::NativeIn(_)
        | ParamKind::NativeOut(_)
        | ParamKind::NativeInOut(_) => (quote!(()), quote!(())),
    }
}

fn emit(
    func: &ForeignItemFn,
    args: &Args,
    params: &[DeclParam],
    files: &[ScannedFile],
) -> TokenStream {
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let rust_name = ident.to_string();
    let entry = args
        .entry
        .as_ref()
        .map_or_else(|| rust_name.clone(), LitStr::value);
    let docs: Vec<&Attribute> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let param_items = params.iter().map(|p| {
        let name = p.name.to_string();
        let kind = decl_kind_tokens(&p.kind);
        quote!(::opbox::__private::cuda::Param::new(#name, #kind))
    });
    let sources = files.iter().map(|f| {
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
    });
    let options = args
        .options
        .iter()
        .map(|o| quote!(::opbox::__private::Cow::Borrowed(#o)));
    let style = if args.template {
        quote!(::opbox::__private::cuda::ConstexprStyle::TemplateArgs)
    } else {
        quote!(::opbox::__private::cuda::ConstexprStyle::Defines)
    };
    let c_signature_doc = format!(
        " Launches the CUDA entry `{entry}` of `{}`; checks every tensor's dtype and device first.",
        files.first().map_or("", |f| f.name.as_str())
    );
    let mut fn_params = Vec::new();
    let mut launch_args = Vec::new();
    let mut const_args = Vec::new();
    let mut runtime_params = Vec::new();
    let mut const_params = Vec::new();
    for p in params {
        let name = &p.name;
        let (ty, value) = rust_arg(p);
        fn_params.push(quote!(#name: #ty));
        if matches!(
            p.kind,
            DeclKind::Known(ParamKind::Constexpr(_)) | DeclKind::Constexpr(_)
        ) {
            const_args.push(value);
            const_params.push(quote!(#name: #ty));
        } else {
            launch_args.push(value);
            runtime_params.push(quote!(#name: #ty));
        }
    }
    let n_const = const_args.len();
    // With #[constexpr] params: `specialize(constexprs…)` fixes them once and gives a launcher
    // that takes the runtime params only (CuTe's compiled function, which excludes its
    // Constexpr args): passing a constexpr to it is a rustc arity error.
    let specialized = (n_const > 0).then(|| {
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

                #[doc = #c_signature_doc]
                #[allow(clippy::too_many_arguments)]
                #[inline]
                pub fn launch(&self, cfg: ::opbox::cuda::LaunchConfig, #(#runtime_params),*) -> ::opbox::Result<()> {
                    ::opbox::cuda::launch(&HANDLE, &cfg, &[#(#launch_args),*], &self.values)
                }
            }
        }
    });
    let build = match &args.build {
        None => quote!(::core::option::Option::None),
        Some(path) => {
            let shown = quote!(#path).to_string().replace(' ', "");
            quote! {
                ::core::option::Option::Some(::opbox::__private::cuda::BuildRef {
                    path: #shown,
                    get: {
                        fn __opbox_build_options() -> &'static ::opbox::BuildOptions {
                            &#path
                        }
                        __opbox_build_options
                    },
                })
            }
        }
    };
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
    quote! {
        #module_check

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
                options: ::opbox::__private::Cow::Borrowed(&[#(#options),*]),
                preamble: ::opbox::__private::Cow::Borrowed(""),
                declared_at: ::opbox::__private::Cow::Borrowed(::core::concat!(::core::file!(), ":", ::core::line!())),
                build: #build,
                abi: #abi,
            };

            /// The loaded kernel per device (and per #[constexpr] value set), loaded on first use.
            pub static HANDLE: ::opbox::cuda::KernelHandle = ::opbox::cuda::KernelHandle::new(&DECL);

            // Every extern kernel is listed, so `opbox aot` can compile a whole binary's.
            ::opbox::__private::inventory::submit! {
                ::opbox::__private::cuda::ExternKernelRegistration {
                    decl: &DECL,
                    module_path: ::core::module_path!(),
                }
            }

            #specialized

            #[doc = #c_signature_doc]
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn launch(cfg: ::opbox::cuda::LaunchConfig, #(#fn_params),*) -> ::opbox::Result<()> {
                ::opbox::cuda::launch(&HANDLE, &cfg, &[#(#launch_args),*], &[#(#const_args),*])
            }
        }
    }
}
