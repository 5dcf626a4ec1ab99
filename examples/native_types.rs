//! Native value types and an external builtin, end to end: a C++ library's `Color` and `Pixel`
//! structs and its `scale` device function, used from a hand-written kernel.
//!
//! - `#[derive(NativeType)]` gives each Rust struct its C++ twin's name. rustc checks the Rust
//!   side (repr(C), native-compatible fields), and every kernel that uses the types gets
//!   `static_assert`s on the C++ side: size, alignment, and each field's type and size.
//! - `#[builtin]` declares `my_addon::scale` with a Rust signature. Its Rust body is the CPU
//!   build, which checks the GPU's results here.
//! - `BuildOptions` carries the library's header (the preamble) and the builtin's generated
//!   wrapper to the group of kernels that name it with `build = ...`.
//!
//! Run with `cargo run --example native_types`. Without a GPU it compiles the kernel with NVRTC
//! (when installed) and says why it did not launch.

use std::sync::LazyLock;

use opbox::prelude::*;
use opbox::BuildOptions;

#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Color", initializer = "aggregate")]
pub struct Color {
    r: f32,
    g: f32,
    b: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Pixel", initializer = "aggregate")]
pub struct Pixel {
    color: Color,
    index: i32,
}

/// `my_addon::scale`, from the header; this body is what the CPU runs.
#[opbox::builtin(native = "my_addon::scale")]
pub fn scale(c: Color, s: f32) -> Color {
    Color {
        r: c.r * s,
        g: c.g * s,
        b: c.b * s,
    }
}

/// The header, embedded at compile time, then the builtin's wrapper (`opbox_builtin_scale`).
static MY_ADDON: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions::new().preamble(format!(
        "{}{}",
        include_str!("kernels/native/color.cuh"),
        __opbox_builtin_scale.cpp_wrapper()
    ))
});

#[extern_kernel(source = "kernels/native/shade.cu", build = MY_ADDON)]
fn shade(colors: In<[Color]>, pixels: Out<[Pixel]>, s: f32, n: i64);

fn main() -> opbox::Result<()> {
    let decl = &shade::DECL;
    println!("kernel {}:", decl.rust_signature());
    println!("  C++ entry it must match: {}", decl.c_signature());
    let unit = opbox::cuda::translation_unit(decl, &[])?;
    let checks = unit.source.matches("static_assert(").count();
    println!(
        "  its translation unit carries {checks} static_asserts: the native types' layouts and the entry's signature"
    );

    match opbox::cuda::device_count() {
        Ok(n) if n > 0 => {}
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                _ => "the CUDA driver reports no devices".to_string(),
            };
            println!("no launch: {why}");
            match opbox::cuda::compile_for_arch(decl, &[], "sm_90") {
                Ok(a) => println!(
                    "NVRTC compiled it for sm_90 anyway, layout checks included: {} bytes of {:?}",
                    a.image.len(),
                    a.kind
                ),
                Err(e) => println!("and no NVRTC compile either: {e}"),
            }
            return Ok(());
        }
    }

    let n = 100_000usize;
    let colors: Vec<Color> = (0..n)
        .map(|i| Color {
            r: (i % 256) as f32,
            g: 0.5,
            b: (i % 7) as f32,
        })
        .collect();
    let blank = Pixel {
        color: Color {
            r: 0.0,
            g: 0.0,
            b: 0.0,
        },
        index: -1,
    };
    let d_colors = Tensor::from_native_vec(colors.clone(), &[n])?.to(Device::Cuda(0))?;
    let d_pixels = Tensor::from_native_vec(vec![blank; n], &[n])?.to(Device::Cuda(0))?;
    shade::launch(
        LaunchConfig::for_elems(n),
        &d_colors,
        &d_pixels,
        2.0,
        n as i64,
    )?;
    let got: Vec<Pixel> = d_pixels.to_native_vec()?;
    let bad = (0..n).find(|&i| {
        got[i]
            != Pixel {
                color: scale(colors[i], 2.0),
                index: i as i32,
            }
    });
    match bad {
        None => println!("CUDA: shade: {n} pixels match the builtin's Rust body on the CPU"),
        Some(i) => {
            return Err(Error::msg(format!(
                "pixel {i} = {:?} disagrees with the CPU",
                got[i]
            )))
        }
    }
    opbox::cuda::synchronize(0)
}
