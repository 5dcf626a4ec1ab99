//! The harness's test type, skip rules and kernel fixtures.

use std::borrow::Cow;
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use opbox_codegen::cuda::{
    scan_closure, ConstexprStyle, ElemType, KernelDecl, Param, ParamKind, ScalarType, ScanRequest,
    SourceFile,
};
use opbox_runtime::Error;

/// `Err` fails the test with its message.
pub type TestResult = Result<Outcome, String>;

#[derive(Clone, Copy)]
pub struct Test {
    pub name: &'static str,
    pub run: fn() -> TestResult,
}

#[derive(Debug)]
pub enum Outcome {
    Pass,
    Skip(String),
    Fail(String),
}

pub fn run(t: &Test) -> Outcome {
    match catch_unwind(AssertUnwindSafe(t.run)) {
        Ok(Ok(Outcome::Skip(reason))) => skip_or_fail(reason),
        Ok(Ok(o)) => o,
        Ok(Err(message)) => Outcome::Fail(message),
        Err(panic) => Outcome::Fail(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".into()),
        ),
    }
}

/// A skip is a failure where the environment promises the dependency.
fn skip_or_fail(reason: String) -> Outcome {
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    if reason.starts_with("NVRTC") && required("OPBOX_REQUIRE_NVRTC") {
        return Outcome::Fail(format!("OPBOX_REQUIRE_NVRTC=1 but {reason}"));
    }
    if reason.starts_with("no GPU") && required("OPBOX_REQUIRE_GPU") {
        return Outcome::Fail(format!("OPBOX_REQUIRE_GPU=1 but {reason}"));
    }
    Outcome::Skip(reason)
}

/// Turns "CUDA is not available" into a skip; anything else is the test's business.
pub fn nvrtc_skip(e: &Error) -> Option<Outcome> {
    match e {
        Error::NoCuda { reason } => Some(Outcome::Skip(format!("NVRTC not usable ({reason})"))),
        _ => None,
    }
}

/// Runs `f`, or skips when NVRTC is missing.
pub fn with_nvrtc(f: impl FnOnce() -> TestResult) -> TestResult {
    if let Err(e) = opbox_runtime::cuda::nvrtc::version() {
        return Ok(nvrtc_skip(&e).unwrap_or(Outcome::Fail(e.to_string())));
    }
    f()
}

pub fn ensure(cond: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(message())
    }
}

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
