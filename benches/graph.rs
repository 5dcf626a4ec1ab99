//! Kernel graph figures on the GPU, printed as one table (a plain `main`, harness = false;
//! scripts/gpu-check prints its table):
//!
//! - a CUDA graph of 100 small dependent kernels (a chain `buf[i+1] = buf[i] * 1`) replayed,
//!   per kernel, against 100 stub launches of the same kernel in the same run (goal ≤ 0.6 µs);
//! - re-binding before a replay: the chain's input and output (2 nodes' parameters set; goal
//!   ≤ 1 µs), and every buffer (all 100 nodes);
//! - recording and instantiating the 100-node graph (no goal);
//! - a diamond A → (B, C) → D where B and C each spin on half the SMs: the span of the whole
//!   diamond, eager on the stream pool and as a replayed graph, against the four launched one
//!   after another on one stream, from event timings (goal ≤ 0.6×).
//!
//! `benches/graph_torch.py` measures PyTorch's stream-captured CUDA graph of 100 in-place
//! `add_` calls on the same machine; gpu-check prints its rows and the ratio beside these.
//! Without a GPU it prints "skipped: no GPU" and exits 0.

use std::process::ExitCode;
use std::time::Instant;

use opbox::cuda::cudarc::driver::sys;
use opbox::cuda::synchronize;
use opbox::graph::{self, Bindings, Graph};
use opbox::prelude::*;

#[path = "common/gpu.rs"]
mod gpu;

/// What the driver alone charges for a re-bind: `cuGraphExecKernelNodeSetParams` on a graph of
/// one `step` node, alternating between two parameter sets, with no opbox code in the loop.
fn set_params_floor(x: &Tensor, y: &Tensor) -> opbox::Result<f64> {
    let fail = |what: &str, e: sys::CUresult| opbox::Error::msg(format!("{what}: {e:?}"));
    let func = step::HANDLE.get(0)?.function.cu_function();
    let (mut xp, mut yp) = (x.device_ptr()?, y.device_ptr()?);
    let (mut s, mut n, mut len) = (1.0f32, ELEMS as u32, ELEMS as u32);
    let mut len2 = len;
    let mut params: [*mut std::ffi::c_void; 6] = [
        (&raw mut xp).cast(),
        (&raw mut yp).cast(),
        (&raw mut s).cast(),
        (&raw mut n).cast(),
        (&raw mut len).cast(),
        (&raw mut len2).cast(),
    ];
    let node_params = |params: &mut [*mut std::ffi::c_void; 6]| sys::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: ELEMS as u32,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    };
    let (mut graph, mut node, mut exec) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    let p = node_params(&mut params);
    // SAFETY: plain driver calls on the current context (the launches above made it current);
    // `p` names the loaded `step` function and six parameters that live across every call,
    // each the size of the entry's parameter; the graph and its exec are destroyed below.
    unsafe {
        let r = sys::cuGraphCreate(&mut graph, 0);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(fail("cuGraphCreate", r));
        }
        let r = sys::cuGraphAddKernelNode_v2(&mut node, graph, std::ptr::null(), 0, &p);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(fail("cuGraphAddKernelNode", r));
        }
        let r = sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(fail("cuGraphInstantiate", r));
        }
    }
    let (x0, y0) = (xp, yp);
    let mut flip = false;
    let t = gpu::time(15, 2000, || {
        flip = !flip;
        (xp, yp) = if flip { (y0, x0) } else { (x0, y0) };
        let p = node_params(&mut params);
        // SAFETY: as above; the driver copies the parameters during the call.
        let r = unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &p) };
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(fail("cuGraphExecKernelNodeSetParams", r))
        }
    });
    // SAFETY: `exec` and `graph` were created above and are not used after this.
    unsafe {
        sys::cuGraphExecDestroy(exec);
        sys::cuGraphDestroy(graph);
    }
    t
}

#[kernel]
fn step(x: In<[f32]>, y: Out<[f32]>, s: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = s * x[i];
    }
}

#[extern_kernel(source = "kernels/spin_copy.cu")]
fn spin_copy(a: In<[f32]>, out: Out<[f32]>, n: i64, cycles: i64);

