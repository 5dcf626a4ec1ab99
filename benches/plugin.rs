//! A plugin's CPU op through the host against the same op registered in process, in one run:
//! `cplug::fails(int x) -> int` (for x <= 0 it returns -x) from the C plugin of
//! tests/fixtures/c_plugin, compiled here with `$CC` or `cc`, against an in-process `negate`.
//!
//! Before the benches it loads `tests/fixtures/c_plugin/many_ops.c` (10,000 ops) once and prints
//! how long loading and registering took (a plugin loads once per process, so it is timed once),
//! and the two boxed calls measured interleaved, with their ratio.
//!
//! It also loads the Rust fixture plugin (`cargo build --release --example plugin_fixture`, or
//! `$OPBOX_PLUGIN_DIR`) and prints its tensor ops against the same bodies registered in
//! process, interleaved: `rplug::keep` and `rplug::scale` on a CPU tensor, and on a machine with
//! a GPU `rplug::scale` and `rplug::keep` on CUDA; without the fixture or without a GPU it
//! prints why a line is skipped. On a GPU it also sets `rplug::noop` (one launch of an empty
//! kernel) beside the same op in process: what the boundary adds to a CUDA op, of which CUDA
//! `keep` (no launch) is the boundary's share.
//!
//! `cargo bench --bench plugin -- --warm-up-time 1 --measurement-time 3`
//!
//! With `OPBOX_BENCH_PLUGIN_LOOP=<row>[:<calls>]` it only makes `<calls>` (default 10^7) boxed
//! calls of one row and exits, for `perf stat -e instructions` or `perf record`, which count
//! what a call costs without the noise of a shared machine: rows `int-local`, `int-plugin`,
//! `keep-local`, `keep-plugin`, `scale-local`, `scale-plugin`, `noop-local` and `noop-plugin`
//! (a CUDA tensor: a GPU only), and `int-…-typed` and `keep-…-typed` for the typed `op.call` of
//! the same op.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, Criterion};
use opbox::prelude::*;

#[path = "common/process.rs"]
mod process;
use process::minor_faults;

#[stable_library(inproc)]
fn inproc(m: &mut Library) {
    m.def("negate(int x) -> int");
    m.def("scale(Tensor x, float s) -> Tensor");
    m.def("keep(Tensor x) -> Tensor");
    m.def("noop(Tensor x) -> ()");
    m.def("noop10(Tensor x) -> ()");
}

/// The fixture's empty kernel, launched by `noop` on both sides.
#[extern_kernel(source = "../examples/kernels/empty.cu")]
fn empty(x: In<[f32]>);

/// As tests/fixtures/rust_plugin's `rplug::noop`: one launch is the whole op.
#[stable_impl(inproc::noop, CUDA)]
fn noop_cuda(x: &Tensor) -> opbox::Result<()> {
    empty::launch(LaunchConfig::single(), x)
}

/// As the fixture's `rplug::noop10`: ten launches a call.
#[stable_impl(inproc::noop10, CUDA)]
fn noop10_cuda(x: &Tensor) -> opbox::Result<()> {
    for _ in 0..10 {
        empty::launch(LaunchConfig::single(), x)?;
    }
    Ok(())
}

#[stable_impl(inproc, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn negate(x: i64) -> opbox::Result<i64> {
        if x > 0 {
            return Err(opbox::Error::msg("x must not be positive"));
        }
        Ok(-x)
    }

    /// The body of tests/fixtures/rust_plugin's `rplug::scale`, so both sides do the same work.
    pub fn scale(x: &Tensor, s: f64) -> opbox::Result<Tensor> {
        let v: Vec<f32> = x.to_vec()?;
        Tensor::from_vec(v.iter().map(|a| a * s as f32).collect(), x.shape())
    }

    /// The body of tests/fixtures/rust_plugin's `rplug::keep`: the cost of a call is all
    /// boundary.
    pub fn keep(x: &Tensor) -> Tensor {
        x.clone()
    }
}

/// On CUDA as the fixture's `rplug::keep` is: beside `noop`, it splits what the boundary costs
/// a CUDA tensor from what the plugin's launch adds.
#[stable_impl(inproc::keep, CUDA)]
fn keep_cuda(x: &Tensor) -> Tensor {
    cpu::keep(x)
}

