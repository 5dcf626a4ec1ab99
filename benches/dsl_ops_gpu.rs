//! Issue 13's figures on the GPU, as one table (harness = false; scripts/gpu-check prints it):
//! the `#[kernel]` bodies of `dsl::sum`, `dsl::softmax` and `dsl::matmul` (examples/dsl_ops)
//! against the same algorithms written by hand in CUDA (examples/kernels/reductions.cu) and
//! against PyTorch (`torch.sum`, `torch.softmax(dim=-1)`, `torch.matmul` with TF32 off, by
//! benches/peers/torch_reductions.py), in the same run. Each result is checked before it is
//! timed. Then each kernel's registers, shared and local memory and occupancy, from the driver.
//!
//! Without a GPU it prints "skipped: no GPU" and exits 0.

use std::process::ExitCode;

use opbox::cuda::codegen::ConstValue;
use opbox::prelude::*;

#[path = "../examples/dsl_ops/check.rs"]
#[allow(dead_code)]
mod check;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "../examples/dsl_ops/hand.rs"]
mod hand;
#[path = "../examples/dsl_ops/kernels.rs"]
mod kernels;
#[path = "../examples/dsl_ops/ops.rs"]
mod ops;

use hand::{matmul_tiled_hand, softmax_rows_hand, softmax_warp_rows_hand, sum_f32_hand};
use kernels::{matmul_tiled, softmax_rows, softmax_warp_rows, sum_f32};
use ops::{BLOCK, TILE, WARP_ROWS};

const SUM_ELEMS: usize = 256 << 20;
const SOFTMAX: [[usize; 2]; 2] = [[4096, 4096], [32768, 1024]];
const SIDE: usize = 4096;

fn err(m: String) -> opbox::Error {
    opbox::Error::Message(m)
}

/// One measured row: opbox's DSL, the hand-written kernel, PyTorch (ms), and the work in bytes
/// or flops for the rate.
struct Row {
    name: String,
    dsl: f64,
    hand: f64,
    torch: Option<f64>,
    work: f64,
    unit: &'static str,
    goal: &'static str,
}

