//! Native values in kernels: `#[derive(NativeType)]` types by value, as slice elements
//! (`In<[Color]>`, `Out<[Pixel]>` over tensors of native values), nested, padded (u8 then u32)
//! and opaque; the C++ ABI checks of every native type a kernel references, recursively; and
//! a group's `BuildOptions` (`#[extern_kernel(..., build = OPTIONS)]`); and
//! `abi = "constant_params"` entries; and `opbox::aot::compile`; and the port of Warp's
//! test_external_build.py native value types (Image, image_handle, native_array_kernel,
//! native_struct_kernel), on the host through the builtins' Rust bodies and on the GPU.
//!
//! A custom harness (harness = false), like tests/kernel_args: each test passes, fails or skips
//! with a printed reason; OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.

mod harness;

use std::process::ExitCode;
use std::sync::LazyLock;

use harness::{
    compile_sm90, compile_sm90_without_globals, ensure, expect_err, s, with_gpu, with_nvrtc,
    Outcome, Test, TestResult,
};
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

/// u8 then u32: three padding bytes, which never leave Rust.
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Padded", initializer = "aggregate")]
pub struct Padded {
    tag: u8,
    value: u32,
}

/// A bool field: read back only when its byte is 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Flagged", initializer = "aggregate")]
pub struct Flagged {
    on: bool,
    v: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Handle", opaque)]
pub struct Handle(u64);

#[extern_kernel(source = "kernels/native_values.cu")]
fn see_color(out: Out<[f32]>, c: Color);

#[extern_kernel(source = "kernels/native_values.cu")]
fn make_pixels(colors: In<[Color]>, pixels: Out<[Pixel]>, s: f32, n: i64);

#[extern_kernel(source = "kernels/native_values.cu")]
fn bump_padded(xs: InOut<[Padded]>, n: i64);

#[extern_kernel(source = "kernels/native_values.cu")]
fn copy_handles(input: In<[Handle]>, out: Out<[Handle]>, h: Handle, n: i64);

#[extern_kernel(source = "kernels/native_values.cu")]
fn index_pixels(pixels: InOut<[Pixel]>, n: i64);

#[extern_kernel(source = "kernels/native_values_bad.cu", entry = "index_pixels")]
fn index_pixels_bad(pixels: InOut<[Pixel]>, n: i64);

/// The group's preamble: it reads opbox's header (a macro and `int64_t`), and its casts must
/// reach NVRTC as written.
const PREAMBLE: &str = "#if !defined(OPBOX_HAVE_STDINT)
#error \"opbox's header must come before the preamble\"
#endif
namespace my_build {
__device__ inline float scale(float x) {
    const float* p = reinterpret_cast<const float*>(&x);
    return static_cast<float>((double)*p * 2.0) + (float)(int64_t)0;
}
}  // namespace my_build
";

/// A dependency whose content feeds the key (rewritten by the key test). Paths are found at run
/// time: scripts/gpu-check runs these binaries on another machine, from the repo root.
fn dependency() -> std::path::PathBuf {
    std::env::temp_dir().join("opbox_native_kernels_dep.h")
}

/// `tests/kernels/build_inc`, absolute: where cargo built the test, else under the working
/// directory (the repo root, where cargo and gpu-check run tests).
fn build_include_dir() -> std::path::PathBuf {
    let built = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/kernels/build_inc"
    ));
    if built.is_dir() {
        return built.to_path_buf();
    }
    std::env::current_dir()
        .unwrap_or_default()
        .join("tests/kernels/build_inc")
}

static BUILD: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions::new()
        .include_dir(build_include_dir())
        .preamble(PREAMBLE)
        .dependency(dependency())
});

/// The one struct of the constant_params kernels: both kernels of this module take it (one
/// params type per module).
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::RenderParams", initializer = "aggregate")]
pub struct RenderParams {
    out: u64,
    scale: f32,
    n: i32,
}

#[extern_kernel(source = "kernels/constant_params.cu", abi = "constant_params")]
fn render(p: RenderParams);

#[extern_kernel(source = "kernels/constant_params.cu", abi = "constant_params")]
fn render_add(p: RenderParams);

/// Warp's external build: the native header (Color and the scale builtin) is the group's
/// preamble, followed by the builtin's generated wrapper.
const COLOR_HEADER: &str = "namespace my_addon {
struct Color {
    float r, g, b;
};
__device__ inline Color scale(Color c, float s) {
    return Color{c.r * s, c.g * s, c.b * s};
}
}  // namespace my_addon
";

/// The scale builtin; its body is the CPU build the GPU result is compared with.
#[opbox::builtin(native = "my_addon::scale")]
pub fn scale(c: Color, s: f32) -> Color {
    Color {
        r: c.r * s,
        g: c.g * s,
        b: c.b * s,
    }
}

static SCALE_BUILD: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions::new().preamble(format!(
        "{COLOR_HEADER}{}",
        __opbox_builtin_scale.cpp_wrapper()
    ))
});

#[extern_kernel(source = "kernels/scale_colors.cu", build = SCALE_BUILD)]
fn scale_colors(input: In<[Color]>, out: Out<[Color]>, s: f32, n: i64);

// ---- Warp's test_external_build.py, "native value types" (Image) ----
//
// Warp registers Color, Pixel and Image as warp_test:: types; here Color and Pixel are the
// my_addon:: types above (one Rust type per native name), Image is Warp's own.

