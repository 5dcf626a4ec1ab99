//! The `#[kernel]` DSL end to end: every kernel here runs on the CPU (no GPU needed), compiles
//! with NVRTC (CI has NVRTC), and on a GPU runs on CUDA and is checked against the CPU, bit for
//! bit where the DSL promises it.
//!
//! A custom harness (harness = false), like cuda_launch: each test passes, fails or skips with a
//! printed reason. The CUDA out-of-bounds test runs its kernel in a child process (this binary
//! with `--child-oob`): a trap poisons the CUDA context for the rest of the process.

mod harness;

#[path = "../examples/dsl.rs"]
#[allow(dead_code)]
mod example;

use std::process::ExitCode;

use harness::{
    compile_sm90_without_globals, ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult,
};
use opbox::cuda::codegen::{ConstValue, KernelDecl};
use opbox::native::{bf16, f16};
use opbox::prelude::*;
use opbox::{builtin, BuildOptions, KernelArg};

#[kernel]
fn int_ops(a: In<[i32]>, b: In<[i32]>, out: Out<[i32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        let x = a[i];
        let y = b[i];
        let k = i * 9;
        out[k] = x + y;
        out[k + 1] = x - y;
        out[k + 2] = x * y;
        out[k + 3] = x / y;
        out[k + 4] = x % y;
        out[k + 5] = x << y;
        out[k + 6] = x >> y;
        out[k + 7] = -x;
        out[k + 8] = x.abs().min(y).max(-100) ^ (x & 255 | 7);
    }
}

#[kernel]
fn u8_ops(a: In<[u8]>, b: In<[u8]>, out: Out<[u8]>, wide: Out<[u64]>, n: u32) {
    let i = global_id_x();
    if i < n {
        let x = a[i];
        let y = b[i];
        out[i * 3] = x + y;
        out[i * 3 + 1] = x * y - 1;
        out[i * 3 + 2] = (x >> 9u32) | (y << 12);
        let mut w = x as u64;
        w <<= 60;
        w += u64::MAX / 3;
        wide[i] = w;
    }
}

#[kernel]
fn casts(
    x: In<[f32]>,
    to_i32: Out<[i32]>,
    to_u8: Out<[u8]>,
    to_u64: Out<[u64]>,
    to_f16: Out<[f16]>,
    to_bf16: Out<[bf16]>,
    back: Out<[f64]>,
    n: u32,
) {
    let i = global_id_x();
    if i < n {
        let v = x[i];
        to_i32[i] = v as i32;
        to_u8[i] = v as u8;
        to_u64[i] = v as u64;
        let h = v as f16;
        to_f16[i] = h + h;
        to_bf16[i] = v as bf16;
        back[i] = (h as f64) * 0.5 + (v as bf16) as f64;
    }
}

/// Every float literal here is an f32 in Rust, so the PTX must hold no f64 instruction.
#[kernel]
fn literals(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        let s = 0.5;
        let t = if x[i] > 1.0 { 2.0 } else { -0.25 };
        y[i] = x[i] * 2.5 + s * x[i] - 1e-3 + (x[i] / 3.0).max(0.25).sqrt() * t;
    }
}

/// Collatz steps from `v`, at most 1000.
#[device]
fn collatz_steps(mut v: u32) -> u32 {
    let mut steps = 0;
    while v != 1 {
        if v % 2 == 0 {
            v /= 2;
        } else {
            v = 3 * v + 1;
        }
        steps += 1;
        if steps > 1000 {
            break;
        }
    }
    steps
}

#[kernel]
fn control(out: Out<[u32]>, n: u32, #[constexpr] K: u32) {
    let i = global_id_x();
    if i >= n {
        return;
    }
    let mut acc = 0u32;
    for j in (0..i).step_by(3) {
        acc += j;
    }
    for j in 1..=K {
        if j == 2 {
            continue;
        }
        acc ^= j;
    }
    let mut k = 0;
    loop {
        k += 1;
        if k >= 4 {
            break;
        }
    }
    let label = if i % 2 == 0 {
        let t = acc + 1;
        t * 2
    } else {
        acc
    };
    let acc = label + k + collatz_steps(i + 1);
    out[i] = acc;
}

fn control_reference(i: u32, k_const: u32) -> u32 {
    let mut acc = 0u32;
    for j in (0..i).step_by(3) {
        acc = acc.wrapping_add(j);
    }
    for j in 1..=k_const {
        if j != 2 {
            acc ^= j;
        }
    }
    let label = if i.is_multiple_of(2) {
        (acc + 1) * 2
    } else {
        acc
    };
    let mut v = i + 1;
    let mut steps = 0;
    while v != 1 && steps <= 1000 {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        steps += 1;
    }
    label + 4 + steps
}

#[derive(Clone, Copy, KernelArg)]
#[repr(C)]
struct Affine {
    scale: f32,
    shift: f32,
}

/// A #[device] fn over a #[derive(KernelArg)] struct: its C++ goes after the struct's twin.
#[device]
fn apply(p: Affine, v: f32) -> f32 {
    v * p.scale
}

#[kernel]
fn affine(x: In<[f32]>, y: Out<[f32]>, p: Affine, n: u32) {
    let i = global_id_x();
    if i < n {
        let q = Affine {
            shift: p.shift,
            scale: 2.0,
        };
        y[i] = apply(p, x[i]) + p.shift * q.scale;
    }
}

/// This thread's place in the grid, read by a `#[device]` fn (through the CPU build's
/// thread-local context, not the kernel's own).
#[device]
fn packed_place() -> u32 {
    thread_id_x() | (thread_id_y() << 8) | (block_id_x() << 16) | (block_id_y() << 24)
}

#[kernel]
fn places(out: Out<[u32]>, w: u32, h: u32) {
    let x = global_id_x();
    let y = global_id_y();
    if x < w && y < h {
        out[y * w + x] = packed_place();
    }
}

/// The C++ behind `hlerp`: a native function over CUDA's own `__half`, as a real library's is.
static HALF_CPP: std::sync::LazyLock<BuildOptions> = std::sync::LazyLock::new(|| {
    BuildOptions {
    preamble: "#include <cuda_fp16.h>\nnamespace opbox_t {\n__device__ inline __half hlerp(__half a, __half b, float t) {\n  float x = __half2float(a);\n  return __float2half(x + t * (__half2float(b) - x));\n}\n}\n".into(),
    ..BuildOptions::default()
}
});

/// `a + t (b - a)` in f32, rounded to f16 once.
#[builtin(native = "opbox_t::hlerp")]
fn hlerp(a: f16, b: f16, t: f32) -> f16 {
    let x = a.to_f32();
    f16::from_f32(x + t * (b.to_f32() - x))
}

/// A builtin over CUDA's `__half` called with the DSL's f16 values.
#[kernel(build = HALF_CPP, options = ["--fmad=false"])]
fn hmix(a: In<[f16]>, b: In<[f16]>, out: Out<[f16]>, t: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = hlerp(a[i], b[i], t);
    }
}

/// Every atomic, from many threads at once: a histogram, min/max/sum of i64, exact float sums,
/// and a compare-exchange and an exchange that some thread wins.
#[kernel]
fn atomics(
    x: In<[i32]>,
    bins: InOut<[u32]>,
    wide: InOut<[i64]>,
    sum: InOut<[f32]>,
    sum64: InOut<[f64]>,
    won: InOut<[u32]>,
    n: u32,
) {
    let i = global_id_x();
    if i < n {
        let v = x[i];
        bins.atomic_add(v as u32 % 8, 1);
        wide.atomic_min(0, v as i64);
        wide.atomic_max(1, v as i64);
        wide.atomic_add(2, v as i64 * 1_000_000_000);
        sum.atomic_add(0, 0.5);
        sum64.atomic_add(0, v as f64);
        won.atomic_cas(0, u32::MAX, i);
        let before = won.atomic_exch(1, i);
        won.atomic_max(2, before);
    }
}

