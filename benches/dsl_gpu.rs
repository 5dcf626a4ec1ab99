//! The `#[kernel]` DSL's GPU figures, printed as one table (a plain `main`, harness = false;
//! scripts/gpu-check prints its table):
//!
//! - DSL axpy (`out = a*x + y`) over 256 M f32 in TB/s (3 × 4 B × n / time): one f32 per
//!   thread, and four (`load4`/`store4`); beside the hand-written `examples/kernels/axpby.cu`
//!   (`axpby`, `axpby4`) through their `#[extern_kernel]` stubs, and `torch.add(y, x, alpha=a,
//!   out=z)` measured in the same run by `benches/peers/torch_add.py` (the goal: the DSL at
//!   ≥ 0.95× torch.add);
//! - the launch of an empty DSL kernel through its stub against the empty extern kernel's (the
//!   goal: ≤ 1.01×; a DSL stub also packs one slice length).
//!
//! Without a GPU it prints "skipped: no GPU" and exits 0.

use std::process::ExitCode;

use opbox::prelude::*;

#[path = "common/axpy.rs"]
mod axpy;
#[path = "../examples/dsl.rs"]
#[allow(dead_code)]
mod example;

#[path = "common/gpu.rs"]
mod gpu;

#[extern_kernel(source = "../examples/kernels/empty.cu")]
fn empty(x: In<[f32]>);

#[kernel]
fn empty_dsl(x: In<[f32]>) {}

const N: usize = 256 << 20;

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
    let cfg4 = LaunchConfig::for_elems(N / 4 + 1);
    let bytes = 3.0 * 4.0 * N as f64;
    // Every variant writes 2 * 1.5 + 2 = 5 everywhere; `out` is cleared between them.
    let checked = |name: &str, f: &mut dyn FnMut() -> opbox::Result<()>| {
        out.fill_(0.0)?;
        let t = gpu::time(5, 10, &mut *f)?;
        let ok = out
            .to_vec::<f32>()?
            .iter()
            .step_by(1 << 12)
            .all(|v| *v == 5.0);
        if !ok {
            return Err(opbox::Error::Message(format!("{name}: wrong result")));
        }
        Ok::<f64, opbox::Error>(t)
    };
    let dsl = checked("DSL axpy", &mut || {
        axpy::axpy_dsl::launch(cfg.clone(), &x, &y, &out, 2.0, N as u32)
    })?;
    let dsl4 = checked("DSL axpy load4", &mut || {
        example::axpy4::launch(cfg4.clone(), &x, &y, &out, 2.0, N as u32)
    })?;
    let hand = checked("axpby.cu", &mut || {
        axpy::axpby_f32::launch(cfg.clone(), &x, &y, &out, 2.0, 1.0, N as i64)
    })?;
    let hand4 = checked("axpby4 (axpby.cu)", &mut || {
        axpy::axpby4_f32::launch(cfg4.clone(), &x, &y, &out, 2.0, 1.0, N as i64)
    })?;
    let torch = torch_add_rate();
    let one = Tensor::zeros(&[1], DType::F32, dev)?;
    let single = LaunchConfig::single();
    let mut ext = Vec::new();
    let mut dsl_l = Vec::new();
    // Interleaved rounds, so drift cannot pass for a difference.
    for _ in 0..15 {
        ext.push(gpu::time(1, 20_000, || {
            empty::launch(single.clone(), &one)
        })?);
        dsl_l.push(gpu::time(1, 20_000, || {
            empty_dsl::launch(single.clone(), &one)
        })?);
    }
    let (ext, dsl_l) = (gpu::median(ext) * 1e6, gpu::median(dsl_l) * 1e6);
    println!("dsl bench on {}", opbox::cuda::device(0)?.name);
    println!("| figure | value | goal | ratio |");
    println!("|---|---|---|---|");
    let rate = |t: f64| bytes / t / 1e12;
    let (vs_torch, torch_row) = match &torch {
        Ok(r) => (
            format!("{:.3} (DSL load4 / torch.add)", rate(dsl4) / r),
            format!("| torch.add(y, x, alpha=2, out=z), 256 M f32 | {r:.3} TB/s | | 1.00 |"),
        ),
        Err(why) => (
            "not measured".to_string(),
            format!("| torch.add | not measured: {why} | | |"),
        ),
    };
    println!("{torch_row}");
    println!(
        "| DSL axpy with load4/store4, 256 M f32 (checked) | {:.3} TB/s | ≥ 0.95× torch.add | {vs_torch} |",
        rate(dsl4)
    );
    println!(
        "| extern axpby4 (float4), 256 M f32 (checked) | {:.3} TB/s | | {:.3} (DSL load4 / extern axpby4) |",
        rate(hand4),
        hand4 / dsl4
    );
    println!(
        "| DSL axpy, one f32 a thread (checked) | {:.3} TB/s | | {:.3} (DSL / extern axpby) |",
        rate(dsl),
        hand / dsl
    );
    println!(
        "| extern axpby, one f32 a thread (checked) | {:.3} TB/s | | |",
        rate(hand)
    );
    println!("| empty kernel, extern stub | {ext:.3} µs | | 1.00 |");
    println!(
        "| empty kernel, DSL stub | {dsl_l:.3} µs | ≤ 1.01× extern | {:.3} |",
        dsl_l / ext
    );
    Ok(())
}

/// torch.add's rate on the same GPU, from `benches/peers/torch_add.py` (run after opbox's
/// kernels, with nothing else on the GPU), or why it could not be measured.
fn torch_add_rate() -> Result<f64, String> {
    // From the repository root, where cargo and scripts/gpu-check run benches.
    let script = std::env::var("OPBOX_TORCH_ADD_SCRIPT")
        .unwrap_or_else(|_| "benches/peers/torch_add.py".into());
    let out = std::process::Command::new("python3")
        .arg(&script)
        .env("OPBOX_AXPY_ELEMS", N.to_string())
        .output()
        .map_err(|e| format!("python3 did not start ({e})"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("torch.add TB/s: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("no output").to_string();
            format!("{script}: {last}")
        })
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
