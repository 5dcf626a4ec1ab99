//! Kernel graphs end to end: recording (no launch runs), dependencies derived from what each
//! kernel reads and writes, Graphviz output, eager runs, `record_op`, and on a GPU the CUDA
//! graph built through the driver's graph API, replayed with re-bound tensors and scalars.
//!
//! The DAG tests record DSL kernels on CPU tensors, so they run without a GPU and their results
//! are real; every recorded kernel is also compiled under NVRTC. A custom harness (harness =
//! false): each test passes, fails or skips with a printed reason.

mod harness;

#[path = "../examples/graph.rs"]
#[allow(dead_code)]
mod example;

use std::process::ExitCode;

use harness::{
    compile_sm90, ensure, expect_err, s, with_gpu, with_nvrtc, Outcome, Test, TestResult,
};
use opbox::cuda::codegen::ConstValue;
use opbox::graph::{self, Bindings, Graph, NodeId};
use opbox::prelude::*;

#[kernel]
fn scale(x: In<[f32]>, y: Out<[f32]>, s: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = s * x[i];
    }
}

#[kernel]
fn bump(x: InOut<[f32]>, d: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        x[i] += d;
    }
}

#[kernel]
fn add(a: In<[f32]>, b: In<[f32]>, out: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a[i] + b[i];
    }
}

#[kernel]
fn times_k(x: InOut<[f32]>, n: u32, #[constexpr] K: u32) {
    let i = global_id_x();
    if i < n {
        x[i] *= K as f32;
    }
}

/// x = x * s, then x = x + s: one node of a graph.
#[kernel_group]
mod step {
    use super::*;

    #[kernel]
    fn times(x: InOut<[f32]>, s: f32, n: u32) {
        let i = global_id_x();
        if i < n {
            x[i] *= s;
        }
    }

    #[kernel]
    fn plus(x: InOut<[f32]>, s: f32, n: u32) {
        let i = global_id_x();
        if i < n {
            x[i] += s;
        }
    }
}

/// out = a * x, then out += x.
#[kernel_group]
mod axpx {
    use super::*;

    #[extern_kernel(source = "kernels/graph_group.cu")]
    fn grp_scale(x: In<[f32]>, out: InOut<[f32]>, a: f32, n: i64);

    #[extern_kernel(source = "kernels/graph_group.cu")]
    fn grp_addx(x: In<[f32]>, out: InOut<[f32]>, a: f32, n: i64);
}

/// The struct of the `abi = "constant_params"` kernels (tests/kernels/constant_params.cu).
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::RenderParams", initializer = "aggregate")]
pub struct RenderParams {
    out: u64,
    scale: f32,
    n: i32,
}

#[extern_kernel(source = "kernels/constant_params.cu", abi = "constant_params")]
fn render(p: RenderParams);

#[extern_kernel(source = "kernels/constant_params.cu", abi = "constant_params")]
fn render_add(p: RenderParams);

/// benches/graph.rs's diamond kernel, compiled here so that CI checks its C++.
#[extern_kernel(source = "../benches/kernels/spin_copy.cu")]
fn spin_copy(a: In<[f32]>, out: Out<[f32]>, n: i64, cycles: i64);

#[extern_kernel(source = "kernels/fault.cu")]
fn write_out_of_bounds(out: Out<[f32]>);

#[stable_library(graph_ops)]
fn graph_ops(m: &mut Library) {
    m.def("axpb(Tensor x, float a, float b) -> Tensor");
}

/// Two launches per call: what record_op must capture.
#[stable_impl(graph_ops::axpb, CPU, CUDA)]
fn axpb(x: &Tensor, a: f64, b: f64) -> opbox::Result<Tensor> {
    let n = x.numel();
    let out = x.empty_like()?;
    scale::launch(LaunchConfig::for_elems(n), x, &out, a as f32, n as u32)?;
    bump::launch(LaunchConfig::for_elems(n), &out, b as f32, n as u32)?;
    Ok(out)
}

