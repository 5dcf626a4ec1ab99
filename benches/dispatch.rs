//! Dispatch overhead, side by side: the direct Rust call of a kernel, the typed `op.call`, and
//! the boxed `call_boxed` on a reused stack. The kernels do no math (the tensor kernel returns a
//! clone of `x`), so the differences are the cost of boxing and dispatch.
//!
//! `cargo bench --bench dispatch -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use opbox::prelude::*;

#[stable_library(bench)]
fn bench(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a) -> Tensor");
    m.def("add(int a, int b) -> int");
}

#[stable_impl(bench, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, _y: &Tensor, _a: f64) -> Result<Tensor> {
        Ok(x.clone())
    }
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
}

fn tensor_op(c: &mut Criterion) {
    let op = opbox::op("bench::axpby").unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let y = Tensor::from_vec(vec![5.0f32, 6.0, 7.0, 8.0], &[4]).unwrap();
    let mut group = c.benchmark_group("(Tensor, Tensor, float) -> Tensor");
    group.bench_function("direct", |b| {
        b.iter(|| cpu::axpby(black_box(&x), black_box(&y), black_box(2.0)).unwrap())
    });
    group.bench_function("typed op.call", |b| {
        b.iter(|| op.call::<_, Tensor>(black_box((&x, &y, 2.0))).unwrap())
    });
    let mut stack = Stack::new();
    group.bench_function("boxed call_boxed", |b| {
        b.iter(|| {
            stack.clear();
            stack
                .push(black_box(&x))
                .push(black_box(&y))
                .push(black_box(2.0));
            op.call_boxed(black_box(&mut stack)).unwrap();
        })
    });
    group.finish();
}

fn int_op(c: &mut Criterion) {
    let op = opbox::op("bench::add").unwrap();
    let mut group = c.benchmark_group("(int, int) -> int");
    group.bench_function("direct", |b| {
        b.iter(|| cpu::add(black_box(2), black_box(3)))
    });
    group.bench_function("typed op.call", |b| {
        b.iter(|| op.call::<_, i64>(black_box((2i64, 3i64))).unwrap())
    });
    let mut stack = Stack::new();
    group.bench_function("boxed call_boxed", |b| {
        b.iter(|| {
            stack.clear();
            stack.push(black_box(2i64)).push(black_box(3i64));
            op.call_boxed(black_box(&mut stack)).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, tensor_op, int_op);
criterion_main!(benches);