/// Each block's sum through shared memory: every thread loads one element, then rounds of
/// barriers halve the threads that add; thread 0 writes the block's sum.
#[kernel]
fn block_sums(x: In<[u32]>, partial: Out<[u32]>, n: u32, #[constexpr] BLOCK: u32) {
    let tile = shared::<u32, BLOCK>();
    let t = thread_id_x();
    let i = global_id_x();
    let v = if i < n { x[i] } else { 0 };
    tile[t] = v;
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] += tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        partial[block_id_x()] = tile[0];
    }
}

/// Each block's elements reversed through the launch's dynamic shared memory, whose size (one
/// f32 a thread) the launch chooses: `buf.len()` is what it holds.
#[kernel]
fn reverse_blocks(x: In<[f32]>, out: Out<[f32]>, n: u32) {
    let buf = shared_dyn::<f32>();
    let t = thread_id_x();
    let i = global_id_x();
    if t < buf.len() {
        buf[t] = if i < n { x[i] } else { -1.0 };
    }
    sync_threads();
    let from = block_dim_x() - 1 - t;
    if i < n && from < buf.len() {
        out[i] = buf[from];
    }
}

/// `block_sums` with its rounds as a `for` over a range: the split covers the loop too.
#[kernel]
fn block_sums_for(x: In<[u32]>, partial: Out<[u32]>, n: u32, #[constexpr] BLOCK: u32) {
    let tile = shared::<u32, BLOCK>();
    let t = thread_id_x();
    let i = global_id_x();
    tile[t] = if i < n { x[i] } else { 0 };
    sync_threads();
    let mut stride = BLOCK / 2;
    for _round in 0..7u32 {
        if t < stride {
            tile[t] += tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        partial[block_id_x()] = tile[0];
    }
}

/// Whether this is an odd thread: the macro cannot see into it, so the barrier after the
/// early return below is only found when the kernel runs.
#[device]
fn odd_thread() -> bool {
    thread_id_x() % 2 == 1
}

/// How many rounds this thread wants: 1 for odd threads, hidden from the macro in a #[device] fn.
#[device]
fn rounds() -> u32 {
    thread_id_x() % 2
}

/// Undefined on CUDA (never launched there): the threads disagree on how often the loop that
/// holds the barrier runs.
#[kernel]
fn disagrees(out: Out<[u32]>) {
    let mut k = 0u32;
    while k < rounds() {
        sync_threads();
        k += 1;
    }
    out[thread_id_x()] = k;
}

/// Undefined on CUDA (never launched there): odd threads leave before the barrier.
#[kernel]
fn diverges(out: Out<[u32]>) {
    if odd_thread() {
        return;
    }
    sync_threads();
    out[thread_id_x()] = 1;
}

/// Warp operations from every lane: a shuffle down, butterfly sum and max, a broadcast, votes
/// and a 64-bit xor shuffle.
#[kernel]
fn warps(x: In<[f32]>, ints: In<[i64]>, out: Out<[f32]>, votes: Out<[u32]>, wide: Out<[i64]>) {
    let i = global_id_x();
    let v = x[i];
    out[i * 4] = shfl_down(v, 3);
    out[i * 4 + 1] = warp_reduce_sum(v);
    out[i * 4 + 2] = warp_reduce_max(v);
    out[i * 4 + 3] = shfl_idx(v, 5);
    votes[i * 3] = ballot(lane_id() % 2 == 1);
    let big: u32 = if any(v > 100.0) { 1 } else { 0 };
    let sane: u32 = if all(v > -1000.0) { 1 } else { 0 };
    votes[i * 3 + 1] = big;
    votes[i * 3 + 2] = sane;
    wide[i] = shfl_xor(ints[i], 1);
}

#[kernel]
fn oob(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = x[i + 1];
    }
}

/// Local arrays: a literal length filled and read in constant loops (unrolled on CUDA, so the
/// array stays in registers), a `#[constexpr]` length of `F32x4`s updated field by field, and
/// one element read at a runtime index (`pick`), which the CPU build checks.
#[kernel]
fn local_arrays(x: In<[f32]>, out: Out<[f32]>, n: u32, pick: u32, #[constexpr] K: u32) {
    let i = global_id_x();
    if i < n {
        let mut v = [0.0f32; 4];
        for j in 0..4u32 {
            v[j] = x[i] * (j + 1) as f32;
        }
        let mut w = [F32x4 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
            w: 4.0,
        }; K];
        for j in 0..K {
            w[j].x += v[j % 4];
            w[j].w *= 0.5;
        }
        let mut acc = 0.0f32;
        for j in 0..K {
            acc += w[j].x + w[j].w;
        }
        out[i] = acc + v[pick];
    }
}

fn local_arrays_reference(x: f32, pick: usize, k: usize) -> f32 {
    let v: Vec<f32> = (1..=4).map(|j| x * j as f32).collect();
    let acc = (0..k).fold(0.0f32, |acc, j| acc + ((1.0 + v[j % 4]) + 4.0 * 0.5));
    acc + v[pick]
}

/// A local array kept across a warp exchange (the CPU build's split keeps it per thread).
#[kernel]
fn local_across_warps(x: In<[f32]>, out: Out<[f32]>) {
    let i = global_id_x();
    let mut v = [0.0f32; 3];
    for j in 0..3u32 {
        v[j] = x[i * 3 + j];
    }
    let s = warp_reduce_sum((v[0] + v[1]) + v[2]);
    for j in 0..3u32 {
        out[i * 3 + j] = v[j] / s;
    }
}

#[stable_library(dsl_ops)]
fn dsl_ops(m: &mut Library) {
    m.def("scale_(Tensor(a!) x, float s) -> ()");
}

#[kernel]
fn scale_kernel(x: InOut<[f32]>, s: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        x[i] *= s;
    }
}

/// One impl for both keys: the DSL kernel's launch runs on the tensor's device.
#[stable_impl(dsl_ops::scale_, CPU, CUDA)]
fn scale_(x: &Tensor, s: f64) -> opbox::Result<()> {
    let n = x.numel();
    scale_kernel::launch(LaunchConfig::for_elems(n), x, s as f32, n as u32)
}

fn run_scale_op(device: Device) -> opbox::Result<Vec<f32>> {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.5], &[3])?.to(device)?;
    let op = opbox::op("dsl_ops::scale_")?;
    let () = op.call((&x, 2.0f64))?;
    x.to_vec()
}

/// Every DSL kernel of this file and of examples/dsl.rs, with constexpr values where it has some.
fn all_kernels() -> Vec<(&'static KernelDecl, Vec<ConstValue>)> {
    vec![
        (&int_ops::DECL, vec![]),
        (&u8_ops::DECL, vec![]),
        (&casts::DECL, vec![]),
        (&literals::DECL, vec![]),
        (&control::DECL, vec![ConstValue::U32(5)]),
        (&affine::DECL, vec![]),
        (&oob::DECL, vec![]),
        (&places::DECL, vec![]),
        (&example::axpy4::DECL, vec![]),
        (&hmix::DECL, vec![]),
        (&atomics::DECL, vec![]),
        (&block_sums::DECL, vec![ConstValue::U32(128)]),
        (&reverse_blocks::DECL, vec![]),
        (&block_sums_for::DECL, vec![ConstValue::U32(128)]),
        (&warps::DECL, vec![]),
        (&local_arrays::DECL, vec![ConstValue::U32(6)]),
        (&local_across_warps::DECL, vec![]),
        (&diverges::DECL, vec![]),
        (&disagrees::DECL, vec![]),
        (&scale_kernel::DECL, vec![]),
        (&example::axpy::DECL, vec![]),
        (&example::fused_gelu::DECL, vec![]),
        (&example::brighten::DECL, vec![]),
    ]
}