const TESTS: &[Test] = &[
    ("record_runs_nothing_and_derives_a_chain", record_chain),
    ("diamond_edges_and_eager_equals_serial", diamond_cpu),
    ("views_conflict_only_where_bytes_overlap", views),
    ("implicit_launches_are_recorded", implicit),
    ("recordings_nest_and_unwind", nesting),
    ("one_memory_under_two_storages_conflicts", shared_memory),
    ("specializations_are_recorded", specialized),
    ("record_op_captures_every_launch", record_op_cpu),
    ("launch_on_another_device_is_refused", wrong_device),
    ("dot_draws_nodes_and_hazards", dot),
    ("a_group_is_one_node", group_cpu),
    (
        "constant_params_launches_are_ordered",
        constant_params_edges,
    ),
    ("eager_graphs_rebind_tensors_and_scalars", rebind_cpu),
    (
        "bindings_are_checked_against_the_recording",
        bindings_checked,
    ),
    ("example_runs_eagerly_on_the_cpu", || {
        example::run_eager(Device::Cpu, 5)?;
        Ok(Outcome::Pass)
    }),
    ("nvrtc_compiles_every_recorded_kernel", nvrtc),
    ("cuda_graph_replays_with_new_tensors", gpu_replay),
    ("cuda_graph_refuses_mismatched_bindings", gpu_mismatch),
    ("cuda_eager_diamond_equals_serial", gpu_diamond),
    ("cuda_record_op_replays", gpu_record_op),
    ("cuda_extern_group_replays_as_one_node", gpu_group),
    ("cuda_fault_in_replay_names_the_graph", gpu_fault),
    ("cuda_constant_params_in_a_graph", gpu_constant_params),
    ("cuda_specializations_in_a_graph", || {
        with_gpu(|| specialized_on(Device::Cuda(0)))
    }),
    ("cuda_example_replays_100_times", || {
        with_gpu(|| {
            example::replay_cuda(100)?;
            Ok(Outcome::Pass)
        })
    }),
];

const CHILD_FAULT: &str = "--child-fault";

fn main() -> ExitCode {
    if std::env::args().any(|a| a == CHILD_FAULT) {
        return child_fault();
    }
    harness::run(TESTS)
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elems(n)
}

fn vec_on(v: Vec<f32>, device: Device) -> opbox::Result<Tensor> {
    let n = v.len();
    Tensor::from_vec(v, &[n])?.to(device)
}

/// x -> scale -> t -> bump(t) -> add(t, x) -> y, on `device`.
/// Also returns the scale node.
fn chain(device: Device, x: &Tensor) -> opbox::Result<(Graph, Tensor, Tensor, NodeId)> {
    let n = x.numel();
    let t = Tensor::zeros(&[n], DType::F32, device)?;
    let y = Tensor::zeros(&[n], DType::F32, device)?;
    let mut first = None;
    let g = graph::record_named("chain", device, |r| {
        first = Some(scale::launch_in(r, cfg(n), x, &t, 2.0, n as u32)?);
        bump::launch_in(r, cfg(n), &t, 1.0, n as u32)?;
        add::launch_in(r, cfg(n), &t, x, &y, n as u32)?;
        Ok(())
    })?;
    let first = first.ok_or_else(|| Error::msg("no scale node"))?;
    Ok((g, t, y, first))
}

fn chain_expected(x: &[f32], s: f32) -> Vec<f32> {
    x.iter().map(|v| (s * v + 1.0) + v).collect()
}

fn edges(g: &Graph) -> Vec<(usize, usize, String)> {
    g.edges()
        .iter()
        .map(|e| (e.from.index(), e.to.index(), e.hazards.to_string()))
        .collect()
}

fn record_chain() -> TestResult {
    let x = vec_on(vec![1.0, 2.0, 3.0, 4.0], Device::Cpu).map_err(s)?;
    let (g, t, y, first) = chain(Device::Cpu, &x).map_err(s)?;
    // The graph keeps each tensor it launches on (x by scale and add, t by all three): none can
    // be freed under a run or a replay.
    ensure(x.ref_count() == 3 && t.ref_count() == 4, || {
        format!("ref counts {} {}", x.ref_count(), t.ref_count())
    })?;
    ensure(t.to_vec::<f32>().map_err(s)? == [0.0; 4], || {
        "recording ran scale".into()
    })?;
    ensure(y.to_vec::<f32>().map_err(s)? == [0.0; 4], || {
        "recording ran add".into()
    })?;
    let e = edges(&g);
    let want = [
        (0, 1, "RAW+WAW".to_string()),
        (0, 2, "RAW".to_string()),
        (1, 2, "RAW".to_string()),
    ];
    ensure(e == want, || format!("edges {e:?}, expected {want:?}"))?;
    ensure(g.len() == 3 && g.label(first) == Some("scale"), || {
        format!("{g:?}")
    })?;
    g.launch().map_err(s)?;
    let got = y.to_vec::<f32>().map_err(s)?;
    let want = chain_expected(&[1.0, 2.0, 3.0, 4.0], 2.0);
    ensure(got == want, || format!("y = {got:?}, expected {want:?}"))?;
    Ok(Outcome::Pass)
}

