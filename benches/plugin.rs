//! A plugin's CPU op through the host against the same op registered in process, in one run:
//! `cplug::fails(int x) -> int` (for x <= 0 it returns -x) from the C plugin of
//! tests/fixtures/c_plugin, compiled here with `$CC` or `cc`, against an in-process `negate`.
//!
//! Before the benches it loads `tests/fixtures/c_plugin/many_ops.c` (10,000 ops) once and prints
//! how long loading and registering took (a plugin loads once per process, so it is timed once),
//! and the two boxed calls measured interleaved, with their ratio.
//!
//! On a machine with a GPU it also loads the Rust fixture plugin (`cargo build --release
//! --example plugin_fixture`, or `$OPBOX_PLUGIN_DIR`) and prints its CUDA op `rplug::scale`
//! against the same body registered in process, interleaved; without a GPU or without the
//! fixture it prints why that line is skipped.
//!
//! `cargo bench --bench plugin -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, Criterion};
use opbox::prelude::*;

#[stable_library(inproc)]
fn inproc(m: &mut Library) {
    m.def("negate(int x) -> int");
    m.def("scale(Tensor x, float s) -> Tensor");
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
    let mut ops = String::new();
    for _ in 0..RUNS {
        let out = Command::new(&exe)
            .env(LOAD_CHILD, &path)
            .output()
            .expect("running the bench again to load the plugin");
        assert!(out.status.success(), "the child load failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let (n, t) = text.trim().split_once(' ').expect("'<ops> <ms>'");
        ops = n.to_string();
        ms.push(t.parse().expect("milliseconds"));
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "load and register a plugin of {ops} ops, {RUNS} fresh processes: median {:.2} ms \
         ({:.2}..{:.2})",
        ms[RUNS / 2],
        ms[0],
        ms[RUNS - 1]
    );
}

/// In a child of [`load_many`]: loads `path` after the in-process registry is up and prints
/// `<ops> <ms>`.
fn load_child(path: &std::ffi::OsStr) {
    opbox::init().expect("the in-process registry");
    let start = std::time::Instant::now();
    let info = opbox::plugin::load(path).expect("the 10,000-op plugin loads");
    let took = start.elapsed();
    println!("{} {}", info.ops.len(), took.as_secs_f64() * 1e3);
}

/// `local` and `plugin` in short alternating batches of `calls`, `rounds` times; the median
/// ns per call of each. On a shared machine a burst of load slows both alike, so the ratio of
/// the two medians is steadier than two separate criterion runs.
fn interleaved(
    rounds: usize,
    calls: u32,
    mut local: impl FnMut(),
    mut plugin: impl FnMut(),
) -> (f64, f64) {
    let batch = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..calls {
            f();
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
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
    let mut stack = Stack::new();
    let mut stack2 = Stack::new();
    let (a, b) = interleaved(
        301,
        20_000,
        || {
            stack.clear();
            stack.push(black_box(-3i64));
            local.call_boxed(black_box(&mut stack)).unwrap();
        },
        || {
            stack2.clear();
            stack2.push(black_box(-3i64));
            plugin.call_boxed(black_box(&mut stack2)).unwrap();
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

/// A plugin's CUDA op against the same body in process, boxed, interleaved (a GPU only).
fn cuda_paired() {
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            println!("CUDA plugin op: skipped, no GPU ({other:?})");
            return;
        }
    }
    let path = rust_plugin();
    if !path.is_file() {
        println!(
            "CUDA plugin op: skipped, {} is not built (cargo build --release --example \
             plugin_fixture)",
            path.display()
        );
        return;
    }
    opbox::plugin::load(&path).expect("the Rust fixture plugin loads");
    let plugin = opbox::op("rplug::scale").unwrap();
    let local = opbox::op("inproc::scale").unwrap();
    let x = Tensor::from_vec(vec![1.0f32; 1024], &[1024])
        .and_then(|t| t.to(Device::Cuda(0)))
        .expect("a CUDA tensor");
    let mut stack = Stack::new();
    let mut stack2 = Stack::new();
    let (a, b) = interleaved(
        51,
        200,
        || {
            stack.clear();
            stack.push(x.clone()).push(3.0f64);
            local.call_boxed(black_box(&mut stack)).unwrap();
        },
        || {
            stack2.clear();
            stack2.push(x.clone()).push(3.0f64);
            plugin.call_boxed(black_box(&mut stack2)).unwrap();
        },
    );
    println!(
        "CUDA (Tensor, float) -> Tensor boxed on cuda:0, interleaved medians: in process \
         {:.2} us, plugin {:.2} us, plugin / in process {:.3}",
        a / 1e3,
        b / 1e3,
        b / a
    );
}

criterion_group!(benches, int_op);

fn main() {
    if let Some(path) = std::env::var_os(LOAD_CHILD) {
        load_child(&path);
        return;
    }
    load_many();
    load_c_plugin();
    paired();
    cuda_paired();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
