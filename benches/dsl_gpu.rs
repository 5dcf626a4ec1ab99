//! The `#[kernel]` DSL's GPU figures, printed as one table (a plain `main`, harness = false;
//! scripts/gpu-check prints its table):
//!
//! - DSL axpy (`out = a*x + y`) over 256 M f32 in TB/s (3 × 4 B × n / time), beside the
//!   hand-written `examples/kernels/axpby.cu` through its `#[extern_kernel]` stub;
//! - the launch of an empty DSL kernel through its stub against the empty extern kernel's (the
//!   goal: ≤ 1.01×; a DSL stub also packs one slice length).
//!
//! Without a GPU it prints "skipped: no GPU" and exits 0.

use std::process::ExitCode;
use std::time::Instant;

use opbox::cuda::synchronize;
use opbox::prelude::*;

#[path = "common/gpu.rs"]
mod gpu;

#[extern_kernel(source = "../examples/kernels/empty.cu")]
fn empty(x: In<[f32]>);

#[extern_kernel(source = "../examples/kernels/axpby.cu", entry = "axpby")]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[kernel]
fn empty_dsl(x: In<[f32]>) {}

#[kernel]
fn axpy_dsl(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a * x[i] + y[i];
    }
}

const N: usize = 256 << 20;

/// Median seconds of one call of `f`, over `rounds` synchronized rounds of `per` calls.
fn time(rounds: usize, per: usize, mut f: impl FnMut() -> opbox::Result<()>) -> opbox::Result<f64> {
    for _ in 0..per {
        f()?;
    }
    synchronize(0)?;
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per {
            f()?;
        }
        synchronize(0)?;
        samples.push(t.elapsed().as_secs_f64() / per as f64);
    }
    Ok(gpu::median(samples))
}

fn bench() -> opbox::Result<()> {
    if let Some(why) = gpu::skip_reason() {
        println!("skipped: {why}");
        return Ok(());
    }
    let dev = Device::Cuda(0);
    let x = Tensor::full(&[N], 1.5f64, DType::F32, dev)?;
    let y = Tensor::full(&[N], 2.0f64, DType::F32, dev)?;
    let out = Tensor::zeros(&[N], DType::F32, dev)?;
    let cfg = LaunchConfig::for_elems(N);
    let bytes = 3.0 * 4.0 * N as f64;
    let dsl = time(5, 10, || {
        axpy_dsl::launch(cfg.clone(), &x, &y, &out, 2.0, N as u32)
    })?;
    let dsl_ok = out
        .to_vec::<f32>()?
        .iter()
        .step_by(1 << 16)
        .all(|v| *v == 5.0);
    let hand = time(5, 10, || {
        axpby_f32::launch(cfg.clone(), &x, &y, &out, 2.0, 1.0, N as i64)
    })?;
    let one = Tensor::zeros(&[1], DType::F32, dev)?;
    let single = LaunchConfig::single();
    let mut ext = Vec::new();
    let mut dsl_l = Vec::new();
    // Interleaved rounds, so drift cannot pass for a difference.
    for _ in 0..15 {
        ext.push(time(1, 20_000, || empty::launch(single.clone(), &one))?);
        dsl_l.push(time(1, 20_000, || empty_dsl::launch(single.clone(), &one))?);
    }
    let (ext, dsl_l) = (gpu::median(ext) * 1e6, gpu::median(dsl_l) * 1e6);
    println!("dsl bench on {}", opbox::cuda::device(0)?.name);
    println!("| figure | value | goal | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| DSL axpy, 256 M f32 (result {}) | {:.3} TB/s | ≥ 0.95× torch.add (see peers) | |",
        if dsl_ok { "checked" } else { "WRONG" },
        bytes / dsl / 1e12
    );
    println!(
        "| extern axpby.cu, 256 M f32 | {:.3} TB/s | | {:.3} (DSL / extern) |",
        bytes / hand / 1e12,
        hand / dsl
    );
    println!("| empty kernel, extern stub | {ext:.3} µs | | 1.00 |");
    println!(
        "| empty kernel, DSL stub | {dsl_l:.3} µs | ≤ 1.01× extern | {:.3} |",
        dsl_l / ext
    );
    if !dsl_ok {
        return Err(opbox::Error::Message(
            "the DSL axpy's result is wrong".into(),
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dsl bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}
