//! A checked `#[kernel]` as tokens: the module an `#[extern_kernel]` gets (`DECL`, `HANDLE`,
//! `launch`, `specialize`, the AOT registration; see [`kernel_module`]), with
//! - `DECL` under `EntryAbi::ParamsAndLens` (slice lengths after the params, for `len()` and the
//!   debug bounds checks) and `constexpr = "template"`; its C++ is the preamble its build options
//!   give (`dsl_build_options`: helpers, the group's preamble, callees, then the kernel);
//! - `HANDLE` carrying the CPU entry, which locks the tensors, reads the arguments back from the
//!   checked launch and runs the body (`__opbox_body`, the CPU build) over the grid.

use opbox_codegen::cuda::{ElemType, ParamKind, LEN_SUFFIX};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::attr;
use super::cpp::Cpp;
use super::cpu::{rewrite, rewrite_kernel};
use super::ir::{Elem, Ty};
use super::lower::Lowering;
use super::ranged::RangeParams;
use crate::errors::Errors;
use crate::extern_kernel::expand::{kernel_module, ModuleSpec};
use crate::extern_kernel::SourceLoader;
use crate::kernel_params::{classify_inputs, Access, KernelMacro, KernelParam, ParamClass};
use crate::paths;

pub(super) const KERNEL: KernelMacro = KernelMacro {
    attr: "#[kernel]",
    an: "a #[kernel]",
};

/// The DSL type of a classified parameter.
pub(super) fn param_ty(class: &ParamClass, low: &mut Lowering<'_>) -> Ty {
    match class {
        ParamClass::Known(k) => match k {
            ParamKind::In(t) => Ty::Slice(Elem::Prim(*t), false),
            ParamKind::Out(t) | ParamKind::InOut(t) => Ty::Slice(Elem::Prim(*t), true),
            ParamKind::Scalar(t) | ParamKind::Constexpr(t) => {
                t.elem().map_or(Ty::Unknown, Ty::Prim)
            }
            _ => Ty::Unknown,
        },
        ParamClass::Arg(ty) | ParamClass::Constexpr(ty) => low.ty(ty),
        ParamClass::NativeSlice(access, ty) => {
            let named = match low.ty(ty) {
                Ty::Named(n) => Elem::Named(n),
                _ => Elem::Named(String::new()),
            };
            Ty::Slice(named, *access != Access::In)
        }
    }
}

/// The type of a parameter the DSL cannot compute with yet: the float8 and complex types, the
/// 16-bit integers and `usize` (its operators and constants cover the other rows of the table).
fn dsl_unsupported(kind: ParamKind) -> Option<&'static str> {
    let prim = match kind {
        ParamKind::In(t) | ParamKind::Out(t) | ParamKind::InOut(t) => t.primitive(),
        ParamKind::Scalar(t) | ParamKind::Constexpr(t) => t.primitive(),
        _ => return None,
    };
    dsl_unsupported_scalar(prim).then(|| prim.rust_name())
}

/// See [`dsl_unsupported`]: the one list of the types outside the DSL.
pub(crate) fn dsl_unsupported_scalar(prim: opbox_codegen::native::NativeScalar) -> bool {
    use opbox_codegen::native::NativeScalar as N;
    matches!(
        prim,
        N::F8E4M3 | N::F8E5M2 | N::I16 | N::U16 | N::Usize | N::Complex32 | N::Complex64
    )
}