#[kernel]
fn add(a: In<[f32]>, b: In<[f32]>, out: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a[i] + b[i];
    }
}

const NODES: usize = 100;
/// Elements per buffer: one block, so each kernel is as small as a launch gets.
const ELEMS: usize = 256;
/// Spin of B and C: about 1 ms at the H200's clock.
const SPIN: i64 = 2_000_000;

/// Milliseconds between two timing events around `f`'s work on the default stream.
fn span_ms(f: impl FnOnce() -> opbox::Result<()>) -> opbox::Result<f64> {
    let dev = opbox::cuda::device(0)?;
    let cuda = |e: opbox::cuda::cudarc::driver::DriverError| opbox::Error::Cuda {
        kernel: "benches/graph (timing events)".into(),
        message: e.to_string(),
    };
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = dev.context.new_event(flags).map_err(cuda)?;
    let end = dev.context.new_event(flags).map_err(cuda)?;
    start.record(&dev.stream).map_err(cuda)?;
    f()?;
    end.record(&dev.stream).map_err(cuda)?;
    let ms = start.elapsed_ms(&end).map_err(cuda)?;
    Ok(f64::from(ms))
}

/// The chain buf[0] -> step -> buf[1] -> .. -> buf[NODES], recorded.
fn record_chain(bufs: &[Tensor]) -> opbox::Result<Graph> {
    let cfg = LaunchConfig::for_elems(ELEMS);
    graph::record_named("chain100", Device::Cuda(0), |r| {
        for i in 0..NODES {
            step::launch_in(r, cfg.clone(), &bufs[i], &bufs[i + 1], 1.0, ELEMS as u32)?;
        }
        Ok(())
    })
}

