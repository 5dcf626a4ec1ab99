//! The `#[kernel]` DSL: Rust kernels that run on the CPU (the body built as Rust, blocks across
//! cores) and on CUDA (the same body emitted as C++ and compiled by NVRTC).
//!
//! - `axpy`: `y = a*x + y`;
//! - `axpy4`: the same four elements a thread through `load4`/`store4` (16-byte accesses, what
//!   bandwidth-bound kernels need on a GPU), with its `n % 4` tail;
//! - `fused_gelu`: `y = gelu(a*x + b)` through a `#[builtin]` whose C++ comes from the kernel's
//!   build options and whose Rust body is the CPU build;
//! - `brighten`: a 2-D kernel over a strided image (rows `stride` elements apart), with a
//!   `#[device]` helper.
//!
//! Each runs on the CPU; with a GPU each also runs on CUDA and is checked against the CPU. Without
//! NVRTC or a GPU the example says so and still checks the CPU runs.

use std::sync::LazyLock;

use opbox::prelude::*;
use opbox::{builtin, BuildOptions};

#[kernel]
pub fn axpy(x: In<[f32]>, y: InOut<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = a * x[i] + y[i];
    }
}

/// axpy four elements a thread: `load4`/`store4` move each four as one 16-byte float4, which
/// is what reaches the GPU's memory rate (benches/dsl_gpu.rs); the `n % 4` tail goes element by
/// element. Launch `n / 4 + 1` threads.
#[kernel]
pub fn axpy4(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n / 4 {
        let p = x.load4(i);
        let q = y.load4(i);
        let r = F32x4 {
            x: a * p.x + q.x,
            y: a * p.y + q.y,
            z: a * p.z + q.z,
            w: a * p.w + q.w,
        };
        out.store4(i, r);
    } else if i == n / 4 {
        for j in 4 * i..n {
            out[j] = a * x[j] + y[j];
        }
    }
}

/// The C++ behind `gelu`: a group's preamble.
static GELU_CPP: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions {
    preamble: "namespace opbox_ex {\n__device__ inline float gelu(float x) {\n  return 0.5f * x * (1.0f + tanhf(0.7978846f * (x + 0.044715f * x * x * x)));\n}\n}\n".into(),
    ..BuildOptions::default()
}
});

/// tanh-approximated GELU; the body is the CPU build, the C++ is `opbox_ex::gelu`.
#[builtin(native = "opbox_ex::gelu")]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

#[kernel(build = GELU_CPP)]
pub fn fused_gelu(x: In<[f32]>, y: Out<[f32]>, a: f32, b: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = gelu(a * x[i] + b);
    }
}

/// Scales a pixel and clips it to [0, 1].
#[device]
fn expose(v: f32, gain: f32) -> f32 {
    (v * gain).clamp(0.0, 1.0)
}

#[kernel]
pub fn brighten(img: In<[f32]>, out: Out<[f32]>, width: u32, height: u32, stride: u32, gain: f32) {
    let x = global_id_x();
    let y = global_id_y();
    if x < width && y < height {
        let at = y * stride + x;
        out[at] = expose(img[at], gain);
    }
}

const N: usize = 10_000;
const W: u32 = 37;
const H: u32 = 19;
const STRIDE: u32 = 40;

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let x = (0..N).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    let y = (0..N).map(|i| (i % 17) as f32 - 8.0).collect();
    (x, y)
}

fn image() -> Vec<f32> {
    (0..(STRIDE * H) as usize)
        .map(|i| (i % 97) as f32 / 96.0)
        .collect()
}

fn image_cfg() -> LaunchConfig {
    LaunchConfig::single()
        .grid(W.div_ceil(16), H.div_ceil(8), 1)
        .block(16, 8, 1)
}

