//! `#[extern_kernel]` end to end: the launch stub's checks (no GPU needed), every kernel declared
//! here and in the examples compiled by NVRTC (no GPU needed; CI has NVRTC), and launches on a GPU.
//!
//! A custom harness (harness = false), like runtime's cuda_jit: each test passes, fails or skips
//! with a printed reason, and OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.
//!
//! The illegal-address test runs its kernel in a child process (this binary, re-run with
//! `--child-fault`): a fault poisons the CUDA context for the rest of the process, so the
//! parent, which runs the other GPU tests, must never see one.

mod harness;

use std::process::ExitCode;

use harness::{
    compile_sm90_without_globals, ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult,
};
use opbox::cuda::synchronize;
use opbox::prelude::*;

#[extern_kernel(source = "../examples/kernels/axpby.cu", entry = "axpby")]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[extern_kernel(
    source = "../examples/kernels/entry/lerp_square.cu",
    include_dirs = ["../examples/kernels/include"],
    constexpr = "template"
)]
fn lerp_square(
    a: In<[f32]>,
    b: In<[f32]>,
    out: Out<[f32]>,
    t: f32,
    n: i64,
    #[constexpr] BLOCK: i32,
);

#[extern_kernel(source = "../examples/kernels/empty.cu")]
fn empty(x: In<[f32]>);