/// `mut` for the params the body writes through (`y[i] = ..` needs `&mut y`).
pub(super) fn body_param(pt: &syn::PatType, ty: &Ty) -> TokenStream {
    let pat = &pt.pat;
    let t = &pt.ty;
    match ty {
        Ty::Slice(_, true) => quote!(mut #pat: #t),
        _ => quote!(#pat: #t),
    }
}

/// The rewritten fn, which stands in for the kernel when the macro reports errors, so that
/// rustc checks the body too and nothing else fails because the kernel is missing.
pub(super) fn fallback(func: &syn::ItemFn) -> TokenStream {
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let body = rewrite(&func.block);
    let params = func.sig.inputs.iter().map(|input| match input {
        // `#[constexpr]` is dropped: not an attribute rustc knows.
        syn::FnArg::Typed(pt) => {
            let (pat, ty) = (&pt.pat, &pt.ty);
            let writes = matches!(&**ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Out" || s.ident == "InOut"));
            if writes {
                quote!(mut #pat: #ty)
            } else {
                quote!(#pat: #ty)
            }
        }
        other => quote!(#other),
    });
    quote! {
        #[allow(dead_code, unused_mut, unused_variables, non_snake_case, clippy::all)]
        #vis fn #ident(#(#params),*) #body
    }
}

pub(super) fn kernel(
    attr: TokenStream,
    func: &syn::ItemFn,
    files: &dyn SourceLoader,
) -> Result<TokenStream, (syn::Error, TokenStream)> {
    let mut errors = Errors::default();
    let args = attr::parse(attr, &mut errors);
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        errors.at(sig.generics.span(), "a #[kernel] takes no generics or traits: declare one kernel per element type (axpy_f32, axpy_f16), or make the choice a #[constexpr] param");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        errors.at(ty.span(), "a #[kernel] returns nothing (a __global__ function returns void): write results through Out<[T]> params");
    }
    for (tok, what) in [
        (sig.asyncness.map(|a| a.span), "async"),
        (sig.constness.map(|c| c.span), "const"),
        (sig.unsafety.map(|u| u.span), "unsafe"),
    ] {
        if let Some(span) = tok {
            errors.at(span, format!("a #[kernel] cannot be {what}"));
        }
    }
    let params = classify_inputs(&sig.inputs, KERNEL, &mut errors);
    for p in &params {
        match &p.class {
            ParamClass::Constexpr(ty) => errors.at(ty.span(), "a #[kernel]'s #[constexpr] params are integers or bool (they become template arguments; the body uses them as values)"),
            ParamClass::Known(ParamKind::Constexpr(t)) if !t.can_be_template_arg() => errors.at(p.name.span(), format!("#[constexpr] {}: {t} cannot be a C++17 template argument; pass it as a runtime {t} param instead", p.name)),
            ParamClass::Known(k) => {
                if let Some(t) = dsl_unsupported(*k) {
                    errors.at(p.name.span(), format!("parameter {}: a #[kernel] body has no {t} arithmetic; declare this kernel with #[extern_kernel] over CUDA C++, which takes {t}", p.name));
                }
            }
            _ => {}
        }
    }
    let file = normalize(&files.declaring_file().shown);
    let name = sig.ident.to_string();
    let mut low = Lowering::new(&mut errors, name.clone());
    low.in_kernel = true;
    low.constexprs = params
        .iter()
        .filter(|p| p.class.is_constexpr())
        .map(|p| p.name.to_string())
        .collect();
    let mut tys = Vec::new();
    for p in &params {
        let ty = param_ty(&p.class, &mut low);
        let cpp_name = low.bind_param(&p.name, ty.clone());
        tys.push((cpp_name, ty));
    }
    let body = low.body(&func.block);
    let named: Vec<syn::Path> = low.named.clone();
    let callees: Vec<syn::Path> = low.callees.clone();
    let barriers = low.barriers;
    // The parameters (by declaration index) that load4/store4 move: their launch checks that
    // each starts at a 16-byte boundary, so the C++ moves them as float4 unconditionally.
    let vectors: Vec<(usize, &'static str)> = low
        .vectors
        .iter()
        .filter_map(|(slice, method)| {
            let index = tys.iter().position(|(cpp, _)| cpp == slice)?;
            Some((index, *method))
        })
        .collect();
    let infer = std::mem::take(&mut low.infer);
    drop(low);
    if let Err(e) = errors.finish() {
        return Err((e, fallback(func)));
    }
    let named_strings: Vec<String> = named.iter().map(|p| quote!(#p).to_string()).collect();
    let line_file = escape_file(&file);
    let mut cpp = Cpp::new(&infer, &named_strings, &line_file);
    cpp.macros = true;
    cpp.block_body(&body);
    let text = entry_text(&name, &params, &tys, &cpp, &file);
    Ok(emit(
        func,
        &args,
        &params,
        &tys,
        &text,
        (&named, &callees, barriers, &vectors),
        &file,
    ))
}

/// The params a body moves as float4, by declaration index, with the first method it uses.
type VectorUses<'a> = &'a [(usize, &'static str)];

/// For each slice of a native type that `load4`/`store4` moves, an assertion that its element is
/// 16 bytes: the size is rustc's to know, so the check is rustc's, pointing at the parameter's
/// type.
fn native_vector_sizes(params: &[KernelParam], vectors: VectorUses<'_>) -> Vec<TokenStream> {
    vectors
        .iter()
        .filter_map(|(index, method)| {
            let p = params.get(*index)?;
            let ParamClass::NativeSlice(_, ty) = &p.class else {
                return None;
            };
            let name = &p.name;
            let shown = crate::naming::shown(ty);
            let message = format!(
                "`{name}.{method}()` moves 16 bytes as one access, so its element type `{shown}` must be exactly 16 bytes: index the elements (`{name}[i]`) instead, or give `{shown}` a 16-byte layout"
            );
            Some(quote_spanned! {ty.span()=>
                const _: () = ::core::assert!(::core::mem::size_of::<#ty>() == 16, #message);
            })
        })
        .collect()
}

/// `#line`'s file name: the declaring file as messages show it, escaped for a C++ string.
pub(super) fn escape_file(file: &str) -> String {
    normalize(file).replace('"', "\\\"")
}

/// `tests/../examples/x.rs` → `examples/x.rs`, with `/` separators: the path as the user would
/// write it.
pub(super) fn normalize(file: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in file.split(['/', '\\']) {
        match part {
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            "." => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The C++ type of a parameter in the entry's signature (the ABI the signature check reads).
fn abi_type(p: &KernelParam, ty: &Ty, cpp: &Cpp<'_>) -> String {
    match (&p.class, ty) {
        (ParamClass::Known(k), _) => k.c_type().unwrap_or_default(),
        (ParamClass::NativeSlice(access, _), Ty::Slice(e, _)) => {
            let e = cpp.elem(e);
            if *access == Access::In {
                format!("const {e}*")
            } else {
                format!("{e}*")
            }
        }
        (_, t) => cpp.ty(t),
    }
}

/// The `__global__` entry: a template over the #[constexpr] params, the launch params and the
/// slice lengths, each slice wrapped with its length, then the body.
fn entry_text(
    name: &str,
    params: &[KernelParam],
    tys: &[(String, Ty)],
    cpp: &Cpp<'_>,
    file: &str,
) -> String {
    let mut tparams = Vec::new();
    let mut cparams = Vec::new();
    let mut lens = Vec::new();
    let mut wraps = Vec::new();
    for (p, (cname, ty)) in params.iter().zip(tys) {
        if p.class.is_constexpr() {
            tparams.push(format!("{} {cname}", cpp.ty(ty)));
            continue;
        }
        let abi = abi_type(p, ty, cpp);
        if let Ty::Slice(elem, writable) = ty {
            let e = cpp.elem(elem);
            let e = if *writable { e } else { format!("const {e}") };
            cparams.push(format!("{abi} {cname}__p"));
            lens.push(format!("unsigned int {cname}{LEN_SUFFIX}"));
            wraps.push(format!(
                "  const opbox_dsl::Slice<{e}> {cname}{{reinterpret_cast<{e}*>({cname}__p), {cname}{LEN_SUFFIX}}};"
            ));
        } else {
            cparams.push(format!("{abi} {cname}"));
        }
    }
    cparams.extend(lens);
    let mut s = format!("// #[kernel] {name}, generated from {file}\n");
    if !tparams.is_empty() {
        s.push_str(&format!("template <{}>\n", tparams.join(", ")));
    }
    s.push_str(&format!(
        "__global__ void {name}({}) {{\n",
        cparams.join(", ")
    ));
    s.push_str("  opbox_dsl::wait_for_primaries();\n");
    for w in wraps {
        s.push_str(&w);
        s.push('\n');
    }
    s.push_str(&cpp.out);
    s.push_str("}\n");
    s
}

/// `[callee consts]` and `[named FieldTypes]` for a `DslCode`, as written from a child module.
pub(super) fn slot_tokens(
    named: &[syn::Path],
    callees: &[syn::Path],
) -> (TokenStream, TokenStream) {
    let callees = callees.iter().map(|p| {
        let mut c = paths::from_child(p);
        if let Some(last) = c.segments.last_mut() {
            last.ident =
                crate::naming::dsl_fn_const(&crate::naming::unraw(&last.ident), last.ident.span());
        }
        quote!(#c)
    });
    let named = named.iter().map(|p| {
        let p = paths::from_child(p);
        quote!(<#p as ::opbox::__private::native::NativeField>::FIELD_TYPE)
    });
    (quote!(&[#(#callees),*]), quote!(&[#(#named),*]))
}

fn emit(
    func: &syn::ItemFn,
    args: &attr::Args,
    params: &[KernelParam],
    tys: &[(String, Ty)],
    text: &str,
    (named, callees, barriers, vectors): (&[syn::Path], &[syn::Path], bool, VectorUses<'_>),
    file: &str,
) -> TokenStream {
    let ident = &func.sig.ident;
    let d = quote!(::opbox::__private::dsl);
    let docs = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let user_options = args
        .options
        .iter()
        .map(|o| quote!(::opbox::__private::Cow::Borrowed(#o)));
    let user_options: Vec<TokenStream> = user_options.collect();
    // Debug builds of the user's crate check every index on the GPU too.
    let options = quote! {{
        const DEBUG: &[::opbox::__private::Cow<'static, str>] =
            &[#(#user_options,)* ::opbox::__private::Cow::Borrowed("-DOPBOX_DSL_BOUNDS")];
        const RELEASE: &[::opbox::__private::Cow<'static, str>] = &[#(#user_options),*];
        if cfg!(debug_assertions) { DEBUG } else { RELEASE }
    }};
    // The kernel's C++ is its source; the preamble has what it calls.
    let sources = vec![quote! {
        ::opbox::__private::cuda::SourceFile {
            name: ::opbox::__private::Cow::Borrowed(#file),
            content: ::opbox::__private::Cow::Borrowed(#text),
            includes: ::opbox::__private::Cow::Borrowed(&[]),
        }
    }];
    let user_build = match &args.build {
        Some(p) => {
            let p = paths::from_child(p);
            quote!(::core::option::Option::Some(&*#p))
        }
        None => quote!(::core::option::Option::None),
    };
    let (callee_list, named_list) = slot_tokens(named, callees);
    // Only `#[device]` fns read the thread-local context; a kernel without one skips the write.
    let publish = !callees.is_empty();
    // A body with barriers is split at them where it can be (each piece run for every thread of
    // the block in turn), and otherwise runs its block's threads as coroutines; the others run
    // as a loop.
    let split = if barriers {
        let names: Vec<String> = params.iter().map(|p| p.name.to_string()).collect();
        super::fission::split(&func.block, &names, publish, &d)
    } else {
        None
    };
    let each_thread = if barriers {
        quote!(each_thread_coop)
    } else {
        quote!(each_thread)
    };
    let build = quote! {
        ::core::option::Option::Some(::opbox::__private::cuda::BuildRef {
            path: ::core::concat!(::core::module_path!(), "::BUILD"),
            get: __opbox_build_options,
        })
    };

    // The CPU entry: each argument read back by its launch index (constexprs by theirs).
    let mut reads = Vec::new();
    let mut views = Vec::new();
    let mut call_args = Vec::new();
    let mut body_params = Vec::new();
    let (mut launch_i, mut const_i) = (0usize, 0usize);
    for (input, (p, (_, ty))) in func.sig.inputs.iter().zip(params.iter().zip(tys)) {
        let syn::FnArg::Typed(pt) = input else {
            continue;
        };
        let name = &p.name;
        let decl_ty = &pt.ty;
        if p.class.is_constexpr() {
            reads.push(quote!(let #name: #decl_ty = #d::args::constexpr(prepared, #const_i)?;));
            const_i += 1;
        } else {
            match ty {
                Ty::Slice(..) => {
                    reads.push(quote!(let #name = __opbox_buffers.raw(#launch_i)?;));
                    views.push(quote! {
                        // SAFETY: the buffer is locked (`__opbox_buffers`) for the whole grid and
                        // holds `len` elements of the declared type (checked by `prepare`).
                        let #name = unsafe { <#decl_ty>::__from_raw(#name) };
                    });
                }
                Ty::Prim(_) => reads
                    .push(quote!(let #name: #decl_ty = #d::args::scalar(prepared, #launch_i)?;)),
                _ => reads
                    .push(quote!(let #name: #decl_ty = #d::args::by_value(prepared, #launch_i)?;)),
            }
            launch_i += 1;
        }
        call_args.push(quote!(#name));
        let mut clean = pt.clone();
        clean.attrs.clear();
        body_params.push(body_param(&clean, ty));
    }
    // A barrier-free body whose indices the macro can bound runs its blocks' threads split in
    // a checked part and a proven part (`super::ranged`).
    let ranged = if barriers {
        None
    } else {
        let names: Vec<String> = params.iter().map(|p| p.name.to_string()).collect();
        let mut views = Vec::new();
        let mut scalars = Vec::new();
        for (p, (_, ty)) in params.iter().zip(tys) {
            match ty {
                Ty::Slice(_, writable) => views.push((p.name.to_string(), *writable)),
                Ty::Prim(ElemType::U32) => scalars.push(p.name.to_string()),
                _ => {}
            }
        }
        let rp = RangeParams {
            all: &names,
            views,
            scalars,
        };
        super::ranged::split(&func.block, &rp, &d)
    };
    let body = rewrite_kernel(ranged.as_ref().map_or(&func.block, |r| &r.body));
    let needs = opbox_codegen::cuda::dsl::needed_sections(text);
    // The user's lint levels apply to the body, which now lives in `__opbox_body`.
    let lints = func.attrs.iter().filter(|a| {
        ["allow", "warn", "deny", "expect"]
            .iter()
            .any(|l| a.path().is_ident(l))
    });
    let run_block = match (&split, &ranged) {
        (None, Some(r)) => {
            let narrow = &r.narrow;
            quote! {
                #d::grid::run_grid(prepared, |__opbox_block: &#d::grid::ThreadCtx| {
                    #(#views)*
                    let __opbox_fast = #d::ranged::FastThreads::of(__opbox_block)#(.#narrow)*;
                    // SAFETY: `__opbox_fast` admits only the threads for which every index
                    // `__opbox_body::<true>` leaves unchecked is inside its buffer.
                    unsafe {
                        __opbox_block.each_thread_split(
                            #publish,
                            __opbox_fast,
                            #[inline(always)] move |__opbox_ctx| __opbox_body::<true>(__opbox_ctx, #(#call_args),*),
                            #[inline(always)] move |__opbox_ctx| __opbox_body::<false>(__opbox_ctx, #(#call_args),*),
                        )
                    }
                })
            }
        }
        (Some(_), _) => quote! {
            #d::grid::run_grid(prepared, |__opbox_block: &#d::grid::ThreadCtx| {
                #(#views)*
                __opbox_block_body(__opbox_block, #(#call_args),*);
            })
        },
        (None, None) => quote! {
            #d::grid::run_grid(prepared, |__opbox_block: &#d::grid::ThreadCtx| {
                #(#views)*
                __opbox_block.#each_thread(#publish, #[inline(always)] move |__opbox_ctx| __opbox_body(__opbox_ctx, #(#call_args),*));
            })
        },
    };
    let block_body = split.map(|split| {
        let lints = lints.clone();
        quote! {
            /// The CPU build of the body, split at its barriers and warp exchanges.
            #(#lints)*
            #[inline(always)]
            #[allow(unused_mut, unused_variables, unused_parens, unused_labels, unreachable_code, non_snake_case, clippy::all)]
            fn __opbox_block_body(__opbox_block: &#d::grid::ThreadCtx, #(#body_params),*) {
                #split
            }
        }
    });
    let cpu_build = if block_body.is_some() {
        "split at barriers"
    } else if barriers {
        "coroutines"
    } else if ranged.is_some() {
        "split thread loop"
    } else {
        "thread loop"
    };
    let fast_param = ranged.as_ref().map(|_| quote!(<const __OPBOX_FAST: bool>));
    let vector_sizes = native_vector_sizes(params, vectors);
    let extra = quote! {
        #block_body
        #(#vector_sizes)*

        /// How the CPU build runs a block's threads: `"thread loop"` (no barriers), `"split
        /// thread loop"` (no barriers, and the threads whose indices the macro proved inside
        /// their buffers run unchecked), `"split at barriers"` (each piece between barriers and
        /// warp exchanges for every thread in turn) or `"coroutines"` (a body the split does
        /// not cover).
        pub const CPU_BUILD: &str = #cpu_build;

        static __OPBOX_CODE: #d::DslCode = #d::DslCode {
            template: "",
            callees: #callee_list,
            named: #named_list,
            needs: &[#(#needs),*],
        };

        fn __opbox_build_options() -> &'static ::opbox::__private::BuildOptions {
            static OPTIONS: ::std::sync::LazyLock<::opbox::__private::BuildOptions> =
                ::std::sync::LazyLock::new(|| #d::dsl_build_options(#user_build, &__OPBOX_CODE));
            &OPTIONS
        }

        fn __opbox_cpu(prepared: &#d::PreparedLaunch<'_>) -> ::opbox::__private::Result<()> {
            let __opbox_buffers = #d::args::Buffers::lock(prepared)?;
            #(#reads)*
            #run_block
        }

        /// The CPU build of the body.
        #(#lints)*
        #[inline(always)]
        #[allow(unused_mut, unused_variables, unused_parens, non_snake_case, clippy::all)]
        fn __opbox_body #fast_param (__opbox_ctx: &#d::grid::ThreadCtx, #(#body_params),*) #body
    };
    kernel_module(
        &ModuleSpec {
            vis: &func.vis,
            ident,
            docs,
            entry: ident.to_string(),
            style: quote!(::opbox::__private::cuda::ConstexprStyle::TemplateArgs),
            sources,
            options,
            build,
            abi: quote!(::opbox::__private::cuda::EntryAbi::ParamsAndLens),
            handle: {
                let vectors = vectors.iter().map(|(index, method)| {
                    quote!(::opbox::__private::cuda::VectorParam { index: #index, method: #method })
                });
                quote!(::opbox::__private::cuda::KernelHandle::with_cpu(&DECL, __opbox_cpu, &[#(#vectors),*]))
            },
            launch_doc: format!(" Launches #[kernel] `{ident}` on the tensors' device: CUDA (NVRTC-compiled C++) or CPU (the body built as Rust, blocks across cores); checks every tensor's dtype and device first."),
            extra,
        },
        params,
    )
}