/// The four kernels on `device`; returns their outputs.
pub fn run(device: Device) -> opbox::Result<[Vec<f32>; 4]> {
    let (xv, yv) = inputs();
    let x = Tensor::from_vec(xv, &[N])?.to(device)?;
    let y = Tensor::from_vec(yv, &[N])?.to(device)?;
    let y4 = Tensor::zeros(&[N], DType::F32, device)?;
    axpy4::launch(
        LaunchConfig::for_elems(N / 4 + 1),
        &x,
        &y,
        &y4,
        2.0,
        N as u32,
    )?;
    axpy::launch(LaunchConfig::for_elems(N), &x, &y, 2.0, N as u32)?;
    let g = Tensor::zeros(&[N], DType::F32, device)?;
    fused_gelu::launch(LaunchConfig::for_elems(N), &x, &g, 0.5, -0.25, N as u32)?;
    let img = Tensor::from_vec(image(), &[(STRIDE * H) as usize])?.to(device)?;
    let out = Tensor::zeros(&[(STRIDE * H) as usize], DType::F32, device)?;
    brighten::launch(image_cfg(), &img, &out, W, H, STRIDE, 1.7)?;
    Ok([y.to_vec()?, g.to_vec()?, out.to_vec()?, y4.to_vec()?])
}

/// The CPU results against plain Rust loops over the same formulas.
pub fn check_cpu(got: &[Vec<f32>; 4]) -> Result<(), String> {
    let (x, y) = inputs();
    let axpy: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
    let fused: Vec<f32> = x.iter().map(|x| gelu(0.5 * x - 0.25)).collect();
    let img = image();
    let mut bright = vec![0.0f32; img.len()];
    for r in 0..H {
        for c in 0..W {
            let at = (r * STRIDE + c) as usize;
            bright[at] = (img[at] * 1.7).clamp(0.0, 1.0);
        }
    }
    for (name, want, got) in [
        ("axpy", &axpy, &got[0]),
        ("fused_gelu", &fused, &got[1]),
        ("brighten", &bright, &got[2]),
        ("axpy4", &axpy, &got[3]),
    ] {
        if want != got {
            return Err(format!(
                "{name} on the CPU differs from the plain Rust loop"
            ));
        }
    }
    Ok(())
}

/// CUDA against the CPU: bit-identical for axpy and brighten (no transcendental functions, and
/// no multiply-add to contract as the CPU does not); gelu within 16 ulps: CUDA's `tanhf` and
/// Rust's `tanh` are each within 2 ulps of exact, NVRTC contracts the cubic into fmas, and for
/// negative inputs `1 + tanh(u)` cancels, which multiplies those ulps (7 seen on the H200).
pub fn check_cuda(cpu: &[Vec<f32>; 4], cuda: &[Vec<f32>; 4]) -> Result<(), String> {
    let ulps = |a: f32, b: f32| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
    for (k, (name, tolerance)) in [
        ("axpy", 1),
        ("fused_gelu", 16),
        ("brighten", 0),
        ("axpy4", 1),
    ]
    .into_iter()
    .enumerate()
    {
        let worst = cpu[k]
            .iter()
            .zip(&cuda[k])
            .map(|(a, b)| ulps(*a, *b))
            .max()
            .unwrap_or(0);
        // axpy's (and axpy4's) `a*x + y` may be fused into one fma by NVRTC (--fmad=true is its default): 1 ulp.
        if worst > tolerance {
            return Err(format!(
                "{name}: CUDA differs from the CPU by {worst} ulps (allowed {tolerance})"
            ));
        }
        println!("  {name}: CUDA matches the CPU (max {worst} ulps)");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dsl example FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<(), String> {
    let cpu = run(Device::Cpu).map_err(|e| e.to_string())?;
    check_cpu(&cpu)?;
    println!("CPU: axpy, fused_gelu, brighten and axpy4 match plain Rust loops");
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {
            let cuda = run(Device::Cuda(0)).map_err(|e| e.to_string())?;
            opbox::cuda::synchronize(0).map_err(|e| e.to_string())?;
            check_cuda(&cpu, &cuda)?;
            println!(
                "CUDA: dsl examples checked against the CPU on {}",
                opbox::cuda::device(0).map_err(|e| e.to_string())?.name
            );
        }
        Ok(_) | Err(_) => {
            // No GPU: still prove the C++ compiles, when NVRTC is there.
            for decl in [
                &axpy::DECL,
                &fused_gelu::DECL,
                &brighten::DECL,
                &axpy4::DECL,
            ] {
                match opbox::cuda::compile_for_arch(decl, &[], "sm_90") {
                    Ok(_) => println!(
                        "NVRTC: {} compiles for sm_90 (no GPU: not launched)",
                        decl.rust_name
                    ),
                    Err(opbox::Error::NoCuda { reason }) => {
                        println!("skipped CUDA: {reason}");
                        break;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    }
    Ok(())
}