fn bench() -> opbox::Result<()> {
    if let Some(why) = gpu::skip_reason() {
        println!("skipped: {why}");
        return Ok(());
    }
    let dev = Device::Cuda(0);
    let info = opbox::cuda::device(0)?;
    let torch = torch_times();
    let mut rows = Vec::new();

    // sum: every launch adds to a zeroed total, so both sides time the zeroing too.
    let n = SUM_ELEMS;
    let x = Tensor::full(&[n], 1.0f64, DType::F32, dev)?;
    let total = Tensor::zeros(&[], DType::F32, dev)?;
    let blocks = ops::stride_grid(dev, n as u32 / 4)?;
    let cfg = LaunchConfig::single().grid(blocks, 1, 1).block(BLOCK, 1, 1);
    // The blocks' sums meet in one f32 through atomics, each add rounded at the total's
    // magnitude (an ulp of 32 near 2^28): about 1e-5 off, in an order that changes per run.
    let check_sum = |what: &str| -> opbox::Result<()> {
        let got = total.to_vec::<f32>()?[0] as f64;
        if (got - n as f64).abs() > 1e-4 * n as f64 {
            return Err(err(format!("{what}: sum of {n} ones is {got}")));
        }
        Ok(())
    };
    let mut dsl_sum = || -> opbox::Result<()> {
        total.fill_(0.0)?;
        sum_f32::launch(cfg.clone(), &x, &total, n as u32, BLOCK)
    };
    dsl_sum()?;
    check_sum("DSL sum")?;
    let dsl = gpu::time(10, 20, &mut dsl_sum)?;
    let mut hand_sum = || -> opbox::Result<()> {
        total.fill_(0.0)?;
        sum_f32_hand::launch(cfg.clone(), &x, &total, n as u32)
    };
    hand_sum()?;
    check_sum("hand sum")?;
    let hand = gpu::time(10, 20, &mut hand_sum)?;
    let op = opbox::op("dsl::sum")?;
    let through_op = gpu::time(10, 20, || op.call::<_, Tensor>((&x,)).map(drop))?;
    rows.push(Row {
        name: "sum, 256 M f32 (with zeroing the total)".into(),
        dsl,
        hand,
        torch: torch.get("sum"),
        work: 4.0 * n as f64,
        unit: "TB/s",
        goal: "≥ 0.90× torch.sum and hand",
    });
    rows.push(Row {
        name: "sum through `dsl::sum` (allocates its result)".into(),
        dsl: through_op,
        hand,
        torch: torch.get("sum"),
        work: 4.0 * n as f64,
        unit: "TB/s",
        goal: "",
    });
    drop(x);

    for [r, d] in SOFTMAX {
        let x = Tensor::from_vec(check::input(r * d, 7), &[r, d])?.to(dev)?;
        let y = Tensor::zeros(&[r, d], DType::F32, dev)?;
        let (rows32, d32) = (r as u32, d as u32);
        let block_cfg = LaunchConfig::single().grid(rows32, 1, 1).block(BLOCK, 1, 1);
        let warp_cfg = LaunchConfig::single()
            .grid(rows32.div_ceil(WARP_ROWS), 1, 1)
            .block(32 * WARP_ROWS, 1, 1);
        let check_rows = |what: &str| -> opbox::Result<()> {
            let got = y.to_vec::<f32>()?;
            for (i, row) in got.chunks(d).enumerate().step_by(97) {
                let s: f64 = row.iter().map(|v| *v as f64).sum();
                if (s - 1.0).abs() > 1e-4 {
                    return Err(err(format!("{what}: row {i} sums to {s}")));
                }
            }
            Ok(())
        };
        // What `dsl::softmax` launches, against the hand twin of the same algorithm: a warp a
        // row where it fits (the hand twin holds 8 float4s a lane, rows up to 1024), else a
        // block a row.
        // The hand twin holds OPBOX_WARP_V4 = WARP_V4_MAX float4s a lane.
        let warp = ops::warp_row_vectors(d32).filter(|v4| *v4 == ops::WARP_V4_MAX);
        let time_pair = |dsl_launch: &dyn Fn() -> opbox::Result<()>,
                         hand_launch: &dyn Fn() -> opbox::Result<()>|
         -> opbox::Result<(f64, f64)> {
            y.fill_(0.0)?;
            dsl_launch()?;
            check_rows("DSL softmax")?;
            let dsl = gpu::time(10, 50, dsl_launch)?;
            y.fill_(0.0)?;
            hand_launch()?;
            check_rows("hand softmax")?;
            let hand = gpu::time(10, 50, hand_launch)?;
            Ok((dsl, hand))
        };
        let block_pair = || {
            (
                || softmax_rows::launch(block_cfg.clone(), &x, &y, d32, BLOCK),
                || softmax_rows_hand::launch(block_cfg.clone(), &x, &y, d32),
            )
        };
        let ((dsl, hand), path) = match warp {
            Some(v4) => (
                time_pair(&|| ops::launch_softmax(&x, &y, rows32, d32), &|| {
                    softmax_warp_rows_hand::launch(warp_cfg.clone(), &x, &y, rows32, d32)
                })?,
                format!("a warp a row, {v4} float4s a lane"),
            ),
            None => {
                let (a, b) = block_pair();
                (time_pair(&a, &b)?, "a block a row".to_string())
            }
        };
        let softmax_row = |path: &str, (dsl, hand): (f64, f64), goal: &'static str| Row {
            name: format!("softmax [{r}, {d}] f32 ({path})"),
            dsl,
            hand,
            torch: torch.get(&format!("softmax {r}x{d}")),
            work: 8.0 * (r * d) as f64,
            unit: "TB/s",
            goal,
        };
        rows.push(softmax_row(&path, (dsl, hand), "≥ 0.90× torch.softmax"));
        if warp.is_some() {
            // The block-a-row path on the same rows, for comparison.
            let (a, b) = block_pair();
            rows.push(softmax_row(
                "a block a row, not what the op picks",
                time_pair(&a, &b)?,
                "",
            ));
        }
    }

    let s = SIDE;
    let a = Tensor::from_vec(check::exact_input(s * s, 1), &[s, s])?.to(dev)?;
    let b = Tensor::from_vec(check::exact_input(s * s, 2), &[s, s])?.to(dev)?;
    let c = Tensor::zeros(&[s, s], DType::F32, dev)?;
    let grid = (s as u32).div_ceil(TILE);
    let cfg = LaunchConfig::single()
        .grid(grid, grid, 1)
        .block(TILE, TILE / 4, 1);
    let (av, bv) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    let check_c = |what: &str| -> opbox::Result<()> {
        let got = c.to_vec::<f32>()?;
        for (i, j) in [(0, 0), (s - 1, s - 1), (1234, 987), (4000, 17)] {
            let want: f64 = (0..s)
                .map(|l| av[i * s + l] as f64 * bv[l * s + j] as f64)
                .sum();
            if got[i * s + j] as f64 != want {
                return Err(err(format!(
                    "{what}: c[{i}, {j}] is {}, want {want}",
                    got[i * s + j]
                )));
            }
        }
        Ok(())
    };
    let m32 = s as u32;
    matmul_tiled::launch(cfg.clone(), &a, &b, &c, m32, m32, m32, TILE)?;
    check_c("DSL matmul")?;
    let dsl = gpu::time(5, 3, || {
        matmul_tiled::launch(cfg.clone(), &a, &b, &c, m32, m32, m32, TILE)
    })?;
    c.fill_(0.0)?;
    matmul_tiled_hand::launch(cfg.clone(), &a, &b, &c, m32, m32, m32)?;
    check_c("hand matmul")?;
    let hand = gpu::time(5, 3, || {
        matmul_tiled_hand::launch(cfg.clone(), &a, &b, &c, m32, m32, m32)
    })?;
    rows.push(Row {
        name: format!("tiled matmul {s}³ f32 ({TILE}×{TILE} tiles, 4 outputs a thread)"),
        dsl,
        hand,
        torch: torch.get("matmul"),
        work: 2.0 * (s * s * s) as f64,
        unit: "TFLOP/s",
        goal: "≥ 0.90× hand; torch (cuBLAS, TF32 off) reported",
    });

    println!(
        "dsl ops bench on {} ({} SMs)",
        info.name, info.multiprocessors
    );
    if let Err(why) = &torch.0 {
        println!("torch not measured: {why}");
    }
    println!("| op | DSL | hand CUDA | torch | DSL / hand | DSL / torch | goal |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let rate = |s: f64| r.work / s / 1e12;
        let torch_s = r.torch.map(|ms| ms / 1e3);
        println!(
            "| {} | {:.3} ms, {:.3} {} | {:.3} ms, {:.3} {} | {} | {:.3} | {} | {} |",
            r.name,
            r.dsl * 1e3,
            rate(r.dsl),
            r.unit,
            r.hand * 1e3,
            rate(r.hand),
            r.unit,
            torch_s.map_or("–".into(), |t| format!(
                "{:.3} ms, {:.3} {}",
                t * 1e3,
                rate(t),
                r.unit
            )),
            r.hand / r.dsl,
            torch_s.map_or("–".into(), |t| format!("{:.3}", t / r.dsl)),
            r.goal
        );
    }
    println!();
    println!("| kernel | registers | static shared B | local B | blocks/SM at its block size |");
    println!("|---|---|---|---|---|");
    let warp_block = 32 * WARP_ROWS;
    let block = [BLOCK, BLOCK, warp_block, TILE * TILE / 4];
    let warp_v4 = [ConstValue::U32(ops::WARP_V4_MAX)];
    let dsl_reports = [
        sum_f32::HANDLE.report(0, &[ConstValue::U32(BLOCK)]),
        softmax_rows::HANDLE.report(0, &[ConstValue::U32(BLOCK)]),
        softmax_warp_rows::HANDLE.report(0, &warp_v4),
        matmul_tiled::HANDLE.report(0, &[ConstValue::U32(TILE)]),
    ];
    let dsl_loaded = [
        sum_f32::HANDLE.get_specialized(0, &[ConstValue::U32(BLOCK)])?,
        softmax_rows::HANDLE.get_specialized(0, &[ConstValue::U32(BLOCK)])?,
        softmax_warp_rows::HANDLE.get_specialized(0, &warp_v4)?,
        matmul_tiled::HANDLE.get_specialized(0, &[ConstValue::U32(TILE)])?,
    ];
    let hands = [
        &sum_f32_hand::HANDLE,
        &softmax_rows_hand::HANDLE,
        &softmax_warp_rows_hand::HANDLE,
        &matmul_tiled_hand::HANDLE,
    ];
    for i in 0..hands.len() {
        let d = dsl_reports[i].clone()?;
        let occupancy = dsl_loaded[i].blocks_per_sm(block[i], 0)?;
        println!(
            "| {} (DSL) | {} | {} | {} | {occupancy} |",
            d.kernel, d.registers, d.shared_bytes, d.local_bytes
        );
        let h = hands[i].report(0, &[])?;
        let occupancy = hands[i].get(0)?.blocks_per_sm(block[i], 0)?;
        println!(
            "| {} (hand) | {} | {} | {} | {occupancy} |",
            h.kernel, h.registers, h.shared_bytes, h.local_bytes
        );
    }
    Ok(())
}

/// PyTorch's times in ms by name, from `benches/peers/torch_reductions.py`, or why not.
struct TorchTimes(Result<Vec<(String, f64)>, String>);

impl TorchTimes {
    fn get(&self, name: &str) -> Option<f64> {
        self.0
            .as_ref()
            .ok()?
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

impl std::ops::Deref for TorchTimes {
    type Target = Result<Vec<(String, f64)>, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

fn torch_times() -> TorchTimes {
    let script = std::env::var("OPBOX_TORCH_REDUCTIONS_SCRIPT")
        .unwrap_or_else(|_| "benches/peers/torch_reductions.py".into());
    let out = match std::process::Command::new("python3").arg(&script).output() {
        Ok(out) => out,
        Err(e) => return TorchTimes(Err(format!("python3 did not start ({e})"))),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let times: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| {
            let (name, v) = l.strip_prefix("torch ")?.split_once(" ms: ")?;
            Some((name.to_string(), v.trim().parse().ok()?))
        })
        .collect();
    if times.is_empty() || !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("no output").to_string();
        return TorchTimes(Err(format!("{script}: {last}")));
    }
    TorchTimes(Ok(times))
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dsl ops bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}