const CHILD_OOB: &str = "--child-oob";

const TESTS: &[Test] = &[
    ("cpu_examples_match_plain_rust", cpu_examples),
    ("cpu_integer_ops_wrap_truncate_and_mask", cpu_int_ops),
    ("cpu_u8_and_u64_ops_wrap", cpu_u8_ops),
    ("cpu_casts_saturate_and_halves_round_through_f32", cpu_casts),
    ("cpu_control_flow_device_fns_and_constexprs", cpu_control),
    ("cpu_structs_by_value_and_literals", cpu_affine),
    ("cpu_device_fns_read_a_2d_grid", cpu_places),
    (
        "cpu_load4_store4_with_a_tail_and_misaligned_views_refused",
        cpu_axpy4,
    ),
    ("cpu_half_builtin_over_cuda_half", cpu_hmix),
    ("cpu_atomics_are_real_atomics_across_blocks", cpu_atomics),
    ("cpu_barriers_and_shared_memory", cpu_barriers),
    ("cpu_warp_operations_follow_cuda", cpu_warps),
    ("cpu_local_arrays_index_checked_and_split", cpu_local_arrays),
    ("cpu_out_of_bounds_is_an_error", cpu_oob),
    ("cpu_launch_stack_and_checks", cpu_stack),
    ("cpu_one_dsl_impl_serves_cpu_and_cuda_keys", cpu_op),
    ("cpu_crossing_launches_on_two_threads_wait", cpu_crossing),
    ("nvrtc_every_dsl_kernel_compiles", nvrtc_all),
    ("nvrtc_f32_literals_stay_f32_in_ptx", nvrtc_no_f64),
    ("nvrtc_errors_name_the_rust_line", nvrtc_lines),
    ("emitted_cpp_of_the_examples_is_the_snapshot", snapshot),
    ("gpu_every_kernel_matches_the_cpu", gpu_matches_cpu),
    ("gpu_out_of_bounds_traps_in_debug_builds", gpu_oob),
];

fn main() -> ExitCode {
    if std::env::args().any(|a| a == CHILD_OOB) {
        return child_oob();
    }
    harness::run(TESTS)
}

const EDGE_I32: [(i32, i32); 10] = [
    (i32::MIN, -1),
    (5, 0),
    (-7, 2),
    (i32::MAX, 1),
    (1, 33),
    (-1, -1),
    (i32::MIN, i32::MIN),
    (7, -3),
    (-8, 31),
    (123_456, 65_537),
];

fn int_reference(x: i32, y: i32) -> [i32; 9] {
    let div = if y == 0 { 0 } else { x.wrapping_div(y) };
    let rem = if y == 0 { 0 } else { x.wrapping_rem(y) };
    [
        x.wrapping_add(y),
        x.wrapping_sub(y),
        x.wrapping_mul(y),
        div,
        rem,
        x.wrapping_shl(y as u32),
        x.wrapping_shr(y as u32),
        x.wrapping_neg(),
        x.wrapping_abs().min(y).max(-100) ^ (x & 255 | 7),
    ]
}

/// int_ops on `device`: its output.
fn run_int_ops(device: Device) -> opbox::Result<Vec<i32>> {
    let n = EDGE_I32.len();
    let a = Tensor::from_vec(EDGE_I32.iter().map(|p| p.0).collect::<Vec<_>>(), &[n])?.to(device)?;
    let b = Tensor::from_vec(EDGE_I32.iter().map(|p| p.1).collect::<Vec<_>>(), &[n])?.to(device)?;
    let out = Tensor::zeros(&[n * 9], DType::I32, device)?;
    int_ops::launch(LaunchConfig::for_elems(n), &a, &b, &out, n as u32)?;
    out.to_vec()
}

const EDGE_U8: [(u8, u8); 5] = [(0, 0), (255, 1), (200, 200), (1, 255), (17, 9)];

fn run_u8_ops(device: Device) -> opbox::Result<(Vec<u8>, Vec<u64>)> {
    let n = EDGE_U8.len();
    let a = Tensor::from_vec(EDGE_U8.iter().map(|p| p.0).collect::<Vec<_>>(), &[n])?.to(device)?;
    let b = Tensor::from_vec(EDGE_U8.iter().map(|p| p.1).collect::<Vec<_>>(), &[n])?.to(device)?;
    let out = Tensor::zeros(&[n * 3], DType::U8, device)?;
    let wide = Tensor::zeros(&[n], DType::U64, device)?;
    // More blocks than elements, and blocks of 2, so the bounds check runs.
    u8_ops::launch(
        LaunchConfig::single().grid(4, 1, 1).block(2, 1, 1),
        &a,
        &b,
        &out,
        &wide,
        n as u32,
    )?;
    Ok((out.to_vec()?, wide.to_vec()?))
}

const EDGE_F32: [f32; 16] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e10,
    -1e10,
    3.7,
    -3.7,
    0.0,
    -0.0,
    255.5,
    256.0,
    1e-40,
    65504.0,
    70000.0,
    -2147483904.0,
    0.1,
];

type CastOut = (Vec<i32>, Vec<u8>, Vec<u64>, Vec<f16>, Vec<bf16>, Vec<f64>);

fn run_casts(device: Device) -> opbox::Result<CastOut> {
    let n = EDGE_F32.len();
    let x = Tensor::from_vec(EDGE_F32.to_vec(), &[n])?.to(device)?;
    let t: [Tensor; 6] = [
        Tensor::zeros(&[n], DType::I32, device)?,
        Tensor::zeros(&[n], DType::U8, device)?,
        Tensor::zeros(&[n], DType::U64, device)?,
        Tensor::zeros(&[n], DType::F16, device)?,
        Tensor::zeros(&[n], DType::BF16, device)?,
        Tensor::zeros(&[n], DType::F64, device)?,
    ];
    casts::launch(
        LaunchConfig::for_elems(n),
        &x,
        &t[0],
        &t[1],
        &t[2],
        &t[3],
        &t[4],
        &t[5],
        n as u32,
    )?;
    Ok((
        t[0].to_vec()?,
        t[1].to_vec()?,
        t[2].to_vec()?,
        t[3].to_vec()?,
        t[4].to_vec()?,
        t[5].to_vec()?,
    ))
}

fn run_control(device: Device, n: usize) -> opbox::Result<Vec<u32>> {
    let out = Tensor::zeros(&[n], DType::U32, device)?;
    control::launch(LaunchConfig::for_elems(n), &out, n as u32, 5)?;
    out.to_vec()
}

/// A 13 x 7 grid of 4 x 3 blocks, so the edge blocks are partly outside it.
const PLACES: (u32, u32, (u32, u32)) = (13, 7, (4, 3));

fn run_places(device: Device) -> opbox::Result<Vec<u32>> {
    let (w, h, (bx, by)) = PLACES;
    let out = Tensor::zeros(&[(w * h) as usize], DType::U32, device)?;
    let cfg = LaunchConfig {
        grid: (w.div_ceil(bx), h.div_ceil(by), 1),
        block: (bx, by, 1),
        shared_mem_bytes: 0,
        stream: None,
    };
    places::launch(cfg, &out, w, h)?;
    out.to_vec()
}