/// Warp's NativeImage: a handle the kernel may only pass on (opaque: no fields exposed).
#[derive(Clone, Copy, Debug, PartialEq, opbox::NativeType)]
#[repr(C)]
#[native(name = "warp_test::Image", opaque)]
pub struct Image {
    handle: u64,
}

/// Warp's `_test_native_image_handle` builtin; the body is the CPU build.
#[opbox::builtin(native = "warp_test::image_handle")]
pub fn image_handle(image: Image) -> u64 {
    image.handle
}

/// Warp's NativeContainer (a `wp.struct` holding a native value): opbox generates its C++ twin.
#[derive(Clone, Copy, Debug, opbox::KernelArg)]
#[repr(C)]
pub struct Container {
    color: Color,
}

/// Warp's `NATIVE_COLOR_CONSTANT`; the kernels read its `g` in C++, the host reference here.
const NATIVE_COLOR_CONSTANT: Color = Color {
    r: 0.25,
    g: 0.5,
    b: 0.75,
};

/// Warp's native header for the Image kernels, after COLOR_HEADER (Color and scale): Pixel,
/// Image, image_handle and the constant.
const IMAGE_HEADER: &str = "namespace my_addon {
struct Pixel {
    Color color;
    int index;
};
}  // namespace my_addon
namespace warp_test {
struct Image {
    unsigned long long handle;
};
__device__ inline unsigned long long image_handle(Image image) {
    return image.handle;
}
__device__ constexpr my_addon::Color NATIVE_COLOR_CONSTANT{0.25f, 0.5f, 0.75f};
}  // namespace warp_test
";

static IMAGE_BUILD: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions::new().preamble(format!(
        "{COLOR_HEADER}{IMAGE_HEADER}{}{}",
        __opbox_builtin_scale.cpp_wrapper(),
        __opbox_builtin_image_handle.cpp_wrapper()
    ))
});

#[extern_kernel(source = "kernels/native_images.cu", build = IMAGE_BUILD)]
fn native_array_kernel(
    pixels: Out<[Pixel]>,
    images: In<[Image]>,
    colors: Out<[Color]>,
    handles: Out<[u64]>,
    n: i64,
);

/// In the same file as native_array_kernel, as in Warp's module: each kernel's unit defines the
/// C++ twin of Container, the #[derive(KernelArg)] struct that this kernel of the file takes.
#[extern_kernel(source = "kernels/native_images.cu", build = IMAGE_BUILD)]
fn native_struct_kernel(
    container: Container,
    image: Image,
    color: Out<[Color]>,
    handle: Out<[u64]>,
);

/// Warp's images: two handles.
fn warp_images() -> Vec<Image> {
    vec![Image { handle: 11 }, Image { handle: 29 }]
}

/// What native_array_kernel computes, on the host through the builtins' Rust bodies: one
/// definition of the expected values for the host test and the GPU test.
fn native_array_reference(images: &[Image]) -> (Vec<Pixel>, Vec<Color>, Vec<u64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (i, &image) in images.iter().enumerate() {
        let color = Color {
            r: i as f32,
            g: NATIVE_COLOR_CONSTANT.g,
            b: 3.0,
        };
        let pixel = Pixel {
            color,
            index: i as i32,
        };
        out.0.push(pixel);
        out.1.push(scale(pixel.color, 2.0));
        out.2.push(image_handle(image));
    }
    out
}

/// Warp's assertions on native_array_kernel's outputs.
fn check_native_array(pixels: &[Pixel], colors: &[Color], handles: &[u64]) -> Result<(), String> {
    ensure(handles == [11, 29], || format!("handles {handles:?}"))?;
    let rgb = |f: fn(&Color) -> f32| colors.iter().map(f).collect::<Vec<f32>>();
    ensure(rgb(|c| c.r) == [0.0, 2.0], || {
        format!("colors.r {colors:?}")
    })?;
    ensure(rgb(|c| c.g) == [1.0, 1.0], || {
        format!("colors.g {colors:?}")
    })?;
    ensure(rgb(|c| c.b) == [6.0, 6.0], || {
        format!("colors.b {colors:?}")
    })?;
    let index: Vec<i32> = pixels.iter().map(|p| p.index).collect();
    ensure(index == [0, 1], || format!("pixels.index {index:?}"))?;
    let g: Vec<f32> = pixels.iter().map(|p| p.color.g).collect();
    ensure(g == [0.5, 0.5], || format!("pixels.color.g {g:?}"))?;
    Ok(())
}

/// Paths checked at build time: every offender is listed.
static BAD_BUILD: LazyLock<BuildOptions> = LazyLock::new(|| {
    BuildOptions::new()
        .include_dir("relative/include")
        .dependency("/nonexistent/opbox/dep.h")
});

#[extern_kernel(source = "kernels/build_scale.cu", build = BUILD)]
fn scaled(out: Out<[f32]>, x: f32);

#[extern_kernel(source = "kernels/build_scale.cu", entry = "scaled", build = BAD_BUILD)]
fn scaled_bad(out: Out<[f32]>, x: f32);