/// A writes a; B and C read a and write b, c; D adds b and c into d.
fn diamond(device: Device, n: usize) -> opbox::Result<(Graph, Tensor, [Tensor; 4])> {
    let x = vec_on((0..n).map(|i| i as f32).collect(), device)?;
    let [a, b, c, d] = [(); 4].map(|_| Tensor::zeros(&[n], DType::F32, device));
    let (a, b, c, d) = (a?, b?, c?, d?);
    let k = n as u32;
    let g = graph::record_named("diamond", device, |r| {
        scale::launch_in(r, cfg(n), &x, &a, 2.0, k)?;
        scale::launch_in(r, cfg(n), &a, &b, 3.0, k)?;
        scale::launch_in(r, cfg(n), &a, &c, 5.0, k)?;
        add::launch_in(r, cfg(n), &b, &c, &d, k)?;
        Ok(())
    })?;
    Ok((g, x, [a, b, c, d]))
}

/// The diamond launched one kernel at a time, in order: the reference.
fn diamond_serial(x: &Tensor, d: &Tensor) -> opbox::Result<Vec<f32>> {
    let n = x.numel();
    let k = n as u32;
    let a = x.zeros_like()?;
    let b = x.zeros_like()?;
    let c = x.zeros_like()?;
    scale::launch(cfg(n), x, &a, 2.0, k)?;
    scale::launch(cfg(n), &a, &b, 3.0, k)?;
    scale::launch(cfg(n), &a, &c, 5.0, k)?;
    add::launch(cfg(n), &b, &c, d, k)?;
    d.to_vec()
}

fn diamond_cpu() -> TestResult {
    let (g, x, [_, _, _, d]) = diamond(Device::Cpu, 300).map_err(s)?;
    let e: Vec<(usize, usize)> = g
        .edges()
        .iter()
        .map(|e| (e.from.index(), e.to.index()))
        .collect();
    ensure(e == [(0, 1), (0, 2), (1, 3), (2, 3)], || format!("{e:?}"))?;
    g.launch().map_err(s)?;
    let got = d.to_vec::<f32>().map_err(s)?;
    let want = diamond_serial(&x, &x.zeros_like().map_err(s)?).map_err(s)?;
    ensure(got == want && got[7] == 7.0 * 2.0 * 8.0, || {
        format!("{:?} vs {:?}", &got[..8], &want[..8])
    })?;
    Ok(Outcome::Pass)
}

fn views() -> TestResult {
    let whole = Tensor::zeros(&[8], DType::F32, Device::Cpu).map_err(s)?;
    let lo = whole.narrow(0, 0, 4).map_err(s)?;
    let hi = whole.narrow(0, 4, 4).map_err(s)?;
    let mid = whole.narrow(0, 3, 2).map_err(s)?;
    let g = graph::record(Device::Cpu, |r| {
        bump::launch_in(r, cfg(4), &lo, 1.0, 4)?;
        bump::launch_in(r, cfg(4), &hi, 2.0, 4)?;
        // Overlaps the last element of lo and the first of hi.
        bump::launch_in(r, cfg(2), &mid, 4.0, 2)?;
        Ok(())
    })
    .map_err(s)?;
    let e = edges(&g);
    let want = [
        (0, 2, "RAW+WAR+WAW".to_string()),
        (1, 2, "RAW+WAR+WAW".to_string()),
    ];
    ensure(e == want, || format!("edges {e:?}, expected {want:?}"))?;
    g.launch().map_err(s)?;
    let got = whole.to_vec::<f32>().map_err(s)?;
    ensure(got == [1.0, 1.0, 1.0, 5.0, 6.0, 2.0, 2.0, 2.0], || {
        format!("{got:?}")
    })?;
    Ok(Outcome::Pass)
}

fn implicit() -> TestResult {
    let x = vec_on(vec![1.0, 2.0], Device::Cpu).map_err(s)?;
    let g = graph::record(Device::Cpu, |r| {
        bump::launch(cfg(2), &x, 1.0, 2)?;
        ensure(r.len() == 1, || {
            "an ordinary launch was not recorded".into()
        })
        .map_err(Error::msg)?;
        bump::launch_in(r, cfg(2), &x, 1.0, 2)?;
        Ok(())
    })
    .map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [1.0, 2.0], || {
        "a recorded launch ran".into()
    })?;
    ensure(g.len() == 2 && edges(&g).len() == 1, || format!("{g:?}"))?;
    g.launch().map_err(s)?;
    g.launch().map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [5.0, 6.0], || {
        "two runs of two bumps".into()
    })?;
    Ok(Outcome::Pass)
}

