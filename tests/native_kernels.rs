//! Native values in kernels: `#[derive(NativeType)]` types by value, as slice elements
//! (`In<[Color]>`, `Out<[Pixel]>` over tensors of native values), nested, padded (u8 then u32)
//! and opaque; the C++ ABI checks of every native type a kernel references, recursively; and
//! a group's `BuildOptions` (`#[extern_kernel(..., build = OPTIONS)]`); and
//! `abi = "constant_params"` entries; and `opbox::aot::compile`.
//!
//! A custom harness (harness = false), like tests/kernel_args: each test passes, fails or skips
//! with a printed reason; OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1 turn skips into failures.

mod harness;

use std::process::ExitCode;
use std::sync::LazyLock;

use harness::{ensure, s, with_gpu, with_nvrtc, Outcome, Test, TestResult};
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
];

fn main() -> ExitCode {
    harness::run(TESTS)
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
    match index_pixels::launch(cfg, &pixels, 4) {
        Ok(()) => Err("a CPU tensor was launched".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(m.contains("CPU"), || format!("unexpected error: {m}"))?;
            Ok(Outcome::Pass)
        }
    }
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
            opbox::cuda::compile_for_arch(decl, &[], "sm_90")
                .map_err(|e| format!("{}: {e}", decl.rust_name))?;
        }
        match opbox::cuda::compile_for_arch(&index_pixels_bad::DECL, &[], "sm_90") {
            Ok(_) => Err("a Pixel holding a Color with swapped fields compiled".into()),
            Err(e) => {
                let m = e.to_string();
                ensure(
                    m.contains("my_addon::Color::r")
                        && m.contains("Rust field 'native_kernels::Color::r': f32")
                        && m.contains("incompatible offset"),
                    || format!("unexpected error: {m}"),
                )?;
                Ok(Outcome::Pass)
            }
        }
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
        let input = Tensor::from_native_vec(cs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let blank = Pixel {
            color: Color {
                r: 0.0,
                g: 0.0,
                b: 0.0,
            },
            index: -1,
        };
        let pixels = Tensor::from_native_vec(vec![blank; n], &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
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
        let t = Tensor::from_native_vec(xs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
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
        let input = Tensor::from_native_vec(hs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let out = Tensor::from_native_vec(vec![Handle(0); n + 1], &[n + 1])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
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
    match opbox::cuda::translation_unit(&scaled_bad::DECL, &[]) {
        Ok(_) => Err("bad build paths were accepted".into()),
        Err(e) => {
            let m = e.to_string();
            ensure(
                m.contains("kernel scaled_bad (build = BAD_BUILD)")
                    && m.contains("'relative/include' (not absolute)")
                    && m.contains("'/nonexistent/opbox/dep.h' (not a file)"),
                || format!("unexpected error: {m}"),
            )?;
            Ok(Outcome::Pass)
        }
    }
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
        for decl in [&render::DECL, &render_add::DECL] {
            opbox::cuda::compile_for_arch(decl, &[], "sm_90")
                .map_err(|e| format!("{}: {e}", decl.rust_name))?;
        }
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
        let input = Tensor::from_native_vec(cs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
        let out = Tensor::from_native_vec(cs.clone(), &[n])
            .map_err(s)?
            .to(Device::Cuda(0))
            .map_err(s)?;
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
