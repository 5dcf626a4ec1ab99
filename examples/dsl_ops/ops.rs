//! `dsl::sum`, `dsl::softmax` and `dsl::matmul` as ops: one impl each for CPU and CUDA, which
//! launches the `#[kernel]` of `kernels.rs` on the tensor's device, so the same body runs on
//! both.

use opbox::prelude::*;

use super::kernels::{matmul_tiled, softmax_rows, softmax_warp_rows, sum_f32};

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
/// Rows a block of the warp-per-row softmax takes on CUDA, one a warp.
pub const WARP_ROWS: u32 = 4;
/// The most float4s a lane of the warp-per-row softmax holds: rows up to 32 × 4 × 8 = 1024
/// floats fit in registers (torch's persistent softmax stops at 1024 too).
pub const WARP_V4_MAX: u32 = 8;

/// The float4s a lane holds for rows of `d` on the warp-per-row softmax (`softmax_warp_rows`'s
/// `V4`), or `None` for rows it does not take: a length that is not a multiple of 4, or one
/// longer than a warp's registers hold. A power of two, so that few lengths are specialized.
pub fn warp_row_vectors(d: u32) -> Option<u32> {
    let v4 = (d / 4).div_ceil(32).next_power_of_two();
    (d > 0 && d.is_multiple_of(4) && v4 <= WARP_V4_MAX).then_some(v4)
}

/// `y = softmax(x)` over `rows` rows of `d`, by the kernel `dsl::softmax` picks: on CUDA, a warp
/// a row where the row fits in its registers, else a block a row (`softmax_rows`); on the CPU a
/// one-warp block a row.
pub fn launch_softmax(x: &Tensor, y: &Tensor, rows: u32, d: u32) -> opbox::Result<()> {
    match (x.device(), warp_row_vectors(d)) {
        (Device::Cuda(_), Some(v4)) => {
            let cfg = LaunchConfig::single()
                .grid(rows.div_ceil(WARP_ROWS), 1, 1)
                .block(32 * WARP_ROWS, 1, 1);
            softmax_warp_rows::launch(cfg, x, y, rows, d, v4)
        }
        (device, _) => {
            let block = block_for(device);
            let cfg = LaunchConfig::single().grid(rows, 1, 1).block(block, 1, 1);
            softmax_rows::launch(cfg, x, y, d, block)
        }
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

/// `x`, or a fresh copy of it where it starts mid-float4 (a view at an odd offset): the kernels
/// move their inputs as float4, which a launch refuses on a misaligned view.
fn vector_ready(x: &Tensor) -> opbox::Result<std::borrow::Cow<'_, Tensor>> {
    if (x.data_ptr() as u64).is_multiple_of(opbox::kernel::VECTOR_ALIGN) {
        return Ok(std::borrow::Cow::Borrowed(x));
    }
    let copy = x.empty_like()?;
    copy.copy_from(x)?;
    Ok(std::borrow::Cow::Owned(copy))
}

#[stable_impl(dsl::sum, CPU, CUDA)]
fn sum(x: &Tensor) -> opbox::Result<Tensor> {
    let n = f32_input("dsl::sum", x)?;
    let x = &*vector_ready(x)?;
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
    let x = &*vector_ready(x)?;
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
    let d = u32::try_from(d)
        .map_err(|_| opbox::Error::Shape("dsl::softmax: a row longer than u32::MAX".into()))?;
    launch_softmax(x, &y, rows, d)?;
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
