//! A kernel library shaped like the real ones (`tests/fixtures/kernels/`): entries stamped out
//! per dtype by macros, `(numel, num_dims, info, inp, out, mul, add)` with `info == nullptr`
//! meaning contiguous, a reduction over `<stdint.h>` and `cuda/std/limits`, casts through
//! `cuda_fp8.h`. Declared with `#[extern_kernel]` exactly as a Rust host calls them, with no
//! shims, compiled under NVRTC with the headers `scripts/install-nvrtc` installs, and checked
//! against a CPU reference on a GPU.
//!
//! The compile test counts NVRTC compiles (`opbox::cache::stats()`) in a fresh cache directory:
//! one per source file, however many kernels each file holds.

mod harness;

use std::process::ExitCode;
use std::time::Instant;

use harness::{ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult};
use opbox::cuda::synchronize;
use opbox::float8::{F8E4M3, F8E5M2};
use opbox::half::{bf16, f16};
use opbox::num_complex::{Complex32, Complex64};
use opbox::prelude::*;
use opbox::{Element, Scalar};

macro_rules! affine {
    ($($name:ident: $t:ident),* $(,)?) => {$(
        #[extern_kernel(source = "fixtures/kernels/affine.cu")]
        fn $name(numel: usize, num_dims: usize, info: Option<In<[u64]>>, inp: In<[$t]>, out: Out<[$t]>, mul: $t, add: $t);
    )*};
}

macro_rules! unary {
    ($($name:ident: $t:ident),* $(,)?) => {$(
        #[extern_kernel(source = "fixtures/kernels/unary.cu")]
        fn $name(numel: usize, num_dims: usize, info: Option<In<[u64]>>, inp: In<[$t]>, out: Out<[$t]>);
    )*};
}

macro_rules! reduce {
    ($($name:ident: $t:ident),* $(,)?) => {$(
        #[extern_kernel(source = "fixtures/kernels/reduce.cu")]
        fn $name(dim_size: usize, inp: In<[$t]>, out: Out<[$t]>);
    )*};
}

macro_rules! cast {
    ($($name:ident: $src:ident -> $dst:ident),* $(,)?) => {$(
        #[extern_kernel(source = "fixtures/kernels/cast.cu")]
        fn $name(numel: usize, inp: In<[$src]>, out: Out<[$dst]>);
    )*};
}

affine! {
    affine_f32: f32, affine_f64: f64, affine_u8: u8, affine_u32: u32, affine_i64: i64,
    affine_i16: i16, affine_u16: u16, affine_f16: f16, affine_bf16: bf16, affine_f8_e4m3: F8E4M3,
}

unary! {
    uneg_f32: f32, usqr_f32: f32, uabs_f32: f32, urelu_f32: f32, uisinf_f32: f32,
    uneg_f64: f64, usqr_f64: f64, uabs_f64: f64, urelu_f64: f64, uisinf_f64: f64,
    uneg_f16: f16, usqr_f16: f16, uabs_f16: f16, urelu_f16: f16, uisinf_f16: f16,
    uneg_bf16: bf16, usqr_bf16: bf16, uabs_bf16: bf16, urelu_bf16: bf16, uisinf_bf16: bf16,
    uneg_f8_e4m3: F8E4M3, usqr_f8_e4m3: F8E4M3, uabs_f8_e4m3: F8E4M3, urelu_f8_e4m3: F8E4M3,
    uisinf_f8_e4m3: F8E4M3,
}

reduce! {
    rmax_f32: f32, rmin_f32: f32, rsum_f32: f32, rmax_f64: f64, rmin_f64: f64, rsum_f64: f64,
    rmax_u32: u32, rmin_u32: u32, rsum_u32: u32, rmax_i64: i64, rmin_i64: i64, rsum_i64: i64,
    rmax_i32: i32, rmin_i32: i32, rsum_i32: i32, rmax_u8: u8, rmin_u8: u8, rsum_u8: u8,
}

cast! {
    cast_f32_f8_e4m3: f32 -> F8E4M3, cast_f32_f8_e5m2: f32 -> F8E5M2,
    cast_f8_e4m3_f32: F8E4M3 -> f32, cast_f8_e5m2_f32: F8E5M2 -> f32,
    cast_f16_f32: f16 -> f32, cast_f32_f16: f32 -> f16,
    cast_bf16_f32: bf16 -> f32, cast_f32_bf16: f32 -> bf16,
    cast_u8_f32: u8 -> f32, cast_f32_i64: f32 -> i64,
    cast_i16_f32: i16 -> f32, cast_u16_f32: u16 -> f32,
}