/// The dependency exists with its first content.
fn ensure_dependency() -> Result<(), String> {
    if !dependency().is_file() {
        std::fs::write(dependency(), "// v1\n").map_err(|e| e.to_string())?;
    }
    Ok(())
}

const TESTS: &[Test] = &[
    ("native_slices_declare_native_pointers", decls),
    ("native_tensors_round_trip_on_the_host", host_round_trip),
    ("native_slices_check_the_tensor_element", launch_checks),
    ("native_checks_reach_slice_elements_in_nvrtc", nvrtc_checks),
    (
        "build_preamble_sits_between_opbox_and_the_source",
        build_unit,
    ),
    ("build_paths_are_checked_at_build_time", build_bad_paths),
    (
        "build_options_compile_and_dependencies_feed_the_key",
        build_key,
    ),
    ("constant_params_entry_and_symbol", constant_params_unit),
    ("aot_writes_images_in_target_order", aot_arches),
    (
        "builtin_wrapper_compiles_in_an_extern_kernel",
        builtin_nvrtc,
    ),
    ("gpu_native_value_by_value", gpu_by_value),
    ("gpu_native_slices_nested", gpu_nested),
    ("gpu_padded_round_trip", gpu_padded),
    ("gpu_opaque_values_pass_through", gpu_opaque),
    ("gpu_build_options_preamble_and_include_dir", gpu_build),
    (
        "gpu_constant_params_written_before_each_launch",
        gpu_constant_params,
    ),
    ("gpu_aot_devices_first", gpu_aot),
    ("gpu_scale_builtin_matches_its_cpu_body", gpu_builtin),
    ("warp_image_builtins_on_the_host", warp_image_host),
    (
        "warp_image_tensors_round_trip_and_refuse_other_natives",
        warp_image_round_trip,
    ),
    (
        "warp_image_launch_checks_the_element",
        warp_image_launch_checks,
    ),
    ("warp_image_kernels_compile_in_nvrtc", warp_image_nvrtc),
    ("gpu_warp_native_array_kernel", gpu_warp_native_array),
    ("gpu_warp_native_struct_kernel", gpu_warp_native_struct),
    (
        "gpu_warp_image_round_trip_via_device",
        gpu_warp_image_round_trip,
    ),
    ("gpu_warp_image_launch_checks", gpu_warp_image_launch_checks),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}

/// `values` as a native tensor of `shape` on device 0.
fn device_tensor<T: opbox::NativeType>(values: Vec<T>, shape: &[usize]) -> Result<Tensor, String> {
    Tensor::from_native_vec(values, shape)
        .and_then(|t| t.to(Device::Cuda(0)))
        .map_err(s)
}

fn colors(n: usize) -> Vec<Color> {
    (0..n)
        .map(|i| Color {
            r: i as f32,
            g: 2.0 * i as f32,
            b: -(i as f32) - 0.25,
        })
        .collect()
}

fn decls() -> TestResult {
    let c = make_pixels::DECL.c_signature();
    ensure(
        c == "__global__ void make_pixels(const my_addon::Color* colors, my_addon::Pixel* pixels, float s, long long n)",
        || c.clone(),
    )?;
    let r = make_pixels::DECL.rust_signature();
    ensure(
        r == "fn make_pixels(colors: In<[Color]>, pixels: Out<[Pixel]>, s: f32, n: i64)",
        || r.clone(),
    )?;
    let c = bump_padded::DECL.c_signature();
    ensure(
        c == "__global__ void bump_padded(my_addon::Padded* xs, long long n)",
        || c.clone(),
    )?;
    Ok(Outcome::Pass)
}

fn host_round_trip() -> TestResult {
    let padded: Vec<Padded> = (0..37u32)
        .map(|i| Padded {
            tag: (i * 7) as u8,
            value: 0x0101_0101 * i,
        })
        .collect();
    let t = Tensor::from_native_vec(padded.clone(), &[37]).map_err(s)?;
    ensure(t.shape() == [37, 8], || format!("shape {:?}", t.shape()))?;
    ensure(t.dtype() == DType::U8, || format!("dtype {}", t.dtype()))?;
    ensure(t.native_shape() == Some(&[37][..]), || {
        format!("{:?}", t.native_shape())
    })?;
    ensure(
        t.native_schema().map(|n| n.native_name) == Some("my_addon::Padded"),
        || "no native schema".into(),
    )?;
    // Padding bytes are zero: they never came from the Rust value.
    let bytes = t.to_vec::<u8>().map_err(s)?;
    ensure(bytes.chunks(8).all(|c| c[1..4] == [0, 0, 0]), || {
        "padding bytes are not zero".into()
    })?;
    let back = t.to_native_vec::<Padded>().map_err(s)?;
    ensure(back == padded, || "Padded did not round-trip".into())?;
    // A view and a contiguous copy keep the tag.
    let view = t.narrow(0, 3, 4).map_err(s)?;
    ensure(
        view.to_native_vec::<Padded>().map_err(s)? == padded[3..7],
        || "a narrowed view lost its elements".into(),
    )?;
    let grid = Tensor::from_native_vec(colors(6), &[2, 3]).map_err(s)?;
    ensure(grid.shape() == [2, 3, 12], || format!("{:?}", grid.shape()))?;
    ensure(
        grid.to_native_vec::<Color>().map_err(s)? == colors(6),
        || "Color did not round-trip".into(),
    )?;
    match t.to_native_vec::<Color>() {
        Ok(_) => return Err("Padded bytes read back as Color".into()),
        Err(e) => ensure(
            e.to_string().contains("my_addon::Color") && e.to_string().contains("my_addon::Padded"),
            || e.to_string(),
        )?,
    }
    ensure(Tensor::from_native_vec(colors(5), &[2, 3]).is_err(), || {
        "5 values filled a [2, 3] tensor".into()
    })?;
    let flags = vec![Flagged { on: true, v: -3 }, Flagged { on: false, v: 9 }];
    let f = Tensor::from_native_vec(flags.clone(), &[2]).map_err(s)?;
    ensure(f.to_native_vec::<Flagged>().map_err(s)? == flags, || {
        "Flagged did not round-trip".into()
    })?;
    f.with_slice_mut::<u8, _>(|b| b[8] = 2).map_err(s)?;
    match f.to_native_vec::<Flagged>() {
        Ok(v) => return Err(format!("a bool byte of 2 was read back: {v:?}")),
        Err(e) => ensure(
            e.to_string().contains("element 1 has byte 2 at offset 0"),
            || e.to_string(),
        )?,
    }
    let plain = Tensor::from_vec(vec![0u8; 12], &[1, 12]).map_err(s)?;
    ensure(plain.to_native_vec::<Color>().is_err(), || {
        "a plain u8 tensor read back as Color".into()
    })?;
    Ok(Outcome::Pass)
}