/// `axpy4` over 1003 elements (three in the tail), from element `skip` of its buffers: at 4 the
/// views start at the next 16-byte boundary; at 1 they are 4 bytes past one, which the launch
/// refuses.
fn run_axpy4(device: Device, skip: usize) -> opbox::Result<Vec<f32>> {
    let n = 1003usize;
    let xs: Vec<f32> = (0..n + skip).map(|i| i as f32 * 0.5 - 7.0).collect();
    let ys: Vec<f32> = (0..n + skip).map(|i| (i % 13) as f32).collect();
    let x = Tensor::from_vec(xs, &[n + skip])?
        .to(device)?
        .narrow(0, skip, n)?;
    let y = Tensor::from_vec(ys, &[n + skip])?
        .to(device)?
        .narrow(0, skip, n)?;
    let out = Tensor::zeros(&[n + skip], DType::F32, device)?.narrow(0, skip, n)?;
    example::axpy4::launch(
        LaunchConfig::for_elems(n / 4 + 1),
        &x,
        &y,
        &out,
        3.0,
        n as u32,
    )?;
    out.to_vec()
}

fn axpy4_reference(skip: usize) -> Vec<f32> {
    (skip..1003 + skip)
        .map(|i| 3.0 * (i as f32 * 0.5 - 7.0) + (i % 13) as f32)
        .collect()
}

fn run_hmix(device: Device) -> opbox::Result<Vec<f16>> {
    let a: Vec<f16> = (0..64)
        .map(|i| f16::from_f32(i as f32 * 0.75 - 20.0))
        .collect();
    let b: Vec<f16> = (0..64)
        .map(|i| f16::from_f32(100.0 - i as f32 * 1.5))
        .collect();
    let a = Tensor::from_vec(a, &[64])?.to(device)?;
    let b = Tensor::from_vec(b, &[64])?.to(device)?;
    let out = Tensor::zeros(&[64], DType::F16, device)?;
    hmix::launch(LaunchConfig::for_elems(64), &a, &b, &out, 0.3, 64)?;
    out.to_vec()
}

/// (bins, [min, max, sum * 1e9], f32 sum, f64 sum, [cas winner, last exchange, max replaced])
type AtomicsOut = (Vec<u32>, Vec<i64>, f32, f64, Vec<u32>);

const ATOMIC_N: usize = 5000;

fn atomic_input(i: usize) -> i32 {
    (i as i32 * 7919) % 2003 - 1000
}

fn run_atomics(device: Device) -> opbox::Result<AtomicsOut> {
    let xs: Vec<i32> = (0..ATOMIC_N).map(atomic_input).collect();
    let x = Tensor::from_vec(xs, &[ATOMIC_N])?.to(device)?;
    let bins = Tensor::zeros(&[8], DType::U32, device)?;
    let wide = Tensor::from_vec(vec![i64::MAX, i64::MIN, 0], &[3])?.to(device)?;
    let sum = Tensor::zeros(&[1], DType::F32, device)?;
    let sum64 = Tensor::zeros(&[1], DType::F64, device)?;
    let won = Tensor::from_vec(vec![u32::MAX, 0, 0], &[3])?.to(device)?;
    let cfg = LaunchConfig::for_elems(ATOMIC_N);
    atomics::launch(cfg, &x, &bins, &wide, &sum, &sum64, &won, ATOMIC_N as u32)?;
    Ok((
        bins.to_vec()?,
        wide.to_vec()?,
        sum.to_vec::<f32>()?[0],
        sum64.to_vec::<f64>()?[0],
        won.to_vec()?,
    ))
}

/// What every correct run gives, whichever thread wins each race.
fn check_atomics(got: &AtomicsOut) -> Result<(), String> {
    let xs: Vec<i32> = (0..ATOMIC_N).map(atomic_input).collect();
    let mut bins = vec![0u32; 8];
    for v in &xs {
        bins[(*v as u32 % 8) as usize] += 1;
    }
    let wide = vec![
        i64::from(*xs.iter().min().unwrap_or(&0)),
        i64::from(*xs.iter().max().unwrap_or(&0)),
        xs.iter().map(|v| i64::from(*v) * 1_000_000_000).sum(),
    ];
    let sum64: f64 = xs.iter().map(|v| f64::from(*v)).sum();
    let n = ATOMIC_N as u32;
    ensure(got.0 == bins, || {
        format!("histogram {:?}, want {bins:?}", got.0)
    })?;
    ensure(got.1 == wide, || {
        format!("i64 min/max/sum {:?}, want {wide:?}", got.1)
    })?;
    ensure(got.2 == 0.5 * ATOMIC_N as f32, || {
        format!("f32 sum {}", got.2)
    })?;
    ensure(got.3 == sum64, || {
        format!("f64 sum {}, want {sum64}", got.3)
    })?;
    // One thread's compare-exchange wins, one thread writes last, and every exchange returns
    // some thread's index or the initial 0.
    ensure(got.4[0] < n && got.4[1] < n && got.4[2] < n, || {
        format!("compare-exchange / exchange: {:?}", got.4)
    })
}

/// `block_sums` over 1000 elements in blocks of 128 (the last block partly outside).
fn run_block_sums(device: Device) -> opbox::Result<Vec<u32>> {
    run_block_sums_with(device, false)
}

/// `block_sums`, or `block_sums_for` (its rounds as a `for`).
fn run_block_sums_with(device: Device, for_loop: bool) -> opbox::Result<Vec<u32>> {
    let n = 1000usize;
    let xs: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
    let x = Tensor::from_vec(xs, &[n])?.to(device)?;
    let blocks = n.div_ceil(128);
    let partial = Tensor::zeros(&[blocks], DType::U32, device)?;
    let cfg = LaunchConfig {
        grid: (blocks as u32, 1, 1),
        block: (128, 1, 1),
        shared_mem_bytes: 0,
        stream: None,
    };
    if for_loop {
        block_sums_for::launch(cfg, &x, &partial, n as u32, 128)?;
    } else {
        block_sums::launch(cfg, &x, &partial, n as u32, 128)?;
    }
    partial.to_vec()
}

/// `reverse_blocks` over 200 elements in blocks of 64, with 64 f32s of dynamic shared memory.
fn run_reverse_blocks(device: Device) -> opbox::Result<Vec<f32>> {
    let n = 200usize;
    let x = Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n])?.to(device)?;
    let out = Tensor::zeros(&[n], DType::F32, device)?;
    let cfg = LaunchConfig::single()
        .grid(n.div_ceil(64) as u32, 1, 1)
        .block(64, 1, 1)
        .shared_mem(64 * 4);
    reverse_blocks::launch(cfg, &x, &out, n as u32)?;
    out.to_vec()
}

/// Element `i` of block `b` comes from element `63 - i` of the block, or is -1 past the end.
fn reverse_blocks_reference() -> Vec<f32> {
    (0..200usize)
        .map(|i| {
            let from = i / 64 * 64 + 63 - i % 64;
            if from < 200 {
                from as f32
            } else {
                -1.0
            }
        })
        .collect()
}

fn block_sums_reference() -> Vec<u32> {
    (0..1000u32)
        .map(|i| i * 3 + 1)
        .collect::<Vec<_>>()
        .chunks(128)
        .map(|c| c.iter().sum())
        .collect()
}

