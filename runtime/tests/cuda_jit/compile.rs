//! Compile-only tests: NVRTC, no GPU. They run in CI with NVRTC from the PyPI wheel.

use std::time::Instant;

use opbox_codegen::cuda::{ConstValue, ConstexprStyle, ElemType, Param, ParamKind, ScalarType};
use opbox_runtime::backend::cuda::{compile_cached, ImageKind, Target};
use opbox_runtime::Error;

use crate::support::*;

pub const TESTS: &[Test] = &[
    (
        "compile::matching_kernel_compiles_to_a_cubin",
        matching_kernel_compiles_to_a_cubin,
    ),
    (
        "compile::int64_t_long_and_restrict_are_accepted",
        int64_t_long_and_restrict_are_accepted,
    ),
    (
        "compile::missing_const_on_an_in_slice_fails_naming_the_rust_declaration",
        missing_const_fails,
    ),
    (
        "compile::wrong_scalar_type_fails_naming_the_rust_declaration",
        wrong_scalar_type_fails,
    ),
    ("compile::wrong_param_count_fails", wrong_param_count_fails),
    (
        "compile::syntax_error_keeps_the_user_file_and_line",
        syntax_error_keeps_file_and_line,
    ),
    ("compile::missing_entry_is_named", missing_entry_is_named),
    (
        "compile::multi_file_kernel_with_include_dir_compiles",
        multi_file_kernel_compiles,
    ),
    (
        "compile::template_constexpr_specializes_a_mangled_entry",
        template_constexpr,
    ),
    (
        "compile::define_constexpr_reaches_the_source",
        define_constexpr,
    ),
    (
        "compile::half_and_bfloat16_compile_without_cuda_headers",
        half_types,
    ),
    ("compile::ptx_target_yields_ptx_text", ptx_target),
];

fn sm90() -> Target {
    Target::cubin(90)
}

/// Compiles with no disk cache. Every caller runs inside `with_nvrtc`, which has already
/// skipped when NVRTC is missing, so any error here is the test's business.
fn compile(
    decl: &opbox_codegen::cuda::KernelDecl,
    values: &[ConstValue],
    target: Target,
) -> Result<opbox_runtime::backend::cuda::Artifact, Error> {
    compile_cached(decl, values, target, None).map(|c| c.artifact)
}

/// The compile log of a kernel that must fail.
fn failing_log(decl: &opbox_codegen::cuda::KernelDecl) -> Result<String, String> {
    match compile(decl, &[], sm90()) {
        Ok(_) => Err("expected a compile error, but the kernel compiled".into()),
        Err(Error::Compile { kernel, log }) => {
            ensure(kernel == decl.rust_name, || {
                format!("error names kernel {kernel}")
            })?;
            Ok(log)
        }
        Err(other) => Err(format!("expected Error::Compile, got {other:?}")),
    }
}

fn contains_all(log: &str, parts: &[&str]) -> Result<(), String> {
    for p in parts {
        ensure(log.contains(p), || format!("log lacks {p:?}:\n{log}"))?;
    }
    Ok(())
}