fn record_op_cpu() -> TestResult {
    let op = opbox::op("graph_ops::axpb").map_err(s)?;
    let x = vec_on(vec![1.0, -2.0, 0.5], Device::Cpu).map_err(s)?;
    let (g, out): (Graph, Tensor) = graph::record_op(&op, (&x, 3.0f64, 1.0f64)).map_err(s)?;
    ensure(g.name() == "graph_ops::axpb" && g.len() == 2, || {
        format!("{g:?}")
    })?;
    ensure(g.kernels(g.edges()[0].to) == ["bump"], || format!("{g:?}"))?;
    ensure(out.to_vec::<f32>().map_err(s)? == [0.0; 3], || {
        "recording ran the op's kernels".into()
    })?;
    g.launch().map_err(s)?;
    let got = out.to_vec::<f32>().map_err(s)?;
    ensure(got == [4.0, -5.0, 2.5], || format!("{got:?}"))?;
    Ok(Outcome::Pass)
}

fn wrong_device() -> TestResult {
    let x = vec_on(vec![1.0], Device::Cpu).map_err(s)?;
    expect_err(
        graph::record_named("g0", Device::Cuda(0), |r| {
            bump::launch_in(r, cfg(1), &x, 1.0, 1)?;
            Ok(())
        }),
        "a CPU launch was recorded into a cuda:0 graph",
        &[
            "kernel graph 'g0'",
            "kernel bump launches on cpu",
            "records on cuda:0",
        ],
    )?;
    ensure(!graph::recording(), || {
        "the failed recording was left open".into()
    })?;
    Ok(Outcome::Pass)
}

fn dot() -> TestResult {
    let (g, _, _) = diamond(Device::Cpu, 4).map_err(s)?;
    let d = g.to_dot();
    for needle in [
        "digraph \"diamond\" {",
        "n0 [label=\"#0 scale\"];",
        "n3 [label=\"#3 add\"];",
        "n0 -> n1 [label=\"RAW\"];",
        "n2 -> n3 [label=\"RAW\"];",
    ] {
        ensure(d.contains(needle), || format!("{needle} not in\n{d}"))?;
    }
    Ok(Outcome::Pass)
}

fn nvrtc() -> TestResult {
    with_nvrtc(|| {
        let mut decls = vec![
            &scale::DECL,
            &bump::DECL,
            &add::DECL,
            &write_out_of_bounds::DECL,
            &render::DECL,
            &render_add::DECL,
            &spin_copy::DECL,
            &example::scale::DECL,
            &example::bias::DECL,
            &example::add::DECL,
        ];
        // The groups' members, through the groups.
        for h in step::GROUP.members.iter().chain(axpx::GROUP.members) {
            decls.push(h.decl());
        }
        ensure(decls.len() == 14, || {
            "the groups have two members each".into()
        })?;
        compile_sm90(&decls)?;
        for k in [2, 3] {
            opbox::cuda::compile_for_arch(&times_k::DECL, &[ConstValue::U32(k)], "sm_90")
                .map_err(s)?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_replay() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let n = 1000;
        let x = vec_on((0..n).map(|i| i as f32).collect(), cuda).map_err(s)?;
        let (g, _t, y, first) = chain(cuda, &x).map_err(s)?;
        ensure(y.to_vec::<f32>().map_err(s)? == vec![0.0; n], || {
            "recording ran".into()
        })?;
        let mut exec = g.instantiate().map_err(s)?;
        exec.replay(&Bindings::new()).map_err(s)?;
        let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
        ensure(
            y.to_vec::<f32>().map_err(s)? == chain_expected(&host, 2.0),
            || "first replay differs".into(),
        )?;
        for step in 0..5 {
            let host: Vec<f32> = (0..n).map(|i| (i * step) as f32 - 3.0).collect();
            let x2 = vec_on(host.clone(), cuda).map_err(s)?;
            let s_step = 1.0 + step as f32;
            exec.replay(&Bindings::new().tensor(&x, &x2).scalar(first, "s", s_step))
                .map_err(s)?;
            let got = y.to_vec::<f32>().map_err(s)?;
            ensure(got == chain_expected(&host, s_step), || {
                format!("replay {step}: {:?}", &got[..4])
            })?;
        }
        exec.synchronize().map_err(s)?;
        Ok(Outcome::Pass)
    })
}

fn gpu_mismatch() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let x = vec_on(vec![1.0; 16], cuda).map_err(s)?;
        let (g, t, _y, first) = chain(cuda, &x).map_err(s)?;
        let mut exec = g.instantiate().map_err(s)?;
        let short = vec_on(vec![1.0; 8], cuda).map_err(s)?;
        expect_err(
            exec.replay(&Bindings::new().tensor(&x, &short)),
            "a shorter tensor was bound",
            &[
                "kernel graph 'chain'",
                "node #0 (kernel scale) parameter 'x'",
                "shape [8]",
            ],
        )?;
        expect_err(
            exec.replay(&Bindings::new().scalar(first, "s", 2.0f64)),
            "an f64 was bound to an f32 parameter",
            &["node #0 (kernel scale) parameter 's'", "f32", "f64"],
        )?;
        // x bound to t's memory: scale would read what it writes.
        expect_err(
            exec.replay(&Bindings::new().tensor(&x, &t)),
            "an overlapping binding was accepted",
            &["shares memory"],
        )?;
        exec.replay(&Bindings::new()).map_err(s)?;
        exec.synchronize().map_err(s)?;
        Ok(Outcome::Pass)
    })
}