/// (shuffles and reductions, votes, 64-bit shuffles) of `warps` over 2 blocks of 64 threads.
type WarpsOut = (Vec<f32>, Vec<u32>, Vec<i64>);

fn warp_inputs() -> (Vec<f32>, Vec<i64>) {
    let mut x: Vec<f32> = (0..128)
        .map(|i| (i * 37 % 101) as f32 * 1.25 - 50.0)
        .collect();
    x[40] = 500.0;
    let ints = (0..128i64).map(|i| i * 1_000_000_007 - 3).collect();
    (x, ints)
}

fn run_warps(device: Device) -> opbox::Result<WarpsOut> {
    let (x, ints) = warp_inputs();
    let x = Tensor::from_vec(x, &[128])?.to(device)?;
    let ints = Tensor::from_vec(ints, &[128])?.to(device)?;
    let out = Tensor::zeros(&[128 * 4], DType::F32, device)?;
    let votes = Tensor::zeros(&[128 * 3], DType::U32, device)?;
    let wide = Tensor::zeros(&[128], DType::I64, device)?;
    let cfg = LaunchConfig {
        grid: (2, 1, 1),
        block: (64, 1, 1),
        shared_mem_bytes: 0,
        stream: None,
    };
    warps::launch(cfg, &x, &ints, &out, &votes, &wide)?;
    Ok((out.to_vec()?, votes.to_vec()?, wide.to_vec()?))
}

/// CUDA's warp semantics in plain Rust, the butterfly in CUDA's order.
fn warps_reference() -> WarpsOut {
    let (x, ints) = warp_inputs();
    let (mut out, mut votes, mut wide) = (Vec::new(), Vec::new(), Vec::new());
    for warp in x.chunks(32).zip(ints.chunks(32)) {
        let (xs, is) = warp;
        let butterfly = |f: fn(f32, f32) -> f32| {
            let mut v = xs.to_vec();
            for o in [16, 8, 4, 2, 1] {
                v = (0..32).map(|l| f(v[l], v[l ^ o])).collect();
            }
            v
        };
        let (sum, max) = (butterfly(|a, b| a + b), butterfly(f32::max));
        for l in 0..32 {
            out.extend([
                xs[if l + 3 < 32 { l + 3 } else { l }],
                sum[l],
                max[l],
                xs[5],
            ]);
            votes.extend([
                0xaaaa_aaaa,
                u32::from(xs.iter().any(|v| *v > 100.0)),
                u32::from(xs.iter().all(|v| *v > -1000.0)),
            ]);
            wide.push(is[l ^ 1]);
        }
    }
    (out, votes, wide)
}

fn run_affine(device: Device) -> opbox::Result<Vec<f32>> {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 8.0], &[4])?.to(device)?;
    let y = Tensor::zeros(&[4], DType::F32, device)?;
    affine::launch(
        LaunchConfig::for_elems(4),
        &x,
        &y,
        Affine {
            scale: 3.0,
            shift: 0.25,
        },
        4,
    )?;
    y.to_vec()
}

fn cpu_examples() -> TestResult {
    let got = example::run(Device::Cpu).map_err(s)?;
    example::check_cpu(&got)?;
    Ok(Outcome::Pass)
}

/// `literals(a -> b)` on one thread and `literals(b -> a)` on another: each launch locks both
/// buffers, in the storages' one lock order, so they take turns (a lock order per launch would
/// deadlock here, now that storage locks wait instead of failing).
fn cpu_crossing() -> TestResult {
    let n = 64usize;
    let a = Tensor::full(&[n], 1.0, DType::F32, Device::Cpu).map_err(s)?;
    let b = Tensor::full(&[n], 2.0, DType::F32, Device::Cpu).map_err(s)?;
    let cfg = LaunchConfig::for_elems(n);
    let run = |x: &Tensor, y: &Tensor| -> Result<(), String> {
        for _ in 0..200 {
            literals::launch(cfg.clone(), x, y, n as u32).map_err(s)?;
        }
        Ok(())
    };
    std::thread::scope(|scope| {
        let one = scope.spawn(|| run(&a, &b));
        let two = scope.spawn(|| run(&b, &a));
        one.join()
            .map_err(|_| "a launch thread panicked".to_string())??;
        two.join()
            .map_err(|_| "a launch thread panicked".to_string())?
    })?;
    Ok(Outcome::Pass)
}

fn cpu_int_ops() -> TestResult {
    let got = run_int_ops(Device::Cpu).map_err(s)?;
    for (k, (x, y)) in EDGE_I32.iter().enumerate() {
        let want = int_reference(*x, *y);
        ensure(got[k * 9..k * 9 + 9] == want, || {
            format!(
                "int_ops({x}, {y}) = {:?}, want {want:?}",
                &got[k * 9..k * 9 + 9]
            )
        })?;
    }
    Ok(Outcome::Pass)
}

fn cpu_u8_ops() -> TestResult {
    let (out, wide) = run_u8_ops(Device::Cpu).map_err(s)?;
    for (k, (x, y)) in EDGE_U8.iter().enumerate() {
        let want = [
            x.wrapping_add(*y),
            x.wrapping_mul(*y).wrapping_sub(1),
            x.wrapping_shr(9) | y.wrapping_shl(12),
        ];
        ensure(out[k * 3..k * 3 + 3] == want, || {
            format!(
                "u8_ops({x}, {y}) = {:?}, want {want:?}",
                &out[k * 3..k * 3 + 3]
            )
        })?;
        let w = ((*x as u64) << 60).wrapping_add(u64::MAX / 3);
        ensure(wide[k] == w, || {
            format!("u8_ops wide({x}) = {}, want {w}", wide[k])
        })?;
    }
    Ok(Outcome::Pass)
}

fn cpu_casts() -> TestResult {
    let (i, u, w, h, b, back) = run_casts(Device::Cpu).map_err(s)?;
    for (k, v) in EDGE_F32.iter().enumerate() {
        let hv = f16::from_f32(*v);
        let want_h = f16::from_f32(hv.to_f32() + hv.to_f32());
        let want_back = hv.to_f32() as f64 * 0.5 + bf16::from_f32(*v).to_f32() as f64;
        ensure(
            i[k] == *v as i32 && u[k] == *v as u8 && w[k] == *v as u64,
            || format!("{v} as int: {} {} {}", i[k], u[k], w[k]),
        )?;
        ensure(
            h[k].to_bits() == want_h.to_bits() || (h[k].is_nan() && want_h.is_nan()),
            || format!("{v} as f16 doubled: {:?}, want {want_h:?}", h[k]),
        )?;
        ensure(b[k].to_bits() == bf16::from_f32(*v).to_bits(), || {
            format!("{v} as bf16: {:?}", b[k])
        })?;
        ensure(
            back[k].to_bits() == want_back.to_bits() || (back[k].is_nan() && want_back.is_nan()),
            || format!("back({v}) = {}, want {want_back}", back[k]),
        )?;
    }
    Ok(Outcome::Pass)
}

fn cpu_control() -> TestResult {
    let n = 300;
    let got = run_control(Device::Cpu, n).map_err(s)?;
    for (i, g) in got.iter().enumerate() {
        let want = control_reference(i as u32, 5);
        ensure(*g == want, || format!("control({i}) = {g}, want {want}"))?;
    }
    // The specialization launcher takes the runtime params only.
    let out = Tensor::zeros(&[8], DType::U32, Device::Cpu).map_err(s)?;
    control::specialize(2)
        .launch(LaunchConfig::for_elems(8), &out, 8)
        .map_err(s)?;
    let got: Vec<u32> = out.to_vec().map_err(s)?;
    ensure(got[7] == control_reference(7, 2), || {
        format!("specialize(2): {got:?}")
    })?;
    Ok(Outcome::Pass)
}