#[extern_kernel(source = "fixtures/kernels/affine.cu")]
fn cscale_c64(numel: usize, inp: In<[Complex32]>, out: Out<[Complex32]>, re: f32, im: f32);

#[extern_kernel(source = "fixtures/kernels/affine.cu")]
fn cscale_c128(numel: usize, inp: In<[Complex64]>, out: Out<[Complex64]>, re: f64, im: f64);

#[extern_kernel(source = "fixtures/kernels/scale.cu", constexpr = "template")]
fn scale_k(numel: usize, inp: In<[f32]>, out: Out<[f32]>, #[constexpr] K: i32);

/// The source files of the fixture's kernels without `#[constexpr]` params: the number of NVRTC
/// compiles they need.
const SOURCE_FILES: u64 = 4;

/// The specializations of `scale_k` compiled ahead of time, as one unit.
const SCALES: [i32; 4] = [1, 2, 3, 5];

const TESTS: &[Test] = &[
    (
        "every_fixture_kernel_compiles_once_per_file",
        compile_once_per_file,
    ),
    (
        "template_specializations_compile_once_ahead_of_time",
        specializations_once,
    ),
    ("gpu_affine_contiguous_and_strided", gpu_affine),
    ("gpu_unary_ops", gpu_unary),
    ("gpu_row_reductions", gpu_reduce),
    ("gpu_casts", gpu_casts),
    ("gpu_template_specializations", gpu_scales),
    ("gpu_complex", gpu_complex),
];

fn main() -> ExitCode {
    // A fresh cache directory, so the compile count is this run's, not an earlier one's.
    let cache = tempfile::tempdir().ok();
    if let Some(dir) = &cache {
        std::env::set_var("OPBOX_CACHE_DIR", dir.path());
    }
    harness::run(TESTS)
}

/// The registered kernels without `#[constexpr]` params (those compile with no values).
fn declared() -> Vec<&'static opbox::cuda::codegen::KernelDecl> {
    opbox::kernel::registered_kernels()
        .iter()
        .map(|k| k.decl)
        .filter(|d| d.constexpr_params().next().is_none())
        .collect()
}

fn specializations_once() -> TestResult {
    use opbox::aot::{AotKernel, AotTargets};
    use opbox::cuda::codegen::ConstValue;
    with_nvrtc(|| {
        let values: Vec<[ConstValue; 1]> = SCALES.iter().map(|&k| [ConstValue::I32(k)]).collect();
        let kernels: Vec<AotKernel<'_>> = values
            .iter()
            .map(|v| AotKernel {
                decl: &scale_k::DECL,
                constexprs: v,
            })
            .collect();
        let out = tempfile::tempdir().map_err(|e| e.to_string())?;
        let targets = AotTargets {
            devices: Vec::new(),
            arches: vec!["sm_90".into()],
            out_dir: out.path().to_path_buf(),
        };
        let before = opbox::cache::stats();
        let paths = opbox::aot::compile(&kernels, &targets).map_err(s)?;
        let compiles = opbox::cache::stats().compiles - before.compiles;
        ensure(
            paths.len() == SCALES.len() && paths.iter().all(|p| p.is_file()),
            || format!("aot wrote {paths:?}"),
        )?;
        ensure(compiles == 1, || {
            format!(
                "{compiles} NVRTC compiles for {} specializations of one kernel",
                SCALES.len()
            )
        })?;
        // Each specialization alone now reads the disk cache, with no NVRTC.
        let a = opbox::cuda::compile_for_arch(&scale_k::DECL, &values[2], "sm_90").map_err(s)?;
        let after = opbox::cache::stats().compiles - before.compiles;
        ensure(after == 1, || {
            format!("compiling K=3 alone ran NVRTC ({after} compiles)")
        })?;
        ensure(a.lowered_name().starts_with("_Z7scale_kILi3EE"), || {
            format!("K=3 loads {}", a.lowered_name())
        })?;
        println!(
            "    {} specializations of scale_k, ahead of time: {compiles} NVRTC compile",
            SCALES.len()
        );
        Ok(Outcome::Pass)
    })
}