fn bench() -> opbox::Result<()> {
    if let Some(why) = gpu::skip_reason() {
        println!("skipped: {why}");
        return Ok(());
    }
    let dev = Device::Cuda(0);
    let cfg = LaunchConfig::for_elems(ELEMS);
    let fresh = || Tensor::full(&[ELEMS], 1.5f64, DType::F32, dev);
    let bufs = (0..=NODES)
        .map(|_| fresh())
        .collect::<opbox::Result<Vec<_>>>()?;

    // Warm: the kernel compiled and loaded, so record + instantiate measure themselves.
    step::launch(cfg.clone(), &bufs[0], &bufs[1], 1.0, ELEMS as u32)?;
    synchronize(0)?;
    let t = Instant::now();
    let g = record_chain(&bufs)?;
    let record_us = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    let mut exec = g.instantiate()?;
    let instantiate_us = t.elapsed().as_secs_f64() * 1e6;

    let stub = gpu::time(15, 20, || {
        for i in 0..NODES {
            step::launch(cfg.clone(), &bufs[i], &bufs[i + 1], 1.0, ELEMS as u32)?;
        }
        Ok(())
    })? / NODES as f64;
    let replay = gpu::time(15, 200, || exec.launch())? / NODES as f64;
    let chain_ok = bufs[NODES].to_vec::<f32>()?.iter().all(|v| *v == 1.5);

    // Re-binding: alternate between two input/output pairs so each bind changes something.
    let (in2, out2) = (fresh()?, fresh()?);
    let mut flip = false;
    let io = gpu::time(15, 2000, || {
        flip = !flip;
        let (i, o) = if flip {
            (&in2, &out2)
        } else {
            (&bufs[0], &bufs[NODES])
        };
        exec.bind(&Bindings::new().tensor(&bufs[0], i).tensor(&bufs[NODES], o))
    })?;
    let others = (0..=NODES)
        .map(|_| fresh())
        .collect::<opbox::Result<Vec<_>>>()?;
    let all = gpu::time(15, 100, || {
        flip = !flip;
        let mut b = Bindings::new();
        for (k, recorded) in bufs.iter().enumerate() {
            b = b.tensor(recorded, if flip { &others[k] } else { recorded });
        }
        exec.bind(&b)
    })?;
    exec.bind(&Bindings::new())?;
    let floor = set_params_floor(&bufs[0], &bufs[1])?;

    // The diamond. B and C each take half the SMs (one block of 128 threads per SM).
    let sms = opbox::cuda::device(0)?
        .context
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| opbox::Error::msg(e.to_string()))?
        .max(2) as u32;
    let half = LaunchConfig::single().grid(sms / 2, 1, 1).block(128, 1, 1);
    let n = (sms / 2 * 128) as usize;
    let [x, a, b, c, d] = [(); 5].map(|_| Tensor::full(&[n], 1.0f64, DType::F32, dev));
    let (x, a, b, c, d) = (x?, a?, b?, c?, d?);
    let small = LaunchConfig::for_elems(n);
    let diamond = graph::record_named("diamond", dev, |r| {
        step::launch_in(r, small.clone(), &x, &a, 2.0, n as u32)?;
        spin_copy::launch_in(r, half.clone(), &a, &b, n as i64, SPIN)?;
        spin_copy::launch_in(r, half.clone(), &a, &c, n as i64, SPIN)?;
        add::launch_in(r, small.clone(), &b, &c, &d, n as u32)?;
        Ok(())
    })?;
    let serial_once = || -> opbox::Result<()> {
        step::launch(small.clone(), &x, &a, 2.0, n as u32)?;
        spin_copy::launch(half.clone(), &a, &b, n as i64, SPIN)?;
        spin_copy::launch(half.clone(), &a, &c, n as i64, SPIN)?;
        add::launch(small.clone(), &b, &c, &d, n as u32)
    };
    let mut diamond_exec = diamond.instantiate()?;
    serial_once()?;
    diamond.launch()?;
    diamond_exec.launch()?;
    synchronize(0)?;
    let (mut serial, mut eager, mut replayed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..7 {
        serial.push(span_ms(serial_once)?);
        eager.push(span_ms(|| diamond.launch())?);
        replayed.push(span_ms(|| diamond_exec.launch())?);
    }
    let (serial, eager, replayed) = (
        gpu::median(serial),
        gpu::median(eager),
        gpu::median(replayed),
    );
    let diamond_ok = d.to_vec::<f32>()?.iter().all(|v| *v == 4.0);

    println!(
        "graph bench on {} ({sms} SMs)",
        opbox::cuda::device(0)?.name
    );
    println!("| figure | value | goal | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| {NODES} dependent kernels, CUDA graph replay (result {}) | {:.3} µs/kernel | ≤ 0.6 µs | {:.3} (replay / stub) |",
        if chain_ok { "checked" } else { "WRONG" },
        replay * 1e6,
        replay / stub
    );
    println!(
        "| {NODES} dependent kernels, stub launches | {:.3} µs/kernel | | 1.000 |",
        stub * 1e6
    );
    println!(
        "| re-bind input + output of the {NODES}-node graph (2 nodes set) | {:.3} µs | ≤ 1 µs | |",
        io * 1e6
    );
    println!(
        "| the driver's floor: cuGraphExecKernelNodeSetParams alone, one node of a one-node graph, same kernel | {:.3} µs | | re-bind (2 nodes) / 2 floors = {:.3} |",
        floor * 1e6,
        io / (2.0 * floor)
    );
    println!(
        "| re-bind all {} buffers ({NODES} nodes set) | {:.3} µs | | {:.3} µs/node |",
        NODES + 1,
        all * 1e6,
        all * 1e6 / NODES as f64
    );
    println!("| record {NODES} launches | {record_us:.1} µs | | |");
    println!("| instantiate the {NODES}-node graph | {instantiate_us:.1} µs | | |");
    println!(
        "| diamond A→(B,C)→D, B and C {} blocks each, serial on one stream (result {}) | {serial:.3} ms | | 1.000 |",
        sms / 2,
        if diamond_ok { "checked" } else { "WRONG" }
    );
    println!(
        "| diamond, eager on the stream pool with events | {eager:.3} ms | ≤ 0.6× serial | {:.3} |",
        eager / serial
    );
    println!(
        "| diamond, CUDA graph replay | {replayed:.3} ms | ≤ 0.6× serial | {:.3} |",
        replayed / serial
    );
    if !chain_ok || !diamond_ok {
        return Err(opbox::Error::msg("a graph bench result is wrong"));
    }
    Ok(())
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graph bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}