fn cpu_places() -> TestResult {
    let (w, h, (bx, by)) = PLACES;
    let got = run_places(Device::Cpu).map_err(s)?;
    for y in 0..h {
        for x in 0..w {
            let want = (x % bx) | ((y % by) << 8) | ((x / bx) << 16) | ((y / by) << 24);
            let g = got[(y * w + x) as usize];
            ensure(g == want, || {
                format!("places({x}, {y}) = {g:#x}, want {want:#x}")
            })?;
        }
    }
    // Outside a launch the indices read 0 again.
    ensure(opbox::dsl::thread_id_y() == 0, || {
        "thread_id_y() outside a launch".into()
    })?;
    Ok(Outcome::Pass)
}

fn cpu_axpy4() -> TestResult {
    for skip in [0, 4] {
        let got = run_axpy4(Device::Cpu, skip).map_err(s)?;
        ensure(got == axpy4_reference(skip), || {
            format!("axpy4 from element {skip}: {got:?}")
        })?;
    }
    misaligned_axpy4_is_refused(Device::Cpu)?;
    // A vector that reaches past the end stops the launch, naming the first element outside.
    let x = Tensor::zeros(&[6], DType::F32, Device::Cpu).map_err(s)?;
    let out = Tensor::zeros(&[6], DType::F32, Device::Cpu).map_err(s)?;
    match example::axpy4::launch(LaunchConfig::for_elems(2), &x, &x, &out, 1.0, 8) {
        Err(Error::IndexOutOfBounds {
            param, index, len, ..
        }) => ensure(param == "x" && index == 7 && len == 6, || {
            format!("out of bounds report: {param} {index} {len}")
        })?,
        other => return Err(format!("axpy4 past the end: {other:?}")),
    }
    Ok(Outcome::Pass)
}

/// A view 4 bytes past a 16-byte boundary, passed where the body calls `load4`, is refused at
/// launch with the kernel, the parameter and the fix; `out` (only `store4`) is named for its
/// own method when it is the misaligned one.
fn misaligned_axpy4_is_refused(device: Device) -> Result<(), String> {
    let want = [
        "parameter x of axpy4 starts 4 bytes past a 16-byte boundary (element offset 1",
        "load4 needs 16-byte alignment",
        "a multiple of 4 f32s",
    ];
    match run_axpy4(device, 1) {
        Err(Error::InvalidArgument(m)) if want.iter().all(|w| m.contains(w)) => {}
        other => return Err(format!("misaligned axpy4 on {device:?}: {other:?}")),
    }
    let aligned = Tensor::zeros(&[8], DType::F32, device).map_err(s)?;
    let out = Tensor::zeros(&[9], DType::F32, device)
        .and_then(|t| t.narrow(0, 1, 8))
        .map_err(s)?;
    match example::axpy4::launch(LaunchConfig::for_elems(3), &aligned, &aligned, &out, 1.0, 8) {
        Err(Error::InvalidArgument(m))
            if m.contains("parameter out of axpy4") && m.contains("store4 needs") =>
        {
            Ok(())
        }
        other => Err(format!("misaligned out of axpy4 on {device:?}: {other:?}")),
    }
}

fn cpu_hmix() -> TestResult {
    let got = run_hmix(Device::Cpu).map_err(s)?;
    for (i, g) in got.iter().enumerate() {
        let (a, b) = (i as f32 * 0.75 - 20.0, 100.0 - i as f32 * 1.5);
        let want = hlerp(f16::from_f32(a), f16::from_f32(b), 0.3);
        ensure(g.to_bits() == want.to_bits(), || {
            format!("hmix[{i}] = {g}, want {want}")
        })?;
    }
    Ok(Outcome::Pass)
}

fn cpu_atomics() -> TestResult {
    check_atomics(&run_atomics(Device::Cpu).map_err(s)?)?;
    Ok(Outcome::Pass)
}

fn cpu_barriers() -> TestResult {
    // The split covers these; `warps` exchanges inside expressions, so it keeps coroutines.
    for (kernel, build, want) in [
        ("block_sums", block_sums::CPU_BUILD, "split at barriers"),
        (
            "reverse_blocks",
            reverse_blocks::CPU_BUILD,
            "split at barriers",
        ),
        ("diverges", diverges::CPU_BUILD, "split at barriers"),
        ("disagrees", disagrees::CPU_BUILD, "split at barriers"),
        ("warps", warps::CPU_BUILD, "coroutines"),
        // Barrier-free: `oob`'s indices are `i + k`, which the loop's split proves where it
        // can; `int_ops` indexes `i * 9 + k`, which it does not.
        ("oob", oob::CPU_BUILD, "split thread loop"),
        ("int_ops", int_ops::CPU_BUILD, "thread loop"),
    ] {
        ensure(build == want, || {
            format!("{kernel}'s CPU build is {build:?}, want {want:?}")
        })?;
    }
    let got = run_block_sums(Device::Cpu).map_err(s)?;
    let want = block_sums_reference();
    ensure(got == want, || format!("block sums {got:?}, want {want:?}"))?;
    let got = run_block_sums_with(Device::Cpu, true).map_err(s)?;
    ensure(got == want, || {
        format!("block sums (for) {got:?}, want {want:?}")
    })?;
    let got = run_reverse_blocks(Device::Cpu).map_err(s)?;
    ensure(got == reverse_blocks_reference(), || {
        format!("reverse_blocks through dynamic shared memory: {got:?}")
    })?;
    // Threads that leave before a barrier the others wait at end the launch with an error.
    let out = Tensor::zeros(&[64], DType::U32, Device::Cpu).map_err(s)?;
    match diverges::launch(LaunchConfig::for_elems(64), &out) {
        Err(Error::KernelPanic { message, .. }) => ensure(
            message.contains("do not reach the same barrier")
                && message.contains("thread 1 returned"),
            || format!("divergence message: {message}"),
        )?,
        other => return Err(format!("a divergent barrier: {other:?}")),
    }
    match disagrees::launch(LaunchConfig::for_elems(64), &out) {
        Err(Error::KernelPanic { message, .. }) => ensure(
            message.contains("thread 0 and thread 1 disagree on a condition")
                && message.contains("sync_threads() #0"),
            || format!("divergent loop message: {message}"),
        )?,
        other => return Err(format!("a loop whose threads disagree: {other:?}")),
    }
    Ok(Outcome::Pass)
}

fn cpu_warps() -> TestResult {
    let (got, want) = (run_warps(Device::Cpu).map_err(s)?, warps_reference());
    ensure(
        got.0
            .iter()
            .zip(&want.0)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        || format!("shuffles and reductions: {:?}", got.0),
    )?;
    ensure(got.1 == want.1, || format!("votes: {:?}", got.1))?;
    ensure(got.2 == want.2, || format!("64-bit shuffles: {:?}", got.2))?;
    Ok(Outcome::Pass)
}

const LOCAL_K: u32 = 6;

fn local_input() -> Vec<f32> {
    (0..100).map(|i| i as f32 * 0.25 - 9.0).collect()
}

fn run_local_arrays(device: Device, pick: u32) -> opbox::Result<Vec<f32>> {
    let xs = local_input();
    let n = xs.len();
    let x = Tensor::from_vec(xs, &[n])?.to(device)?;
    let out = Tensor::zeros(&[n], DType::F32, device)?;
    local_arrays::launch(
        LaunchConfig::for_elems(n),
        &x,
        &out,
        n as u32,
        pick,
        LOCAL_K,
    )?;
    out.to_vec()
}