fn compile_once_per_file() -> TestResult {
    with_nvrtc(|| {
        let decls = declared();
        ensure(decls.len() >= 50, || {
            format!("only {} kernels", decls.len())
        })?;
        let before = opbox::cache::stats();
        let start = Instant::now();
        for decl in &decls {
            opbox::cuda::compile_for_arch(decl, &[], "sm_90")
                .map_err(|e| format!("{}: {e}", decl.rust_name))?;
        }
        let wall = start.elapsed();
        let after = opbox::cache::stats();
        let compiles = after.compiles - before.compiles;
        println!(
            "    {} kernels over {SOURCE_FILES} files: {compiles} NVRTC compiles, {} disk-cache hits, {:.2} s",
            decls.len(),
            after.disk_hits - before.disk_hits,
            wall.as_secs_f64()
        );
        ensure(compiles == SOURCE_FILES, || {
            format!("{compiles} NVRTC compiles for {SOURCE_FILES} source files")
        })?;
        // The baseline, side by side: each kernel's own unit, one NVRTC compile per entry, as
        // before modules (also what a kernel falls back to when its module does not compile).
        let options: Vec<String> = ["--gpu-architecture=sm_90", "-std=c++17"]
            .into_iter()
            .map(String::from)
            .chain(opbox::cuda::cuda_include_options().iter().cloned())
            .collect();
        // All of them on a GPU machine (scripts/gpu-check) or with OPBOX_BASELINE=full; one entry
        // per file otherwise, which keeps CI's two cores from spending a minute and a half here.
        let full = std::env::var("OPBOX_BASELINE").is_ok_and(|v| v == "full")
            || opbox::cuda::device_count().is_ok_and(|n| n > 0);
        let sample: Vec<_> = if full {
            decls.clone()
        } else {
            let mut seen = Vec::new();
            decls
                .iter()
                .copied()
                .filter(|d| {
                    let first = !seen.contains(&d.entry_file());
                    seen.push(d.entry_file());
                    first
                })
                .collect()
        };
        let start = Instant::now();
        for decl in &sample {
            let unit = opbox::cuda::translation_unit(decl, &[]).map_err(s)?;
            opbox::cuda::nvrtc::compile(
                &unit,
                &options,
                opbox::cuda::ImageKind::Cubin,
                &decl.rust_name,
            )
            .map_err(|e| format!("{} alone: {e}", decl.rust_name))?;
        }
        let took = start.elapsed().as_secs_f64();
        println!(
            "    baseline, one NVRTC compile per entry: {} NVRTC compiles, {took:.2} s ({:.3} s each{})",
            sample.len(),
            took / sample.len() as f64,
            if full { "" } else { "; one entry per file, OPBOX_BASELINE=full for all" }
        );
        Ok(Outcome::Pass)
    })
}

fn cuda<T: Element>(v: Vec<T>) -> Result<Tensor, String> {
    let n = v.len();
    Tensor::from_vec(v, &[n])
        .and_then(|t| t.to(Device::Cuda(0)))
        .map_err(s)
}

fn elem<T: Element>(x: f64) -> Result<T, String> {
    T::from_scalar(Scalar::Float(x)).map_err(s)
}

fn as_f64<T: Element>(x: T) -> f64 {
    x.to_scalar().to_f64()
}

/// Compares two results value by value (NaN equal to NaN), naming the kernel and the index.
fn same(kernel: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    ensure(got.len() == want.len(), || {
        format!("{kernel}: {} values, want {}", got.len(), want.len())
    })?;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        ensure(g == w || (g.is_nan() && w.is_nan()), || {
            format!("{kernel}: out[{i}] = {g} but the CPU reference gives {w}")
        })?;
    }
    Ok(())
}

fn read<T: Element>(t: &Tensor) -> Result<Vec<f64>, String> {
    synchronize(0).map_err(s)?;
    Ok(t.to_vec::<T>()
        .map_err(s)?
        .into_iter()
        .map(as_f64)
        .collect())
}

/// A `[rows, cols]` view of a contiguous buffer, transposed: the dims and strides the `info`
/// array carries, and the source index of each output element.
const ROWS: usize = 25;
const COLS: usize = 40;

fn transposed_source(i: usize) -> usize {
    // out is [COLS, ROWS] over inp [ROWS, COLS]: out[c, r] = inp[r, c].
    let (c, r) = (i / ROWS, i % ROWS);
    r * COLS + c
}

type AffineLaunch<T> =
    fn(LaunchConfig, usize, usize, Option<&Tensor>, &Tensor, &Tensor, T, T) -> opbox::Result<()>;

