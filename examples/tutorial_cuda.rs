//! Step 4 of docs/tutorial.md, as it is there: an op whose CUDA impl launches a kernel from a
//! hand-written `.cu` file, checked by NVRTC without a GPU and, on one, against the CPU impl.

use opbox::prelude::*;

#[stable_library(myops)]
fn myops(m: &mut Library) {
    m.def("scale(Tensor x, float alpha=2.0) -> Tensor");
}

#[extern_kernel(source = "../docs/tutorial/scale.cu", entry = "scale")]
fn scale_f32(x: In<[f32]>, out: Out<[f32]>, alpha: f32, n: i64);

#[stable_impl(myops, CUDA)]
mod cuda {
    use super::scale_f32;
    use opbox::prelude::*;

    pub fn scale(x: &Tensor, alpha: f64) -> Result<Tensor> {
        let out = x.empty_like()?;
        let n = x.numel();
        scale_f32::launch(LaunchConfig::for_elems(n), x, &out, alpha as f32, n as i64)?;
        Ok(out)
    }
}

#[stable_impl(myops, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn scale(x: &Tensor, alpha: f64) -> Result<Tensor> {
        let v: Vec<f32> = x
            .to_vec::<f32>()?
            .iter()
            .map(|v| alpha as f32 * v)
            .collect();
        Tensor::from_vec(v, x.shape())
    }
}

fn main() -> opbox::Result<()> {
    // No GPU needed: NVRTC compiles and signature-checks every kernel of this binary. In your
    // crate this goes in a #[test], say tests/kernels.rs, which starts with `use myops as _;`:
    // a test binary links only the crates it names, kernels and ops included. (CI sets
    // OPBOX_REQUIRE_NVRTC, so a missing NVRTC fails it.)
    match opbox::testing::check_all_kernels(&["sm_90"]) {
        Ok(summary) => assert_eq!(summary.compiled, 1),
        Err(Error::NoCuda { .. }) if std::env::var_os("OPBOX_REQUIRE_NVRTC").is_none() => {}
        Err(e) => return Err(e),
    }

    // On a GPU: the same op on cuda:0, the dispatcher picking the CUDA impl from the device.
    if opbox::cuda::device_count().unwrap_or(0) > 0 {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
        let scale = opbox::op("myops::scale")?;
        let on_gpu: Tensor = scale.call((&x.to(Device::Cuda(0))?, 3.0))?;
        opbox::cuda::synchronize(0)?;
        let on_cpu: Tensor = scale.call((&x, 3.0))?;
        assert_eq!(
            on_gpu.to(Device::Cpu)?.to_vec::<f32>()?,
            on_cpu.to_vec::<f32>()?
        );
        println!("CUDA: myops::scale on cuda:0 matches the CPU impl");
    }
    Ok(())
}
