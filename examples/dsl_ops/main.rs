//! A reduction, a softmax and a tiled matmul written once in the `#[kernel]` DSL and called as
//! ops, `dsl::sum`, `dsl::softmax` and `dsl::matmul`, on the CPU and (with a GPU) on CUDA. Each
//! result is checked against a plain Rust loop, and CUDA against the CPU.
//!
//! ```sh
//! cargo run --release --example dsl_ops
//! cargo run --release --example dsl_ops -- --cpp    # prints the C++ each kernel becomes
//! OPBOX_KERNEL_REPORT=1 cargo run --release --example dsl_ops   # registers, shared, spills
//! ```

use std::process::ExitCode;

use opbox::prelude::*;

pub mod check;
pub mod kernels;
pub mod ops;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dsl_ops example FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let e = |e: opbox::Error| e.to_string();
    if std::env::args().any(|a| a == "--cpp") {
        for (decl, consts) in check::kernels() {
            let unit = opbox::cuda::translation_unit(decl, &consts).map_err(e)?;
            println!(
                "// ===== {} ({:?}) =====\n{}",
                decl.rust_name, consts, unit.source
            );
        }
        return Ok(());
    }
    let sum = opbox::op("dsl::sum").map_err(e)?;
    let softmax = opbox::op("dsl::softmax").map_err(e)?;
    let matmul = opbox::op("dsl::matmul").map_err(e)?;

    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]).map_err(e)?;
    let total: Tensor = sum.call((&x,)).map_err(e)?;
    println!(
        "dsl::sum([1, 2, 3, 4, 5]) = {}",
        total.to_vec::<f32>().map_err(e)?[0]
    );

    let rows =
        Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0], &[2, 4]).map_err(e)?;
    let p: Tensor = softmax.call((&rows,)).map_err(e)?;
    println!(
        "dsl::softmax([[0, 1, 2, 3], [3, 3, 3, 3]]) = {:?}",
        p.to_vec::<f32>().map_err(e)?
    );

    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).map_err(e)?;
    let c: Tensor = matmul.call((&a, &a)).map_err(e)?;
    println!(
        "dsl::matmul([[1, 2], [3, 4]]²) = {:?}",
        c.to_vec::<f32>().map_err(e)?
    );

    let cpu = check::Run::on(Device::Cpu).map_err(e)?;
    cpu.against_reference()?;
    println!("CPU: {}", check::shapes());
    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {
            let cuda = check::Run::on(Device::Cuda(0)).map_err(e)?;
            cuda.against_reference()?;
            cuda.against(&cpu)?;
            println!(
                "CUDA: dsl::sum, dsl::softmax and dsl::matmul checked against the CPU and plain Rust on {}",
                opbox::cuda::device(0).map_err(e)?.name
            );
        }
        Ok(_) | Err(_) => {
            for (decl, consts) in check::kernels() {
                match opbox::cuda::compile_for_arch(decl, &consts, "sm_90") {
                    Ok(_) => println!(
                        "NVRTC: {} compiles for sm_90 (no GPU: not launched)",
                        decl.rust_name
                    ),
                    Err(opbox::Error::NoCuda { reason }) => {
                        println!("skipped CUDA: {reason}");
                        break;
                    }
                    Err(err) => return Err(err.to_string()),
                }
            }
        }
    }
    Ok(())
}