#[extern_kernel(source = "kernels/fill.cu", constexpr = "template")]
fn fill_k(out: Out<[i32]>, n: i64, #[constexpr] K: i32);

#[extern_kernel(source = "kernels/fault.cu")]
fn write_out_of_bounds(out: Out<[f32]>);

// A Generator's reserved counters, by value: the schema's `Generator` reaches a CUDA kernel.
#[extern_kernel(source = "kernels/philox.cu")]
fn philox_blocks(out: Out<[u32]>, state: opbox::PhiloxState, blocks: i64);

const CHILD_FAULT: &str = "--child-fault";

const TESTS: &[Test] = &[
    (
        "stub_rejects_wrong_dtype_and_device",
        wrong_dtype_and_device,
    ),
    ("every_declared_kernel_compiles_with_nvrtc", all_compile),
    ("gpu_axpby_through_the_stub", gpu_axpby),
    ("gpu_stub_rejects_aliasing_and_wrong_dtype", gpu_checks),
    ("gpu_constexpr_values_pick_specializations", gpu_constexpr),
    ("gpu_multi_file_kernel", gpu_multi_file),
    ("gpu_illegal_address_surfaces_at_synchronize", gpu_fault),
    ("gpu_philox_matches_the_cpu_generator", gpu_philox),
];

fn main() -> ExitCode {
    if std::env::args().any(|a| a == CHILD_FAULT) {
        return child_fault();
    }
    harness::run(TESTS)
}

fn expect_err(r: opbox::Result<()>, want: &str) -> Result<(), String> {
    match r {
        Ok(()) => Err(format!("launch succeeded, expected the error: {want}")),
        Err(e) => ensure(e.to_string() == want, || {
            format!("error was\n  {e}\nexpected\n  {want}")
        }),
    }
}

fn wrong_dtype_and_device() -> TestResult {
    let x = Tensor::zeros(&[4], DType::F16, Device::Cpu).map_err(s)?;
    let y = Tensor::zeros(&[4], DType::F32, Device::Cpu).map_err(s)?;
    expect_err(
        axpby_f32::launch(LaunchConfig::for_elems(4), &x, &y, &y, 1.0, 1.0, 4),
        "kernel axpby_f32 expects argument #0 (x) to be f32 CUDA tensor, but got f16 CPU tensor",
    )?;
    expect_err(
        axpby_f32::launch(LaunchConfig::for_elems(4), &y, &y, &y, 1.0, 1.0, 4),
        "kernel axpby_f32 expects argument #0 (x) to be f32 CUDA tensor, but got f32 CPU tensor",
    )?;
    Ok(Outcome::Pass)
}

fn all_compile() -> TestResult {
    with_nvrtc(|| {
        let decls = [
            (&axpby_f32::DECL, vec![]),
            (
                &lerp_square::DECL,
                vec![opbox::cuda::codegen::ConstValue::I32(256)],
            ),
            (&empty::DECL, vec![]),
            (
                &fill_k::DECL,
                vec![opbox::cuda::codegen::ConstValue::I32(3)],
            ),
            (&write_out_of_bounds::DECL, vec![]),
            (&philox_blocks::DECL, vec![]),
        ];
        for (decl, values) in decls {
            compile_sm90_without_globals(decl, &values)?;
        }
        Ok(Outcome::Pass)
    })
}

fn cuda(v: Vec<f32>) -> Result<Tensor, String> {
    let n = v.len();
    Tensor::from_vec(v, &[n])
        .and_then(|t| t.to(Device::Cuda(0)))
        .map_err(s)
}

fn gpu_axpby() -> TestResult {
    with_gpu(|| {
        let n = 100_003usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.5).collect();
        let (x, y) = (cuda(xs.clone())?, cuda(ys.clone())?);
        let out = x.zeros_like().map_err(s)?;
        axpby_f32::launch(LaunchConfig::for_elems(n), &x, &y, &out, 2.0, 3.0, n as i64)
            .map_err(s)?;
        synchronize(0).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        for i in 0..n {
            let want = 2.0 * xs[i] + 3.0 * ys[i];
            ensure(got[i] == want, || {
                format!("out[{i}] = {} but want {want}", got[i])
            })?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_checks() -> TestResult {
    with_gpu(|| {
        let x = cuda(vec![1.0; 8])?;
        let half = Tensor::zeros(&[8], DType::F16, Device::Cuda(0)).map_err(s)?;
        expect_err(
            axpby_f32::launch(LaunchConfig::for_elems(8), &x, &x, &half, 1.0, 1.0, 8),
            "kernel axpby_f32 expects argument #2 (out) to be f32 CUDA tensor, but got f16 CUDA (cuda:0) tensor",
        )?;
        expect_err(
            axpby_f32::launch(LaunchConfig::for_elems(8), &x, &x, &x, 1.0, 1.0, 8),
            "invalid argument: kernel axpby_f32 writes argument #2 (out) but reads argument #0 (x), and they share storage; pass a separate output tensor, or declare the parameter InOut and pass it once",
        )?;
        Ok(Outcome::Pass)
    })
}

fn gpu_constexpr() -> TestResult {
    with_gpu(|| {
        let out = Tensor::zeros(&[5], DType::I32, Device::Cuda(0)).map_err(s)?;
        for k in [3, 9, 3] {
            fill_k::launch(LaunchConfig::for_elems(5), &out, 5, k).map_err(s)?;
            let got = out.to_vec::<i32>().map_err(s)?;
            ensure(got == [k; 5], || format!("fill_k<{k}> wrote {got:?}"))?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_multi_file() -> TestResult {
    with_gpu(|| {
        let n = 1000usize;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let (ta, tb) = (cuda(a.clone())?, cuda(b.clone())?);
        let out = ta.zeros_like().map_err(s)?;
        let cfg = LaunchConfig::for_elems(n)
            .block(128, 1, 1)
            .grid(n.div_ceil(128) as u32, 1, 1);
        lerp_square::launch(cfg, &ta, &tb, &out, 0.5, n as i64, 128).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        for i in 0..n {
            let l = a[i] + 0.5 * (b[i] - a[i]);
            ensure(got[i] == l * l, || {
                format!("out[{i}] = {} but want {}", got[i], l * l)
            })?;
        }
        Ok(Outcome::Pass)
    })
}

/// A Generator reserves counters on the host; the device runs Philox over them and must produce
/// the very words the CPU's `PhiloxState::block` does.
fn gpu_philox() -> TestResult {
    with_gpu(|| {
        let generator = opbox::Generator::with_offset(0x1234_5678_9abc_def0, 7);
        let blocks = 1000u64;
        let state = generator.philox(blocks);
        let out = Tensor::zeros(&[4 * blocks as usize], DType::U32, Device::Cuda(0)).map_err(s)?;
        philox_blocks::launch(
            LaunchConfig::for_elems(blocks as usize),
            &out,
            state,
            blocks as i64,
        )
        .map_err(s)?;
        let got = out.to_vec::<u32>().map_err(s)?;
        for b in 0..blocks {
            let want = state.block(b);
            let at = 4 * b as usize;
            ensure(got[at..at + 4] == want, || {
                format!("block {b}: device {:?}, host {want:?}", &got[at..at + 4])
            })?;
        }
        ensure(generator.offset() == 7 + blocks, || {
            "the generator advanced".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_fault() -> TestResult {
    with_gpu(|| harness::run_child(CHILD_FAULT))
}

/// In a child process: plant an out-of-bounds write, then expect `Error::Cuda` naming the kernel
/// from `synchronize`. Exit 0 only if that is what happened.
fn child_fault() -> ExitCode {
    harness::child_verdict(|| {
        let out = Tensor::zeros(&[1], DType::F32, Device::Cuda(0)).map_err(s)?;
        write_out_of_bounds::launch(LaunchConfig::single(), &out).map_err(s)?;
        match synchronize(0) {
            Err(Error::Cuda { kernel, message }) if kernel == "write_out_of_bounds" => {
                Ok(format!("Error::Cuda in {kernel}: {message}"))
            }
            Err(e) => Err(format!(
                "expected Error::Cuda in write_out_of_bounds, got: {e}"
            )),
            Ok(()) => Err("synchronize returned Ok after an illegal address".into()),
        }
    })
}
