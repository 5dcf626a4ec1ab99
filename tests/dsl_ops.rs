//! `dsl::sum`, `dsl::softmax` and `dsl::matmul` (examples/dsl_ops): the same `#[kernel]` bodies
//! on the CPU against plain Rust loops, compiled by NVRTC, and on a GPU against both. A custom
//! harness (harness = false) that counts and prints its skips.

mod harness;

#[path = "../examples/dsl_ops/check.rs"]
#[allow(dead_code)]
mod check;
#[path = "../examples/dsl_ops/hand.rs"]
mod hand;
#[path = "../examples/dsl_ops/kernels.rs"]
mod kernels;
#[path = "../examples/dsl_ops/ops.rs"]
mod ops;

use std::process::ExitCode;

use harness::{
    compile_sm90_without_globals, expect_err, s, with_gpu, with_nvrtc, Outcome, Test, TestResult,
};
use opbox::prelude::*;

fn cpu_reference() -> TestResult {
    check::Run::on(Device::Cpu)
        .map_err(s)?
        .against_reference()?;
    Ok(Outcome::Pass)
}

/// The CPU ops run one-warp blocks; the same kernels at CUDA's block size (shared memory and
/// barriers between warps) give the same results on the CPU too.
fn cpu_kernels_at_cudas_block_size() -> TestResult {
    // Every op kernel's warp exchanges and barriers split its body (no coroutines).
    for (name, build) in [
        ("sum_f32", kernels::sum_f32::CPU_BUILD),
        ("softmax_rows", kernels::softmax_rows::CPU_BUILD),
        ("softmax_warp_rows", kernels::softmax_warp_rows::CPU_BUILD),
        ("matmul_tiled", kernels::matmul_tiled::CPU_BUILD),
    ] {
        if build != "split at barriers" {
            return Err(format!("{name} runs as {build} on the CPU"));
        }
    }
    let n = 100_003;
    let x = check::exact_input(n, 5);
    let t = Tensor::from_vec(x.clone(), &[n]).map_err(s)?;
    let total = Tensor::zeros(&[], DType::F32, Device::Cpu).map_err(s)?;
    let cfg = LaunchConfig::single().grid(7, 1, 1).block(ops::BLOCK, 1, 1);
    kernels::sum_f32::launch(cfg, &t, &total, n as u32, ops::BLOCK).map_err(s)?;
    check::sum_matches(&x, total.to_vec::<f32>().map_err(s)?[0])?;
    for d in [1000, 1027, 8192] {
        let x = check::input(3 * d, d as u32);
        let t = Tensor::from_vec(x.clone(), &[3, d]).map_err(s)?;
        let y = t.empty_like().map_err(s)?;
        let cfg = LaunchConfig::single().grid(3, 1, 1).block(ops::BLOCK, 1, 1);
        kernels::softmax_rows::launch(cfg, &t, &y, d as u32, ops::BLOCK).map_err(s)?;
        check::softmax_matches(&x, d, &y.to_vec::<f32>().map_err(s)?)?;
    }
    Ok(Outcome::Pass)
}

/// The warp-per-row softmax CUDA's `dsl::softmax` launches for rows of up to 1024, on the CPU
/// at CUDA's launch shape (4 warps a block) and at one warp a block.
fn cpu_warp_rows_softmax() -> TestResult {
    check::warp_rows_match(Device::Cpu, ops::WARP_ROWS)?;
    check::warp_rows_match(Device::Cpu, 1)?;
    Ok(Outcome::Pass)
}

