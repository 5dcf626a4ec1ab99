//! Kernel graphs: a chain of three kernels recorded once, its dependencies derived from what
//! each kernel reads and writes, then instantiated as a CUDA graph and replayed 1000 times with
//! a fresh input bound each time, every result checked.
//!
//! Without a GPU it says why and runs the same recorded chain eagerly on the CPU (the DSL
//! kernels' CPU builds) instead.

use opbox::graph::{self, Bindings, Graph};
use opbox::prelude::*;

#[kernel]
pub fn scale(x: In<[f32]>, y: Out<[f32]>, s: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = s * x[i];
    }
}

#[kernel]
pub fn bias(y: InOut<[f32]>, b: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] += b;
    }
}

#[kernel]
pub fn add(a: In<[f32]>, b: In<[f32]>, out: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a[i] + b[i];
    }
}

pub const N: usize = 4096;

/// The input of step `step`.
pub fn input(step: usize) -> Vec<f32> {
    (0..N)
        .map(|i| ((i + 7 * step) % 101) as f32 - 50.0)
        .collect()
}

/// What the chain computes: `(2x + 1) + x`.
pub fn expected(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| (2.0 * v + 1.0) + v).collect()
}

/// Records `t = 2x; t += 1; y = t + x` on `device` (nothing runs yet); returns the graph and y.
pub fn record_chain(device: Device, x: &Tensor) -> opbox::Result<(Graph, Tensor)> {
    let t = Tensor::zeros(&[N], DType::F32, device)?;
    let y = Tensor::zeros(&[N], DType::F32, device)?;
    let cfg = LaunchConfig::for_elems(N);
    let n = N as u32;
    let g = graph::record_named("chain", device, |r| {
        scale::launch_in(r, cfg.clone(), x, &t, 2.0, n)?;
        bias::launch_in(r, cfg.clone(), &t, 1.0, n)?;
        add::launch_in(r, cfg.clone(), &t, x, &y, n)?;
        Ok(())
    })?;
    // scale -> bias (t written, then read and written), scale -> add, bias -> add (t read).
    assert_eq!(g.edges().len(), 3);
    Ok((g, y))
}

/// CUDA: instantiated once, replayed `steps` times with a fresh input bound, each checked.
pub fn replay_cuda(steps: usize) -> Result<(), String> {
    let e = |e: opbox::Error| e.to_string();
    let dev = Device::Cuda(0);
    let x = Tensor::zeros(&[N], DType::F32, dev).map_err(e)?;
    let (g, y) = record_chain(dev, &x).map_err(e)?;
    let mut exec = g.instantiate().map_err(e)?;
    for step in 0..steps {
        let host = input(step);
        let fresh = Tensor::from_vec(host.clone(), &[N])
            .map_err(e)?
            .to(dev)
            .map_err(e)?;
        // Every launch that read `x` when recorded reads `fresh` now; nothing is re-instantiated.
        exec.replay(&Bindings::new().tensor(&x, &fresh))
            .map_err(e)?;
        if y.to_vec::<f32>().map_err(e)? != expected(&host) {
            return Err(format!("replay {step}: wrong result"));
        }
    }
    exec.synchronize().map_err(e)
}

/// Any device: the recorded graph run eagerly `steps` times, writing each input into x first.
pub fn run_eager(device: Device, steps: usize) -> Result<(), String> {
    let e = |e: opbox::Error| e.to_string();
    let x = Tensor::zeros(&[N], DType::F32, device).map_err(e)?;
    let (g, y) = record_chain(device, &x).map_err(e)?;
    for step in 0..steps {
        let host = input(step);
        x.copy_from(&Tensor::from_vec(host.clone(), &[N]).map_err(e)?)
            .map_err(e)?;
        g.launch().map_err(e)?;
        if y.to_vec::<f32>().map_err(e)? != expected(&host) {
            return Err(format!("eager run {step}: wrong result"));
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let gpu = match opbox::cuda::device_count() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err("the CUDA driver reports 0 devices".to_string()),
        Err(e) => Err(e.to_string()),
    };
    let result = match gpu {
        Ok(()) => replay_cuda(1000).map(|()| {
            println!("CUDA: graph example: a 3-kernel chain replayed 1000 times with fresh inputs, every result checked")
        }),
        Err(why) => {
            println!("no launch: no GPU ({why}); running the recorded chain eagerly on the CPU");
            run_eager(Device::Cpu, 20).map(|()| println!("CPU: 20 eager runs checked"))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graph example FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
