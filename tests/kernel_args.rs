//! The kernel argument protocol: `KernelArg` kinds, `#[derive(KernelArg)]` structs with generated
//! C++ twins, `#[derive(ConstexprEnum)]` specializations and the cache stats (through NVRTC, no
//! GPU needed), the `&dyn Any` lookup order with adapters, and runtime-typed launches from a
//! StableValue stack (every conversion and error, no GPU needed).
//!
//! A custom harness (harness = false), like tests/cuda_launch: each test passes, fails or skips
//! with a printed reason; OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.

use std::process::ExitCode;

use opbox::cuda::codegen::{ConstValue, ParamKind, ScalarType};
use opbox::cuda::{
    compile_cached, lower_value, register_kernel_arg_adapter, ConstexprArg, DiskCache, KernelArg,
    KernelArgAdapter, OwnedArg, Target,
};
use opbox::prelude::*;

// The example's kernel, struct and enum, so CI compiles exactly what the example launches.
#[allow(dead_code)]
#[path = "../examples/epilogue_fusion.rs"]
mod example;

use example::{axpy_epilogue, Epilogue, EpilogueParams};

enum Outcome {
    Pass,
    Skip(String),
}

type TestResult = Result<Outcome, String>;
type Test = (&'static str, fn() -> TestResult);

const TESTS: &[Test] = &[
    ("kinds_describe_every_parameter", kinds),
    ("derived_struct_has_a_generated_cpp_twin", derived_twin),
    ("lookup_order_exact_derived_adapter_error", lookup_order),
    (
        "every_epilogue_compiles_once_and_repeats_hit_the_cache",
        epilogue_cache,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in TESTS {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let (mut passed, mut failed, mut skipped, mut filtered) = (0, 0, 0, 0);
    for (name, run) in TESTS {
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            filtered += 1;
            continue;
        }
        match run().and_then(require) {
            Ok(Outcome::Pass) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Ok(Outcome::Skip(why)) => {
                println!("test {name} ... skipped: {why}");
                skipped += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED\n{e}");
                failed += 1;
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; {skipped} ignored; 0 measured; {filtered} filtered out\n"
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A skip is a failure where the environment promises the dependency.
fn require(o: Outcome) -> TestResult {
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    match o {
        Outcome::Skip(why) if why.starts_with("NVRTC") && required("OPBOX_REQUIRE_NVRTC") => {
            Err(format!("OPBOX_REQUIRE_NVRTC=1 but {why}"))
        }
        Outcome::Skip(why) if why.starts_with("no GPU") && required("OPBOX_REQUIRE_GPU") => {
            Err(format!("OPBOX_REQUIRE_GPU=1 but {why}"))
        }
        o => Ok(o),
    }
}

fn ensure(cond: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(message())
    }
}

fn with_nvrtc(f: impl FnOnce() -> TestResult) -> TestResult {
    match opbox::cuda::nvrtc::version() {
        Err(Error::NoCuda { reason }) => Ok(Outcome::Skip(format!("NVRTC not usable ({reason})"))),
        Err(e) => Err(e.to_string()),
        Ok(_) => f(),
    }
}

fn kinds() -> TestResult {
    ensure(
        <In<[f32]> as KernelArg>::KIND == ParamKind::In(opbox::cuda::codegen::ElemType::F32),
        || "In<[f32]>".into(),
    )?;
    ensure(
        <i64 as KernelArg>::KIND == ParamKind::Scalar(ScalarType::I64),
        || "i64".into(),
    )?;
    ensure(
        <u32 as ConstexprArg>::KIND == ParamKind::Constexpr(ScalarType::U32),
        || "constexpr u32".into(),
    )?;
    let ParamKind::Native(p) = <EpilogueParams as KernelArg>::KIND else {
        return Err("EpilogueParams is not a by-value struct param".into());
    };
    ensure(
        p.generated && p.schema.native_name == "EpilogueParams",
        || format!("{p:?}"),
    )?;
    ensure(p.schema.size == 16 && p.schema.fields.len() == 3, || {
        format!("{p:?}")
    })?;
    let v = Epilogue::Relu.const_value();
    ensure(
        v == ConstValue::Type {
            enum_name: "Epilogue",
            cpp: "opbox_epilogue::Relu",
        },
        || format!("{v:?}"),
    )?;
    let decl = &axpy_epilogue::DECL;
    ensure(
        decl.c_signature()
            == "template <class Epi> __global__ void axpy_epilogue(const float* x, const float* y, float* out, EpilogueParams p)",
        || decl.c_signature(),
    )?;
    Ok(Outcome::Pass)
}

fn derived_twin() -> TestResult {
    let tu = opbox::cuda::codegen::emit(&axpy_epilogue::DECL, &[Epilogue::Gelu.const_value()])
        .map_err(|e| e.to_string())?;
    let want = "struct alignas(8) EpilogueParams { float alpha; float scale; long long n; };";
    ensure(tu.source.contains(want), || {
        format!("no generated twin `{want}` in\n{}", tu.source)
    })?;
    ensure(
        tu.source.find(want) < tu.source.find("template <class Epi>"),
        || "the twin must come before the user's source".into(),
    )?;
    ensure(
        tu.source
            .contains("static_assert(sizeof(EpilogueParams) == 16"),
        || "no layout check".into(),
    )?;
    ensure(
        tu.name_expression == "&axpy_epilogue<opbox_epilogue::Gelu>",
        || tu.name_expression.clone(),
    )?;
    // A wrong enum for the parameter is refused before NVRTC.
    let wrong = opbox::cuda::codegen::emit(&axpy_epilogue::DECL, &[ConstValue::I32(1)]);
    ensure(
        wrong.as_ref().is_err_and(|e| {
            e.to_string()
                == "kernel `axpy_epilogue` expects #[constexpr] Epi to be Epilogue, but got i32"
        }),
        || format!("{wrong:?}"),
    )?;
    Ok(Outcome::Pass)
}

/// A type from "another crate".
struct ForeignStream {
    handle: u64,
}

struct StreamAdapter;

impl KernelArgAdapter<ForeignStream> for StreamAdapter {
    fn adapt(value: &ForeignStream) -> opbox::Result<OwnedArg> {
        Ok(OwnedArg::U64(value.handle))
    }
}

struct OtherAdapter;

impl KernelArgAdapter<ForeignStream> for OtherAdapter {
    fn adapt(_: &ForeignStream) -> opbox::Result<OwnedArg> {
        Ok(OwnedArg::U64(0))
    }
}

struct Unmarshalable;

fn lookup_order() -> TestResult {
    // 1. exact type
    ensure(matches!(lower_value(&7i32), Ok(OwnedArg::I32(7))), || {
        "i32".into()
    })?;
    ensure(
        matches!(lower_value(&true), Ok(OwnedArg::Bool(true))),
        || "bool".into(),
    )?;
    // 2. derived
    let p = EpilogueParams {
        alpha: 1.0,
        scale: 2.0,
        n: 3,
    };
    match lower_value(&p) {
        Ok(OwnedArg::Native { schema, bytes }) => ensure(
            schema.native_name == "EpilogueParams" && bytes.len() == 16,
            || format!("{schema:?}"),
        )?,
        other => return Err(format!("derived: {other:?}")),
    }
    // 4. nothing: an error naming the type and the routes, never zero arguments.
    let e = lower_value(&Unmarshalable)
        .map(|_| ())
        .map_err(|e| e.to_string());
    ensure(
        e.as_ref().is_err_and(|m| {
            m.contains("kernel_args::Unmarshalable")
                && m.contains("register_kernel_arg_adapter")
                && m.contains("#[derive(KernelArg)]")
        }),
        || format!("{e:?}"),
    )?;
    ensure(lower_value(&ForeignStream { handle: 1 }).is_err(), || {
        "no adapter yet".into()
    })?;
    // 3. adapters
    register_kernel_arg_adapter::<ForeignStream, StreamAdapter>().map_err(|e| e.to_string())?;
    ensure(
        matches!(
            lower_value(&ForeignStream { handle: 42 }),
            Ok(OwnedArg::U64(42))
        ),
        || "adapter".into(),
    )?;
    let twice =
        register_kernel_arg_adapter::<ForeignStream, OtherAdapter>().map_err(|e| e.to_string());
    ensure(
        twice.as_ref().is_err_and(|m| {
            m.contains("already registered")
                && m.contains("StreamAdapter")
                && m.contains("OtherAdapter")
        }),
        || format!("{twice:?}"),
    )?;
    Ok(Outcome::Pass)
}

fn epilogue_cache() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = DiskCache::new(dir.path());
        let target = Target::parse("sm_90").map_err(|e| e.to_string())?;
        let before = opbox::cache::stats();
        for epi in Epilogue::ALL {
            compile_cached(
                &axpy_epilogue::DECL,
                &[epi.const_value()],
                target,
                Some(&cache),
            )
            .map_err(|e| e.to_string())?;
        }
        let mid = opbox::cache::stats();
        ensure(mid.compiles - before.compiles == 4, || {
            format!("4 distinct epilogues: {before} -> {mid}")
        })?;
        for epi in [Epilogue::Relu, Epilogue::Relu, Epilogue::Gelu] {
            compile_cached(
                &axpy_epilogue::DECL,
                &[epi.const_value()],
                target,
                Some(&cache),
            )
            .map_err(|e| e.to_string())?;
        }
        let after = opbox::cache::stats();
        ensure(
            after.compiles == mid.compiles && after.disk_hits - mid.disk_hits == 3,
            || format!("repeats must not compile: {mid} -> {after}"),
        )?;
        println!("  cache stats: {before} -> {mid} -> {after}");
        Ok(Outcome::Pass)
    })
}
