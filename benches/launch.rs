//! GPU launch figures, printed as one table (a plain `main`, harness = false):
//!
//! Each of (a0)–(c) is timed two ways: synchronized throughput (rounds of 20 000 launches and
//! the synchronize after them, which the GPU's pace and a full launch queue enter), and
//! submission cost (rounds of 100 launch calls, queue never full, synchronize off the clock),
//! which is what the host path costs.
//!
//! - (a0) a raw `cuLaunchKernel` of an empty kernel (one pointer argument), with the cached
//!   `CUfunction` and a parameter array packed once: the floor every other launch is held to;
//! - (a) the same kernel through cudarc's launch builder;
//! - (b) the same kernel through its `#[extern_kernel]` stub (checks + cached lookup + launch);
//! - (c) the full op call: dispatcher → CUDA impl → stub;
//! - the first launch in a fresh process over a warm disk cache, context creation excluded (this
//!   binary re-runs itself as a child with `--first-launch-child`), beside the driver's floor:
//!   the same cubin loaded, found and launched with raw driver calls in a fresh process;
//! - an in-process repeat lookup of a loaded kernel;
//! - axpy over 256 M f32, in TB/s (3 × 4 B × n / time);
//! - (d) the same empty kernel with 2 `#[constexpr]` params (an int and a bool, as defines): the
//!   launch with its specialization lookup, and the lookup alone;
//! - (e) the stack-typed launch (`launch_stack` from a StableValue stack) against (b).
//!
//! Without a GPU it prints "skipped: no GPU" and exits 0. With `OPBOX_BENCH_LAUNCH_LOOP` set it
//! only launches one row in a loop, for a profiler (see [`LOOP`]).
//! `cargo bench --bench launch`; scripts/gpu-check runs it on the GPU machine.

use std::ffi::c_void;
use std::hint::black_box;
use std::process::{Command, ExitCode};
use std::time::Instant;

use cudarc::driver::{sys, LaunchConfig as RawConfig, PushKernelArg};
use opbox::cuda::{device, synchronize};
use opbox::prelude::*;

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/process.rs"]
mod process;
use process::minor_faults;

#[extern_kernel(source = "../examples/kernels/empty.cu")]
fn empty(x: In<[f32]>);

