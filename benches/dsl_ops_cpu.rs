//! Issue 13's CPU figures: the `#[kernel]` bodies of `dsl::sum` (16 M f32) and `dsl::softmax`
//! ([4096, 1024] f32), called as ops, against a straightforward single-thread Rust loop of the
//! same result, with the ops' CPU build on 1, 2, 4, ... worker threads up to the cores
//! (`OPBOX_CPU_THREADS`). Both kernels have warp shuffles, so each block's body is split at them
//! (each piece run for every thread of the block in turn). The goal: ≥ 0.5× the loop on one
//! thread, scaling with cores. The softmax also runs beside the loop into a fresh `Vec` (the op
//! returns a fresh tensor) and as its kernel into a reused output.
//! `OPBOX_BENCH_ELEMS` scales both inputs (elements of the sum; the softmax keeps rows of 1024).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use opbox::prelude::*;

#[path = "../examples/dsl_ops/check.rs"]
#[allow(dead_code)]
mod check;
#[path = "../examples/dsl_ops/kernels.rs"]
mod kernels;
#[path = "../examples/dsl_ops/ops.rs"]
mod ops;

const ROW: usize = 1024;

fn elems() -> usize {
    std::env::var("OPBOX_BENCH_ELEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16 << 20)
}

fn softmax_loop(x: &[f32], y: &mut [f32]) {
    for (row, out) in x.chunks(ROW).zip(y.chunks_mut(ROW)) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        let mut total = 0.0f32;
        for (o, v) in out.iter_mut().zip(row) {
            *o = (v - max).exp();
            total += *o;
        }
        for o in out.iter_mut() {
            *o /= total;
        }
    }
}

fn bench(c: &mut Criterion) {
    let n = elems();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let xs = check::input(n, 3);
    let x = Tensor::from_vec(xs.clone(), &[n]).expect("input tensor");
    let sum = opbox::op("dsl::sum").expect("dsl::sum");
    let mut g = c.benchmark_group("dsl_ops_cpu_sum");
    g.sample_size(10);
    g.throughput(Throughput::Bytes((n * 4) as u64));
    g.bench_function("plain loop, 1 thread", |b| {
        b.iter(|| std::hint::black_box(xs.iter().sum::<f32>()))
    });
    let mut threads = 1;
    while threads <= cores {
        std::env::set_var("OPBOX_CPU_THREADS", threads.to_string());
        g.bench_with_input(
            BenchmarkId::new("dsl::sum, threads", threads),
            &threads,
            |b, _| b.iter(|| sum.call::<_, Tensor>((&x,)).expect("dsl::sum")),
        );
        threads *= 2;
    }
    g.finish();

    let rows = (n / ROW).max(1);
    let xs = check::input(rows * ROW, 4);
    let mut ys = vec![0.0f32; rows * ROW];
    let x = Tensor::from_vec(xs.clone(), &[rows, ROW]).expect("input tensor");
    let softmax = opbox::op("dsl::softmax").expect("dsl::softmax");
    let mut g = c.benchmark_group("dsl_ops_cpu_softmax");
    g.sample_size(10);
    g.throughput(Throughput::Bytes((rows * ROW * 8) as u64));
    g.bench_function("plain loop, 1 thread", |b| {
        b.iter(|| softmax_loop(&xs, &mut ys))
    });
    // The op returns a fresh tensor, whose pages the first write faults in (most of the op's
    // time past the kernel's on a VM): the loop into a fresh Vec pays the same, and the kernel
    // launched into a reused output pays neither.
    g.bench_function("plain loop into a fresh Vec, 1 thread", |b| {
        b.iter(|| {
            let mut fresh = vec![0.0f32; xs.len()];
            softmax_loop(&xs, &mut fresh);
            fresh
        })
    });
    let y = x.empty_like().expect("output tensor");
    std::env::set_var("OPBOX_CPU_THREADS", "1");
    g.bench_function("softmax kernel into a reused output, 1 thread", |b| {
        b.iter(|| {
            ops::launch_softmax(&x, &y, rows as u32, ROW as u32).expect("softmax kernel");
        })
    });
    let mut threads = 1;
    while threads <= cores {
        std::env::set_var("OPBOX_CPU_THREADS", threads.to_string());
        g.bench_with_input(
            BenchmarkId::new("dsl::softmax, threads", threads),
            &threads,
            |b, _| b.iter(|| softmax.call::<_, Tensor>((&x,)).expect("dsl::softmax")),
        );
        threads *= 2;
    }
    std::env::remove_var("OPBOX_CPU_THREADS");
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
