//! `#[extern_kernel]`, with the files in memory.

use std::path::PathBuf;

use opbox_codegen::cuda::{Closure, IncludeEdge, ScanError, ScanRequest, ScannedFile};
use proc_macro2::TokenStream;
use quote::quote;

use super::{assert_has_all, compile_errors, pretty};
use crate::extern_kernel::{expand, DeclaringFile, SourceLoader};

/// A declaring file and the closure of the one source it holds; any other source is not found.
struct MemoryFiles {
    files: Vec<ScannedFile>,
}

impl MemoryFiles {
    /// `kernels/axpby.cu` including `common.cuh`, next to `src/lib.rs`.
    fn axpby() -> MemoryFiles {
        let dir = PathBuf::from("/virtual/crate/src/kernels");
        MemoryFiles {
            files: vec![
                ScannedFile {
                    name: "axpby.cu".into(),
                    path: dir.join("axpby.cu"),
                    content: "#include \"common.cuh\"\n".into(),
                    includes: vec![IncludeEdge { line: 1, file: 1 }],
                },
                ScannedFile {
                    name: "common.cuh".into(),
                    path: dir.join("common.cuh"),
                    content: "#pragma once\n".into(),
                    includes: Vec::new(),
                },
            ],
        }
    }
}

impl SourceLoader for MemoryFiles {
    fn declaring_file(&self) -> DeclaringFile {
        DeclaringFile::resolve(
            Some(PathBuf::from("src/lib.rs")),
            Some(PathBuf::from("/virtual/crate")),
            None,
        )
    }

    fn closure(&self, req: &ScanRequest<'_>) -> Result<Closure, ScanError> {
        if req.source != "kernels/axpby.cu" {
            return Err(ScanError::SourceNotFound {
                written: req.source.to_string(),
                path: req.base_dir.join(req.source),
                declared_in: req.declared_in.to_string(),
            });
        }
        Ok(Closure {
            files: self.files.clone(),
            unresolved: Vec::new(),
            include_dirs: Vec::new(),
        })
    }
}

fn expand_axpby(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr, item, &MemoryFiles::axpby())
}

#[test]
fn a_declaration_becomes_static_data_with_every_closure_file_embedded() {
    let out = pretty(expand_axpby(
        quote!(source = "kernels/axpby.cu", entry = "axpby"),
        quote! {
            /// a*x + b*y.
            pub fn axpby_f32(x: In<[f32]>, out: Out<[f32]>, a: f32, n: i64);
        },
    ));
    assert_has_all(
        &out,
        &[
        "/// a*x + b*y.",
        "pub mod axpby_f32 {",
        "rust_name: ::opbox::__private::Cow::Borrowed(\"axpby_f32\")",
        "entry: ::opbox::__private::Cow::Borrowed(\"axpby\")",
        "::opbox::__private::cuda::Param::new(\"x\", ::opbox::__private::cuda::ParamKind::In(::opbox::__private::cuda::ElemType::F32))",
        "::opbox::__private::cuda::Param::new(\"n\", ::opbox::__private::cuda::ParamKind::Scalar(::opbox::__private::cuda::ScalarType::I64))",
        "::core::include_str!(\"/virtual/crate/src/kernels/axpby.cu\")",
        "::core::include_str!(\"/virtual/crate/src/kernels/common.cuh\")",
        "::opbox::__private::cuda::IncludeEdge { line: 1u32, file: 1u32 }",
        "constexpr_style: ::opbox::__private::cuda::ConstexprStyle::Defines",
        "pub fn launch(cfg: ::opbox::__private::cuda::LaunchConfig, x: &::opbox::__private::Tensor, out: &::opbox::__private::Tensor, a: f32, n: i64) -> ::opbox::__private::Result<()>",
        "::opbox::__private::cuda::LaunchArg::F32(a)",
        ],
    );
    // Without #[constexpr] params there is nothing to specialize.
    assert!(!out.contains("fn specialize"), "{out}");
}

#[test]
fn constexpr_params_are_fixed_by_specialize_and_left_out_of_its_launch() {
    let out = pretty(expand_axpby(
        quote!(source = "kernels/axpby.cu", constexpr = "template"),
        quote! {
            fn tile(out: Out<[f32]>, #[constexpr] width: i32, act: Activation, #[constexpr] epilogue: Epilogue);
        },
    ));
    assert_has_all(
        &out,
        &[
        "constexpr_style: ::opbox::__private::cuda::ConstexprStyle::TemplateArgs",
        "ParamKind::Constexpr(::opbox::__private::cuda::ScalarType::I32)",
        "<Epilogue as ::opbox::__private::cuda::ConstexprArg>::KIND",
        "<Activation as ::opbox::__private::cuda::KernelArg>::KIND",
        "pub fn specialize(width: i32, epilogue: Epilogue) -> Specialized",
        "values: [::opbox::__private::cuda::ConstValue; 2usize]",
        "pub fn launch(&self, cfg: ::opbox::__private::cuda::LaunchConfig, out: &::opbox::__private::Tensor, act: <Activation as ::opbox::__private::cuda::KernelArg>::Value<'_>)",
        ],
    );
}

#[test]
fn a_missing_source_is_reported_against_the_declaring_file_with_the_other_errors() {
    let errors = compile_errors(expand_axpby(
        quote!(source = "kernels/missing.cu", abi = "stack"),
        quote! {
            fn k(out: Out<[usize]>) -> i32;
        },
    ));
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].starts_with("`abi` is \"params\""), "{errors:#?}");
    assert!(
        errors[1].starts_with("an #[extern_kernel] fn returns nothing"),
        "{errors:#?}"
    );
    assert!(
        errors[2].starts_with("unsupported element type `usize`"),
        "{errors:#?}"
    );
    assert_eq!(
        errors[3],
        "kernel source `kernels/missing.cu` not found: paths are relative to the declaring file's directory (src/lib.rs), as with include_str!"
    );
}

#[test]
fn a_declaring_file_outside_the_working_directory_is_shown_by_name() {
    let outside = DeclaringFile::resolve(
        Some(PathBuf::from("/elsewhere/src/kernels.rs")),
        Some(PathBuf::from("/virtual/crate")),
        None,
    );
    assert_eq!(outside.dir, PathBuf::from("/elsewhere/src"));
    assert_eq!(outside.shown, "kernels.rs");
    let unknown = DeclaringFile::resolve(None, None, Some(PathBuf::from("/virtual/crate")));
    assert_eq!(unknown.dir, PathBuf::from("/virtual/crate"));
}