/// On CUDA as the fixture's `rplug::scale` is.
#[stable_impl(inproc::scale, CUDA)]
fn scale_cuda(x: &Tensor, s: f64) -> opbox::Result<Tensor> {
    cpu::scale(&x.to(Device::Cpu)?, s)?.to(x.device())
}

fn c_plugin(dir: &Path, source: &str) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(format!("lib{source}.so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(cc)
        .args(["-std=c11", "-O2", "-shared", "-fPIC"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg("-o")
        .arg(&out)
        .arg(
            root.join("tests/fixtures/c_plugin")
                .join(format!("{source}.c")),
        )
        .status()
        .expect("running the C compiler");
    assert!(status.success(), "compiling the C plugin failed");
    out
}

/// Compiles and loads tests/fixtures/c_plugin/plugin.c (a plugin stays loaded for the process,
/// so its directory is kept too).
fn load_c_plugin() {
    let dir = tempfile::tempdir().expect("a temp dir").keep();
    opbox::plugin::load(c_plugin(&dir, "plugin")).expect("the C plugin loads");
}

fn int_op(c: &mut Criterion) {
    let plugin = opbox::op("cplug::fails").unwrap();
    let local = opbox::op("inproc::negate").unwrap();
    let mut group = c.benchmark_group("(int) -> int");
    group.bench_function("in process, typed", |b| {
        b.iter(|| local.call::<_, i64>(black_box((-3i64,))).unwrap())
    });
    group.bench_function("plugin, typed", |b| {
        b.iter(|| plugin.call::<_, i64>(black_box((-3i64,))).unwrap())
    });
    let mut stack = Stack::new();
    group.bench_function("in process, boxed", |b| {
        b.iter(|| {
            stack.clear();
            stack.push(black_box(-3i64));
            local.call_boxed(black_box(&mut stack)).unwrap();
        })
    });
    group.bench_function("plugin, boxed", |b| {
        b.iter(|| {
            stack.clear();
            stack.push(black_box(-3i64));
            plugin.call_boxed(black_box(&mut stack)).unwrap();
        })
    });
    group.finish();
}

/// Set in a child process of this bench: the plugin it loads, timed, and then it exits.
const LOAD_CHILD: &str = "OPBOX_BENCH_PLUGIN_LOAD";

/// Loads and registers the 10,000-op plugin in fresh processes (a plugin loads once per
/// process) and prints the median time with the range.
fn load_many() {
    const RUNS: usize = 11;
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = c_plugin(dir.path(), "many_ops");
    let exe = std::env::current_exe().expect("the bench's path");
    let mut ms: Vec<f64> = Vec::with_capacity(RUNS);
    let mut faults: Vec<f64> = Vec::with_capacity(RUNS);
    let mut ops = String::new();
    for _ in 0..RUNS {
        let out = Command::new(&exe)
            .env(LOAD_CHILD, &path)
            .output()
            .expect("running the bench again to load the plugin");
        assert!(out.status.success(), "the child load failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut fields = text.split_whitespace();
        let mut next = || fields.next().expect("'<ops> <ms> <minor faults>'");
        ops = next().to_string();
        ms.push(next().parse().expect("milliseconds"));
        faults.push(next().parse().expect("a fault count"));
    }
    ms.sort_by(f64::total_cmp);
    faults.sort_by(f64::total_cmp);
    println!(
        "load and register a plugin of {ops} ops, {RUNS} fresh processes: median {:.2} ms \
         ({:.2}..{:.2}), {:.0} minor page faults",
        ms[RUNS / 2],
        ms[0],
        ms[RUNS - 1],
        faults[RUNS / 2]
    );
}

/// In a child of [`load_many`]: loads `path` after the in-process registry is up and prints
/// `<ops> <ms> <minor page faults>`.
fn load_child(path: &std::ffi::OsStr) {
    opbox::init().expect("the in-process registry");
    let faults = minor_faults();
    let start = std::time::Instant::now();
    let info = opbox::plugin::load(path).expect("the 10,000-op plugin loads");
    let took = start.elapsed();
    let faults = minor_faults() - faults;
    println!("{} {} {faults}", info.ops.len(), took.as_secs_f64() * 1e3);
}

/// `local` and `plugin` in short alternating batches of `calls`, `rounds` times; the median
/// ns per call of each. On a shared machine a burst of load slows both alike, so the ratio of
/// the two medians is steadier than two separate criterion runs. Both run on the same stack,
/// so where it lies in memory (which moves with the bench's code: aliasing with the callees'
/// frames cost one side 20 ns in one build and not in another) is the same for both.
fn interleaved(
    rounds: usize,
    calls: u32,
    local: impl FnMut(&mut Stack),
    plugin: impl FnMut(&mut Stack),
) -> (f64, f64) {
    interleaved_settled(rounds, calls, || {}, local, plugin)
}

/// [`interleaved`], running `settle` after each batch, off the clock (a CUDA synchronize, so
/// that each batch of launches finds the queue empty and times what the host path costs).
fn interleaved_settled(
    rounds: usize,
    calls: u32,
    settle: impl Fn(),
    mut local: impl FnMut(&mut Stack),
    mut plugin: impl FnMut(&mut Stack),
) -> (f64, f64) {
    let mut stack = Stack::new();
    let mut batch = |f: &mut dyn FnMut(&mut Stack)| {
        let start = std::time::Instant::now();
        for _ in 0..calls {
            f(&mut stack);
        }
        let ns = start.elapsed().as_secs_f64() * 1e9 / f64::from(calls);
        settle();
        ns
    };
    let (mut in_process, mut plugin_ns) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        in_process.push(batch(&mut local));
        plugin_ns.push(batch(&mut plugin));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(in_process), median(plugin_ns))
}

/// The boxed calls of both `(int) -> int` ops, interleaved.
fn paired() {
    let plugin = opbox::op("cplug::fails").unwrap();
    let local = opbox::op("inproc::negate").unwrap();
    let (a, b) = interleaved(
        301,
        20_000,
        |stack| {
            stack.clear();
            stack.push(black_box(-3i64));
            local.call_boxed(black_box(stack)).unwrap();
        },
        |stack| {
            stack.clear();
            stack.push(black_box(-3i64));
            plugin.call_boxed(black_box(stack)).unwrap();
        },
    );
    println!(
        "(int) -> int boxed, interleaved medians: in process {a:.1} ns, plugin {b:.1} ns, \
         plugin / in process {:.3}",
        b / a
    );
}

/// The Rust fixture plugin, where `cargo build --release --example plugin_fixture` puts it
/// (beside this bench's directory), or in `$OPBOX_PLUGIN_DIR`.
fn rust_plugin() -> std::path::PathBuf {
    let file = format!(
        "{}plugin_fixture{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    match std::env::var_os("OPBOX_PLUGIN_DIR") {
        Some(dir) => std::path::PathBuf::from(dir).join(file),
        None => {
            let exe = std::env::current_exe().expect("the bench's path");
            // target/release/deps/plugin-<hash> -> target/release/examples
            let profile = exe
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>");
            profile.join("examples").join(file)
        }
    }
}

/// Loads the Rust fixture plugin, or says why not and returns false.
fn load_rust_plugin() -> bool {
    let path = rust_plugin();
    if !path.is_file() {
        println!(
            "Rust plugin ops: skipped, {} is not built (cargo build --release --example \
             plugin_fixture)",
            path.display()
        );
        return false;
    }
    opbox::plugin::load(&path).expect("the Rust fixture plugin loads");
    true
}

/// A CPU tensor of 1024 floats.
fn cpu_tensor() -> Tensor {
    Tensor::from_vec(vec![1.0f32; 1024], &[1024]).expect("a CPU tensor")
}

/// `rplug::<name>` against `inproc::<name>`, boxed on `x` (and the float 3.0 when `args` is 2),
/// interleaved: `rounds` batches of `calls` each, `settle` after each batch off the clock.
fn tensor_op_pair(
    name: &str,
    args: usize,
    x: &Tensor,
    (rounds, calls): (usize, u32),
    settle: impl Fn(),
) -> (f64, f64) {
    let plugin = opbox::op(&format!("rplug::{name}")).unwrap();
    let local = opbox::op(&format!("inproc::{name}")).unwrap();
    let push = |stack: &mut Stack| {
        stack.clear();
        stack.push(x.clone());
        if args == 2 {
            stack.push(3.0f64);
        }
    };
    interleaved_settled(
        rounds,
        calls,
        settle,
        |stack| {
            push(stack);
            local.call_boxed(black_box(stack)).unwrap();
        },
        |stack| {
            push(stack);
            plugin.call_boxed(black_box(stack)).unwrap();
        },
    )
}

/// The Rust plugin's tensor ops on a CPU tensor against the same bodies in process, boxed,
/// interleaved: `keep` (all boundary) and `scale` (boundary and 1024 floats of work).
fn cpu_paired() {
    let x = cpu_tensor();
    for (name, args) in [("keep", 1), ("scale", 2)] {
        let (a, b) = tensor_op_pair(name, args, &x, (101, 2_000), || {});
        println!(
            "CPU {name} boxed, 1024 floats, interleaved medians: in process {a:.1} ns, plugin \
             {b:.1} ns, plugin / in process {:.3}",
            b / a
        );
    }
}

/// A plugin's CUDA ops against the same bodies in process, boxed, interleaved (a GPU only):
/// `noop`, whose whole work is one launch of an empty kernel (the boundary against a launch),
/// `noop10`, ten launches a call (what a launch costs in the plugin, apart from the boundary),
/// `keep`, which returns its input with no launch (the boundary alone, on a CUDA tensor), and
/// `scale`, which copies to the host and back.
fn cuda_paired() {
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            println!("CUDA plugin ops: skipped, no GPU ({other:?})");
            return;
        }
    }
    let x = Tensor::from_vec(vec![1.0f32; 1024], &[1024])
        .and_then(|t| t.to(Device::Cuda(0)))
        .expect("a CUDA tensor");
    let settle = || opbox::cuda::synchronize(0).expect("the launches ran");
    // noop: rounds of 100 launches, as benches/launch.rs times submission cost.
    let rows = [
        ("noop", 1, 301, 100),
        ("noop10", 1, 301, 10),
        ("keep", 1, 301, 100),
        ("scale", 2, 51, 200),
    ];
    for (name, args, rounds, calls) in rows {
        let (a, b) = tensor_op_pair(name, args, &x, (rounds, calls), settle);
        println!(
            "CUDA {name} boxed on cuda:0, interleaved medians: in process {:.3} us, plugin \
             {:.3} us, plugin / in process {:.3}",
            a / 1e3,
            b / 1e3,
            b / a
        );
    }
}

/// Set to `<row>[:<calls>]`: that many boxed calls of one row, and exit (see the top).
const LOOP: &str = "OPBOX_BENCH_PLUGIN_LOOP";

fn spin(spec: &str) {
    let (row, calls) = match spec.split_once(':') {
        Some((row, n)) => (row, n.parse().expect("a number of calls")),
        None => (spec, 10_000_000u64),
    };
    let (row, typed) = match row.strip_suffix("-typed") {
        Some(row) => (row, true),
        None => (row, false),
    };
    let (what, side) = row.split_once('-').expect("<op>-<local|plugin>[-typed]");
    let op = match (what, side) {
        ("int", "local") => opbox::op("inproc::negate"),
        ("int", "plugin") => opbox::op("cplug::fails"),
        (name, "local") => opbox::op(&format!("inproc::{name}")),
        (name, "plugin") => opbox::op(&format!("rplug::{name}")),
        _ => panic!("no row {row}"),
    }
    .unwrap();
    let x = match what {
        "noop" => cpu_tensor()
            .to(Device::Cuda(0))
            .expect("a CUDA tensor (noop needs a GPU)"),
        _ => cpu_tensor(),
    };
    if typed {
        for _ in 0..calls {
            if what == "int" {
                black_box(op.call::<_, i64>(black_box((-3i64,))).unwrap());
            } else {
                black_box(op.call::<_, Tensor>(black_box((&x,))).unwrap());
            }
        }
        return;
    }
    let mut stack = Stack::new();
    for i in 0..calls {
        // Launches in rounds of 100, as `cuda_paired` times them: a full queue would block.
        if what == "noop" && i % 100 == 0 {
            opbox::cuda::synchronize(0).expect("the launches ran");
        }
        stack.clear();
        if what == "int" {
            stack.push(black_box(-3i64));
        } else {
            stack.push(x.clone());
            if what == "scale" {
                stack.push(3.0f64);
            }
        }
        op.call_boxed(black_box(&mut stack)).unwrap();
    }
}

criterion_group!(benches, int_op);

fn main() {
    if let Some(path) = std::env::var_os(LOAD_CHILD) {
        load_child(&path);
        return;
    }
    if let Ok(spec) = std::env::var(LOOP) {
        load_c_plugin();
        load_rust_plugin();
        spin(&spec);
        return;
    }
    load_many();
    load_c_plugin();
    paired();
    if load_rust_plugin() {
        cpu_paired();
        cuda_paired();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
