//! The kernel argument protocol: `KernelArg` kinds, `#[derive(KernelArg)]` structs with generated
//! C++ twins, `#[derive(ConstexprEnum)]` specializations and the cache stats (through NVRTC, no
//! GPU needed), the `&dyn Any` lookup order with adapters, and runtime-typed launches from a
//! StableValue stack (every conversion and error, no GPU needed).
//!
//! A custom harness (harness = false), like tests/cuda_launch: each test passes, fails or skips
//! with a printed reason; OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.

mod harness;

use std::process::ExitCode;

use harness::{ensure, expect_err, with_gpu, with_nvrtc, Outcome, Test, TestResult};
use opbox::cuda::codegen::{ConstValue, ParamKind, ScalarType};
use opbox::cuda::{compile_cached, DiskCache, Target};
use opbox::kernel::{
    lower_value, register_kernel_arg_adapter, ConstexprArg, KernelArgAdapter, OwnedArg,
};
use opbox::prelude::*;
use opbox::KernelArg;

// The example's kernel, struct and enum, so CI compiles exactly what the example launches.
#[allow(dead_code)]
#[path = "../examples/epilogue_fusion.rs"]
mod example;

use example::{axpy_epilogue, Epilogue, EpilogueParams};

#[extern_kernel(source = "kernels/axpy.cu")]
fn axpy(a: f32, n: i64, y: InOut<[f32]>, x: In<[f32]>);

/// Nested by-value structs: opbox generates both C++ twins, `Inner` first.
#[derive(Clone, Copy, Debug, opbox::KernelArg)]
#[repr(C)]
struct Inner {
    scale: f32,
    flag: bool,
}

#[derive(Clone, Copy, Debug, opbox::KernelArg)]
#[repr(C)]
struct Tile {
    origin: [i32; 2],
    inner: Inner,
}

/// A native type (its C++ twin is the user's), passed by value.
#[derive(Clone, Copy, Debug, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Color", initializer = "aggregate")]
pub struct Color {
    r: f32,
    g: f32,
    b: f32,
}

#[extern_kernel(source = "kernels/tint.cu")]
fn tint(out: Out<[f32]>, c: Color, s: f32);

#[extern_kernel(source = "kernels/tint_swapped.cu", entry = "tint")]
fn tint_swapped(out: Out<[f32]>, c: Color, s: f32);

#[extern_kernel(source = "kernels/scalars.cu", constexpr = "template")]
#[allow(clippy::too_many_arguments)]
fn scalars(
    out: Out<[i32]>,
    a: i32,
    b: u32,
    c: f32,
    d: f64,
    e: bool,
    f: i64,
    t: Tile,
    #[constexpr] K: i32,
);

const TESTS: &[Test] = &[
    ("kinds_describe_every_parameter", kinds),
    ("derived_struct_has_a_generated_cpp_twin", derived_twin),
    ("lookup_order_exact_derived_adapter_error", lookup_order),
    (
        "every_epilogue_compiles_once_and_repeats_hit_the_cache",
        epilogue_cache,
    ),
    ("stack_count_and_tensor_checks", stack_tensors),
    ("stack_scalars_convert_like_cute", stack_scalars),
    ("stack_lists_build_structs_recursively", stack_structs),
    ("stack_constexpr_enums_by_index_or_name", stack_enums),
    ("native_type_params_are_checked_by_nvrtc", native_params),
    ("gpu_stack_launch_matches_the_typed_launch", gpu_stack),
];

fn main() -> ExitCode {
    harness::run(TESTS)
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
        tu.name_expression() == "&axpy_epilogue<opbox_epilogue::Gelu>",
        || tu.name_expression().to_string(),
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
        // The other kernels here compile too (with nested generated structs).
        opbox::cuda::compile_for_arch(&axpy::DECL, &[], "sm_90").map_err(|e| e.to_string())?;
        opbox::cuda::compile_for_arch(&scalars::DECL, &[ConstValue::I32(3)], "sm_90")
            .map_err(|e| e.to_string())?;
        ensure(
            after.compiles == mid.compiles && after.disk_hits - mid.disk_hits == 3,
            || format!("repeats must not compile: {mid} -> {after}"),
        )?;
        println!("  cache stats: {before} -> {mid} -> {after}");
        Ok(Outcome::Pass)
    })
}

