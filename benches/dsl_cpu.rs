//! The `#[kernel]` DSL's CPU build: `out = a*x + y` over 16 M f32 (set `OPBOX_BENCH_ELEMS` for
//! another size; 12 bytes an element, three buffers, in every form) against a hand-written Rust
//! loop on one thread, and the DSL kernel on 1, 2, 4, ... worker threads up to the cores
//! (`OPBOX_CPU_THREADS` caps the grid's workers), in both of its forms: one element a thread,
//! and four (`load4`/`store4`, the form that reaches the GPU's memory rate, whose four lanes the
//! CPU build's optimizer packs into one SIMD op). Then the one-element form with a barrier (its
//! blocks' threads as coroutines) on one thread and on all cores, over a sixteenth of the
//! elements, priced per element against the form without. The goal: DSL on one thread ≥ 0.8×
//! the loop, scaling with cores; a barrier kernel "not 100× slower" than its barrier-free twin.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use opbox::prelude::*;

#[path = "common/axpy.rs"]
#[allow(dead_code)]
mod axpy;
#[path = "../examples/dsl.rs"]
#[allow(dead_code)]
mod example;

/// `axpy_dsl` with a barrier between the reads and the write.
#[kernel]
fn axpy_barrier(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    let v = if i < n { a * x[i] + y[i] } else { 0.0 };
    sync_threads();
    if i < n {
        out[i] = v;
    }
}

fn elems() -> usize {
    std::env::var("OPBOX_BENCH_ELEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16 << 20)
}

fn bench(c: &mut Criterion) {
    let n = elems();
    let mut g = c.benchmark_group("dsl_cpu_axpy");
    g.sample_size(10);
    g.throughput(Throughput::Bytes((n * 12) as u64));
    let xs = vec![1.5f32; n];
    let ys = vec![2.0f32; n];
    let mut outs = vec![0.0f32; n];
    g.bench_function("hand loop, 1 thread", |b| {
        b.iter(|| {
            for ((o, x), y) in outs.iter_mut().zip(&xs).zip(&ys) {
                *o = 2.0 * x + y;
            }
        })
    });
    let x = Tensor::from_vec(xs.clone(), &[n]).expect("input tensor");
    let y = Tensor::from_vec(ys.clone(), &[n]).expect("input tensor");
    let out = Tensor::zeros(&[n], DType::F32, Device::Cpu).expect("output tensor");
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let mut threads = 1;
    while threads <= cores {
        std::env::set_var("OPBOX_CPU_THREADS", threads.to_string());
        g.bench_with_input(
            BenchmarkId::new("DSL kernel, threads", threads),
            &threads,
            |b, _| {
                b.iter(|| {
                    let cfg = LaunchConfig::for_elems(n);
                    axpy::axpy_dsl::launch(cfg, &x, &y, &out, 2.0, n as u32).expect("launch")
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("DSL kernel with load4, threads", threads),
            &threads,
            |b, _| {
                b.iter(|| {
                    let cfg = LaunchConfig::for_elems(n / 4 + 1);
                    example::axpy4::launch(cfg, &x, &y, &out, 2.0, n as u32).expect("launch")
                })
            },
        );
        threads *= 2;
    }
    g.finish();
    // The barrier form over n / 16 elements, beside the same form without one.
    let m = n / 16;
    let mut g = c.benchmark_group("dsl_cpu_axpy_barrier");
    g.sample_size(10);
    g.throughput(Throughput::Elements(m as u64));
    for threads in [1, cores] {
        std::env::set_var("OPBOX_CPU_THREADS", threads.to_string());
        g.bench_with_input(
            BenchmarkId::new("without, threads", threads),
            &threads,
            |b, _| {
                b.iter(|| {
                    let cfg = LaunchConfig::for_elems(m);
                    axpy::axpy_dsl::launch(cfg, &x, &y, &out, 2.0, m as u32).expect("launch")
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("with a barrier, threads", threads),
            &threads,
            |b, _| {
                b.iter(|| {
                    let cfg = LaunchConfig::for_elems(m);
                    axpy_barrier::launch(cfg, &x, &y, &out, 2.0, m as u32).expect("launch")
                })
            },
        );
    }
    std::env::remove_var("OPBOX_CPU_THREADS");
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