fn gpu_diamond() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let (g, x, [_, _, _, d]) = diamond(cuda, 1 << 16).map_err(s)?;
        g.launch().map_err(s)?;
        let got = d.to_vec::<f32>().map_err(s)?;
        let want = diamond_serial(&x, &x.zeros_like().map_err(s)?).map_err(s)?;
        ensure(got == want, || "eager diamond differs from serial".into())?;
        let mut exec = g.instantiate().map_err(s)?;
        d.fill_(0.0).map_err(s)?;
        exec.replay(&Bindings::new()).map_err(s)?;
        ensure(d.to_vec::<f32>().map_err(s)? == want, || {
            "graph diamond differs".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_record_op() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let op = opbox::op("graph_ops::axpb").map_err(s)?;
        let x = vec_on(vec![1.0, -2.0, 0.5], cuda).map_err(s)?;
        let (g, out): (Graph, Tensor) = graph::record_op(&op, (&x, 3.0f64, 1.0f64)).map_err(s)?;
        let mut exec = g.instantiate().map_err(s)?;
        let x2 = vec_on(vec![2.0, 0.0, -1.0], cuda).map_err(s)?;
        exec.replay(&Bindings::new().tensor(&x, &x2)).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        ensure(got == [7.0, 1.0, -2.0], || format!("{got:?}"))?;
        Ok(Outcome::Pass)
    })
}

fn group_cpu() -> TestResult {
    let x = vec_on(vec![1.0, 2.0, 3.0], Device::Cpu).map_err(s)?;
    let y = vec_on(vec![0.0; 3], Device::Cpu).map_err(s)?;
    let mut node = None;
    let g = graph::record(Device::Cpu, |r| {
        node = Some(step::launch_in(r, cfg(3), &x, 2.0, 3)?);
        add::launch_in(r, cfg(3), &x, &x, &y, 3)?;
        Ok(())
    })
    .map_err(s)?;
    let node = node.ok_or("no node")?;
    ensure(g.len() == 2 && g.label(node) == Some("step"), || {
        format!("{g:?}")
    })?;
    ensure(g.kernels(node) == ["times", "plus"], || {
        format!("{:?}", g.kernels(node))
    })?;
    ensure(edges(&g) == [(0, 1, "RAW".to_string())], || {
        format!("{:?}", edges(&g))
    })?;
    ensure(g.to_dot().contains("#0 step\\n[times, plus]"), || {
        g.to_dot()
    })?;
    g.launch().map_err(s)?;
    ensure(y.to_vec::<f32>().map_err(s)? == [8.0, 12.0, 16.0], || {
        "group in a graph".into()
    })?;
    // Launched directly, the group runs its members in order too.
    step::launch(cfg(3), &x, 1.0, 3).map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [5.0, 7.0, 9.0], || {
        "group launch".into()
    })?;
    Ok(Outcome::Pass)
}

fn gpu_group() -> TestResult {
    with_gpu(|| {
        let cuda = Device::Cuda(0);
        let x = vec_on(vec![1.0, 2.0, 3.0], cuda).map_err(s)?;
        let out = vec_on(vec![0.0; 3], cuda).map_err(s)?;
        axpx::launch(cfg(3), &x, &out, 3.0, 3).map_err(s)?;
        ensure(out.to_vec::<f32>().map_err(s)? == [4.0, 8.0, 12.0], || {
            "direct".into()
        })?;
        let mut node = None;
        let g = graph::record(cuda, |r| {
            node = Some(axpx::launch_in(r, cfg(3), &x, &out, 2.0, 3)?);
            Ok(())
        })
        .map_err(s)?;
        let node = node.ok_or("no node")?;
        let mut exec = g.instantiate().map_err(s)?;
        let x2 = vec_on(vec![-1.0, 0.5, 10.0], cuda).map_err(s)?;
        exec.replay(&Bindings::new().tensor(&x, &x2).scalar(node, "a", 4.0f32))
            .map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        ensure(got == [-5.0, 2.5, 50.0], || format!("{got:?}"))?;
        Ok(Outcome::Pass)
    })
}