fn run_local_across_warps(device: Device) -> opbox::Result<Vec<f32>> {
    let xs: Vec<f32> = (0..192).map(|i| (i % 7) as f32 + 1.0).collect();
    let x = Tensor::from_vec(xs, &[192])?.to(device)?;
    let out = Tensor::zeros(&[192], DType::F32, device)?;
    let cfg = LaunchConfig::single().grid(2, 1, 1).block(32, 1, 1);
    local_across_warps::launch(cfg, &x, &out)?;
    out.to_vec()
}

fn cpu_local_arrays() -> TestResult {
    for pick in [0u32, 3] {
        let got = run_local_arrays(Device::Cpu, pick).map_err(s)?;
        let want: Vec<f32> = local_input()
            .iter()
            .map(|x| local_arrays_reference(*x, pick as usize, LOCAL_K as usize))
            .collect();
        ensure(got == want, || {
            format!("local arrays, pick {pick}: {got:?}")
        })?;
    }
    match run_local_arrays(Device::Cpu, 4) {
        Err(Error::IndexOutOfBounds {
            kernel,
            param,
            index,
            len,
        }) => ensure(
            kernel == "local_arrays" && param == "local array v" && index == 4 && len == 4,
            || format!("IndexOutOfBounds names {kernel} {param}[{index}] of {len}"),
        )?,
        other => return Err(format!("v[4] of a [f32; 4]: {other:?}")),
    }
    ensure(local_across_warps::CPU_BUILD == "split at barriers", || {
        format!(
            "local_across_warps runs as {}",
            local_across_warps::CPU_BUILD
        )
    })?;
    let got = run_local_across_warps(Device::Cpu).map_err(s)?;
    let xs: Vec<f32> = (0..192).map(|i| (i % 7) as f32 + 1.0).collect();
    let want: Vec<f32> = (0..192)
        .map(|e| {
            let warp = e / 96;
            let total: f32 = (0..32)
                .map(|l| {
                    let t = warp * 32 + l;
                    (xs[t * 3] + xs[t * 3 + 1]) + xs[t * 3 + 2]
                })
                .sum();
            xs[e] / total
        })
        .collect();
    ensure(
        got.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-6 * w.abs()),
        || format!("local array across a warp sum: {got:?}"),
    )?;
    Ok(Outcome::Pass)
}

fn cpu_affine() -> TestResult {
    let got = run_affine(Device::Cpu).map_err(s)?;
    let want: Vec<f32> = [1.0f32, -2.0, 0.5, 8.0]
        .iter()
        .map(|x| x * 3.0 + 0.25 * 2.0)
        .collect();
    ensure(got == want, || format!("affine: {got:?}, want {want:?}"))?;
    Ok(Outcome::Pass)
}

fn cpu_oob() -> TestResult {
    let x = Tensor::from_vec(vec![1.0f32; 8], &[8]).map_err(s)?;
    let y = Tensor::zeros(&[8], DType::F32, Device::Cpu).map_err(s)?;
    match oob::launch(LaunchConfig::for_elems(8), &x, &y, 8) {
        Err(Error::IndexOutOfBounds {
            kernel,
            param,
            index,
            len,
        }) => {
            ensure(
                kernel == "oob" && param == "x" && index == 8 && len == 8,
                || format!("IndexOutOfBounds names {kernel} {param}[{index}] of {len}"),
            )?;
        }
        other => return Err(format!("expected IndexOutOfBounds, got {other:?}")),
    }
    // The tensors are released after the failed launch.
    y.fill_(1.0f64).map_err(s)?;
    Ok(Outcome::Pass)
}

fn cpu_stack() -> TestResult {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).map_err(s)?;
    let y = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).map_err(s)?;
    let mut stack = Stack::new();
    stack.push(&x);
    stack.push(&y);
    stack.push(2.0f64);
    stack.push(3i64);
    opbox::kernel::launch_stack(
        &example::axpy::HANDLE,
        &LaunchConfig::for_elems(3),
        stack.as_slice(),
    )
    .map_err(s)?;
    let got: Vec<f32> = y.to_vec().map_err(s)?;
    ensure(got == [12.0, 24.0, 36.0], || {
        format!("launch_stack axpy: {got:?}")
    })?;
    let wrong = Tensor::zeros(&[3], DType::F16, Device::Cpu).map_err(s)?;
    let err = example::axpy::launch(LaunchConfig::for_elems(3), &wrong, &y, 1.0, 3).err();
    let want =
        "kernel axpy expects argument #0 (x) to be f32 CPU or CUDA tensor, but got f16 CPU tensor";
    ensure(
        err.as_ref().map(ToString::to_string).as_deref() == Some(want),
        || format!("wrong dtype: {err:?}"),
    )?;
    Ok(Outcome::Pass)
}

fn cpu_op() -> TestResult {
    let got = run_scale_op(Device::Cpu).map_err(s)?;
    ensure(got == [2.0, -4.0, 7.0], || {
        format!("dsl_ops::scale_ on CPU: {got:?}")
    })?;
    Ok(Outcome::Pass)
}

fn nvrtc_all() -> TestResult {
    with_nvrtc(|| {
        for (decl, consts) in all_kernels() {
            compile_sm90_without_globals(decl, &consts)?;
        }
        Ok(Outcome::Pass)
    })
}

fn nvrtc_no_f64() -> TestResult {
    with_nvrtc(|| {
        for decl in [
            &literals::DECL,
            &example::axpy::DECL,
            &example::brighten::DECL,
        ] {
            let ptx = opbox::cuda::compile_for_arch(decl, &[], "compute_90").map_err(s)?;
            let text = String::from_utf8_lossy(&ptx.image);
            let f64_lines: Vec<&str> = text.lines().filter(|l| l.contains(".f64")).collect();
            ensure(f64_lines.is_empty(), || {
                format!(
                    "{}: f64 in the PTX:\n{}",
                    decl.rust_name,
                    f64_lines.join("\n")
                )
            })?;
            ensure(text.contains(".f32"), || {
                format!("{}: no f32 instruction in the PTX", decl.rust_name)
            })?;
        }
        Ok(Outcome::Pass)
    })
}

/// An error planted in a statement's C++ is reported at that statement's Rust line.
fn nvrtc_lines() -> TestResult {
    with_nvrtc(|| {
        let this = include_str!("dsl.rs");
        let line = this
            .lines()
            .position(|l| l.trim() == "out[k + 7] = -x;")
            .map(|i| i + 1)
            .ok_or("the statement is not in tests/dsl.rs")?;
        let mut unit = opbox::cuda::translation_unit(&int_ops::DECL, &[]).map_err(s)?;
        let directive = format!("#line {line} \"tests/dsl.rs\"\n");
        ensure(unit.source.contains(&directive), || {
            format!("no `{}` in the C++", directive.trim())
        })?;
        unit.source = unit.source.replacen(
            &directive,
            &format!("{directive}opbox_not_a_name = 1;\n"),
            1,
        );
        let options = vec![
            "--gpu-architecture=sm_90".to_string(),
            "-std=c++17".to_string(),
        ];
        match opbox::cuda::nvrtc::compile(&unit, &options, opbox::cuda::ImageKind::Cubin, "int_ops")
        {
            Err(Error::Compile { log, .. }) => {
                let at = format!("tests/dsl.rs({line})");
                ensure(log.contains(&at), || {
                    format!("the log does not name {at}:\n{log}")
                })?;
                println!(
                    "    NVRTC: {}",
                    log.lines().find(|l| l.contains(&at)).unwrap_or("")
                );
                Ok(Outcome::Pass)
            }
            other => Err(format!(
                "expected a compile error, got {:?}",
                other.map(|_| ())
            )),
        }
    })
}

