//! A plugin's CPU op through the host against the same op registered in process, in one run:
//! `cplug::fails(int x) -> int` (for x <= 0 it returns -x) from the C plugin of
//! tests/fixtures/c_plugin, compiled here with `$CC` or `cc`, against an in-process `negate`.
//!
//! Before the benches it loads `tests/fixtures/c_plugin/many_ops.c` (10,000 ops) once and prints
//! how long loading and registering took (a plugin loads once per process, so it is timed once),
//! and the two boxed calls measured interleaved, with their ratio.
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
}

#[stable_impl(inproc, CPU)]
mod cpu {
    pub fn negate(x: i64) -> opbox::Result<i64> {
        if x > 0 {
            return Err(opbox::Error::msg("x must not be positive"));
        }
        Ok(-x)
    }
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

fn load_many() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = c_plugin(dir.path(), "many_ops");
    opbox::init().expect("the in-process registry");
    let start = std::time::Instant::now();
    let info = opbox::plugin::load(&path).expect("the 10,000-op plugin loads");
    let took = start.elapsed();
    println!(
        "load and register a plugin of {} ops: {:.2} ms",
        info.ops.len(),
        took.as_secs_f64() * 1e3
    );
}

/// The boxed calls of both ops in short alternating batches, many rounds: on a shared machine
/// a burst of load slows both alike, so the ratio of the two medians is steadier than two
/// separate criterion runs.
fn paired() {
    const ROUNDS: usize = 301;
    const CALLS: u32 = 20_000;
    let plugin = opbox::op("cplug::fails").unwrap();
    let local = opbox::op("inproc::negate").unwrap();
    let mut stack = Stack::new();
    let mut batch = |op: &opbox::OpHandle| {
        let start = std::time::Instant::now();
        for _ in 0..CALLS {
            stack.clear();
            stack.push(black_box(-3i64));
            op.call_boxed(black_box(&mut stack)).unwrap();
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
    };
    let (mut in_process, mut plugin_ns) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        in_process.push(batch(&local));
        plugin_ns.push(batch(&plugin));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (median(in_process), median(plugin_ns));
    println!(
        "(int) -> int boxed, interleaved medians: in process {a:.1} ns, plugin {b:.1} ns, \
         plugin / in process {:.3}",
        b / a
    );
}

criterion_group!(benches, int_op);

fn main() {
    load_many();
    load_c_plugin();
    paired();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