fn gpu_fault() -> TestResult {
    with_gpu(|| harness::run_child(CHILD_FAULT))
}

/// A graph whose kernel writes out of bounds: the fault, reported at synchronization, names
/// the graph (the context is lost afterwards, hence a child process).
fn child_fault() -> ExitCode {
    harness::child_verdict(|| {
        let out = Tensor::zeros(&[1], DType::F32, Device::Cuda(0)).map_err(s)?;
        let g = graph::record_named("faulty", Device::Cuda(0), |r| {
            write_out_of_bounds::launch_in(r, LaunchConfig::single(), &out)?;
            Ok(())
        })
        .map_err(s)?;
        let mut exec = g.instantiate().map_err(s)?;
        exec.replay(&Bindings::new()).map_err(s)?;
        let own = exec.synchronize();
        let global = opbox::cuda::synchronize(0);
        match (own, global) {
            (Err(a @ Error::Graph { .. }), Err(b @ Error::Graph { .. }))
                if a.to_string().contains("'faulty'") && b.to_string().contains("'faulty'") =>
            {
                Ok(format!("{a} / {b}"))
            }
            (a, b) => Err(format!(
                "expected both to name graph 'faulty', got {a:?} and {b:?}"
            )),
        }
    })
}

/// render(0.5), render_add(2.0), render_add(0.25) into `out` (by address, inside the struct).
fn record_render(out: u64, n: usize) -> opbox::Result<(Graph, NodeId)> {
    let cfg = LaunchConfig::for_elems(n);
    let p = |scale: f32| RenderParams {
        out,
        scale,
        n: n as i32,
    };
    let mut first = None;
    let g = graph::record_named("render", Device::Cuda(0), |r| {
        first = Some(render::launch_in(r, cfg.clone(), p(0.5))?);
        render_add::launch_in(r, cfg.clone(), p(2.0))?;
        render_add::launch_in(r, cfg.clone(), p(0.25))?;
        Ok(())
    })?;
    Ok((g, first.ok_or_else(|| Error::msg("no render node"))?))
}

/// The struct's addresses are invisible to the graph, so each such launch is ordered against
/// every other (recorded without a GPU: these launches take no tensor).
fn constant_params_edges() -> TestResult {
    let (g, _) = record_render(0, 16).map_err(s)?;
    let e: Vec<(usize, usize)> = g
        .edges()
        .iter()
        .map(|e| (e.from.index(), e.to.index()))
        .collect();
    ensure(e == [(0, 1), (0, 2), (1, 2)], || format!("{e:?}"))?;
    Ok(Outcome::Pass)
}

fn gpu_constant_params() -> TestResult {
    with_gpu(|| {
        let n = 1000usize;
        let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0)).map_err(s)?;
        let (ptr, _) = out.cuda_ptr().map_err(s)?;
        let (g, first) = record_render(ptr, n).map_err(s)?;
        let mut exec = g.instantiate().map_err(s)?;
        exec.replay(&Bindings::new()).map_err(s)?;
        let want: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 + 2.25).collect();
        ensure(out.to_vec::<f32>().map_err(s)? == want, || {
            "first replay".into()
        })?;
        let p = RenderParams {
            out: ptr,
            scale: 1.0,
            n: n as i32,
        };
        exec.replay(&Bindings::new().scalar(first, "p", p))
            .map_err(s)?;
        let want: Vec<f32> = (0..n).map(|i| i as f32 + 2.25).collect();
        ensure(out.to_vec::<f32>().map_err(s)? == want, || {
            "re-bound struct".into()
        })?;
        // Eagerly, the same graph writes each struct before its launch too.
        out.fill_(0.0).map_err(s)?;
        g.launch().map_err(s)?;
        let want: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 + 2.25).collect();
        ensure(out.to_vec::<f32>().map_err(s)? == want, || "eager".into())?;
        Ok(Outcome::Pass)
    })
}

