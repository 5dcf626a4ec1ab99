//! Tensor views made on several threads at once, each thread on a tensor of its own: the time
//! per view with one thread and with every core (up to 4), side by side. The threads share
//! nothing but opbox's own bookkeeping, so the time per view should not grow with the thread
//! count; the difference between the rows is the cost of what they share.
//!
//! `cargo bench --bench tensor_threads -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use opbox::prelude::*;

/// `views` views of a tensor made on this thread, each dropped at once.
fn make_views(views: u64) {
    let x = Tensor::from_vec(vec![1.0f32; 4], &[4]).expect("a 4-element tensor");
    for i in 0..views {
        black_box(
            x.narrow(0, (i % 2) as usize, 2)
                .expect("a view inside the tensor"),
        );
    }
}

/// The wall time of `threads` threads making `views` views each, started together.
fn on_threads(threads: usize, views: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| make_views(views));
        }
    });
    start.elapsed()
}

fn views(c: &mut Criterion) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let mut group = c.benchmark_group("tensor view, per thread");
    for threads in [1, cores] {
        group.bench_function(format!("{threads} thread(s)"), |b| {
            b.iter_custom(|iters| on_threads(threads, iters))
        });
    }
    group.finish();
}

criterion_group!(benches, views);
criterion_main!(benches);
