//! `dsl::sum`, `dsl::softmax` and `dsl::matmul` as ops: one impl each for CPU and CUDA, which
//! launches the `#[kernel]` of `kernels.rs` on the tensor's device, so the same body runs on
//! both.

use opbox::prelude::*;

use super::kernels::{matmul_tiled, softmax_rows, sum_f32};

/// Threads of a `sum` or `softmax` block on CUDA.
pub const BLOCK: u32 = 256;
/// On the CPU, one warp: a block's threads there run one after another, switching at each
/// barrier and warp exchange, so fewer threads with more elements each cost less (and a
/// one-warp block skips the shared-memory stage).
pub const CPU_BLOCK: u32 = 32;

/// The block size of `sum` and `softmax` on `device`.
pub fn block_for(device: Device) -> u32 {
    match device {
        Device::Cpu => CPU_BLOCK,
        _ => BLOCK,
    }
}
/// The side of `matmul`'s tiles: blocks of `TILE`×`TILE / 4` threads.
pub const TILE: u32 = 32;

#[stable_library(dsl)]
fn dsl(m: &mut Library) {
    m.def("sum(Tensor x) -> Tensor");
    m.def("softmax(Tensor x) -> Tensor");
    m.def("matmul(Tensor a, Tensor b) -> Tensor");
}

fn f32_input(op: &str, x: &Tensor) -> opbox::Result<u32> {
    if x.dtype() != DType::F32 {
        return Err(opbox::Error::DType {
            expected: "f32".into(),
            got: format!("{:?}", x.dtype()),
        });
    }
    u32::try_from(x.numel()).map_err(|_| {
        opbox::Error::Shape(format!(
            "{op}: {} elements is more than a DSL kernel indexes (u32::MAX)",
            x.numel()
        ))
    })
}

/// Blocks that fill `device` for `sum_f32` over `n4` float4s: 8 blocks of `BLOCK`
/// threads an SM (2,048 resident threads) on CUDA, 4 a core on the CPU; never more than the
/// work has.
pub fn stride_grid(device: Device, n4: u32) -> opbox::Result<u32> {
    let fill = match device {
        Device::Cpu => 4 * std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        Device::Cuda(ordinal) => 8 * opbox::cuda::device(ordinal as usize)?.multiprocessors,
        Device::Meta => 1,
    };
    Ok(fill.min(n4.div_ceil(block_for(device))).max(1))
}

#[stable_impl(dsl::sum, CPU, CUDA)]
fn sum(x: &Tensor) -> opbox::Result<Tensor> {
    let n = f32_input("dsl::sum", x)?;
    let total = Tensor::zeros(&[], DType::F32, x.device())?;
    let block = block_for(x.device());
    let cfg = LaunchConfig::single()
        .grid(stride_grid(x.device(), n / 4)?, 1, 1)
        .block(block, 1, 1);
    sum_f32::launch(cfg, x, &total, n, block)?;
    Ok(total)
}

#[stable_impl(dsl::softmax, CPU, CUDA)]
fn softmax(x: &Tensor) -> opbox::Result<Tensor> {
    f32_input("dsl::softmax", x)?;
    let d = *x
        .shape()
        .last()
        .ok_or_else(|| opbox::Error::Shape("dsl::softmax needs at least one dimension".into()))?;
    let y = x.empty_like()?;
    if d == 0 || x.numel() == 0 {
        return Ok(y);
    }
    let rows = u32::try_from(x.numel() / d).map_err(|_| {
        opbox::Error::Shape("dsl::softmax: more rows than a grid has blocks".into())
    })?;
    let block = block_for(x.device());
    let cfg = LaunchConfig::single().grid(rows, 1, 1).block(block, 1, 1);
    softmax_rows::launch(cfg, x, &y, d as u32, block)?;
    Ok(y)
}

#[stable_impl(dsl::matmul, CPU, CUDA)]
fn matmul(a: &Tensor, b: &Tensor) -> opbox::Result<Tensor> {
    f32_input("dsl::matmul", a)?;
    f32_input("dsl::matmul", b)?;
    let (&[m, k], &[k2, n]) = (a.shape(), b.shape()) else {
        return Err(opbox::Error::Shape(format!(
            "dsl::matmul multiplies 2-D matrices, got shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    };
    if k != k2 {
        return Err(opbox::Error::Shape(format!(
            "dsl::matmul: a is [{m}, {k}] and b is [{k2}, {n}]; a's columns must equal b's rows"
        )));
    }
    let c = Tensor::zeros(&[m, n], DType::F32, a.device())?;
    if m == 0 || n == 0 {
        return Ok(c);
    }
    let cfg = LaunchConfig::single()
        .grid((n as u32).div_ceil(TILE), (m as u32).div_ceil(TILE), 1)
        .block(TILE, TILE / 4, 1);
    matmul_tiled::launch(cfg, a, b, &c, m as u32, n as u32, k as u32, TILE)?;
    Ok(c)
}