fn check_affine<T: Element>(name: &str, launch: AffineLaunch<T>) -> Result<(), String> {
    let n = ROWS * COLS;
    let xs: Vec<f64> = (0..n).map(|i| (i % 8) as f64).collect();
    let inp = cuda(
        xs.iter()
            .map(|&x| elem::<T>(x))
            .collect::<Result<Vec<T>, _>>()?,
    )?;
    let out = inp.zeros_like().map_err(s)?;
    let (mul, add) = (elem::<T>(2.0)?, elem::<T>(1.0)?);
    launch(LaunchConfig::for_elems(n), n, 1, None, &inp, &out, mul, add).map_err(s)?;
    let want: Vec<f64> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
    same(
        &format!("{name} (contiguous, info = None)"),
        &read::<T>(&out)?,
        &want,
    )?;

    let info = cuda(vec![COLS as u64, ROWS as u64, 1, COLS as u64])?;
    launch(
        LaunchConfig::for_elems(n),
        n,
        2,
        Some(&info),
        &inp,
        &out,
        mul,
        add,
    )
    .map_err(s)?;
    let want: Vec<f64> = (0..n)
        .map(|i| 2.0 * xs[transposed_source(i)] + 1.0)
        .collect();
    same(&format!("{name} (strided)"), &read::<T>(&out)?, &want)
}

fn gpu_affine() -> TestResult {
    with_gpu(|| {
        check_affine::<f32>("affine_f32", affine_f32::launch)?;
        check_affine::<f64>("affine_f64", affine_f64::launch)?;
        check_affine::<u8>("affine_u8", affine_u8::launch)?;
        check_affine::<u32>("affine_u32", affine_u32::launch)?;
        check_affine::<i64>("affine_i64", affine_i64::launch)?;
        check_affine::<i16>("affine_i16", affine_i16::launch)?;
        check_affine::<u16>("affine_u16", affine_u16::launch)?;
        check_affine::<f16>("affine_f16", affine_f16::launch)?;
        check_affine::<bf16>("affine_bf16", affine_bf16::launch)?;
        check_affine::<F8E4M3>("affine_f8_e4m3", affine_f8_e4m3::launch)?;
        Ok(Outcome::Pass)
    })
}

/// The CPU reference of a unary op, and of a row reduction.
type Reference = fn(f64) -> f64;
type RowReference = fn(&[f64]) -> f64;

type UnaryLaunch =
    fn(LaunchConfig, usize, usize, Option<&Tensor>, &Tensor, &Tensor) -> opbox::Result<()>;

/// The five unary kernels of one dtype, in the order `unary!` declares them.
fn check_unary<T: Element>(suffix: &str, launches: [UnaryLaunch; 5]) -> Result<(), String> {
    // Small integers and halves: exact in every type, fp8 included; infinity where the type
    // has one (e4m3fn has none).
    let mut xs: Vec<f64> = (0..64).map(|i| (i % 9) as f64 * 0.5 - 2.0).collect();
    if as_f64(elem::<T>(f64::INFINITY)?).is_infinite() {
        xs[10] = f64::INFINITY;
    }
    let n = xs.len();
    let inp = cuda(
        xs.iter()
            .map(|&x| elem::<T>(x))
            .collect::<Result<Vec<T>, _>>()?,
    )?;
    let out = inp.zeros_like().map_err(s)?;
    let refs: [(&str, Reference); 5] = [
        ("uneg", |x| -x),
        ("usqr", |x| x * x),
        ("uabs", f64::abs),
        ("urelu", |x| x.max(0.0)),
        ("uisinf", |x| if x.is_infinite() { 1.0 } else { 0.0 }),
    ];
    for (launch, (op, f)) in launches.into_iter().zip(refs) {
        launch(LaunchConfig::for_elems(n), n, 1, None, &inp, &out).map_err(s)?;
        let want = xs
            .iter()
            .map(|&x| elem::<T>(f(x)).map(as_f64))
            .collect::<Result<Vec<f64>, _>>()?;
        same(&format!("{op}_{suffix}"), &read::<T>(&out)?, &want)?;
    }
    Ok(())
}