/// Launch checks run before any device work, so they need no GPU.
fn launch_checks() -> TestResult {
    let cfg = LaunchConfig::for_elems(4);
    let pixels = Tensor::from_native_vec(
        vec![
            Pixel {
                color: colors(1)[0],
                index: 0
            };
            4
        ],
        &[4],
    )
    .map_err(s)?;
    // Pixels where Colors are declared.
    match make_pixels::launch(cfg.clone(), &pixels, &pixels, 1.0, 4) {
        Ok(()) => return Err("Pixels passed as Colors".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains("Color (my_addon::Color, nt") && m.contains("Pixel (my_addon::Pixel)"),
                || format!("unexpected error: {m}"),
            )?;
        }
    }
    // A plain f32 tensor where Pixels are declared.
    let floats = Tensor::from_vec(vec![0f32; 16], &[4, 4]).map_err(s)?;
    match index_pixels::launch(cfg.clone(), &floats, 4) {
        Ok(()) => return Err("an f32 tensor passed as Pixels".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains("Pixel (my_addon::Pixel, nt") && m.contains("f32"),
                || format!("unexpected error: {m}"),
            )?;
        }
    }
    // The right element on the CPU: still refused, naming the device.
    expect_err(
        index_pixels::launch(cfg, &pixels, 4),
        "a CPU tensor was launched",
        &["CPU"],
    )?;
    Ok(Outcome::Pass)
}

fn nvrtc_checks() -> TestResult {
    with_nvrtc(|| {
        for decl in [
            &see_color::DECL,
            &make_pixels::DECL,
            &bump_padded::DECL,
            &copy_handles::DECL,
            &index_pixels::DECL,
        ] {
            compile_sm90_without_globals(decl, &[])?;
        }
        expect_err(
            opbox::cuda::compile_for_arch(&index_pixels_bad::DECL, &[], "sm_90"),
            "a Pixel holding a Color with swapped fields compiled",
            &[
                "my_addon::Color::r",
                "Rust field 'native_kernels::Color::r': f32",
                "incompatible offset",
            ],
        )?;
        Ok(Outcome::Pass)
    })
}

