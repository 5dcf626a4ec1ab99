//! The CPU build's split thread loop (`kernel/ranged.rs` in the macros, `dsl::ranged` in the
//! runtime) against the plain loop: each kernel here has a twin whose indices are written
//! `i * 1`, outside the proof, so that it runs every thread checked. Over grids bigger and
//! smaller than `n`, buffers shorter and longer than it and blocks that do not divide it, both
//! must leave the same bits in every buffer and stop with the same out-of-bounds report.
//!
//! Debug builds also check each index the fast threads leave unchecked (a wrong range is a
//! `KernelPanic` there, never an `IndexOutOfBounds`).

use std::sync::{Mutex, MutexGuard};

use opbox::prelude::*;

#[kernel]
fn axpy(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a * x[i] + y[i];
    }
}

#[kernel]
fn axpy_plain(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i * 1] = a * x[i * 1] + y[i * 1];
    }
}

/// Offsets both ways, one of them a param, behind an early return.
#[kernel]
fn stencil(x: In<[f32]>, out: Out<[f32]>, n: u32, k: u32) {
    let i = global_id_x();
    if i >= n || i < 1 {
        return;
    }
    out[i - 1] = x[i + k] - x[i - 1] + x[(i + 2) - k];
}

#[kernel]
fn stencil_plain(x: In<[f32]>, out: Out<[f32]>, n: u32, k: u32) {
    let i = global_id_x();
    if i >= n || i < 1 {
        return;
    }
    out[(i - 1) * 1] = x[(i + k) * 1] - x[(i - 1) * 1] + x[((i + 2) - k) * 1];
}

/// Each thread reads what the one before it wrote: the threads must run in order. Integer
/// arithmetic wraps; the guard is written bound first.
#[kernel]
fn chain(y: InOut<[u32]>, x: In<[u32]>, n: u32) {
    let i = global_id_x();
    if 0 < i && n >= i {
        y[i] = y[i - 1] * 2654435761 + x[i];
    }
}

#[kernel]
fn chain_plain(y: InOut<[u32]>, x: In<[u32]>, n: u32) {
    let i = global_id_x();
    if 0 < i && n >= i {
        y[i * 1] = y[(i - 1) * 1] * 2654435761 + x[i * 1];
    }
}

/// Guarded by a buffer's length; a 2-D block runs every row over the same ids.
#[kernel]
fn by_len(x: In<[u32]>, out: Out<[u32]>) {
    let i = global_id_x();
    if i < out.len() {
        out[i] += x[i] + thread_id_y();
    }
}

#[kernel]
fn by_len_plain(x: In<[u32]>, out: Out<[u32]>) {
    let i = global_id_x();
    if i < out.len() {
        out[i * 1] += x[i * 1] + thread_id_y();
    }
}

/// A launch's outcome without the kernel's name: the report, or nothing.
fn report(r: opbox::Result<()>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(Error::IndexOutOfBounds {
            param, index, len, ..
        }) => format!("{param}[{index}] of {len}"),
        Err(e) => panic!("not an out-of-bounds report: {e}"),
    }
}

fn f32s(n: usize, seed: u32) -> Tensor {
    let v: Vec<f32> = (0..n as u32)
        .map(|j| (j.wrapping_mul(seed) % 1000) as f32 * 0.37 - 11.0)
        .collect();
    Tensor::from_vec(v, &[n]).expect("tensor")
}

fn u32s(n: usize, seed: u32) -> Tensor {
    let v: Vec<u32> = (0..n as u32)
        .map(|j| j.wrapping_mul(seed) ^ 0x9e37)
        .collect();
    Tensor::from_vec(v, &[n]).expect("tensor")
}

fn bits(t: &Tensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .expect("f32s")
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        _ => t.to_vec::<u32>().expect("u32s"),
    }
}

/// `(n, buffer lengths, block, blocks)`: the grid short of `n`, just over it and far past it.
fn shapes() -> Vec<(usize, [usize; 3], u32, u32)> {
    let mut out = Vec::new();
    for n in [0usize, 1, 5, 100, 300] {
        for lens in [
            [n, n, n],
            [n + 3, n + 1, n + 7],
            [n + 4, n.saturating_sub(2), n + 4],
        ] {
            for block in [1u32, 7, 64, 256] {
                let cover = (n as u32).div_ceil(block).max(1);
                for blocks in [cover.saturating_sub(1).max(1), cover, cover + 3] {
                    out.push((n, lens, block, blocks));
                }
            }
        }
    }
    out
}

/// Holds the worker count (`OPBOX_CPU_THREADS`, the process's) for one test.
static WORKERS: Mutex<()> = Mutex::new(());

/// One worker: blocks in order, so that the first error and what ran before it are fixed.
fn one_worker() -> MutexGuard<'static, ()> {
    let guard = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("OPBOX_CPU_THREADS", "1");
    guard
}