fn matching_kernel_compiles_to_a_cubin() -> TestResult {
    with_nvrtc(|| {
        // Warm NVRTC up once; the second figure is a steady-state compile.
        let mut times = Vec::new();
        let mut artifact = None;
        for _ in 0..3 {
            let t = Instant::now();
            artifact = Some(compile(&AXPBY, &[], sm90()).map_err(|e| e.to_string())?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let a = artifact.ok_or("no artifact")?;
        ensure(a.kind == ImageKind::Cubin, || format!("kind {:?}", a.kind))?;
        ensure(a.image.starts_with(b"\x7fELF"), || {
            "a cubin is an ELF image".into()
        })?;
        ensure(a.lowered_name() == "axpby", || {
            format!("extern \"C\" entry lowers to {}", a.lowered_name())
        })?;
        println!(
            "    NVRTC sm_90 cubin of axpby: first {:.1} ms, then {:.1} ms, {:.1} ms ({} bytes)",
            times[0],
            times[1],
            times[2],
            a.image.len()
        );
        Ok(Outcome::Pass)
    })
}

fn int64_t_long_and_restrict_are_accepted() -> TestResult {
    with_nvrtc(|| {
        for (what, sig) in [
            ("int64_t", "const float* __restrict__ x, const float* const y, float* out, float a, const float b, int64_t n"),
            ("long", "const float* x, const float* y, float* __restrict__ out, float a, float b, long n"),
        ] {
            let decl = axpby_with_source(&format!("__global__ void axpby({sig}) {{}}\n"));
            let a = compile(&decl, &[], sm90()).map_err(|e| format!("{what}: {e}"))?;
            ensure(a.lowered_name().starts_with("_Z5axpby"), || a.lowered_name().to_string())?;
        }
        Ok(Outcome::Pass)
    })
}

const RUST_DECL: &str =
    "fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64)";
const CPP_DECL: &str = "implies: __global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n)";

fn missing_const_fails() -> TestResult {
    with_nvrtc(|| {
        let decl = axpby_with_source(
            "extern \"C\" __global__ void axpby(float* x, const float* y, float* out, float a, float b, long long n) {}\n",
        );
        let log = failing_log(&decl)?;
        contains_all(
            &log,
            &[
                // The first line of the error: one per mismatched parameter, the C++ type named.
                "parameter #0 (x) of axpby_f32 is `float *` in C++ but the Rust declaration `In<[f32]>` needs `const float*`\n",
                "<opbox-check:axpby_f32>(3): error: static assertion failed",
                "(Rust declaration at runtime/tests/cuda_jit/support.rs:80",
                RUST_DECL,
            ],
        )?;
        Ok(Outcome::Pass)
    })
}

fn wrong_scalar_type_fails() -> TestResult {
    with_nvrtc(|| {
        let decl = axpby_with_source(
            "extern \"C\" __global__ void axpby(const float* x, const float* y, float* out, double a, float b, long long n) {}\n",
        );
        let log = failing_log(&decl)?;
        let first = log.lines().next().unwrap_or("");
        ensure(
            first == "parameter #3 (a) of axpby_f32 is `double` in C++ but the Rust declaration `f32` needs `float`",
            || format!("first line: {first}\n{log}"),
        )?;
        contains_all(&log, &["static assertion failed", RUST_DECL])?;
        Ok(Outcome::Pass)
    })
}

fn wrong_param_count_fails() -> TestResult {
    with_nvrtc(|| {
        let decl = axpby_with_source(
            "extern \"C\" __global__ void axpby(const float* x, const float* y, float* out, float a, float b) {}\n",
        );
        let log = failing_log(&decl)?;
        let first = log.lines().next().unwrap_or("");
        ensure(
            first.starts_with("the C++ entry 'axpby' in axpby.cu must take 6 parameters")
                && first.ends_with(&format!("{CPP_DECL} (it takes 5)")),
            || format!("first line: {first}\n{log}"),
        )?;
        contains_all(&log, &["static assertion failed", RUST_DECL])?;
        Ok(Outcome::Pass)
    })
}

fn syntax_error_keeps_file_and_line() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path();
        write(
            root,
            "kernels/axpby.cu",
            &format!("#include \"../common/x.cuh\"\n{AXPBY_CU}"),
        )?;
        write(
            root,
            "common/x.cuh",
            "#pragma once\n// helper\n__device__ int helper() { return 1 }\n",
        )?;
        let decl = scanned(root, "kernels/axpby.cu", &[], AXPBY.clone())?;
        let log = failing_log(&decl)?;
        contains_all(
            &log,
            &["../common/x.cuh(3): error", "(Rust declaration at "],
        )?;
        Ok(Outcome::Pass)
    })
}