/// `empty` again, with 2 constexpr params that become unused defines: the same kernel, so (d)
/// against (b) is the cost of the specialization lookup.
#[extern_kernel(source = "../examples/kernels/empty.cu", entry = "empty")]
fn empty_k2(x: In<[f32]>, #[constexpr] OPBOX_BENCH_A: i32, #[constexpr] OPBOX_BENCH_B: bool);

#[extern_kernel(source = "../examples/kernels/axpby.cu", entry = "axpby")]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[stable_library(launchbench)]
fn launchbench(m: &mut Library) {
    m.def("noop(Tensor x) -> ()");
}

#[stable_impl(launchbench, CUDA)]
mod cuda {
    use super::empty;
    use opbox::prelude::*;

    pub fn noop(x: &Tensor) -> Result<()> {
        empty::launch(LaunchConfig::single(), x)
    }
}

const CHILD: &str = "--first-launch-child";
/// The child that times the first launch's parts: the cache lookup, the module load, and the
/// first launch of the loaded function.
const PARTS_CHILD: &str = "--first-launch-parts-child";
/// The child that times the driver alone on the first launch's path.
const DRIVER_CHILD: &str = "--first-launch-driver-child";

fn main() -> ExitCode {
    let arg = |flag: &str| std::env::args().any(|a| a == flag);
    let result = if arg(CHILD) {
        first_launch_child()
    } else if arg(PARTS_CHILD) {
        first_launch_parts_child()
    } else if arg(DRIVER_CHILD) {
        first_launch_driver_child()
    } else {
        bench()
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("launch bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// In a fresh process: create the context (excluded), then time the first launch of `empty`,
/// which finds its cubin in the disk cache the parent filled. Prints `first_launch_ms=<ms>`.
fn first_launch_child() -> opbox::Result<()> {
    let x = Tensor::zeros(&[1], DType::F32, Device::Cuda(0))?;
    synchronize(0)?;
    let faults = minor_faults();
    let t = Instant::now();
    empty::launch(LaunchConfig::single(), &x)?;
    let launched = t.elapsed();
    let faults = minor_faults() - faults;
    synchronize(0)?;
    let done = t.elapsed();
    println!(
        "first_launch_ms={:.4} first_launch_done_ms={:.4} first_launch_faults={faults}",
        launched.as_secs_f64() * 1e3,
        done.as_secs_f64() * 1e3
    );
    Ok(())
}

/// [`first_launch_child`]'s launch in three timed parts, and the lookup once more, warm. The
/// lookup also runs inside the load, so the parts add up to a little more than the first launch.
fn first_launch_parts_child() -> opbox::Result<()> {
    let x = Tensor::zeros(&[1], DType::F32, Device::Cuda(0))?;
    synchronize(0)?;
    let cc = device(0)?.compute_capability;
    let t = Instant::now();
    opbox::cuda::compile_for_device(&empty::DECL, &[], cc, opbox::cuda::default_cache())?;
    let lookup = t.elapsed();
    // The same lookup again, warm: what of the first was first-time work.
    let t = Instant::now();
    opbox::cuda::compile_for_device(&empty::DECL, &[], cc, opbox::cuda::default_cache())?;
    let again = t.elapsed();
    let t = Instant::now();
    empty::HANDLE.get(0)?;
    let load = t.elapsed();
    let t = Instant::now();
    empty::launch(LaunchConfig::single(), &x)?;
    let launch = t.elapsed();
    synchronize(0)?;
    println!(
        "lookup_ms={:.4} again_ms={:.4} load_ms={:.4} launch_ms={:.4}",
        lookup.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3,
        load.as_secs_f64() * 1e3,
        launch.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Fresh processes per first-launch figure: one process's first launch varies by ±20% on the
/// device (page faults, the driver's lazy work), so a median of three moved with a single run.
const CHILD_RUNS: usize = 9;

/// The floor under [`first_launch_child`]: in a fresh process, after the same context creation
/// and allocation, the same image (read from the disk cache off the clock) loaded, its function
/// found and launched with raw driver calls. What opbox adds to a first launch is the difference.
/// Prints `driver_first_launch_ms=<ms>`.
fn first_launch_driver_child() -> opbox::Result<()> {
    let x = Tensor::zeros(&[1], DType::F32, Device::Cuda(0))?;
    synchronize(0)?;
    let dev = device(0)?;
    let compiled = opbox::cuda::compile_for_device(
        &empty::DECL,
        &[],
        dev.compute_capability,
        opbox::cuda::default_cache(),
    )?;
    let name =
        std::ffi::CString::new(compiled.lowered_name()).map_err(|e| Error::msg(e.to_string()))?;
    // A PTX image is loaded as a C string; a cubin's bytes are read by their own length.
    let mut image = compiled.artifact.image;
    image.push(0);
    let (mut ptr, _) = x.cuda_ptr()?;
    let mut params = [(&raw mut ptr).cast::<c_void>()];
    let driver =
        |what: &str, r: sys::CUresult| r.result().map_err(|e| Error::msg(format!("{what}: {e}")));
    dev.context
        .bind_to_thread()
        .map_err(|e| Error::msg(e.to_string()))?;
    let stream = dev.stream.cu_stream();
    let mut module = std::ptr::null_mut();
    let mut function = std::ptr::null_mut();
    let faults = minor_faults();
    let t = Instant::now();
    // SAFETY: `image` is a whole cubin (or NUL-terminated PTX) that outlives the call, and the
    // device's context is current on this thread.
    driver("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut module, image.as_ptr().cast())
    })?;
    // SAFETY: `module` was just loaded; `name` is a NUL-terminated symbol of it.
    driver("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut function, module, name.as_ptr())
    })?;
    // SAFETY: `function` is `empty(const float*)`; `params` holds one pointer to x's live
    // allocation; `stream` is the current context's default stream.
    driver("cuLaunchKernel", unsafe {
        raw_single_launch(function, stream, &mut params)
    })?;
    let launched = t.elapsed();
    let faults = minor_faults() - faults;
    synchronize(0)?;
    println!(
        "driver_first_launch_ms={:.4} driver_first_launch_faults={faults}",
        launched.as_secs_f64() * 1e3
    );
    Ok(())
}

/// `cuLaunchKernel` of `function` on one thread of one block, with no dynamic shared memory.
///
/// # Safety
/// `function` is loaded in the current context and `stream` is that context's; `params` holds
/// one pointer per parameter of `function`, each to a live value of that parameter's type.
unsafe fn raw_single_launch(
    function: sys::CUfunction,
    stream: sys::CUstream,
    params: &mut [*mut c_void],
) -> sys::CUresult {
    // SAFETY: the caller's contract.
    unsafe {
        sys::cuLaunchKernel(
            function,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

/// Runs this binary again as a child with `flag`, [`CHILD_RUNS`] times, and returns each `key=`
/// figure's median.
fn child_medians(flag: &str, keys: &[&str]) -> opbox::Result<Vec<f64>> {
    let exe = std::env::current_exe().map_err(|e| Error::msg(e.to_string()))?;
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); keys.len()];
    for _ in 0..CHILD_RUNS {
        let out = Command::new(&exe)
            .arg(flag)
            .output()
            .map_err(|e| Error::msg(e.to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        for (key, samples) in keys.iter().zip(&mut runs) {
            let prefix = format!("{key}=");
            let value = text
                .split_whitespace()
                .find_map(|w| w.strip_prefix(prefix.as_str()))
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| {
                    Error::msg(format!(
                        "child {flag} failed: {text}{}",
                        String::from_utf8_lossy(&out.stderr)
                    ))
                })?;
            samples.push(value);
        }
    }
    Ok(runs.into_iter().map(gpu::median).collect())
}

/// Mean ns of `f` over `reps` calls.
fn ns_per_call(reps: u32, mut f: impl FnMut() -> opbox::Result<()>) -> opbox::Result<f64> {
    let t = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e9 / f64::from(reps))
}

/// One way of launching, measured by [`interleaved`].
type Launcher<'a> = Box<dyn FnMut() -> opbox::Result<()> + 'a>;

/// How [`interleaved`] times a round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timing {
    /// Launches and the synchronize after them: throughput, which the GPU's own pace and a full
    /// launch queue enter too.
    Synchronized,
    /// The launch calls alone, in rounds short enough that the queue never fills: what the
    /// host path costs, with the synchronize left outside the clock.
    Submission,
}

/// Launches a submission-cost round makes: far below the launch queue's depth, so no call
/// waits for the GPU.
const SUBMISSION_ROUND: usize = 100;

/// Set to `<a0|a|b|c>[:<rounds>]`: that many rounds of [`SUBMISSION_ROUND`] launches of one row
/// (a synchronize after each, so the queue never fills), and exit: for `perf record` on the GPU
/// machine, to see where a row's submission cost goes.
const LOOP: &str = "OPBOX_BENCH_LAUNCH_LOOP";

fn spin(spec: &str, launchers: &mut [Launcher<'_>]) -> opbox::Result<()> {
    let (row, rounds) = spec.split_once(':').unwrap_or((spec, "10000"));
    let rounds: usize = rounds
        .parse()
        .map_err(|_| Error::msg(format!("{LOOP}: '{rounds}' is not a number of rounds")))?;
    // The order `launchers` holds them in.
    let which = ["a", "b", "c", "a0"]
        .iter()
        .position(|r| *r == row)
        .ok_or_else(|| Error::msg(format!("{LOOP}: no row '{row}' (a0, a, b or c)")))?;
    let launch = &mut launchers[which];
    for _ in 0..rounds {
        for _ in 0..SUBMISSION_ROUND {
            launch()?;
        }
        synchronize(0)?;
    }
    Ok(())
}

/// Median per-launch µs of each launcher over `rounds` rounds of `per_round` launches each.
/// The launchers take turns within every round (in a rotating order), so clock and queue drift
/// between phases cannot masquerade as a difference between them.
fn interleaved(
    rounds: usize,
    per_round: usize,
    launchers: &mut [Launcher<'_>],
) -> opbox::Result<Vec<f64>> {
    interleaved_timed(Timing::Synchronized, rounds, per_round, launchers)
}

fn interleaved_timed(
    timing: Timing,
    rounds: usize,
    per_round: usize,
    launchers: &mut [Launcher<'_>],
) -> opbox::Result<Vec<f64>> {
    for launch in launchers.iter_mut() {
        for _ in 0..per_round {
            launch()?;
        }
    }
    synchronize(0)?;
    let n = launchers.len();
    let mut samples = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let which = (round + k) % n;
            let launch = &mut launchers[which];
            let t = Instant::now();
            for _ in 0..per_round {
                launch()?;
            }
            let submitted = t.elapsed();
            synchronize(0)?;
            let spent = match timing {
                Timing::Synchronized => t.elapsed(),
                Timing::Submission => submitted,
            };
            samples[which].push(spent.as_secs_f64() * 1e6 / per_round as f64);
        }
    }
    Ok(samples.into_iter().map(gpu::median).collect())
}

fn bench() -> opbox::Result<()> {
    if let Some(why) = gpu::skip_reason() {
        println!("skipped: {why}");
        return Ok(());
    }
    let dev = device(0)?;
    let x = Tensor::zeros(&[1], DType::F32, Device::Cuda(0))?;
    // Loads `empty` (compiling it into the disk cache when cold), for the child and for (a).
    empty::launch(LaunchConfig::single(), &x)?;
    synchronize(0)?;

    let (rounds, per_round) = (31, 20_000);
    let function = &empty::HANDLE.get(0)?.function;
    let (ptr, _) = x.cuda_ptr()?;
    let raw_cfg = RawConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let op = opbox::op("launchbench::noop")?;
    // (a0) launches with the driver call alone, which uses the thread's current context: make
    // it current here rather than rely on (a) having run first (the builder binds it every time).
    dev.context
        .bind_to_thread()
        .map_err(|e| Error::msg(e.to_string()))?;
    let (cu_function, cu_stream) = (function.cu_function(), dev.stream.cu_stream());
    let mut raw_ptr = ptr;
    let mut raw_params = [(&raw mut raw_ptr).cast::<c_void>()];
    let mut launchers: [Launcher<'_>; 4] = [
        Box::new(|| {
            let mut b = dev.stream.launch_builder(function);
            b.arg(&ptr);
            // SAFETY: `empty(const float*)` takes one device pointer; `ptr` is x's live
            // allocation.
            unsafe { b.launch(raw_cfg) }
                .map(|_| ())
                .map_err(|e| Error::msg(e.to_string()))
        }),
        Box::new(|| empty::launch(LaunchConfig::single(), black_box(&x))),
        Box::new(|| op.call::<_, ()>((black_box(&x),))),
        Box::new(|| {
            // SAFETY: `cu_function` is `empty(const float*)`, loaded in the current context
            // and kept alive by its handle; `raw_params` holds one pointer to `raw_ptr`, x's
            // live allocation, and both outlive the launches; `cu_stream` is that context's
            // default stream.
            unsafe { raw_single_launch(cu_function, cu_stream, &mut raw_params) }
                .result()
                .map_err(|e| Error::msg(e.to_string()))
        }),
    ];
    if let Ok(spec) = std::env::var(LOOP) {
        return spin(&spec, &mut launchers);
    }
    let abc = interleaved(rounds, per_round, &mut launchers)?;
    // The same four, timed as submission cost.
    let submit = interleaved_timed(Timing::Submission, 301, SUBMISSION_ROUND, &mut launchers)?;
    let (a, b, c) = (abc[0], abc[1], abc[2]);
    let a0 = abc[3];
    let (sa, sb, sc, sa0) = (submit[0], submit[1], submit[2], submit[3]);

    let reps = 10_000_000u32;
    let t = Instant::now();
    for _ in 0..reps {
        black_box(empty::HANDLE.get(black_box(0))?);
    }
    let lookup_ns = t.elapsed().as_secs_f64() * 1e9 / f64::from(reps);

    // (d): 2 constexprs; two specializations loaded, the second one looked up.
    empty_k2::launch(LaunchConfig::single(), &x, 1, false)?;
    empty_k2::launch(LaunchConfig::single(), &x, 3, true)?;
    synchronize(0)?;
    let d = interleaved(
        rounds,
        per_round,
        &mut [Box::new(|| {
            empty_k2::launch(
                LaunchConfig::single(),
                black_box(&x),
                black_box(3),
                black_box(true),
            )
        })],
    )?[0];
    let spec_values = [
        opbox::cuda::codegen::ConstValue::I32(3),
        opbox::cuda::codegen::ConstValue::Bool(true),
    ];
    let t = Instant::now();
    for _ in 0..reps {
        black_box(empty_k2::HANDLE.get_specialized(black_box(0), black_box(&spec_values))?);
    }
    let spec_ns = t.elapsed().as_secs_f64() * 1e9 / f64::from(reps);

    // (e): the stack-typed launch of `empty`, and (b) again in the same run, interleaved.
    let stack = [StableValue::tensor(x.clone())];
    let eb = interleaved(
        rounds,
        per_round,
        &mut [
            Box::new(|| {
                opbox::kernel::launch_stack(
                    &empty::HANDLE,
                    &LaunchConfig::single(),
                    black_box(&stack),
                )
            }),
            Box::new(|| empty::launch(LaunchConfig::single(), black_box(&x))),
        ],
    )?;
    let (e, b2) = (eb[0], eb[1]);

    let first = child_medians(CHILD, &["first_launch_ms", "first_launch_faults"])?;
    let (first_ms, first_faults) = (first[0], first[1]);
    let driver = child_medians(
        DRIVER_CHILD,
        &["driver_first_launch_ms", "driver_first_launch_faults"],
    )?;
    let (driver_ms, driver_faults) = (driver[0], driver[1]);
    let parts = child_medians(
        PARTS_CHILD,
        &["lookup_ms", "again_ms", "load_ms", "launch_ms"],
    )?;

    // Two costs (b) no longer pays: the general path's checks and packing (`prepare`, which a
    // kernel without a launch plan still takes: constexprs, structs, DSL kernels), and the
    // context check cudarc's builder makes before every launch (bind_to_thread, one
    // cuCtxGetCurrent), which opbox makes only after a launch fails.
    let cfg = LaunchConfig::single();
    let prepare_ns = ns_per_call(reps, || {
        let mut buffer = opbox::kernel::ParamBuffer::new();
        let args = [opbox::kernel::LaunchArg::Tensor(black_box(&x))];
        let prepared = opbox::kernel::prepare(&empty::HANDLE, &cfg, &args, &[], &mut buffer)?;
        black_box(&prepared);
        Ok(())
    })?;
    let bind_ns = ns_per_call(reps, || {
        dev.context
            .bind_to_thread()
            .map_err(|e| Error::msg(e.to_string()))
    })?;

    let n: usize = 256 << 20;
    let xs = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
    let ys = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
    let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0))?;
    let run = || {
        axpby_f32::launch(
            LaunchConfig::for_elems(n),
            &xs,
            &ys,
            &out,
            2.0,
            3.0,
            n as i64,
        )
    };
    for _ in 0..3 {
        run()?;
    }
    synchronize(0)?;
    let iters = 20;
    let t = Instant::now();
    for _ in 0..iters {
        run()?;
    }
    synchronize(0)?;
    let secs = t.elapsed().as_secs_f64() / f64::from(iters);
    let tbps = 3.0 * 4.0 * n as f64 / secs / 1e12;

    println!(
        "launch bench on {} (sm_{}{})",
        dev.name, dev.compute_capability.0, dev.compute_capability.1
    );
    println!("| figure | value | goal | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| (a0) raw cuLaunchKernel, empty kernel, packed params (synchronized throughput, {rounds} rounds × {per_round}) | {a0:.3} µs | | (a)/(a0) = {:.3} |",
        a / a0
    );
    println!("| (a) cudarc launch builder, empty kernel | {a:.3} µs | (anchor 4.04 µs) | 1.00 |");
    println!(
        "| (b) extern_kernel stub launch | {b:.3} µs | | (b)/(a) = {:.3} |",
        b / a
    );
    println!(
        "| (c) op call → CUDA impl → stub | {c:.3} µs | (c)/(a) ≤ 1.00 | (c)/(a) = {:.3} {} |",
        c / a,
        verdict(c / a <= 1.00)
    );
    println!(
        "| (c) against (a0) raw cuLaunchKernel | {c:.3} µs | (c)/(a0) ≤ 1.05 | (c)/(a0) = {:.3} {} |",
        c / a0,
        verdict(c / a0 <= 1.05)
    );
    println!(
        "| submission cost (launch calls alone, 301 rounds × 100, queue never full): (a0) raw / (a) builder / (b) stub / (c) op | {sa0:.3} / {sa:.3} / {sb:.3} / {sc:.3} µs | | (b)/(a) = {:.3} |",
        sb / sa
    );
    println!(
        "| (c) op call → CUDA impl → stub, submission cost | {sc:.3} µs | (c)/(a) ≤ 1.00 | (c)/(a) = {:.3} {} |",
        sc / sa,
        verdict(sc / sa <= 1.00)
    );
    println!(
        "| (c) against (a0) raw cuLaunchKernel, submission cost | {sc:.3} µs | (c)/(a0) ≤ 1.05 | (c)/(a0) = {:.3} {} |",
        sc / sa0,
        verdict(sc / sa0 <= 1.05)
    );
    println!(
        "| first launch, fresh process, warm disk cache (median of {CHILD_RUNS}) | {first_ms:.3} ms | ≤ 0.2 ms | {:.2} of goal {} |",
        first_ms / 0.2,
        verdict(first_ms <= 0.2)
    );
    println!(
        "| the driver's floor: the same cubin loaded, found and launched with raw driver calls, fresh process (median of {CHILD_RUNS}) | {driver_ms:.3} ms | | opbox / driver = {:.2} (+{:.3} ms) |",
        first_ms / driver_ms,
        first_ms - driver_ms
    );
    println!(
        "| minor page faults during the first launch (median of {CHILD_RUNS}): opbox / the driver's floor | {first_faults:.0} / {driver_faults:.0} | | |"
    );
    println!(
        "| first launch's parts: disk-cache lookup (the same again) / module load / first launch of the loaded kernel | {:.3} ({:.3}) / {:.3} / {:.3} ms | | |",
        parts[0], parts[1], parts[2], parts[3]
    );
    println!(
        "| what (b) skips: the general path's prepare (checks + packing) / cudarc's bind_to_thread | {prepare_ns:.1} / {bind_ns:.1} ns | | |"
    );
    println!(
        "| in-process repeat lookup | {lookup_ns:.1} ns | ≤ 100 ns | {:.2} of goal {} |",
        lookup_ns / 100.0,
        verdict(lookup_ns <= 100.0)
    );
    println!(
        "| (d) stub launch, 2 constexpr params (same empty kernel) | {d:.3} µs | | (d)/(b) = {:.3} |",
        d / b
    );
    println!(
        "| specialization lookup, 2 constexpr params | {spec_ns:.1} ns | ≤ 100 ns | {:.2} of goal {} |",
        spec_ns / 100.0,
        verdict(spec_ns <= 100.0)
    );
    println!(
        "| (e) stack-typed launch vs (b) in the same run ({b2:.3} µs) | {e:.3} µs | (e)/(b) ≤ 1.15 | (e)/(b) = {:.3} {} |",
        e / b2,
        verdict(e / b2 <= 1.15)
    );
    println!(
        "| axpy, 256 M f32 | {tbps:.3} TB/s ({:.3} ms) | ≥ 3.2 TB/s | {:.3} of goal, {:.3} of raw 3.43 {} |",
        secs * 1e3,
        tbps / 3.2,
        tbps / 3.43,
        verdict(tbps >= 3.2)
    );
    // For scripts/gpu-check's table beside PyTorch's figures (benches/peers/table.py).
    println!("opbox cuda_launch raw_us={a0:.4} builder_us={a:.4} stub_us={b:.4} op_us={c:.4}");
    println!("opbox cuda_submit raw_us={sa0:.4} builder_us={sa:.4} stub_us={sb:.4} op_us={sc:.4}");
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "(met)"
    } else {
        "(MISSED)"
    }
}