fn gpu_unary() -> TestResult {
    with_gpu(|| {
        check_unary::<f32>(
            "f32",
            [
                uneg_f32::launch,
                usqr_f32::launch,
                uabs_f32::launch,
                urelu_f32::launch,
                uisinf_f32::launch,
            ],
        )?;
        check_unary::<f64>(
            "f64",
            [
                uneg_f64::launch,
                usqr_f64::launch,
                uabs_f64::launch,
                urelu_f64::launch,
                uisinf_f64::launch,
            ],
        )?;
        check_unary::<f16>(
            "f16",
            [
                uneg_f16::launch,
                usqr_f16::launch,
                uabs_f16::launch,
                urelu_f16::launch,
                uisinf_f16::launch,
            ],
        )?;
        check_unary::<bf16>(
            "bf16",
            [
                uneg_bf16::launch,
                usqr_bf16::launch,
                uabs_bf16::launch,
                urelu_bf16::launch,
                uisinf_bf16::launch,
            ],
        )?;
        check_unary::<F8E4M3>(
            "f8_e4m3",
            [
                uneg_f8_e4m3::launch,
                usqr_f8_e4m3::launch,
                uabs_f8_e4m3::launch,
                urelu_f8_e4m3::launch,
                uisinf_f8_e4m3::launch,
            ],
        )?;
        Ok(Outcome::Pass)
    })
}

type ReduceLaunch = fn(LaunchConfig, usize, &Tensor, &Tensor) -> opbox::Result<()>;

/// max, min and sum over rows of a `[64, 50]` tensor; the values keep every sum exact (and a
/// u8 sum below 256).
fn check_reduce<T: Element>(suffix: &str, launches: [ReduceLaunch; 3]) -> Result<(), String> {
    let (rows, dim) = (64usize, 50usize);
    let xs: Vec<f64> = (0..rows * dim).map(|i| ((i * 7 + 3) % 5) as f64).collect();
    let inp = cuda(
        xs.iter()
            .map(|&x| elem::<T>(x))
            .collect::<Result<Vec<T>, _>>()?,
    )?;
    let out = cuda(vec![elem::<T>(0.0)?; rows])?;
    let cfg = LaunchConfig {
        grid: (rows as u32, 1, 1),
        block: (256, 1, 1),
        shared_mem_bytes: 0,
        stream: None,
    };
    let row = |r: usize| &xs[r * dim..(r + 1) * dim];
    let refs: [(&str, RowReference); 3] = [
        ("rmax", |r| r.iter().copied().fold(f64::MIN, f64::max)),
        ("rmin", |r| r.iter().copied().fold(f64::MAX, f64::min)),
        ("rsum", |r| r.iter().sum()),
    ];
    for (launch, (op, f)) in launches.into_iter().zip(refs) {
        launch(cfg.clone(), dim, &inp, &out).map_err(s)?;
        let want: Vec<f64> = (0..rows).map(|r| f(row(r))).collect();
        same(&format!("{op}_{suffix}"), &read::<T>(&out)?, &want)?;
    }
    Ok(())
}

fn gpu_reduce() -> TestResult {
    with_gpu(|| {
        check_reduce::<f32>(
            "f32",
            [rmax_f32::launch, rmin_f32::launch, rsum_f32::launch],
        )?;
        check_reduce::<f64>(
            "f64",
            [rmax_f64::launch, rmin_f64::launch, rsum_f64::launch],
        )?;
        check_reduce::<u32>(
            "u32",
            [rmax_u32::launch, rmin_u32::launch, rsum_u32::launch],
        )?;
        check_reduce::<i64>(
            "i64",
            [rmax_i64::launch, rmin_i64::launch, rsum_i64::launch],
        )?;
        check_reduce::<i32>(
            "i32",
            [rmax_i32::launch, rmin_i32::launch, rsum_i32::launch],
        )?;
        check_reduce::<u8>("u8", [rmax_u8::launch, rmin_u8::launch, rsum_u8::launch])?;
        Ok(Outcome::Pass)
    })
}

type CastLaunch = fn(LaunchConfig, usize, &Tensor, &Tensor) -> opbox::Result<()>;

