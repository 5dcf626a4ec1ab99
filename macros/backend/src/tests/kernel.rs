//! `#[kernel]` and `#[device]` in process: the C++ each emits for the tricky cases (literal
//! types, shadowing, loops, placeholders) and the errors each collects.

use std::path::PathBuf;

use opbox_codegen::cuda::{Closure, ScanError, ScanRequest};
use proc_macro2::TokenStream;
use quote::quote;

use super::{assert_has_all, compile_errors, pretty};
use crate::extern_kernel::{DeclaringFile, SourceLoader};
use crate::kernel::{expand, expand_device};

struct Here;

impl SourceLoader for Here {
    fn declaring_file(&self) -> DeclaringFile {
        DeclaringFile {
            dir: PathBuf::from("/virtual/crate/src"),
            shown: "src/../src/k.rs".into(),
        }
    }

    fn closure(&self, req: &ScanRequest<'_>) -> Result<Closure, ScanError> {
        Err(ScanError::SourceNotFound {
            written: req.source.to_string(),
            path: PathBuf::from(req.source),
            declared_in: req.declared_in.to_string(),
        })
    }
}

/// The C++ of a kernel: the `template` string of its `SourceFile` content, from the expansion.
fn kernel_cpp(item: TokenStream) -> (String, String) {
    let out = pretty(expand(TokenStream::new(), item, &Here));
    let file: syn::File = syn::parse_str(&out).unwrap_or_else(|e| panic!("{e}"));
    let mut cpp = String::new();
    find_source(&quote!(#file), &mut cpp);
    (out, cpp)
}

/// The first string literal that holds a `__global__` entry.
fn find_source(tokens: &TokenStream, out: &mut String) {
    for t in tokens.clone() {
        match t {
            proc_macro2::TokenTree::Literal(l) if out.is_empty() => {
                if let Ok(s) = syn::parse2::<syn::LitStr>(quote!(#l)) {
                    if s.value().contains("__global__") {
                        *out = s.value();
                    }
                }
            }
            proc_macro2::TokenTree::Group(g) => find_source(&g.stream(), out),
            _ => {}
        }
    }
}

#[test]
fn literals_take_the_type_rust_gives_them() {
    let (_, cpp) = kernel_cpp(quote! {
        fn k(x: In<[f32]>, y: Out<[f32]>, w: Out<[u64]>, n: u32) {
            let i = global_id_x();
            let mut j = 0;
            while j < n { j += 1; }
            let s = 0.5;
            y[i] = x[i] * 2.5 + s;
            w[i] = 1 << 40u64;
            let m = -2147483648;
            let _ = m;
        }
    });
    assert_has_all(
        &cpp,
        &[
            // `j` is a u32 from its comparison with `n`, after its declaration.
            "unsigned int j = 0u;",
            "j = opbox_dsl::add(j, 1u);",
            "const float s = 0.5f;",
            "opbox_dsl::add(opbox_dsl::mul(x[i], 2.5f), s)",
            "opbox_dsl::shl(((unsigned long long)1ull), ((unsigned long long)40ull))",
            "opbox_dsl::neg(((int)2147483648u))",
        ],
    );
    assert!(
        !cpp.contains("2.5)") && !cpp.contains("0.5;"),
        "a double literal in:\n{cpp}"
    );
}

#[test]
fn lines_loops_and_shadowing() {
    let (out, cpp) = kernel_cpp(quote! {
        fn k(out: Out<[u32]>, n: u32, #[constexpr] K: u32) {
            let i = global_id_x();
            let acc = 0u32;
            let acc = acc + 1;
            for j in (0..n).step_by(2) { out[j] = acc; }
            for j in 1..=K { if j == 2 { continue; } }
        }
    });
    assert_has_all(
        &cpp,
        &[
            "template <unsigned int K>",
            "__global__ void k(unsigned int* out__p, unsigned int n, unsigned int out__len)",
            "const unsigned int acc_1 = opbox_dsl::add(acc, 1u);",
            "const unsigned long long opbox_s0 = ((unsigned long long)2ull);",
            "if (opbox_s0 == 0ull) __trap();",
            "opbox_i0 = opbox_dsl::step_next(opbox_i0, opbox_e0, opbox_s0);",
            "opbox_dsl::step_incl(opbox_i1, opbox_e1, 1ull, opbox_more1);",
        ],
    );
    // The file as the user would write it, without `..`.
    assert!(
        cpp.contains("#line ") && cpp.contains(" \"src/k.rs\""),
        "{cpp}"
    );
    assert_has_all(
        &out,
        &[
            "EntryAbi::ParamsAndLens",
            "ConstexprStyle::TemplateArgs",
            "KernelHandle::with_cpu(&DECL, __opbox_cpu, &[])",
            "__opbox_ctx.global_id_x()",
        ],
    );
}

#[test]
fn calls_and_named_types_are_slots_filled_at_run_time() {
    let (out, cpp) = kernel_cpp(quote! {
        fn k(c: In<[Color]>, y: Out<[f32]>, p: Params) {
            let i = global_id_x();
            let q = Color { r: 1.0, g: c[i].g, b: 0.0 };
            y[i] = helpers::shade(q, p.gain);
        }
    });
    assert_has_all(
        &cpp,
        &[
            "const OPBOX_DSL_N0* c__p",
            "OPBOX_DSL_N1 p",
            "OPBOX_DSL_N0 opbox_agg0{};",
            "opbox_agg0.r = opbox_dsl::flit{1.0, 1.0f};",
            "const OPBOX_DSL_N0 q = opbox_agg0;",
            "OPBOX_DSL_C0(q, p.gain)",
        ],
    );
    assert_has_all(
        &out,
        &[
            "callees: &[super::helpers::mark_shade_with_device_or_builtin]",
            "<super::Color as ::opbox::__private::native::NativeField>::FIELD_TYPE",
        ],
    );
}

#[test]
fn every_rejection_is_reported_at_once_with_the_fn_kept() {
    let out = expand(
        TokenStream::new(),
        quote! {
            fn k(x: In<[f32]>, y: Out<[f32]>) {
                let f = |v: f32| v;
                let r = &x;
                let v: Vec<f32> = Vec::new();
                y[0] = x[0].atan2(1.0);
                panic!("no");
            }
        },
        &Here,
    );
    let errors = compile_errors(out.clone());
    assert_eq!(errors.len(), 6, "{errors:#?}");
    assert!(errors[0].starts_with("closures are not in the #[kernel] subset"));
    assert!(errors
        .iter()
        .any(|e| e.contains("`.atan2()` is not a #[kernel] method")));
    // The fn itself stays (built with the DSL's operators), so the IDE and rustc still see it.
    assert!(out.to_string().contains("fn k"), "{out}");
}

#[test]
fn device_fns_recurse_only_by_error() {
    let out = expand_device(
        TokenStream::new(),
        quote! { fn f(n: u32) -> u32 { if n == 0 { 1 } else { n * f(n - 1) } } },
        &Here,
    );
    let errors = compile_errors(out);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].starts_with("recursion (`f` calls itself)"));
    let ok = pretty(expand_device(
        TokenStream::new(),
        quote! { fn f(v: f32, lo: f32) -> f32 { if v < lo { return lo; } v.sqrt() } },
        &Here,
    ));
    assert_has_all(
        &ok,
        &[
            "__device__ inline float opbox_dev_f(float v, float lo)",
            "return opbox_dsl::sqrt_(v);",
            "const mark_f_with_device_or_builtin: &'static ::opbox::__private::dsl::DslFn",
        ],
    );
}

/// Split at a barrier, a local that is a pure function of the thread's indices and the params
/// (and of other such locals) is recomputed in the piece that reads it; a written one is kept
/// per thread.
#[test]
fn the_split_recomputes_pure_locals() {
    let (out, _) = kernel_cpp(quote! {
        fn k(x: InOut<[f32]>, n: u32) {
            let t = thread_id_x();
            let i = block_id_x() * n + t;
            let mut acc = x[i];
            sync_threads();
            acc += 1.0;
            x[i] = acc;
        }
    });
    let after = &out[out.find("barrier(0u32").unwrap_or_else(|| panic!("{out}"))..];
    assert_has_all(
        after,
        &[
            "let t = (__opbox_ctx.thread_id_x());",
            "let i = (::opbox::__private::dsl::ops::add(",
            "let mut acc = ::core::clone::Clone::clone(",
        ],
    );
    assert_eq!(out.matches("fission::Slots::new()").count(), 1, "{out}");
    // A value read from a param the body writes is kept: recomputing it would see the write.
    let (out, _) = kernel_cpp(quote! {
        fn k(x: InOut<[f32]>, mut n: u32) {
            let i = thread_id_x() * n;
            n += 1;
            sync_threads();
            x[i] = n as f32;
        }
    });
    let after = &out[out.find("barrier(0u32").unwrap_or_else(|| panic!("{out}"))..];
    assert!(
        after.contains("let i = ::core::clone::Clone::clone("),
        "{out}"
    );
}