fn missing_entry_is_named() -> TestResult {
    with_nvrtc(|| {
        let decl = axpby_with_source("extern \"C\" __global__ void axbpy(const float* x) {}\n");
        let log = failing_log(&decl)?;
        contains_all(
            &log,
            &["<opbox-check:axpby_f32>(2): error: identifier \"axpby\" is undefined"],
        )?;
        // Not a function at all: no count to compare, so no check line leads the error.
        ensure(log.starts_with("<opbox-check:axpby_f32>"), || {
            format!("the log leads with a check line:\n{log}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn multi_file_kernel_compiles() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path();
        write(
            root,
            "kernels/axpby.cu",
            "#include \"../common/x.cuh\"\n#include <mylib/lerp.cuh>\n\
             extern \"C\" __global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n) {\n\
               long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
               if (i < n) out[i] = mylib::lerp2(a, x[i], b, y[i]) * common_scale();\n\
             }\n",
        )?;
        write(root, "common/x.cuh", "#pragma once\n#include <mylib/lerp.cuh>\n__device__ inline float common_scale() { return 1.0f; }\n")?;
        write(root, "include/mylib/lerp.cuh", "#ifndef MYLIB_LERP\n#define MYLIB_LERP\n#include \"detail.cuh\"\nnamespace mylib { __device__ inline float lerp2(float a, float x, float b, float y) { return detail::fma2(a, x, b * y); } }\n#endif\n")?;
        write(root, "include/mylib/detail.cuh", "#pragma once\nnamespace mylib { namespace detail { __device__ inline float fma2(float a, float x, float c) { return a * x + c; } } }\n")?;
        let decl = scanned(root, "kernels/axpby.cu", &["include"], AXPBY.clone())?;
        let names: Vec<&str> = decl.sources.iter().map(|f| f.name.as_ref()).collect();
        ensure(
            names
                == [
                    "axpby.cu",
                    "../common/x.cuh",
                    "mylib/lerp.cuh",
                    "mylib/detail.cuh",
                ],
            || format!("{names:?}"),
        )?;
        compile(&decl, &[], sm90()).map_err(|e| e.to_string())?;
        Ok(Outcome::Pass)
    })
}

fn template_constexpr() -> TestResult {
    with_nvrtc(|| {
        let mut decl = axpby_with_source(
            "template <int BLOCK, bool FLAG>\n__global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n) {\n\
               static_assert(BLOCK % 32 == 0, \"block must be a warp multiple\");\n}\n",
        );
        decl.params
            .to_mut()
            .push(Param::new("BLOCK", ParamKind::Constexpr(ScalarType::I32)));
        decl.params
            .to_mut()
            .push(Param::new("FLAG", ParamKind::Constexpr(ScalarType::Bool)));
        decl.constexpr_style = ConstexprStyle::TemplateArgs;
        let a = compile(
            &decl,
            &[ConstValue::I32(256), ConstValue::Bool(true)],
            sm90(),
        )
        .map_err(|e| e.to_string())?;
        ensure(
            a.lowered_name().starts_with("_Z5axpbyILi256ELb1EEv"),
            || a.lowered_name().to_string(),
        )?;
        // The user's own static_assert fires for a bad value, with the user's line.
        match compile(
            &decl,
            &[ConstValue::I32(100), ConstValue::Bool(true)],
            sm90(),
        ) {
            Ok(_) => Err("BLOCK=100 should fail the kernel's static_assert".into()),
            Err(e) => {
                contains_all(
                    &e.to_string(),
                    &[
                        "axpby.cu(3): error: static assertion failed",
                        "block must be a warp multiple",
                    ],
                )?;
                Ok(Outcome::Pass)
            }
        }
    })
}

fn define_constexpr() -> TestResult {
    with_nvrtc(|| {
        let mut decl = axpby_with_source(
            "#if !defined(SCALE) || !defined(UNROLL)\n#error constexpr defines missing\n#endif\n\
             extern \"C\" __global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n) {\n\
               static_assert(UNROLL == 4u, \"unroll\");\n out[0] = SCALE * a;\n}\n",
        );
        decl.params
            .to_mut()
            .push(Param::new("SCALE", ParamKind::Constexpr(ScalarType::F32)));
        decl.params
            .to_mut()
            .push(Param::new("UNROLL", ParamKind::Constexpr(ScalarType::U32)));
        compile(&decl, &[ConstValue::F32(0.5), ConstValue::U32(4)], sm90())
            .map_err(|e| e.to_string())?;
        Ok(Outcome::Pass)
    })
}

fn half_types() -> TestResult {
    with_nvrtc(|| {
        let mut decl = axpby_with_source(
            "extern \"C\" __global__ void axpby(const __half* x, const __nv_bfloat16* y, float* out, float a, float b, long long n) {}\n",
        );
        decl.params.to_mut()[0].kind = ParamKind::In(ElemType::F16);
        decl.params.to_mut()[1].kind = ParamKind::In(ElemType::BF16);
        compile(&decl, &[], sm90()).map_err(|e| e.to_string())?;
        Ok(Outcome::Pass)
    })
}

fn ptx_target() -> TestResult {
    with_nvrtc(|| {
        let a = compile(&AXPBY, &[], Target::ptx(90)).map_err(|e| e.to_string())?;
        let text = String::from_utf8(a.image).map_err(|e| e.to_string())?;
        ensure(
            a.kind == ImageKind::Ptx && text.contains(".entry axpby("),
            || text.chars().take(400).collect(),
        )?;
        ensure(!text.ends_with('\0'), || "PTX keeps no trailing NUL".into())?;
        Ok(Outcome::Pass)
    })
}
