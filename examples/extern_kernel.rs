//! A hand-written CUDA kernel split over several files, called from Rust.
//!
//! The entry, `kernels/entry/lerp_square.cu`, includes `"../common/x.cuh"` (relative to itself)
//! and `<opbox_ex/lerp.cuh>` (from the declared include dir). `#[extern_kernel]` scans that
//! closure at compile time and embeds every file, so cargo rebuilds when any of them changes and
//! the binary needs no source tree. The entry is a template over `BLOCK`, a `#[constexpr]`
//! parameter: each value is its own compiled and cached specialization.
//!
//! Run with `cargo run --example extern_kernel`. Without a GPU it compiles the kernel with NVRTC
//! (when installed) and says why it did not launch.

use opbox::cuda::codegen::ConstValue;
use opbox::prelude::*;

#[extern_kernel(
    source = "kernels/entry/lerp_square.cu",
    include_dirs = ["kernels/include"],
    constexpr = "template"
)]
fn lerp_square(
    a: In<[f32]>,
    b: In<[f32]>,
    out: Out<[f32]>,
    t: f32,
    n: i64,
    #[constexpr] BLOCK: i32,
);

fn main() -> opbox::Result<()> {
    let decl = &lerp_square::DECL;
    println!("kernel {}:", decl.rust_signature());
    println!("  C++ entry it must match: {}", decl.c_signature());
    for f in decl.sources.iter() {
        println!("  embedded {} ({} bytes)", f.name, f.content.len());
    }

    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                _ => "the CUDA driver reports no devices".to_string(),
            };
            println!("no launch: {why}");
            match opbox::cuda::compile_for_arch(decl, &[ConstValue::I32(256)], "sm_90") {
                Ok(a) => println!(
                    "NVRTC compiled it for sm_90 anyway: {} bytes of {:?}",
                    a.image.len(),
                    a.kind
                ),
                Err(e) => println!("and no NVRTC compile either: {e}"),
            }
            return Ok(());
        }
    }

    let n = 1_000_000usize;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let ta = Tensor::from_vec(a.clone(), &[n])?.to(Device::Cuda(0))?;
    let tb = Tensor::from_vec(b.clone(), &[n])?.to(Device::Cuda(0))?;
    let out = ta.empty_like()?;
    for block in [128i32, 256] {
        let cfg = LaunchConfig::for_elems(n).block(block as u32, 1, 1).grid(
            n.div_ceil(block as usize) as u32,
            1,
            1,
        );
        lerp_square::launch(cfg, &ta, &tb, &out, 0.25, n as i64, block)?;
        let got = out.to_vec::<f32>()?;
        let bad = (0..n).find(|&i| {
            let l = a[i] + 0.25 * (b[i] - a[i]);
            (got[i] - l * l).abs() > 1e-3 * (l * l).abs().max(1.0)
        });
        match bad {
            None => println!("BLOCK={block}: {n} results checked against the CPU: ok"),
            Some(i) => {
                return Err(Error::msg(format!(
                    "BLOCK={block}: out[{i}] = {} disagrees with the CPU",
                    got[i]
                )))
            }
        }
    }
    opbox::cuda::synchronize(0)
}
