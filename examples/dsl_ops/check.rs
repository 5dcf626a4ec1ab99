//! The dsl ops' checks, shared by the example and `tests/dsl_ops.rs`: each op over shapes that
//! take every path of its kernel (a tail, the float4 and element paths, rows longer than a
//! block, ragged tiles), against plain Rust loops that accumulate in f64.
//!
//! `sum` and `matmul` take multiples of 1/8 in [-1, 1], small enough that every partial sum is
//! exact in f32 whatever the order (the atomics' and the tiles'), so their results must be
//! exact, on both devices. `softmax` takes any floats and is checked within `exp`'s rounding.

use opbox::cuda::codegen::{ConstValue, KernelDecl};
use opbox::prelude::*;

use super::kernels::{matmul_tiled, softmax_rows, softmax_warp_rows, sum_f32};
use super::ops::{warp_row_vectors, BLOCK, TILE, WARP_V4_MAX};

/// What the checks cover, for the example's report.
pub fn shapes() -> String {
    let sums: Vec<String> = SUMS.iter().map(|n| n.to_string()).collect();
    let rows: Vec<String> = SOFTMAX.iter().map(|s| format!("{s:?}")).collect();
    let products: Vec<String> = MATMUL
        .iter()
        .map(|[m, k, n]| format!("[{m}, {k}]·[{k}, {n}]"))
        .collect();
    format!(
        "dsl::sum over {} f32; dsl::softmax over {}; dsl::matmul {}; all match plain Rust loops",
        sums.join(", "),
        rows.join(", "),
        products.join(", ")
    )
}

const SUMS: &[usize] = &[3, 4096, 1_000_003];
/// Rows a warp holds (a ragged last float4 column, 1 to 8 float4s a lane, a last block with
/// one live warp) and rows it does not (not a multiple of 4, longer than 1024).
pub const SOFTMAX: &[[usize; 2]] = &[
    [37, 1000],
    [33, 256],
    [7, 36],
    [64, 128],
    [5, 1027],
    [3, 8192],
    [2, 1],
];
const MATMUL: &[[usize; 3]] = &[[67, 45, 83], [64, 64, 64]];

/// Every kernel with the constexpr values the ops launch it with.
pub fn kernels() -> Vec<(&'static KernelDecl, Vec<ConstValue>)> {
    let mut all = vec![
        (&sum_f32::DECL, vec![ConstValue::U32(BLOCK)]),
        (&softmax_rows::DECL, vec![ConstValue::U32(BLOCK)]),
        (&matmul_tiled::DECL, vec![ConstValue::U32(TILE)]),
    ];
    // Every lane width the op picks: the powers of two up to the most.
    let widths =
        std::iter::successors(Some(1u32), |v| Some(v * 2)).take_while(|v| *v <= WARP_V4_MAX);
    all.extend(widths.map(|v4| (&softmax_warp_rows::DECL, vec![ConstValue::U32(v4)])));
    all
}

/// `softmax_warp_rows` on `device`, at blocks of `warps` warps, over each [`SOFTMAX`] shape it
/// takes, checked against plain Rust: the CPU build runs what the CUDA op launches.
pub fn warp_rows_match(device: Device, warps: u32) -> Result<(), String> {
    let s = |e: opbox::Error| e.to_string();
    for (i, &[r, d]) in SOFTMAX.iter().enumerate() {
        let Some(v4) = warp_row_vectors(d as u32) else {
            continue;
        };
        let x: Vec<f32> = input(r * d, 10 + i as u32)
            .iter()
            .map(|v| v * 4.0)
            .collect();
        let t = Tensor::from_vec(x.clone(), &[r, d])
            .map_err(s)?
            .to(device)
            .map_err(s)?;
        let y = t.empty_like().map_err(s)?;
        let cfg = LaunchConfig::single()
            .grid((r as u32).div_ceil(warps), 1, 1)
            .block(32 * warps, 1, 1);
        softmax_warp_rows::launch(cfg, &t, &y, r as u32, d as u32, v4).map_err(s)?;
        softmax_matches(&x, d, &y.to_vec::<f32>().map_err(s)?)
            .map_err(|e| format!("softmax_warp_rows (V4 {v4}, {warps} warps a block): {e}"))?;
    }
    Ok(())
}

/// Deterministic random bits, different for each `seed` (xorshift32).
fn bits(len: usize, seed: u32) -> impl Iterator<Item = u32> {
    let mut state = 0x9E37_79B9u32 ^ seed.wrapping_mul(0x85EB_CA6B);
    (0..len).map(move |_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    })
}

/// Floats in [-2, 2).
pub fn input(len: usize, seed: u32) -> Vec<f32> {
    bits(len, seed)
        .map(|b| (b >> 8) as f32 / (1u32 << 22) as f32 - 2.0)
        .collect()
}

/// Multiples of 1/8 in [-1, 1]: sums of up to 2^21 of them (and of their products) are exact.
pub fn exact_input(len: usize, seed: u32) -> Vec<f32> {
    bits(len, seed)
        .map(|b| (b % 17) as f32 / 8.0 - 1.0)
        .collect()
}

/// One matmul: `[m, k, n]`, `a`, `b` and the op's `c`.
type Product = ([usize; 3], Vec<f32>, Vec<f32>, Vec<f32>);