fn rebind_cpu() -> TestResult {
    let host = [1.0f32, 2.0, 3.0, 4.0];
    let x = vec_on(host.to_vec(), Device::Cpu).map_err(s)?;
    let (mut g, _t, y, first) = chain(Device::Cpu, &x).map_err(s)?;
    let fresh = [-1.0f32, 0.5, 8.0, 0.0];
    let x2 = vec_on(fresh.to_vec(), Device::Cpu).map_err(s)?;
    g.bind(&Bindings::new().tensor(&x, &x2).scalar(first, "s", 3.0f32))
        .map_err(s)?;
    g.launch().map_err(s)?;
    let got = y.to_vec::<f32>().map_err(s)?;
    ensure(got == chain_expected(&fresh, 3.0), || format!("{got:?}"))?;
    ensure(x.to_vec::<f32>().map_err(s)? == host, || {
        "x was written".into()
    })?;
    // Bound again by the recorded handle: back to x.
    g.bind(&Bindings::new().tensor(&x, &x)).map_err(s)?;
    g.launch().map_err(s)?;
    let got = y.to_vec::<f32>().map_err(s)?;
    ensure(got == chain_expected(&host, 3.0), || format!("{got:?}"))?;
    // A group's parameter is bound in every member.
    let z = vec_on(vec![1.0, 2.0], Device::Cpu).map_err(s)?;
    let mut node = None;
    let mut g = graph::record(Device::Cpu, |r| {
        node = Some(step::launch_in(r, cfg(2), &z, 2.0, 2)?);
        Ok(())
    })
    .map_err(s)?;
    let node = node.ok_or("no node")?;
    g.bind(&Bindings::new().scalar(node, "s", 10.0f32))
        .map_err(s)?;
    g.launch().map_err(s)?;
    let got = z.to_vec::<f32>().map_err(s)?;
    ensure(got == [20.0, 30.0], || format!("{got:?}"))?;
    Ok(Outcome::Pass)
}

fn bindings_checked() -> TestResult {
    let x = vec_on(vec![1.0; 4], Device::Cpu).map_err(s)?;
    let (mut g, t, y, first) = chain(Device::Cpu, &x).map_err(s)?;
    let short = vec_on(vec![1.0; 2], Device::Cpu).map_err(s)?;
    expect_err(
        g.bind(&Bindings::new().tensor(&x, &short)),
        "a shorter tensor was bound",
        &[
            "kernel graph 'chain'",
            "node #0 (kernel scale) parameter 'x'",
            "shape [2]",
            "shape [4]",
        ],
    )?;
    let ints = Tensor::zeros(&[4], DType::I32, Device::Cpu).map_err(s)?;
    expect_err(
        g.bind(&Bindings::new().tensor(&y, &ints)),
        "an i32 tensor was bound for an f32 one",
        &["node #2 (kernel add) parameter 'out'", "i32"],
    )?;
    expect_err(
        g.bind(&Bindings::new().scalar(first, "s", 2.0f64)),
        "an f64 was bound to an f32 parameter",
        &["node #0 (kernel scale) parameter 's'", "f32", "f64"],
    )?;
    expect_err(
        g.bind(&Bindings::new().scalar(first, "gain", 2.0f32)),
        "an unknown parameter was bound",
        &["node #0 (kernel scale) has no parameter 'gain'"],
    )?;
    // A node of another, longer graph.
    let z = vec_on(vec![0.0; 1], Device::Cpu).map_err(s)?;
    let long = graph::record(Device::Cpu, |r| {
        for _ in 0..10 {
            bump::launch_in(r, cfg(1), &z, 1.0, 1)?;
        }
        Ok(())
    })
    .map_err(s)?;
    let far = long.nodes().last().ok_or("no nodes")?;
    expect_err(
        g.bind(&Bindings::new().scalar(far, "s", 2.0f32)),
        "a node past the end was bound",
        &["the graph has 3 nodes"],
    )?;
    let stranger = vec_on(vec![0.0; 4], Device::Cpu).map_err(s)?;
    expect_err(
        g.bind(&Bindings::new().tensor(&stranger, &x)),
        "a tensor the graph never saw was bound",
        &["no launch of this graph recorded"],
    )?;
    // x bound to t's memory: scale would read what it writes.
    expect_err(
        g.bind(&Bindings::new().tensor(&x, &t)),
        "an overlapping binding was accepted",
        &["shares memory", "parameter 'x'"],
    )?;
    // Every other element of a [4, 2]: shape [4], stride 2.
    let view = Tensor::zeros(&[4, 2], DType::F32, Device::Cpu)
        .and_then(|w| w.narrow(1, 0, 1))
        .and_then(|w| w.reshape(&[4]))
        .map_err(s)?;
    ensure(!view.is_contiguous(), || format!("{:?}", view.strides()))?;
    expect_err(
        g.bind(&Bindings::new().tensor(&x, &view)),
        "a strided view was bound",
        &["non-contiguous", "call .contiguous() first"],
    )?;
    // A refused set changes nothing, even its valid bindings.
    let x2 = vec_on(vec![5.0; 4], Device::Cpu).map_err(s)?;
    expect_err(
        g.bind(&Bindings::new().tensor(&x, &x2).tensor(&y, &ints)),
        "a set with one bad binding was accepted",
        &["parameter 'out'"],
    )?;
    g.launch().map_err(s)?;
    let got = y.to_vec::<f32>().map_err(s)?;
    ensure(got == chain_expected(&[1.0; 4], 2.0), || format!("{got:?}"))?;
    Ok(Outcome::Pass)
}