#[test]
fn the_split_kernels_are_split_and_their_twins_not() {
    for (name, build, want) in [
        ("axpy", axpy::CPU_BUILD, "split thread loop"),
        ("stencil", stencil::CPU_BUILD, "split thread loop"),
        ("chain", chain::CPU_BUILD, "split thread loop"),
        ("by_len", by_len::CPU_BUILD, "split thread loop"),
        ("axpy_plain", axpy_plain::CPU_BUILD, "thread loop"),
        ("stencil_plain", stencil_plain::CPU_BUILD, "thread loop"),
        ("chain_plain", chain_plain::CPU_BUILD, "thread loop"),
        ("by_len_plain", by_len_plain::CPU_BUILD, "thread loop"),
    ] {
        assert_eq!(build, want, "{name}");
    }
}

#[test]
fn axpy_matches_the_plain_loop() {
    let _one = one_worker();
    for (n, [lx, ly, lo], block, blocks) in shapes() {
        let cfg = LaunchConfig::for_elems(1)
            .grid(blocks, 1, 1)
            .block(block, 1, 1);
        let (x, y) = (f32s(lx, 7), f32s(ly, 13));
        let (a, b) = (f32s(lo, 3), f32s(lo, 3));
        let got = report(axpy::launch(cfg.clone(), &x, &y, &a, 1.5, n as u32));
        let want = report(axpy_plain::launch(cfg.clone(), &x, &y, &b, 1.5, n as u32));
        let case = format!("n {n}, lens {lx} {ly} {lo}, block {block} x {blocks}");
        assert_eq!(got, want, "{case}");
        assert_eq!(bits(&a), bits(&b), "{case}");
    }
}

#[test]
fn offsets_match_the_plain_loop() {
    let _one = one_worker();
    for (n, [lx, _, lo], block, blocks) in shapes() {
        for k in [0u32, 1, 2, 5] {
            let cfg = LaunchConfig::for_elems(1)
                .grid(blocks, 1, 1)
                .block(block, 1, 1);
            let x = f32s(lx, 11);
            let (a, b) = (f32s(lo, 5), f32s(lo, 5));
            let got = report(stencil::launch(cfg.clone(), &x, &a, n as u32, k));
            let want = report(stencil_plain::launch(cfg.clone(), &x, &b, n as u32, k));
            let case = format!("n {n}, k {k}, lens {lx} {lo}, block {block} x {blocks}");
            assert_eq!(got, want, "{case}");
            assert_eq!(bits(&a), bits(&b), "{case}");
        }
    }
}

#[test]
fn threads_run_in_order() {
    let _one = one_worker();
    for (n, [lx, _, ly], block, blocks) in shapes() {
        let cfg = LaunchConfig::for_elems(1)
            .grid(blocks, 1, 1)
            .block(block, 1, 1);
        let x = u32s(lx, 2_246_822_519);
        let (a, b) = (u32s(ly, 3), u32s(ly, 3));
        let got = report(chain::launch(cfg.clone(), &a, &x, n as u32));
        let want = report(chain_plain::launch(cfg.clone(), &b, &x, n as u32));
        let case = format!("n {n}, lens {lx} {ly}, block {block} x {blocks}");
        assert_eq!(got, want, "{case}");
        assert_eq!(bits(&a), bits(&b), "{case}");
    }
}

#[test]
fn two_dimensional_blocks_and_a_length_guard() {
    let _one = one_worker();
    for (n, [lx, _, lo], block, blocks) in shapes() {
        let block = block.min(64);
        let cfg = LaunchConfig::for_elems(1)
            .grid(blocks, 2, 1)
            .block(block, 3, 1);
        let x = u32s(lx, 77);
        let (a, b) = (u32s(lo, 9), u32s(lo, 9));
        let got = report(by_len::launch(cfg.clone(), &x, &a));
        let want = report(by_len_plain::launch(cfg.clone(), &x, &b));
        let case = format!("n {n}, lens {lx} {lo}, block {block} x 3 x {blocks} x 2");
        assert_eq!(got, want, "{case}");
        assert_eq!(bits(&a), bits(&b), "{case}");
    }
}

/// The report names the first thread outside a buffer even where the block's fast threads come
/// before it: `x` one short, so the block's last thread fails.
#[test]
fn a_partly_out_of_bounds_block_still_fails() {
    let _one = one_worker();
    let x = f32s(255, 1);
    let y = f32s(256, 2);
    let out = f32s(256, 3);
    match axpy::launch(LaunchConfig::for_elems(256), &x, &y, &out, 2.0, 256) {
        Err(Error::IndexOutOfBounds {
            kernel,
            param,
            index,
            len,
        }) => assert_eq!(
            (kernel.as_str(), param.as_str(), index, len),
            ("axpy", "x", 255, 255)
        ),
        other => panic!("x one short: {other:?}"),
    }
}

/// Several workers: the same bits as the plain loop on one.
#[test]
fn many_workers_match() {
    let n = 10_000;
    let (x, y) = (f32s(n, 7), f32s(n, 13));
    let (a, b) = (f32s(n, 3), f32s(n, 3));
    let cfg = LaunchConfig::for_elems(n);
    axpy_plain::launch(cfg.clone(), &x, &y, &b, -0.75, n as u32).expect("plain");
    let _workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("OPBOX_CPU_THREADS", "4");
    axpy::launch(cfg.clone(), &x, &y, &a, -0.75, n as u32).expect("split");
    assert_eq!(bits(&a), bits(&b));
}