fn stack_err(decl: &opbox::cuda::codegen::KernelDecl, stack: &[StableValue]) -> String {
    match opbox::kernel::struct_bytes(decl, stack) {
        Err(e) => e.to_string(),
        Ok(structs) => match opbox::kernel::lower_stack(decl, stack, &structs) {
            Err(e) => e.to_string(),
            Ok(_) => "no error".into(),
        },
    }
}

fn expect(got: String, want: &str) -> Result<(), String> {
    ensure(got == want, || {
        format!("error was\n  {got}\nexpected\n  {want}")
    })
}

fn cpu_f32(n: usize) -> Result<Tensor, String> {
    Tensor::from_vec(vec![0f32; n], &[n]).map_err(|e| e.to_string())
}

fn stack_tensors() -> TestResult {
    let decl = &axpy::DECL;
    let x = cpu_f32(4)?;
    let y16 =
        Tensor::from_vec(vec![opbox::native::f16::ZERO; 4], &[4]).map_err(|e| e.to_string())?;
    expect(
        stack_err(decl, &[StableValue::float(2.0)]),
        "kernel axpy takes 4 arguments (schema: fn axpy(a: f32, n: i64, y: InOut<[f32]>, x: In<[f32]>)), but 1 was given",
    )?;
    let stack = [
        StableValue::float(2.0),
        StableValue::int(4),
        StableValue::tensor(y16),
        StableValue::tensor(x.clone()),
    ];
    expect(
        stack_err(decl, &stack),
        "kernel axpy expects argument #2 (y) to be f32 CUDA tensor, but got f16 CPU tensor",
    )?;
    let stack = [
        StableValue::float(2.0),
        StableValue::int(4),
        StableValue::int(1),
        StableValue::tensor(x.clone()),
    ];
    expect(
        stack_err(decl, &stack),
        "kernel axpy expects argument #2 (y) to be f32 CUDA tensor, but got int",
    )?;
    // A CPU tensor of the right dtype is still refused (by device).
    let stack = [
        StableValue::float(2.0),
        StableValue::int(4),
        StableValue::tensor(x.clone()),
        StableValue::tensor(x),
    ];
    expect(
        stack_err(decl, &stack),
        "kernel axpy expects argument #2 (y) to be f32 CUDA tensor, but got f32 CPU tensor",
    )?;
    Ok(Outcome::Pass)
}

/// A valid `scalars` stack with `slot` replaced by `v`; the tensor is a CPU one, so lowering
/// stops at argument #0 unless a scalar error comes first: use `scalar_err` instead.
fn scalar_stack(slot: usize, v: StableValue) -> Vec<StableValue> {
    let mut s = vec![
        StableValue::none(), // out: checked last by scalar_err's caller
        StableValue::int(1),
        StableValue::int(2),
        StableValue::float(3.0),
        StableValue::float(4.0),
        StableValue::bool(true),
        StableValue::int(6),
        tile_list(),
        StableValue::int(7),
    ];
    s[slot] = v;
    s
}

fn tile_list() -> StableValue {
    StableValue::list(opbox::value::List::Values(vec![
        StableValue::list(opbox::value::List::Int(vec![10, 20])),
        StableValue::list(opbox::value::List::Values(vec![
            StableValue::float(0.5),
            StableValue::bool(true),
        ])),
    ]))
}

/// Lowers `scalars` with every param but `out` (which has no CUDA tensor here), by lowering a
/// copy of the declaration whose `out` is dropped.
fn lower_scalars(stack: &[StableValue]) -> Result<(Vec<String>, Vec<ConstValue>), String> {
    let mut decl = axpy_free_scalars_decl();
    decl.params.to_mut().remove(0);
    let structs = opbox::kernel::struct_bytes(&decl, &stack[1..]).map_err(|e| e.to_string())?;
    let (args, consts) =
        opbox::kernel::lower_stack(&decl, &stack[1..], &structs).map_err(|e| e.to_string())?;
    let shown = args
        .iter()
        .map(|a| match a {
            opbox::kernel::LaunchArg::Native(n) => {
                format!("{}:{:?}", n.schema.native_name, n.len())
            }
            other => format!("{other:?}"),
        })
        .collect();
    Ok((shown, consts.to_vec()))
}

fn axpy_free_scalars_decl() -> opbox::cuda::codegen::KernelDecl {
    scalars::DECL.clone()
}

fn scalar_err(slot: usize, v: StableValue) -> String {
    match lower_scalars(&scalar_stack(slot, v)) {
        Ok(_) => "no error".into(),
        Err(e) => e,
    }
}