fn nesting() -> TestResult {
    let x = vec_on(vec![0.0], Device::Cpu).map_err(s)?;
    let mut inner = None;
    let outer = graph::record_named("outer", Device::Cpu, |r| {
        bump::launch_in(r, cfg(1), &x, 1.0, 1)?;
        inner = Some(graph::record_named("inner", Device::Cpu, |_| {
            // A plain launch goes to the innermost recording, an explicit one to its own.
            bump::launch(cfg(1), &x, 10.0, 1)?;
            bump::launch_in(r, cfg(1), &x, 100.0, 1)?;
            Ok(())
        })?);
        bump::launch(cfg(1), &x, 1000.0, 1)?;
        Ok(())
    })
    .map_err(s)?;
    let inner = inner.ok_or("no inner graph")?;
    ensure(outer.len() == 3 && inner.len() == 1, || {
        format!("{outer:?} / {inner:?}")
    })?;
    ensure(x.to_vec::<f32>().map_err(s)? == [0.0], || {
        "a recorded launch ran".into()
    })?;
    inner.launch().map_err(s)?;
    outer.launch().map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [1111.0], || {
        "nested runs".into()
    })?;
    // A closure that panics ends its recording on the way out.
    // (Quietly: the panic is expected.)
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let unwound = std::panic::catch_unwind(|| {
        let _ = graph::record(Device::Cpu, |_| -> opbox::Result<()> { panic!("inside") });
    });
    std::panic::set_hook(hook);
    ensure(unwound.is_err() && !graph::recording(), || {
        "a panicking recording stayed open".into()
    })?;
    bump::launch(cfg(1), &x, 1.0, 1).map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [1112.0], || {
        "launch after unwinding".into()
    })?;
    Ok(Outcome::Pass)
}

fn specialized() -> TestResult {
    specialized_on(Device::Cpu)
}

/// `launch_in` of a kernel with a #[constexpr], plain and specialized, on `device`.
fn specialized_on(device: Device) -> TestResult {
    let x = vec_on(vec![1.0, 2.0], device).map_err(s)?;
    let g = graph::record(device, |r| {
        times_k::launch_in(r, cfg(2), &x, 2, 2)?;
        times_k::specialize(3).launch_in(r, cfg(2), &x, 2)?;
        Ok(())
    })
    .map_err(s)?;
    ensure(g.len() == 2 && g.edges().len() == 1, || format!("{g:?}"))?;
    g.launch().map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [6.0, 12.0], || {
        "eager".into()
    })?;
    if matches!(device, Device::Cuda(_)) {
        let mut exec = g.instantiate().map_err(s)?;
        exec.replay(&Bindings::new()).map_err(s)?;
        ensure(x.to_vec::<f32>().map_err(s)? == [36.0, 72.0], || {
            "replay".into()
        })?;
    }
    Ok(Outcome::Pass)
}

/// A DLPack import is another storage over the same bytes: the graph orders launches on the two
/// by their addresses, not by which storage they name.
fn shared_memory() -> TestResult {
    let x = vec_on(vec![1.0, 2.0], Device::Cpu).map_err(s)?;
    let managed = x.to_dlpack().map_err(s)?;
    // SAFETY: `managed` was just exported by opbox and is given up here, once.
    let alias = unsafe { Tensor::from_dlpack(managed) }.map_err(s)?;
    ensure(!alias.same_storage(&x), || {
        "the import shares the storage object".into()
    })?;
    let other = vec_on(vec![0.0, 0.0], Device::Cpu).map_err(s)?;
    let g = graph::record(Device::Cpu, |r| {
        bump::launch_in(r, cfg(2), &x, 1.0, 2)?;
        bump::launch_in(r, cfg(2), &other, 1.0, 2)?;
        bump::launch_in(r, cfg(2), &alias, 1.0, 2)?;
        Ok(())
    })
    .map_err(s)?;
    let e = edges(&g);
    ensure(e == [(0, 2, "RAW+WAR+WAW".to_string())], || {
        format!("{e:?}")
    })?;
    g.launch().map_err(s)?;
    ensure(x.to_vec::<f32>().map_err(s)? == [3.0, 4.0], || {
        "both bumps".into()
    })?;
    Ok(Outcome::Pass)
}