/// The ops' outputs for every shape on one device, with their inputs.
pub struct Run {
    sums: Vec<(Vec<f32>, f32)>,
    softmax: Vec<([usize; 2], Vec<f32>, Vec<f32>)>,
    matmul: Vec<Product>,
}

impl Run {
    /// Calls each op through `opbox::op` on tensors on `device`.
    pub fn on(device: Device) -> opbox::Result<Run> {
        let (sum, softmax, matmul) = (
            opbox::op("dsl::sum")?,
            opbox::op("dsl::softmax")?,
            opbox::op("dsl::matmul")?,
        );
        let mut run = Run {
            sums: Vec::new(),
            softmax: Vec::new(),
            matmul: Vec::new(),
        };
        for (i, &n) in SUMS.iter().enumerate() {
            let x = exact_input(n, i as u32);
            let t = Tensor::from_vec(x.clone(), &[n])?.to(device)?;
            let total: Tensor = sum.call((&t,))?;
            run.sums.push((x, total.to_vec::<f32>()?[0]));
        }
        for (i, &[r, d]) in SOFTMAX.iter().enumerate() {
            let x: Vec<f32> = input(r * d, 10 + i as u32)
                .iter()
                .map(|v| v * 4.0)
                .collect();
            let t = Tensor::from_vec(x.clone(), &[r, d])?.to(device)?;
            let y: Tensor = softmax.call((&t,))?;
            run.softmax.push(([r, d], x, y.to_vec()?));
        }
        for (i, &[m, k, n]) in MATMUL.iter().enumerate() {
            let (a, b) = (
                exact_input(m * k, 20 + i as u32),
                exact_input(k * n, 30 + i as u32),
            );
            let ta = Tensor::from_vec(a.clone(), &[m, k])?.to(device)?;
            let tb = Tensor::from_vec(b.clone(), &[k, n])?.to(device)?;
            let c: Tensor = matmul.call((&ta, &tb))?;
            run.matmul.push(([m, k, n], a, b, c.to_vec()?));
        }
        Ok(run)
    }

    /// Each output against plain Rust loops over the same inputs.
    pub fn against_reference(&self) -> Result<(), String> {
        for (x, got) in &self.sums {
            sum_matches(x, *got)?;
        }
        for ([_, d], x, got) in &self.softmax {
            softmax_matches(x, *d, got)?;
        }
        for ([m, k, n], a, b, got) in &self.matmul {
            for i in 0..*m {
                for j in 0..*n {
                    let want: f64 = (0..*k)
                        .map(|l| a[i * k + l] as f64 * b[l * n + j] as f64)
                        .sum();
                    let at = format!("dsl::matmul [{m}, {k}]·[{k}, {n}] at ({i}, {j})");
                    exact(&at, got[i * n + j], want)?;
                }
            }
        }
        Ok(())
    }

    /// Each output against `other`'s (CUDA against the CPU): the same for the exact ops,
    /// within `exp`'s rounding for softmax.
    pub fn against(&self, other: &Run) -> Result<(), String> {
        for ((x, a), (_, b)) in self.sums.iter().zip(&other.sums) {
            exact(
                &format!("dsl::sum over {}, against the CPU", x.len()),
                *a,
                *b as f64,
            )?;
        }
        for ((shape, _, a), (_, _, b)) in self.softmax.iter().zip(&other.softmax) {
            for (g, w) in a.iter().zip(b) {
                close(
                    &format!("dsl::softmax {shape:?}, CUDA against CPU"),
                    shape[1],
                    *g as f64,
                    *w as f64,
                    *w as f64,
                )?;
            }
        }
        for ((shape, _, _, a), (_, _, _, b)) in self.matmul.iter().zip(&other.matmul) {
            if a != b {
                return Err(format!("dsl::matmul {shape:?} differs from the CPU's"));
            }
        }
        Ok(())
    }
}

/// `got` is the exact sum of `x` (an [`exact_input`]).
pub fn sum_matches(x: &[f32], got: f32) -> Result<(), String> {
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    exact(&format!("dsl::sum over {}", x.len()), got, want)
}

/// `got` is the softmax of `x`'s rows of `d` within `exp`'s rounding.
pub fn softmax_matches(x: &[f32], d: usize, got: &[f32]) -> Result<(), String> {
    let want = softmax_reference(x, d);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let at = format!("dsl::softmax [{}, {d}] at {i}", x.len() / d);
        close(&at, d, *g as f64, *w, *w)?;
    }
    Ok(())
}

fn softmax_reference(x: &[f32], d: usize) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|row| {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, v| m.max(*v as f64));
            let e: Vec<f64> = row.iter().map(|v| (*v as f64 - max).exp()).collect();
            let total: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / total)
        })
        .collect()
}

fn exact(what: &str, got: f32, want: f64) -> Result<(), String> {
    if got as f64 == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want exactly {want}"))
    }
}

/// `got` is `want` within f32 rounding of a sum of `terms` terms whose magnitudes add to
/// `scale`: a few ulps of f32 per term in the worst case, far less in practice.
fn close(what: &str, terms: usize, got: f64, want: f64, scale: f64) -> Result<(), String> {
    let bound = 4.0 * f32::EPSILON as f64 * (terms as f64).sqrt().max(4.0) * scale + 1e-30;
    if (got - want).abs() <= bound {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {got}, want {want} (allowed ±{bound:e})"
        ))
    }
}