fn stack_scalars() -> TestResult {
    let (args, consts) = lower_scalars(&scalar_stack(0, StableValue::none()))?;
    let want = [
        "I32(1)",
        "U32(2)",
        "F32(3.0)",
        "F64(4.0)",
        "Bool(true)",
        "I64(6)",
        "Tile:16",
    ];
    ensure(args == want, || format!("{args:?}"))?;
    ensure(consts == [ConstValue::I32(7)], || format!("{consts:?}"))?;
    // int -> float is CuTe's implicit cast.
    let (args, _) = lower_scalars(&scalar_stack(3, StableValue::int(5)))?;
    ensure(args[2] == "F32(5.0)", || format!("{args:?}"))?;
    // A Scalar converts by its kind.
    let (args, _) = lower_scalars(&scalar_stack(
        1,
        StableValue::scalar(opbox::Scalar::Int(-9)),
    ))?;
    ensure(args[0] == "I32(-9)", || format!("{args:?}"))?;
    // Indices below count the declaration without `out`, so `a` is #0 here.
    expect(
        scalar_err(1, StableValue::int(3_000_000_000)),
        "kernel scalars expects argument #0 (a) to be i32, but got int 3000000000, which does not fit in i32",
    )?;
    expect(
        scalar_err(2, StableValue::int(-1)),
        "kernel scalars expects argument #1 (b) to be u32, but got int -1, which does not fit in u32",
    )?;
    expect(
        scalar_err(3, StableValue::float(1e39)),
        "kernel scalars expects argument #2 (c) to be f32, but got float 1e39, which does not fit in f32",
    )?;
    expect(
        scalar_err(1, StableValue::bool(true)),
        "kernel scalars expects argument #0 (a) to be i32, but got bool true",
    )?;
    expect(
        scalar_err(5, StableValue::float(1.0)),
        "kernel scalars expects argument #4 (e) to be bool, but got float 1.0",
    )?;
    expect(
        scalar_err(6, StableValue::str("6")),
        "kernel scalars expects argument #5 (f) to be i64, but got str",
    )?;
    expect(
        scalar_err(8, StableValue::int(1 << 40)),
        "kernel scalars expects argument #7 (K) to be i32, but got int 1099511627776, which does not fit in i32",
    )?;
    Ok(Outcome::Pass)
}

fn stack_structs() -> TestResult {
    // The struct's bytes: origin [10, 20], inner { 0.5, true }.
    let mut decl = scalars::DECL.clone();
    decl.params.to_mut().remove(0);
    let stack = scalar_stack(0, StableValue::none());
    let structs = opbox::kernel::struct_bytes(&decl, &stack[1..]).map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = structs[0]
        .iter()
        // SAFETY: struct_bytes builds every byte (padding zeroed) before wrapping it.
        .map(|b| unsafe { b.assume_init() })
        .collect();
    let mut want = Vec::new();
    want.extend_from_slice(&10i32.to_ne_bytes());
    want.extend_from_slice(&20i32.to_ne_bytes());
    want.extend_from_slice(&0.5f32.to_ne_bytes());
    want.extend_from_slice(&[1, 0, 0, 0]);
    ensure(bytes == want, || format!("{bytes:?} != {want:?}"))?;
    let l = |v: Vec<StableValue>| StableValue::list(opbox::value::List::Values(v));
    let ints = |v: Vec<i64>| StableValue::list(opbox::value::List::Int(v));
    expect(
        scalar_err(7, ints(vec![1, 2, 3])),
        "kernel scalars expects argument #6 (t) to be Tile (a list of 2 values: origin: [i32; 2], inner: kernel_args::Inner), but got a list of 3",
    )?;
    expect(
        scalar_err(7, l(vec![ints(vec![1]), l(vec![StableValue::float(0.5), StableValue::bool(true)])])),
        "kernel scalars expects argument #6 (t.origin) to be [i32; 2] (a list of 2), but got a list of 1",
    )?;
    expect(
        scalar_err(7, l(vec![ints(vec![1, 1 << 33]), l(vec![StableValue::float(0.5), StableValue::bool(true)])])),
        "kernel scalars expects argument #6 (t.origin) to be i32, but got int 8589934592, which does not fit in i32",
    )?;
    expect(
        scalar_err(
            7,
            l(vec![
                ints(vec![1, 2]),
                l(vec![StableValue::float(0.5), StableValue::int(1)]),
            ]),
        ),
        "kernel scalars expects argument #6 (t.inner.flag) to be bool, but got int 1",
    )?;
    expect(
        scalar_err(7, StableValue::int(3)),
        "kernel scalars expects argument #6 (t) to be Tile (a list of 2 values: origin: [i32; 2], inner: kernel_args::Inner), but got int",
    )?;
    Ok(Outcome::Pass)
}

