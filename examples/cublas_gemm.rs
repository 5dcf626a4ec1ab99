//! An op whose CUDA impl calls cuBLAS (`cublasSgemm`) on the thread's current stream, checked
//! against its CPU impl: on the default stream, then inside `with_stream` on a pool stream.
//!
//! ```sh
//! cargo run --example cublas_gemm
//! ```
//! Without a GPU (or without libcublas) it prints `no launch: <why>` and runs the CPU impl only.

use opbox::cuda::cudarc::cublas::{result as blas, sys};
use opbox::prelude::*;

#[stable_library(blas)]
fn blas_lib(m: &mut Library) {
    m.def("mm(Tensor a, Tensor b) -> Tensor");
}

/// The shapes of `a @ b` for 2-D f32 tensors: (m, k, n).
fn mm_shape(a: &Tensor, b: &Tensor) -> Result<(usize, usize, usize)> {
    match (a.shape(), b.shape()) {
        (&[m, k], &[k2, n]) if k == k2 && a.dtype() == DType::F32 && b.dtype() == DType::F32 => {
            Ok((m, k, n))
        }
        (sa, sb) => Err(Error::msg(format!(
            "mm needs f32 matrices [m, k] and [k, n], got {} {sa:?} and {} {sb:?}",
            a.dtype(),
            b.dtype()
        ))),
    }
}

#[stable_impl(blas_lib, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (m, k, n) = super::mm_shape(a, b)?;
        let (a, b) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for p in 0..k {
                let x = a[i * k + p];
                for j in 0..n {
                    c[i * n + j] += x * b[p * n + j];
                }
            }
        }
        Tensor::from_vec(c, &[m, n])
    }
}

#[stable_impl(blas_lib, CUDA)]
mod cuda {
    use super::{blas, sys};
    use opbox::prelude::*;

    pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (m, k, n) = super::mm_shape(a, b)?;
        let (a, b) = (a.contiguous()?, b.contiguous()?);
        let Device::Cuda(ordinal) = a.device() else {
            return Err(Error::msg("the CUDA kernel got a tensor off the GPU"));
        };
        // Allocated on the current stream, like the handle below: one stream orders it all.
        let c = Tensor::empty(&[m, n], DType::F32, a.device())?;
        let handle = opbox::cuda::cublas::current_handle(ordinal as usize)?;
        let dim = |d: usize| {
            i32::try_from(d).map_err(|_| Error::msg(format!("mm: {d} does not fit cuBLAS's int")))
        };
        let (m, k, n) = (dim(m)?, dim(k)?, dim(n)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T, so the call
        // multiplies B (n x k, column-major) by A (k x m) into C (n x m).
        // SAFETY: the three device addresses are f32 buffers of k*n, m*k and m*n elements on
        // cuda:ordinal, alive for the call (the tensors are held); the handle is bound to the
        // current stream, where `c` was allocated and where the caller reads it next.
        unsafe {
            blas::sgemm(
                *handle.handle(),
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                b.device_ptr()? as *const f32,
                n,
                a.device_ptr()? as *const f32,
                k,
                &beta,
                c.device_ptr()? as *mut f32,
                n,
            )
        }
        .map_err(|e| Error::Cuda {
            kernel: "blas::mm (cublasSgemm)".to_string(),
            message: e.to_string(),
        })?;
        Ok(c)
    }
}

fn matrix(rows: usize, cols: usize, seed: u32) -> Result<Tensor> {
    let v = (0..rows * cols)
        .map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 17) as f32 / 8.0 - 1.0)
        .collect();
    Tensor::from_vec(v, &[rows, cols])
}

fn max_err(x: &Tensor, y: &Tensor) -> Result<f32> {
    let (x, y) = (x.to_vec::<f32>()?, y.to_vec::<f32>()?);
    Ok(x.iter()
        .zip(&y)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max))
}

fn main() -> opbox::Result<()> {
    let mm = opbox::op("blas::mm")?;
    let (a, b) = (matrix(96, 64, 1)?, matrix(64, 80, 7)?);
    let reference: Tensor = mm.call((&a, &b))?;
    println!(
        "cpu: blas::mm of {:?} x {:?} -> {:?}",
        a.shape(),
        b.shape(),
        reference.shape()
    );

    let usable = opbox::cuda::device_count()
        .and_then(|n| match n {
            0 => Err(Error::NoCuda {
                reason: "the CUDA driver reports no devices".to_string(),
            }),
            _ => Ok(()),
        })
        .and_then(|()| opbox::cuda::probe::cublas());
    if let Err(why) = usable {
        println!("no launch: {why}");
        if std::env::var("OPBOX_REQUIRE_GPU").as_deref() == Ok("1") {
            return Err(why);
        }
        return Ok(());
    }

    let (ga, gb) = (a.to(Device::Cuda(0))?, b.to(Device::Cuda(0))?);
    let on_default: Tensor = mm.call((&ga, &gb))?;
    let err_default = max_err(&on_default, &reference)?;

    let stream = opbox::cuda::stream_from_pool(0)?;
    let on_pool: Tensor = opbox::cuda::with_stream(&stream, || mm.call((&ga, &gb)))?;
    // The product was queued on the pool stream; to_vec's copy runs on the default stream
    // outside the scope, so wait for the pool stream first.
    stream.synchronize()?;
    let err_pool = max_err(&on_pool, &reference)?;

    let tolerance = 1e-4;
    let ok = err_default <= tolerance && err_pool <= tolerance;
    println!(
        "CUDA: cublasSgemm {} the CPU reference (max |err| {err_default:e} on the default stream, \
         {err_pool:e} on a pool stream; {} cuBLAS handles)",
        if ok { "matches" } else { "DIFFERS FROM" },
        opbox::cuda::cublas::handle_count()
    );
    if !ok {
        return Err(Error::msg("cuBLAS result differs from the CPU reference"));
    }
    Ok(())
}