fn gpu_by_value() -> TestResult {
    with_gpu(|| {
        let out = Tensor::zeros(&[3], DType::F32, Device::Cuda(0)).map_err(s)?;
        let c = Color {
            r: 1.5,
            g: -2.0,
            b: 0.25,
        };
        see_color::launch(LaunchConfig::for_elems(1), &out, c).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        ensure(got == [1.5, -2.0, 0.25], || {
            format!("the kernel saw {got:?}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_nested() -> TestResult {
    with_gpu(|| {
        let n = 1000usize;
        let cs = colors(n);
        let input = device_tensor(cs.clone(), &[n])?;
        let blank = Pixel {
            color: Color {
                r: 0.0,
                g: 0.0,
                b: 0.0,
            },
            index: -1,
        };
        let pixels = device_tensor(vec![blank; n], &[n])?;
        ensure(pixels.native_schema().is_some(), || {
            "the device copy lost its element type".into()
        })?;
        make_pixels::launch(LaunchConfig::for_elems(n), &input, &pixels, 0.5, n as i64)
            .map_err(s)?;
        let got = pixels.to_native_vec::<Pixel>().map_err(s)?;
        let want: Vec<Pixel> = cs
            .iter()
            .enumerate()
            .map(|(i, c)| Pixel {
                color: Color {
                    r: c.r * 0.5,
                    g: c.g * 0.5,
                    b: c.b * 0.5,
                },
                index: i as i32,
            })
            .collect();
        ensure(got == want, || {
            format!("first pixels {:?} vs {:?}", &got[..2], &want[..2])
        })?;
        // The input came back untouched.
        ensure(input.to_native_vec::<Color>().map_err(s)? == cs, || {
            "the input changed".into()
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_padded() -> TestResult {
    with_gpu(|| {
        let n = 777usize;
        let xs: Vec<Padded> = (0..n)
            .map(|i| Padded {
                tag: (i % 200) as u8,
                value: 1000 * i as u32,
            })
            .collect();
        let t = device_tensor(xs.clone(), &[n])?;
        bump_padded::launch(LaunchConfig::for_elems(n), &t, n as i64).map_err(s)?;
        let got = t.to_native_vec::<Padded>().map_err(s)?;
        let want: Vec<Padded> = xs
            .iter()
            .map(|p| Padded {
                tag: p.tag + 1,
                value: p.value + u32::from(p.tag),
            })
            .collect();
        ensure(got == want, || {
            format!("first values {:?} vs {:?}", &got[..3], &want[..3])
        })?;
        Ok(Outcome::Pass)
    })
}

fn gpu_opaque() -> TestResult {
    with_gpu(|| {
        let n = 300usize;
        let hs: Vec<Handle> = (0..n as u64)
            .map(|i| Handle(0xDEAD_BEEF_0000_0000 | (i * 0x1_0001)))
            .collect();
        let input = device_tensor(hs.clone(), &[n])?;
        let out = device_tensor(vec![Handle(0); n + 1], &[n + 1])?;
        let h = Handle(u64::MAX - 1);
        copy_handles::launch(LaunchConfig::for_elems(n), &input, &out, h, n as i64).map_err(s)?;
        let got = out.to_native_vec::<Handle>().map_err(s)?;
        let mut want = hs;
        want.push(h);
        ensure(got == want, || {
            format!("handles {:?} vs {:?}", &got[n - 1..], &want[n - 1..])
        })?;
        Ok(Outcome::Pass)
    })
}

fn build_unit() -> TestResult {
    ensure_dependency()?;
    let unit = opbox::cuda::translation_unit(&scaled::DECL, &[]).map_err(s)?;
    let src = &unit.source;
    let prelude = src.find("<opbox-prelude>").ok_or("no prelude")?;
    let stdint = src
        .find("#define OPBOX_HAVE_STDINT")
        .ok_or("no OPBOX_HAVE_STDINT")?;
    let preamble = src
        .find(PREAMBLE)
        .ok_or_else(|| format!("the preamble is not in the unit verbatim:\n{src}"))?;
    let source = src.find("#line 1 \"build_scale.cu\"").ok_or("no source")?;
    ensure(
        prelude < stdint && stdint < preamble && preamble < source,
        || format!("order prelude {prelude}, macro {stdint}, preamble {preamble}, source {source}"),
    )?;
    // The declaration without the options: no preamble.
    let mut plain = scaled::DECL.clone();
    plain.build = None;
    let bare = opbox::cuda::translation_unit(&plain, &[]).map_err(s)?;
    ensure(!bare.source.contains("my_build::scale(float"), || {
        "the preamble leaked into a declaration without build options".into()
    })?;
    Ok(Outcome::Pass)
}

fn build_bad_paths() -> TestResult {
    expect_err(
        opbox::cuda::translation_unit(&scaled_bad::DECL, &[]),
        "bad build paths were accepted",
        &[
            "kernel scaled_bad (build = BAD_BUILD)",
            "'relative/include' (not absolute)",
            "'/nonexistent/opbox/dep.h' (not a file)",
        ],
    )?;
    Ok(Outcome::Pass)
}

fn build_key() -> TestResult {
    with_nvrtc(|| {
        let target = opbox::cuda::Target::parse("sm_90").map_err(s)?;
        let key = |content: &str| -> Result<String, String> {
            std::fs::write(dependency(), content).map_err(|e| e.to_string())?;
            let c = opbox::cuda::compile_cached(&scaled::DECL, &[], target, None).map_err(s)?;
            Ok(c.key.hex())
        };
        let a = key("// v1\n")?;
        let b = key("// v2\n")?;
        let again = key("// v1\n")?;
        ensure(a != b, || "one changed byte kept the key".into())?;
        ensure(a == again, || "the same content changed the key".into())?;
        Ok(Outcome::Pass)
    })
}

fn gpu_build() -> TestResult {
    with_gpu(|| {
        ensure_dependency()?;
        let out = Tensor::zeros(&[1], DType::F32, Device::Cuda(0)).map_err(s)?;
        scaled::launch(LaunchConfig::for_elems(1), &out, 3.0).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        ensure(got == [7.0], || {
            format!("scale then offset of 3 gave {got:?}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn constant_params_unit() -> TestResult {
    let c = render::DECL.c_signature();
    ensure(c == "extern \"C\" __global__ void render()", || c.clone())?;
    let unit = opbox::cuda::translation_unit(&render::DECL, &[]).map_err(s)?;
    let decl = "extern \"C\" { __constant__ __align__(8) unsigned char params[16]; }";
    let at = unit
        .source
        .find(decl)
        .ok_or_else(|| format!("no params symbol in the unit:\n{}", unit.source))?;
    let source = unit
        .source
        .find("#line 1 \"constant_params.cu\"")
        .ok_or("no source")?;
    ensure(at < source, || "params is declared after the source".into())?;
    with_nvrtc(|| {
        compile_sm90(&[&render::DECL, &render_add::DECL])?;
        Ok(Outcome::Pass)
    })
}

fn gpu_constant_params() -> TestResult {
    with_gpu(|| {
        let n = 1000usize;
        let out = Tensor::zeros(&[n], DType::F32, Device::Cuda(0)).map_err(s)?;
        let (ptr, bytes) = out.cuda_ptr().map_err(s)?;
        ensure(bytes >= n * 4, || format!("{bytes} bytes"))?;
        let cfg = LaunchConfig::for_elems(n);
        let p = |scale: f32| RenderParams {
            out: ptr,
            scale,
            n: n as i32,
        };
        render::launch(cfg.clone(), p(0.5)).map_err(s)?;
        // Rewritten before the next launch: each launch sees its own value.
        render_add::launch(cfg.clone(), p(2.0)).map_err(s)?;
        render_add::launch(cfg, p(0.25)).map_err(s)?;
        let got = out.to_vec::<f32>().map_err(s)?;
        let want: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 + 2.0 + 0.25).collect();
        ensure(got == want, || {
            format!("first values {:?} vs {:?}", &got[..4], &want[..4])
        })?;
        Ok(Outcome::Pass)
    })
}

fn aot_arches() -> TestResult {
    use opbox::aot::{AotKernel, AotTargets};
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let kernels: [AotKernel<'_>; 2] = [(&render::DECL).into(), (&make_pixels::DECL).into()];
    // Without kernels or targets: an error, before any compiler is needed.
    let none = AotTargets {
        out_dir: dir.path().to_path_buf(),
        ..AotTargets::default()
    };
    ensure(opbox::aot::compile(&kernels, &none).is_err(), || {
        "no targets was accepted".into()
    })?;
    with_nvrtc(|| {
        let targets = AotTargets {
            devices: Vec::new(),
            arches: vec!["sm_90".into(), "compute_80".into()],
            out_dir: dir.path().join("out"),
        };
        let paths = opbox::aot::compile(&kernels, &targets).map_err(s)?;
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        ensure(
            names
                == [
                    "render.sm_90.cubin",
                    "make_pixels.sm_90.cubin",
                    "render.compute_80.ptx",
                    "make_pixels.compute_80.ptx",
                ],
            || format!("{names:?}"),
        )?;
        for p in &paths {
            let bytes = std::fs::read(p).map_err(|e| e.to_string())?;
            let ok = if p.extension().is_some_and(|e| e == "cubin") {
                bytes.starts_with(b"\x7fELF")
            } else {
                String::from_utf8_lossy(&bytes).contains(".entry")
            };
            ensure(ok, || {
                format!("{} is not a {:?} image", p.display(), p.extension())
            })?;
        }
        Ok(Outcome::Pass)
    })
}

fn gpu_aot() -> TestResult {
    with_gpu(|| {
        use opbox::aot::{AotKernel, AotTargets};
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let kernels: [AotKernel<'_>; 2] = [(&render::DECL).into(), (&make_pixels::DECL).into()];
        let targets = AotTargets {
            devices: vec![0],
            arches: vec!["compute_80".into()],
            out_dir: dir.path().to_path_buf(),
        };
        let paths = opbox::aot::compile(&kernels, &targets).map_err(s)?;
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        ensure(names.len() == 4, || format!("{names:?}"))?;
        ensure(
            names[0].starts_with("render.")
                && names[1].starts_with("make_pixels.")
                && !names[0].contains("compute_80")
                && names[2] == "render.compute_80.ptx"
                && names[3] == "make_pixels.compute_80.ptx",
            || format!("not devices first: {names:?}"),
        )?;
        ensure(paths.iter().all(|p| p.is_file()), || {
            format!("missing files: {names:?}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn builtin_nvrtc() -> TestResult {
    let unit = opbox::cuda::translation_unit(&scale_colors::DECL, &[]).map_err(s)?;
    ensure(
        unit.source.contains(
            "__device__ inline my_addon::Color opbox_builtin_scale(my_addon::Color c, float s) { return my_addon::scale(c, s); }"
        ),
        || format!("no wrapper in the unit:\n{}", unit.source),
    )?;
    with_nvrtc(|| {
        opbox::cuda::compile_for_arch(&scale_colors::DECL, &[], "sm_90").map_err(s)?;
        Ok(Outcome::Pass)
    })
}

fn gpu_builtin() -> TestResult {
    with_gpu(|| {
        let n = 500usize;
        let cs = colors(n);
        let input = device_tensor(cs.clone(), &[n])?;
        let out = device_tensor(cs.clone(), &[n])?;
        scale_colors::launch(LaunchConfig::for_elems(n), &input, &out, 0.75, n as i64)
            .map_err(s)?;
        let got = out.to_native_vec::<Color>().map_err(s)?;
        let want: Vec<Color> = cs.iter().map(|&c| scale(c, 0.75)).collect();
        ensure(got == want, || {
            format!("first colors {:?} vs {:?}", &got[..2], &want[..2])
        })?;
        Ok(Outcome::Pass)
    })
}

/// Warp's kernels without a GPU: the builtins' Rust bodies give Warp's expected values.
fn warp_image_host() -> TestResult {
    let (pixels, colors, handles) = native_array_reference(&warp_images());
    check_native_array(&pixels, &colors, &handles)?;
    // native_struct_kernel: the container's color and the image's handle, unchanged.
    let container = Container {
        color: Color {
            r: 4.0,
            g: 5.0,
            b: 6.0,
        },
    };
    ensure(
        container.color
            == Color {
                r: 4.0,
                g: 5.0,
                b: 6.0,
            },
        || format!("{container:?}"),
    )?;
    let h = image_handle(Image { handle: 41 });
    ensure(h == 41, || format!("image_handle(Image(41)) = {h}"))?;
    // The builtins as declared: Warp's contracts (inputs and result, native target).
    let sig = __opbox_builtin_image_handle.rust_signature();
    ensure(
        sig == "image_handle(image: native_kernels::Image) -> u64",
        || sig.clone(),
    )?;
    let native = __opbox_builtin_image_handle.native_name;
    ensure(native == "warp_test::image_handle", || native.to_string())?;
    Ok(Outcome::Pass)
}

/// Warp's opaque round trip (images [11, 29] to an array and back), and its refusal to build an
/// Image array from data of another type ("Invalid source data type for native array"): here a
/// tensor of my_addon::Handle, which has Image's size and alignment but another native name.
fn warp_image_round_trip() -> TestResult {
    let images = Tensor::from_native_vec(warp_images(), &[2]).map_err(s)?;
    ensure(images.shape() == [2, 8], || {
        format!("shape {:?}", images.shape())
    })?;
    let back = images.to_native_vec::<Image>().map_err(s)?;
    let handles: Vec<u64> = back.iter().map(|i| i.handle).collect();
    ensure(handles == [11, 29], || format!("handles {handles:?}"))?;
    // An opaque value's bytes are copied whole: the u64 handles, as a u64 view would see them.
    let bytes = images.to_vec::<u8>().map_err(s)?;
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect();
    ensure(words == [11, 29], || format!("bytes {bytes:?}"))?;

    let other = Tensor::from_native_vec(vec![Handle(11), Handle(29)], &[2]).map_err(s)?;
    match other.to_native_vec::<Image>() {
        Ok(v) => return Err(format!("Handle values read back as Images: {v:?}")),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains(
                    "warp_test::Image values (asked for by to_native_vec::<native_kernels::Image>)",
                ) && m.contains("a tensor of my_addon::Handle (native_kernels::Handle) values"),
                || format!("unexpected error: {m}"),
            )?;
        }
    }
    // Copying Handle values into an Image tensor: refused, naming both native types.
    match images.copy_from(&other) {
        Ok(()) => return Err("Handle values were copied into an Image tensor".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains(
                    "warp_test::Image (the destination's native type, native_kernels::Image)",
                ) && m.contains("my_addon::Handle (copy_from's source, native_kernels::Handle)"),
                || format!("unexpected error: {m}"),
            )?;
        }
    }
    ensure(
        images.to_native_vec::<Image>().map_err(s)? == warp_images(),
        || "a refused copy changed the destination".into(),
    )?;
    // Plain bytes carry no type: they are not Images either.
    let plain = Tensor::from_vec(vec![0u8; 16], &[2, 8]).map_err(s)?;
    match plain.to_native_vec::<Image>() {
        Ok(_) => Err("a plain u8 tensor read back as Images".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(m.contains("a u8 tensor"), || {
                format!("unexpected error: {m}")
            })?;
            Ok(Outcome::Pass)
        }
    }
}

/// The launch checks each tensor's element before any device work, argument by argument: an
/// Image tensor where Pixels are declared is refused without a GPU. (Handles where Images are
/// declared, behind the pixels argument, need device tensors: gpu_warp_image_launch_checks.)
fn warp_image_launch_checks() -> TestResult {
    let cfg = LaunchConfig::for_elems(2);
    let pixels =
        Tensor::from_native_vec(native_array_reference(&warp_images()).0, &[2]).map_err(s)?;
    let images = Tensor::from_native_vec(warp_images(), &[2]).map_err(s)?;
    let colors = Tensor::from_native_vec(colors(2), &[2]).map_err(s)?;
    let handles = Tensor::zeros(&[2], DType::U64, Device::Cpu).map_err(s)?;
    match native_array_kernel::launch(cfg.clone(), &images, &images, &colors, &handles, 2) {
        Ok(()) => return Err("Images passed as Pixels".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains("Pixel (my_addon::Pixel, nt") && m.contains("Image (warp_test::Image)"),
                || format!("unexpected error: {m}"),
            )?;
        }
    }
    // Every element right, on the CPU: refused for the device only.
    match native_array_kernel::launch(cfg, &pixels, &images, &colors, &handles, 2) {
        Ok(()) => Err("CPU tensors were launched".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(m.contains("CPU"), || format!("unexpected error: {m}"))?;
            Ok(Outcome::Pass)
        }
    }
}

/// On the device, behind the right pixels: Handles where Images are declared, and an i64 tensor
/// where u64 handles are, are refused naming both element types.
fn gpu_warp_image_launch_checks() -> TestResult {
    with_gpu(|| {
        let dev = Device::Cuda(0);
        let cfg = LaunchConfig::for_elems(2);
        let pixels = device_tensor(native_array_reference(&warp_images()).0, &[2])?;
        let images = device_tensor(warp_images(), &[2])?;
        let colors = device_tensor(colors(2), &[2])?;
        let handles = Tensor::zeros(&[2], DType::U64, dev).map_err(s)?;
        let others = device_tensor(vec![Handle(11), Handle(29)], &[2])?;
        expect_err(
            native_array_kernel::launch(cfg.clone(), &pixels, &others, &colors, &handles, 2),
            "Handles passed as Images",
            &["Image (warp_test::Image, nt", "Handle (my_addon::Handle)"],
        )?;
        let signed = Tensor::zeros(&[2], DType::I64, dev).map_err(s)?;
        expect_err(
            native_array_kernel::launch(cfg, &pixels, &images, &colors, &signed, 2),
            "an i64 tensor passed as u64 handles",
            &["(handles) to be u64", "i64"],
        )?;
        Ok(Outcome::Pass)
    })
}

/// Both kernels compile: the preamble's types pass opbox's ABI static_asserts (Image's size and
/// alignment, Color and Pixel field by field, Container's generated twin), and the wrappers
/// forward to Warp's native functions.
fn warp_image_nvrtc() -> TestResult {
    let c = native_array_kernel::DECL.c_signature();
    ensure(
        c == "__global__ void native_array_kernel(my_addon::Pixel* pixels, const warp_test::Image* images, my_addon::Color* colors, unsigned long long* handles, long long n)",
        || c.clone(),
    )?;
    let unit = opbox::cuda::translation_unit(&native_struct_kernel::DECL, &[]).map_err(s)?;
    ensure(
        unit.source.contains(
            "__device__ inline unsigned long long opbox_builtin_image_handle(warp_test::Image image) { return warp_test::image_handle(image); }"
        ),
        || format!("no image_handle wrapper in the unit:\n{}", unit.source),
    )?;
    with_nvrtc(|| {
        compile_sm90(&[&native_array_kernel::DECL, &native_struct_kernel::DECL])?;
        Ok(Outcome::Pass)
    })
}

/// Warp's test_native_value_types, first launch: two threads, images [11, 29].
fn gpu_warp_native_array() -> TestResult {
    with_gpu(|| {
        let dev = Device::Cuda(0);
        let blank = Pixel {
            color: Color {
                r: 0.0,
                g: 0.0,
                b: 0.0,
            },
            index: -1,
        };
        let pixels = device_tensor(vec![blank; 2], &[2])?;
        let images = device_tensor(warp_images(), &[2])?;
        let colors = device_tensor(vec![blank.color; 2], &[2])?;
        let handles = Tensor::zeros(&[2], DType::U64, dev).map_err(s)?;
        native_array_kernel::launch(
            LaunchConfig::for_elems(2),
            &pixels,
            &images,
            &colors,
            &handles,
            2,
        )
        .map_err(s)?;
        let got = (
            pixels.to_native_vec::<Pixel>().map_err(s)?,
            colors.to_native_vec::<Color>().map_err(s)?,
            handles.to_vec::<u64>().map_err(s)?,
        );
        check_native_array(&got.0, &got.1, &got.2)?;
        // And exactly what the builtins' Rust bodies compute.
        let want = native_array_reference(&warp_images());
        ensure(got == want, || format!("GPU {got:?} vs CPU {want:?}"))?;
        Ok(Outcome::Pass)
    })
}

/// Warp's second launch: a struct holding a native value and an opaque value, by value.
fn gpu_warp_native_struct() -> TestResult {
    with_gpu(|| {
        let dev = Device::Cuda(0);
        let zero = Color {
            r: 0.0,
            g: 0.0,
            b: 0.0,
        };
        let color = device_tensor(vec![zero; 2], &[2])?;
        let handle = Tensor::zeros(&[2], DType::U64, dev).map_err(s)?;
        let container = Container {
            color: Color {
                r: 4.0,
                g: 5.0,
                b: 6.0,
            },
        };
        native_struct_kernel::launch(
            LaunchConfig::for_elems(1),
            container,
            Image { handle: 41 },
            &color,
            &handle,
        )
        .map_err(s)?;
        let got = color.to_native_vec::<Color>().map_err(s)?;
        ensure(got[0] == container.color && got[1] == zero, || {
            format!("colors {got:?}")
        })?;
        let h = handle.to_vec::<u64>().map_err(s)?;
        ensure(h == [41, 0], || format!("handles {h:?}"))?;
        Ok(Outcome::Pass)
    })
}

/// Warp's opaque round trip through the device: handles (one above i64::MAX) come back whole,
/// tagged as Images.
fn gpu_warp_image_round_trip() -> TestResult {
    with_gpu(|| {
        let mut images = warp_images();
        images.push(Image { handle: u64::MAX });
        let host = Tensor::from_native_vec(images.clone(), &[3]).map_err(s)?;
        let dev = host.to(Device::Cuda(0)).map_err(s)?;
        ensure(
            dev.native_schema().map(|n| n.native_name) == Some("warp_test::Image"),
            || "the device copy lost its element type".into(),
        )?;
        let back = dev.to(Device::Cpu).map_err(s)?;
        ensure(back.to_native_vec::<Image>().map_err(s)? == images, || {
            "Images did not round-trip through the device".into()
        })?;
        ensure(dev.to_native_vec::<Image>().map_err(s)? == images, || {
            "Images did not read back from the device".into()
        })?;
        Ok(Outcome::Pass)
    })
}