fn stack_enums() -> TestResult {
    let mut decl = axpy_epilogue::DECL.clone();
    // Drop the three tensors: no CUDA tensors here.
    decl.params.to_mut().drain(0..3);
    let lower = |v: StableValue| -> Result<Vec<ConstValue>, String> {
        let stack = [
            StableValue::list(opbox::value::List::Values(vec![
                StableValue::float(1.5),
                StableValue::float(0.25),
                StableValue::int(8),
            ])),
            v,
        ];
        let structs = opbox::kernel::struct_bytes(&decl, &stack).map_err(|e| e.to_string())?;
        let (_, c) =
            opbox::kernel::lower_stack(&decl, &stack, &structs).map_err(|e| e.to_string())?;
        Ok(c.to_vec())
    };
    ensure(
        lower(StableValue::int(1))? == [Epilogue::Relu.const_value()],
        || "index 1".into(),
    )?;
    ensure(
        lower(StableValue::str("Gelu"))? == [Epilogue::Gelu.const_value()],
        || "by last name".into(),
    )?;
    ensure(
        lower(StableValue::str("opbox_epilogue::Scale"))? == [Epilogue::Scale.const_value()],
        || "by full name".into(),
    )?;
    let e = lower(StableValue::int(9)).err().unwrap_or_default();
    expect(
        e,
        "kernel axpy_epilogue expects argument #1 (Epi) to be Epilogue (a variant index 0..4 or one of: opbox_epilogue::Identity, opbox_epilogue::Relu, opbox_epilogue::Scale, opbox_epilogue::Gelu), but got int 9",
    )?;
    Ok(Outcome::Pass)
}

fn gpu_stack() -> TestResult {
    with_gpu(|| {
        let s = |e: Error| e.to_string();
        let n = 4096usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let x = Tensor::from_vec(xs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let y1 = Tensor::from_vec(vec![1f32; n], &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let y2 = Tensor::from_vec(vec![1f32; n], &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        axpy::launch(LaunchConfig::for_elems(n), 2.0, n as i64, &y1, &x).map_err(s)?;
        let stack = [
            StableValue::float(2.0),
            StableValue::int(n as i64),
            StableValue::tensor(y2.clone()),
            StableValue::tensor(x.clone()),
        ];
        opbox::kernel::launch_stack(&axpy::HANDLE, &LaunchConfig::for_elems(n), &stack)
            .map_err(s)?;
        let (a, b) = (
            y1.to_vec::<f32>().map_err(s)?,
            y2.to_vec::<f32>().map_err(s)?,
        );
        ensure(a == b && a[10] == 21.0, || {
            format!("typed {:?} vs stack {:?}", &a[..4], &b[..4])
        })?;
        // A struct and a constexpr enum from the stack, through the example's kernel.
        let out = x.empty_like().map_err(s)?;
        let stack = [
            StableValue::tensor(x.clone()),
            StableValue::tensor(y1.clone()),
            StableValue::tensor(out.clone()),
            StableValue::list(opbox::value::List::Values(vec![
                StableValue::float(1.0),
                StableValue::float(0.5),
                StableValue::int(n as i64),
            ])),
            StableValue::str("Scale"),
        ];
        opbox::kernel::launch_stack(&axpy_epilogue::HANDLE, &LaunchConfig::for_elems(n), &stack)
            .map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        let want: Vec<f32> = (0..n).map(|i| (xs[i] + a[i]) * 0.5).collect();
        ensure(got == want, || {
            format!("{:?} vs {:?}", &got[..4], &want[..4])
        })?;
        Ok(Outcome::Pass)
    })
}

fn native_params() -> TestResult {
    with_nvrtc(|| {
        ensure(
            tint::DECL.c_signature()
                == "__global__ void tint(float* out, my_addon::Color c, float s)",
            || tint::DECL.c_signature(),
        )?;
        opbox::cuda::compile_for_arch(&tint::DECL, &[], "sm_90").map_err(|e| e.to_string())?;
        expect_err(
            opbox::cuda::compile_for_arch(&tint_swapped::DECL, &[], "sm_90"),
            "a C++ Color with swapped fields compiled",
            &["my_addon::Color::r", "incompatible offset"],
        )?;
        Ok(Outcome::Pass)
    })
}
