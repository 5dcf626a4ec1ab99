//! The split thread loop (`kernel/ranged.rs`): which bodies get it, what the block narrows its
//! fast threads by, and which indices and guards the fast build drops.

use proc_macro2::TokenStream;
use quote::quote;

use super::{has, pretty};
use crate::kernel::expand;

fn expansion(item: TokenStream) -> String {
    struct Here;
    impl crate::extern_kernel::SourceLoader for Here {
        fn declaring_file(&self) -> crate::extern_kernel::DeclaringFile {
            crate::extern_kernel::DeclaringFile {
                dir: std::path::PathBuf::from("/virtual/crate/src"),
                shown: "src/k.rs".into(),
            }
        }
        fn closure(
            &self,
            req: &opbox_codegen::cuda::ScanRequest<'_>,
        ) -> Result<opbox_codegen::cuda::Closure, opbox_codegen::cuda::ScanError> {
            Err(opbox_codegen::cuda::ScanError::SourceNotFound {
                written: req.source.to_string(),
                path: std::path::PathBuf::from(req.source),
                declared_in: req.declared_in.to_string(),
            })
        }
    }
    pretty(expand(TokenStream::new(), item, &Here))
}

fn split(out: &str) -> bool {
    has(out, r#"pub const CPU_BUILD: &str = "split thread loop";"#)
}

#[test]
fn axpy_is_split_with_its_guard_folded() {
    let out = expansion(quote! {
        fn axpy(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
            let i = global_id_x();
            if i < n {
                out[i] = a * x[i] + y[i];
            }
        }
    });
    if std::env::var_os("OPBOX_PRINT").is_some() {
        println!("{out}");
    }
    assert!(split(&out), "{out}");
    for expected in [
        "FastThreads::of(__opbox_block)",
        "below(::opbox::__private::dsl::ranged::exact(n))",
        "index(0, out.len())",
        "index(0, x.len())",
        "index(0, y.len())",
        "if __OPBOX_FAST || (i < n)",
        "let __opbox_i = i;",
        ">::new(__opbox_i)",
        "fn __opbox_body<const __OPBOX_FAST: bool>",
    ] {
        assert!(has(&out, expected), "missing `{expected}` in:\n{out}");
    }
}

#[test]
fn offsets_and_early_returns_narrow_the_range() {
    let out = expansion(quote! {
        fn shift(x: In<[f32]>, out: Out<[f32]>, n: u32, k: u32) {
            let i = global_id_x();
            if i >= n || 1 > i {
                return;
            }
            out[i - 1] = x[i + k] + x[(2 + i) - 1];
        }
    });
    assert!(split(&out), "{out}");
    for expected in [
        "below(::opbox::__private::dsl::ranged::exact(n))",
        "at_least(::opbox::__private::dsl::ranged::exact(1))",
        "if !__OPBOX_FAST && (i >= n || 1 > i)",
        "index(-::opbox::__private::dsl::ranged::exact(1), out.len())",
        "index(::opbox::__private::dsl::ranged::exact(k), x.len())",
        "index(::opbox::__private::dsl::ranged::exact(2) - ::opbox::__private::dsl::ranged::exact(1), x.len())",
    ] {
        assert!(has(&out, expected), "missing `{expected}` in:\n{out}");
    }
}

#[test]
fn bodies_outside_the_proof_keep_the_plain_loop() {
    let bodies = [
        // An index that is not `i + k`.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>, n: u32) { let i = global_id_x(); if i < n { out[i] = x[2 * i]; } } },
        // A loop variable.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>, n: u32) { let i = global_id_x(); for j in 0..n { out[i] = x[j]; } } },
        // The id rebound.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>, n: u32) { let i = global_id_x(); let i = i + 1; out[i] = x[i]; } },
        // A param in the offset rebound.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>, n: u32) { let i = global_id_x(); let n = 3u32; out[i + n] = x[i]; } },
        // Another thread index.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>) { let i = global_id_y(); out[i] = x[i]; } },
        // A vector load keeps its own check.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>) { let i = global_id_x(); let v = x.load4(i); out[i] = v.x; } },
        // An index before the id's `let`.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>, n: u32) { out[0] = x[0]; let i = global_id_x(); out[i] = x[i]; } },
        // A barrier.
        quote! { fn k(x: In<[f32]>, out: Out<[f32]>) { let i = global_id_x(); let v = x[i]; sync_threads(); out[i] = v; } },
    ];
    for body in bodies {
        let out = expansion(body);
        assert!(!split(&out), "split:\n{out}");
        assert!(!has(&out, "Proven"), "{out}");
    }
}