/// A view that starts mid-float4, which the kernels' launches refuse, is copied by the ops first.
fn cpu_misaligned_views() -> TestResult {
    let n = 1001;
    let x = check::exact_input(n + 1, 3);
    let t = Tensor::from_vec(x.clone(), &[n + 1])
        .and_then(|t| t.narrow(0, 1, n))
        .map_err(s)?;
    let sum = opbox::op("dsl::sum").map_err(s)?;
    let total: Tensor = sum.call((&t,)).map_err(s)?;
    check::sum_matches(&x[1..], total.to_vec::<f32>().map_err(s)?[0])?;
    let rows = Tensor::from_vec(check::input(4 * 64 + 1, 4), &[4 * 64 + 1])
        .and_then(|t| t.narrow(0, 1, 4 * 64))
        .and_then(|t| t.reshape(&[4, 64]))
        .map_err(s)?;
    let softmax = opbox::op("dsl::softmax").map_err(s)?;
    let y: Tensor = softmax.call((&rows,)).map_err(s)?;
    let want = rows.to_vec::<f32>().map_err(s)?;
    check::softmax_matches(&want, 64, &y.to_vec::<f32>().map_err(s)?)?;
    Ok(Outcome::Pass)
}

/// The ops refuse what their kernels cannot take, naming the op and the fix.
fn cpu_refusals() -> TestResult {
    let sum = opbox::op("dsl::sum").map_err(s)?;
    let matmul = opbox::op("dsl::matmul").map_err(s)?;
    let ints = Tensor::from_vec(vec![1i32, 2, 3], &[3]).map_err(s)?;
    expect_err(
        sum.call::<_, Tensor>((&ints,)),
        "sum of i32 accepted",
        &["dsl::sum", "f32"],
    )?;
    let a = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).map_err(s)?;
    expect_err(
        matmul.call::<_, Tensor>((&a, &a)),
        "[2, 3]·[2, 3] accepted",
        &[
            "dsl::matmul",
            "a is [2, 3] and b is [2, 3]",
            "columns must equal b's rows",
        ],
    )?;
    let v = Tensor::zeros(&[3], DType::F32, Device::Cpu).map_err(s)?;
    expect_err(
        matmul.call::<_, Tensor>((&v, &a)),
        "a vector accepted",
        &["dsl::matmul multiplies 2-D matrices", "[3]"],
    )?;
    Ok(Outcome::Pass)
}

/// The DSL kernels at the constexprs the ops launch them with, and their hand-written twins.
fn nvrtc_compiles() -> TestResult {
    with_nvrtc(|| {
        let hand = [
            &hand::sum_f32_hand::DECL,
            &hand::softmax_rows_hand::DECL,
            &hand::softmax_warp_rows_hand::DECL,
            &hand::matmul_tiled_hand::DECL,
        ];
        let hand = hand.into_iter().map(|d| (d, vec![]));
        for (decl, consts) in check::kernels().into_iter().chain(hand) {
            compile_sm90_without_globals(decl, &consts)?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_matches_cpu_and_reference() -> TestResult {
    with_gpu(|| {
        let cpu = check::Run::on(Device::Cpu).map_err(s)?;
        let cuda = check::Run::on(Device::Cuda(0)).map_err(s)?;
        cuda.against_reference()?;
        cuda.against(&cpu)?;
        check::warp_rows_match(Device::Cuda(0), ops::WARP_ROWS)?;
        Ok(Outcome::Pass)
    })
}

const TESTS: &[Test] = &[
    ("cpu_sum_softmax_matmul_match_plain_rust", cpu_reference),
    (
        "cpu_kernels_at_cudas_block_size_match_too",
        cpu_kernels_at_cudas_block_size,
    ),
    (
        "cpu_warp_per_row_softmax_matches_plain_rust",
        cpu_warp_rows_softmax,
    ),
    (
        "cpu_ops_copy_views_that_start_mid_vector",
        cpu_misaligned_views,
    ),
    ("cpu_ops_refuse_wrong_dtypes_and_shapes", cpu_refusals),
    (
        "nvrtc_sum_softmax_matmul_and_hand_twins_compile",
        nvrtc_compiles,
    ),
    (
        "gpu_sum_softmax_matmul_match_cpu_and_plain_rust",
        gpu_matches_cpu_and_reference,
    ),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}
