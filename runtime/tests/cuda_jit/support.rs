//! The shared harness's items, and the kernel fixtures.

use std::borrow::Cow;
use std::fs;
use std::path::Path;

use opbox_codegen::cuda::{
    scan_closure, ConstexprStyle, ElemType, KernelDecl, Param, ParamKind, ScalarType, ScanRequest,
    SourceFile,
};

pub use crate::harness::{ensure, with_gpu, with_nvrtc, Outcome, Test, TestResult};

pub const AXPBY_CU: &str = include_str!("kernels/axpby.cu");

pub const AXPBY_PARAMS: &[Param] = &[
    Param::new("x", ParamKind::In(ElemType::F32)),
    Param::new("y", ParamKind::In(ElemType::F32)),
    Param::new("out", ParamKind::Out(ElemType::F32)),
    Param::new("a", ParamKind::Scalar(ScalarType::F32)),
    Param::new("b", ParamKind::Scalar(ScalarType::F32)),
    Param::new("n", ParamKind::Scalar(ScalarType::I64)),
];

/// The declaration as `#[extern_kernel]` will emit it: all static data.
pub static AXPBY: KernelDecl = KernelDecl {
    rust_name: Cow::Borrowed("axpby_f32"),
    entry: Cow::Borrowed("axpby"),
    params: Cow::Borrowed(AXPBY_PARAMS),
    constexpr_style: ConstexprStyle::Defines,
    sources: Cow::Borrowed(&[SourceFile {
        name: Cow::Borrowed("axpby.cu"),
        content: Cow::Borrowed(AXPBY_CU),
        includes: Cow::Borrowed(&[]),
    }]),
    options: Cow::Borrowed(&[]),
    preamble: Cow::Borrowed(""),
    declared_at: Cow::Borrowed("runtime/tests/cuda_jit/support.rs:80"),
    build: None,
    abi: opbox_codegen::cuda::EntryAbi::Params,
};

/// `AXPBY`'s declaration with another source text.
pub fn axpby_with_source(source: &str) -> KernelDecl {
    let mut d = AXPBY.clone();
    d.sources = Cow::Owned(vec![SourceFile {
        name: Cow::Borrowed("axpby.cu"),
        content: Cow::Owned(source.to_string()),
        includes: Cow::Borrowed(&[]),
    }]);
    d
}

pub fn write(root: &Path, rel: &str, text: &str) -> Result<(), String> {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
}

/// A declaration whose sources come from scanning `entry` under `root` with `include_dirs`.
pub fn scanned(
    root: &Path,
    entry: &str,
    include_dirs: &[&str],
    mut decl: KernelDecl,
) -> Result<KernelDecl, String> {
    let closure = scan_closure(&ScanRequest {
        source: entry,
        include_dirs,
        base_dir: root,
        declared_in: "src/lib.rs",
    })
    .map_err(|e| e.to_string())?;
    decl.sources = Cow::Owned(closure.to_sources());
    Ok(decl)
}
