//! Epilogue fusion, CuTe DSL's `cutlass.Constexpr` use case: one extern CUDA kernel templated on
//! an epilogue functor (`Identity`, `Relu`, `Scale`, `Gelu`), the functor chosen by a
//! `#[constexpr]` `#[derive(ConstexprEnum)]` parameter. Each distinct epilogue is one
//! specialization, compiled once (then cached in memory and on disk); a repeated one compiles
//! nothing. The kernel's scalars travel in a `#[derive(KernelArg)]` struct, whose C++ twin opbox
//! generates and checks.
//!
//! On a GPU: every epilogue's result is checked against a CPU reference, and the cache stats are
//! printed. Without one: it says why it did not launch, compiles the four specializations with
//! NVRTC when NVRTC is present, and exits 0.

use opbox::prelude::*;
use opbox::{ConstexprEnum, KernelArg};

/// The kernel's scalars, passed by value as one C++ struct.
#[derive(Clone, Copy, Debug, KernelArg)]
#[repr(C)]
pub struct EpilogueParams {
    pub alpha: f32,
    pub scale: f32,
    pub n: i64,
}

/// The epilogue, fixed per specialization: each variant names a C++ functor type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ConstexprEnum)]
pub enum Epilogue {
    #[cpp = "opbox_epilogue::Identity"]
    Identity,
    #[cpp = "opbox_epilogue::Relu"]
    Relu,
    #[cpp = "opbox_epilogue::Scale"]
    Scale,
    #[cpp = "opbox_epilogue::Gelu"]
    Gelu,
}

impl Epilogue {
    pub const ALL: [Epilogue; 4] = [
        Epilogue::Identity,
        Epilogue::Relu,
        Epilogue::Scale,
        Epilogue::Gelu,
    ];

    /// The CPU reference.
    pub fn apply(self, v: f32, scale: f32) -> f32 {
        match self {
            Epilogue::Identity => v,
            Epilogue::Relu => v.max(0.0),
            Epilogue::Scale => v * scale,
            Epilogue::Gelu => 0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044715 * v * v * v)).tanh()),
        }
    }
}

#[extern_kernel(
    source = "kernels/epilogue.cu",
    include_dirs = ["kernels/include"],
    constexpr = "template"
)]
pub fn axpy_epilogue(
    x: In<[f32]>,
    y: In<[f32]>,
    out: Out<[f32]>,
    p: EpilogueParams,
    #[constexpr] Epi: Epilogue,
);

fn main() -> opbox::Result<()> {
    let decl = &axpy_epilogue::DECL;
    println!("kernel {}", decl.rust_signature());
    println!("  C++ entry it must match: {}", decl.c_signature());

    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                _ => "the CUDA driver reports no devices".to_string(),
            };
            println!("no launch: skipped the GPU run: {why}");
            for epi in Epilogue::ALL {
                let v = opbox::kernel::ConstexprArg::const_value(epi);
                match opbox::cuda::compile_for_arch(decl, &[v], "sm_90") {
                    Ok(a) => println!(
                        "  NVRTC compiled {epi:?} for sm_90: {} bytes",
                        a.image.len()
                    ),
                    Err(e) => {
                        println!("  and no NVRTC compile either: {e}");
                        break;
                    }
                }
            }
            println!("cache: {}", opbox::cache::stats());
            return Ok(());
        }
    }

    let n = 1 << 20;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i % 2001) as f32 - 1000.0) / 250.0)
        .collect();
    let y: Vec<f32> = (0..n).map(|i| ((i % 13) as f32 - 6.0) / 4.0).collect();
    let tx = Tensor::from_vec(x.clone(), &[n])?.to(Device::Cuda(0))?;
    let ty = Tensor::from_vec(y.clone(), &[n])?.to(Device::Cuda(0))?;
    let out = tx.empty_like()?;
    let p = EpilogueParams {
        alpha: 1.5,
        scale: 0.25,
        n: n as i64,
    };
    let before = opbox::cache::stats();
    // Each epilogue twice: the second run of one finds its specialization in memory. The
    // second round fixes the epilogue first (`specialize`), as a prepared launch would.
    for (round, epi) in Epilogue::ALL.into_iter().chain(Epilogue::ALL).enumerate() {
        if round < Epilogue::ALL.len() {
            axpy_epilogue::launch(LaunchConfig::for_elems(n), &tx, &ty, &out, p, epi)?;
        } else {
            axpy_epilogue::specialize(epi).launch(LaunchConfig::for_elems(n), &tx, &ty, &out, p)?;
        }
        let got = out.to_vec::<f32>()?;
        let bad = (0..n).find(|&i| {
            let want = epi.apply(p.alpha * x[i] + y[i], p.scale);
            (got[i] - want).abs() > 1e-5 * want.abs().max(1.0)
        });
        if let Some(i) = bad {
            return Err(Error::msg(format!(
                "{epi:?}: out[{i}] = {} but the CPU says {}",
                got[i],
                epi.apply(p.alpha * x[i] + y[i], p.scale)
            )));
        }
        println!("CUDA: {epi:?}: {n} results match the CPU reference");
    }
    let after = opbox::cache::stats();
    let new_entries = after.memory_entries - before.memory_entries;
    println!(
        "CUDA: cache: 4 distinct epilogues x 2 launches -> {new_entries} new in-memory entries, {} compiles, {} disk hits ({after})",
        after.compiles - before.compiles,
        after.disk_hits - before.disk_hits
    );
    if new_entries != 4 {
        return Err(Error::msg(format!(
            "expected 4 specializations in memory, got {new_entries}"
        )));
    }
    opbox::cuda::synchronize(0)
}
