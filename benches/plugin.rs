//! A plugin's CPU op through the host against the same op registered in process, in one run:
//! `cplug::fails(int x) -> int` (for x <= 0 it returns -x) from the C plugin of
//! tests/fixtures/c_plugin, compiled here with `$CC` or `cc`, against an in-process `negate`.
//!
//! `cargo bench --bench plugin -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};
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

fn c_plugin(dir: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join("libcplug_bench.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(cc)
        .args(["-std=c11", "-O2", "-shared", "-fPIC"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg("-o")
        .arg(&out)
        .arg(root.join("tests/fixtures/c_plugin/plugin.c"))
        .status()
        .expect("running the C compiler");
    assert!(status.success(), "compiling the C plugin failed");
    out
}

fn int_op(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    opbox::plugin::load(c_plugin(dir.path())).expect("the C plugin loads");
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

criterion_group!(benches, int_op);
criterion_main!(benches);