/// One cast kernel; the reference converts on the CPU (`half`'s and `float8`'s round-to-nearest-
/// even, Rust's truncation toward zero for integers), so the GPU's conversion must agree with
/// them bit for bit, not only on values both types hold exactly.
fn check_cast<S: Element, D: Element>(name: &str, launch: CastLaunch) -> Result<(), String> {
    let xs: Vec<f64> = (0..96).map(|i| (i % 32) as f64 * 0.25 - 2.0).collect();
    let xs: Vec<f64> = if S::DTYPE.is_floating_point() && D::DTYPE.is_floating_point() {
        xs
    } else {
        xs.iter().map(|x| (x.abs() * 4.0).trunc()).collect()
    };
    let n = xs.len();
    let inp_values = xs
        .iter()
        .map(|&x| elem::<S>(x))
        .collect::<Result<Vec<S>, _>>()?;
    let want = inp_values
        .iter()
        .map(|&x| elem::<D>(as_f64(x)).map(as_f64))
        .collect::<Result<Vec<f64>, _>>()?;
    let inp = cuda(inp_values)?;
    let out = cuda(vec![elem::<D>(0.0)?; n])?;
    launch(LaunchConfig::for_elems(n), n, &inp, &out).map_err(s)?;
    same(name, &read::<D>(&out)?, &want)
}

fn gpu_scales() -> TestResult {
    with_gpu(|| {
        let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let n = xs.len();
        let inp = cuda(xs.clone())?;
        let out = inp.zeros_like().map_err(s)?;
        for k in SCALES {
            scale_k::launch(LaunchConfig::for_elems(n), n, &inp, &out, k).map_err(s)?;
            let want: Vec<f64> = xs.iter().map(|&x| f64::from(x * k as f32)).collect();
            same(&format!("scale_k<{k}>"), &read::<f32>(&out)?, &want)?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_complex() -> TestResult {
    with_gpu(|| {
        let n = 1000usize;
        let xs: Vec<Complex32> = (0..n)
            .map(|i| Complex32::new(i as f32 * 0.5, 2.0 - i as f32 * 0.25))
            .collect();
        let (inp, out) = (cuda(xs.clone())?, cuda(vec![Complex32::new(0.0, 0.0); n])?);
        cscale_c64::launch(LaunchConfig::for_elems(n), n, &inp, &out, 2.0, -1.0).map_err(s)?;
        synchronize(0).map_err(s)?;
        let got = out.to_vec::<Complex32>().map_err(s)?;
        let by = Complex32::new(2.0, -1.0);
        for (i, (g, x)) in got.iter().zip(&xs).enumerate() {
            ensure(*g == x * by, || {
                format!("cscale_c64: out[{i}] = {g} but {x} * {by} = {}", x * by)
            })?;
        }
        let ys: Vec<Complex64> = xs
            .iter()
            .map(|x| Complex64::new(x.re.into(), x.im.into()))
            .collect();
        let (inp, out) = (cuda(ys.clone())?, cuda(vec![Complex64::new(0.0, 0.0); n])?);
        cscale_c128::launch(LaunchConfig::for_elems(n), n, &inp, &out, 0.5, 3.0).map_err(s)?;
        synchronize(0).map_err(s)?;
        let got = out.to_vec::<Complex64>().map_err(s)?;
        let by = Complex64::new(0.5, 3.0);
        for (i, (g, y)) in got.iter().zip(&ys).enumerate() {
            ensure(*g == y * by, || {
                format!("cscale_c128: out[{i}] = {g} but {y} * {by} = {}", y * by)
            })?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_casts() -> TestResult {
    with_gpu(|| {
        check_cast::<f32, F8E4M3>("cast_f32_f8_e4m3", cast_f32_f8_e4m3::launch)?;
        check_cast::<f32, F8E5M2>("cast_f32_f8_e5m2", cast_f32_f8_e5m2::launch)?;
        check_cast::<F8E4M3, f32>("cast_f8_e4m3_f32", cast_f8_e4m3_f32::launch)?;
        check_cast::<F8E5M2, f32>("cast_f8_e5m2_f32", cast_f8_e5m2_f32::launch)?;
        check_cast::<f16, f32>("cast_f16_f32", cast_f16_f32::launch)?;
        check_cast::<f32, f16>("cast_f32_f16", cast_f32_f16::launch)?;
        check_cast::<bf16, f32>("cast_bf16_f32", cast_bf16_f32::launch)?;
        check_cast::<f32, bf16>("cast_f32_bf16", cast_f32_bf16::launch)?;
        check_cast::<u8, f32>("cast_u8_f32", cast_u8_f32::launch)?;
        check_cast::<f32, i64>("cast_f32_i64", cast_f32_i64::launch)?;
        check_cast::<i16, f32>("cast_i16_f32", cast_i16_f32::launch)?;
        check_cast::<u16, f32>("cast_u16_f32", cast_u16_f32::launch)?;
        Ok(Outcome::Pass)
    })
}
