//! Kernel graph figures on the GPU, printed as one table (a plain `main`, harness = false;
//! scripts/gpu-check prints its table):
//!
//! - a CUDA graph of 100 small dependent kernels (a chain `buf[i+1] = buf[i] * 1`) replayed,
//!   per kernel, against 100 stub launches of the same kernel in the same run (goal ≤ 0.6 µs);
//! - re-binding before a replay: the chain's input and output (2 nodes' parameters set; goal
//!   ≤ 1 µs), and every buffer (all 100 nodes);
//! - the driver's floor for that replay: the same 100 nodes (the same `step` function and
//!   parameters) put into a graph with raw driver calls and replayed, with the launch-order
//!   programmatic edges opbox gives a `#[kernel]` node and with plain edges, so the table shows
//!   what opbox adds to a replay and what this GPU charges a dependent kernel node;
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

fn driver_failed(what: &str, e: sys::CUresult) -> opbox::Error {
    opbox::Error::msg(format!("{what}: {e:?}"))
}

/// `r` as a Result naming `what`.
fn checked(what: &str, r: sys::CUresult) -> opbox::Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_failed(what, r))
    }
}

/// The six launch parameters of `step(x, y, 1.0, ELEMS)` under its `ParamsAndLens` ABI (x, y,
/// s, n, then each buffer's length), held where a node's `kernelParams` can point at them.
struct StepParams {
    x: u64,
    y: u64,
    s: f32,
    n: u32,
    lens: [u32; 2],
}

impl StepParams {
    fn new(x: u64, y: u64) -> StepParams {
        StepParams {
            x,
            y,
            s: 1.0,
            n: ELEMS as u32,
            lens: [ELEMS as u32; 2],
        }
    }

    /// A one-block node of `func` whose parameters are `ptrs`, which must point into `self`
    /// (see [`StepParams::pointers`]) while the driver reads them.
    fn node(
        func: sys::CUfunction,
        ptrs: &mut [*mut std::ffi::c_void; 6],
    ) -> sys::CUDA_KERNEL_NODE_PARAMS {
        sys::CUDA_KERNEL_NODE_PARAMS {
            func,
            gridDimX: 1,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: ELEMS as u32,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: ptrs.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        }
    }

    fn pointers(&mut self) -> [*mut std::ffi::c_void; 6] {
        [
            (&raw mut self.x).cast(),
            (&raw mut self.y).cast(),
            (&raw mut self.s).cast(),
            (&raw mut self.n).cast(),
            (&raw mut self.lens[0]).cast(),
            (&raw mut self.lens[1]).cast(),
        ]
    }
}

/// How [`driver_chain`] joins its nodes.
#[derive(Clone, Copy, PartialEq)]
enum Edges {
    /// Launch-order programmatic edges, as opbox joins `#[kernel]` nodes on sm_90.
    LaunchOrder,
    /// Plain edges: a node starts when its predecessor has completed.
    Plain,
}

/// Seconds per kernel of replaying the chain bufs[0] -> step -> .. -> bufs[NODES] built with raw
/// driver calls (no opbox code: the same function and parameters opbox's graph holds), joined
/// by `edges`.
fn driver_chain(bufs: &[Tensor], edges: Edges) -> opbox::Result<f64> {
    const LAUNCH_ORDER: sys::CUgraphEdgeData = sys::CUgraphEdgeData {
        from_port: sys::CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER as u8,
        to_port: 0,
        type_: sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8,
        reserved: [0; 5],
    };
    let func = step::HANDLE.get(0)?.function.cu_function();
    let stream = opbox::cuda::device(0)?.stream.cu_stream();
    let mut graph = std::ptr::null_mut();
    // SAFETY: creates an empty graph, destroyed below.
    checked("cuGraphCreate", unsafe {
        sys::cuGraphCreate(&mut graph, 0)
    })?;
    let mut prev: sys::CUgraphNode = std::ptr::null_mut();
    for i in 0..NODES {
        let mut params = StepParams::new(bufs[i].device_ptr()?, bufs[i + 1].device_ptr()?);
        let mut ptrs = params.pointers();
        let p = StepParams::node(func, &mut ptrs);
        let plain_dep = edges == Edges::Plain && !prev.is_null();
        let mut node = std::ptr::null_mut();
        // SAFETY: `graph` is live and `prev` (when passed) is its node; `p` names the loaded
        // `step` and six parameters of its entry's sizes, live across the call, which copies
        // them.
        checked("cuGraphAddKernelNode", unsafe {
            sys::cuGraphAddKernelNode_v2(
                &mut node,
                graph,
                if plain_dep { &prev } else { std::ptr::null() },
                usize::from(plain_dep),
                &p,
            )
        })?;
        if edges == Edges::LaunchOrder && !prev.is_null() {
            // SAFETY: both nodes are kernel nodes of `graph`; one edge of each array.
            checked("cuGraphAddDependencies", unsafe {
                sys::cuGraphAddDependencies_v2(graph, &prev, &node, &LAUNCH_ORDER, 1)
            })?;
        }
        prev = node;
    }
    let mut exec = std::ptr::null_mut();
    // SAFETY: `graph` is complete; `exec` is an out-pointer, destroyed below.
    let made = checked("cuGraphInstantiate", unsafe {
        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
    });
    let timed = made.and_then(|()| {
        gpu::time(15, 200, || {
            // SAFETY: `exec` is this context's instantiated graph; `stream` its default stream.
            checked("cuGraphLaunch", unsafe { sys::cuGraphLaunch(exec, stream) })
        })
    });
    // SAFETY: created above, not used after this.
    unsafe {
        if !exec.is_null() {
            sys::cuGraphExecDestroy(exec);
        }
        sys::cuGraphDestroy(graph);
    }
    Ok(timed? / NODES as f64)
}

/// What the driver alone charges for a re-bind: `cuGraphExecKernelNodeSetParams` on a graph of
/// one `step` node, alternating between two parameter sets, with no opbox code in the loop.
fn set_params_floor(x: &Tensor, y: &Tensor) -> opbox::Result<f64> {
    let fail = driver_failed;
    let func = step::HANDLE.get(0)?.function.cu_function();
    let mut step_params = StepParams::new(x.device_ptr()?, y.device_ptr()?);
    let mut params = step_params.pointers();
    let node_params = |params: &mut [*mut std::ffi::c_void; 6]| StepParams::node(func, params);
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
    let (x0, y0) = (step_params.x, step_params.y);
    let mut flip = false;
    let t = gpu::time(15, 2000, || {
        flip = !flip;
        (step_params.x, step_params.y) = if flip { (y0, x0) } else { (x0, y0) };
        let mut params = step_params.pointers();
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
    let driver_launch_order = driver_chain(&bufs, Edges::LaunchOrder)?;
    let driver_plain = driver_chain(&bufs, Edges::Plain)?;
    let replay_again = gpu::time(15, 200, || exec.launch())? / NODES as f64;

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
        "| the driver's floor: the same {NODES} nodes built with raw driver calls, launch-order programmatic edges (as opbox's), replay | {:.3} µs/kernel | | opbox replay ({:.3} µs, timed after it) / driver = {:.3} |",
        driver_launch_order * 1e6,
        replay_again * 1e6,
        replay_again / driver_launch_order
    );
    println!(
        "| the same raw graph with plain edges, replay | {:.3} µs/kernel | | {:.3} (plain / launch-order) |",
        driver_plain * 1e6,
        driver_plain / driver_launch_order
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