/// The C++ of the examples' kernels (the opbox preludes left out) against
/// tests/snapshots/dsl/<kernel>.cu; `OPBOX_BLESS=1` rewrites them.
fn snapshot() -> TestResult {
    // From the working directory when it is the repository (scripts/gpu-check runs the binary
    // there, on another machine), else from where this was built.
    let here = std::path::Path::new("tests/snapshots/dsl");
    let dir = if here.is_dir() {
        here.to_path_buf()
    } else {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/dsl")
    };
    for decl in [
        &example::axpy::DECL,
        &example::fused_gelu::DECL,
        &example::brighten::DECL,
        &example::axpy4::DECL,
        &local_arrays::DECL,
    ] {
        let build = decl.build.ok_or("a DSL kernel has build options")?;
        let preamble = &(build.get)().preamble;
        let prelude = opbox::cuda::codegen::dsl_prelude::DSL_PRELUDE;
        let text = preamble
            .strip_prefix(prelude)
            .ok_or("the preamble starts with the DSL prelude")?;
        let source = decl
            .sources
            .first()
            .map(|f| f.content.as_ref())
            .unwrap_or("");
        let text = format!("// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):\n{text}// source:\n{source}");
        let path = dir.join(format!("{}.cu", decl.rust_name));
        if std::env::var_os("OPBOX_BLESS").is_some() {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            std::fs::write(&path, &text).map_err(|e| e.to_string())?;
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (OPBOX_BLESS=1 writes it)", path.display()))?;
        ensure(want == text, || {
            format!(
                "{} changed; OPBOX_BLESS=1 cargo test --test dsl rewrites it. Now:\n{text}",
                path.display()
            )
        })?;
    }
    Ok(Outcome::Pass)
}

fn gpu_matches_cpu() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let ex_cpu = example::run(Device::Cpu).map_err(s)?;
        let ex_gpu = example::run(cuda).map_err(s)?;
        example::check_cuda(&ex_cpu, &ex_gpu)?;
        ensure(
            run_int_ops(cuda).map_err(s)? == run_int_ops(Device::Cpu).map_err(s)?,
            || "int_ops differs".into(),
        )?;
        ensure(
            run_u8_ops(cuda).map_err(s)? == run_u8_ops(Device::Cpu).map_err(s)?,
            || "u8_ops differs".into(),
        )?;
        let (c, g) = (
            run_casts(Device::Cpu).map_err(s)?,
            run_casts(cuda).map_err(s)?,
        );
        ensure(c.0 == g.0 && c.1 == g.1 && c.2 == g.2, || {
            format!("float-to-int casts differ: {c:?} vs {g:?}")
        })?;
        let same16 = |a: &[f16], b: &[f16]| {
            a.iter()
                .zip(b)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        };
        let sameb = |a: &[bf16], b: &[bf16]| {
            a.iter()
                .zip(b)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        };
        let same64 =
            c.5.iter()
                .zip(&g.5)
                .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
        ensure(same16(&c.3, &g.3) && sameb(&c.4, &g.4) && same64, || {
            format!("half casts differ: {c:?} vs {g:?}")
        })?;
        ensure(
            run_control(cuda, 300).map_err(s)? == run_control(Device::Cpu, 300).map_err(s)?,
            || "control differs".into(),
        )?;
        for skip in [0, 4] {
            ensure(
                run_axpy4(cuda, skip).map_err(s)? == axpy4_reference(skip),
                || format!("axpy4 from element {skip} differs on CUDA"),
            )?;
        }
        misaligned_axpy4_is_refused(cuda)?;
        let (hc, hg) = (
            run_hmix(Device::Cpu).map_err(s)?,
            run_hmix(cuda).map_err(s)?,
        );
        ensure(same16(&hc, &hg), || {
            format!("hmix differs: {hc:?} vs {hg:?}")
        })?;
        for for_loop in [false, true] {
            ensure(
                run_block_sums_with(cuda, for_loop).map_err(s)? == block_sums_reference(),
                || format!("block_sums (for: {for_loop}) differs on CUDA"),
            )?;
        }
        ensure(
            run_reverse_blocks(cuda).map_err(s)? == reverse_blocks_reference(),
            || "reverse_blocks (dynamic shared memory) differs on CUDA".into(),
        )?;
        ensure(
            run_places(cuda).map_err(s)? == run_places(Device::Cpu).map_err(s)?,
            || "places differs".into(),
        )?;
        ensure(
            run_affine(cuda).map_err(s)? == run_affine(Device::Cpu).map_err(s)?,
            || "affine differs".into(),
        )?;
        // Within rounding: NVRTC may contract the multiply-adds into FMAs.
        let close = |a: &[f32], b: &[f32]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-5 * y.abs().max(1.0))
        };
        ensure(
            close(
                &run_local_arrays(cuda, 3).map_err(s)?,
                &run_local_arrays(Device::Cpu, 3).map_err(s)?,
            ),
            || "local_arrays differs".into(),
        )?;
        ensure(
            close(
                &run_local_across_warps(cuda).map_err(s)?,
                &run_local_across_warps(Device::Cpu).map_err(s)?,
            ),
            || "local_across_warps differs".into(),
        )?;
        ensure(run_scale_op(cuda).map_err(s)? == [2.0, -4.0, 7.0], || {
            "dsl_ops::scale_ on CUDA differs".into()
        })?;
        opbox::cuda::synchronize(0).map_err(s)?;
        Ok(Outcome::Pass)
    })
}

fn gpu_oob() -> TestResult {
    with_gpu(|| harness::run_child(CHILD_OOB))
}

/// In a child process: an out-of-bounds read on the GPU traps (a debug build's check), and the next
/// synchronize reports `Error::Cuda`. Exit 0 only if that is what happened.
fn child_oob() -> ExitCode {
    harness::child_verdict(|| {
        let x = Tensor::from_vec(vec![1.0f32; 8], &[8])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let y = Tensor::zeros(&[8], DType::F32, Device::Cuda(0)).map_err(s)?;
        if cfg!(debug_assertions) {
            oob::launch(LaunchConfig::for_elems(8), &x, &y, 8).map_err(s)?;
        } else {
            // A release build has no GPU bounds checks; this is the declaration a debug build
            // of this file would have.
            let mut decl = oob::DECL.clone();
            decl.options.to_mut().push("-DOPBOX_DSL_BOUNDS".into());
            let decl: &'static KernelDecl = Box::leak(Box::new(decl));
            let handle = Box::leak(Box::new(opbox::kernel::KernelHandle::new(decl)));
            let args = [
                opbox::kernel::LaunchArg::Tensor(&x),
                opbox::kernel::LaunchArg::Tensor(&y),
                opbox::kernel::LaunchArg::U32(8),
            ];
            opbox::kernel::launch(handle, &LaunchConfig::for_elems(8), &args, &[]).map_err(s)?;
        }
        match opbox::cuda::synchronize(0) {
            Err(Error::Cuda { kernel, message }) => {
                Ok(format!("Error::Cuda in {kernel}: {message}"))
            }
            Err(e) => Err(format!("expected Error::Cuda, got: {e}")),
            Ok(()) => Err("synchronize returned Ok after an out-of-bounds read".into()),
        }
    })
}
