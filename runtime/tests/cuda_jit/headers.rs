//! CUDA's headers and the C/C++ standard headers under NVRTC, with opbox's prelude in front:
//! each header of a real kernel library resolves with the setup the README documents
//! (`scripts/install-nvrtc`), opbox's own header never clashes with CCCL's, and the standard
//! headers' types and macros are right, with CCCL's headers on the include path and without.

use opbox_runtime::backend::cuda::{
    compile_cached, cuda_include_options, nvrtc, translation_unit, ImageKind, Target,
};

use crate::support::*;

pub const TESTS: &[Test] = &[
    (
        "headers::every_cuda_header_compiles_after_the_prelude",
        every_cuda_header,
    ),
    (
        "headers::standard_headers_are_right_with_and_without_cccl",
        standard_headers,
    ),
    (
        "headers::a_missing_header_names_its_include_and_where_opbox_looked",
        missing_header,
    ),
];

fn missing_header() -> TestResult {
    with_nvrtc(|| {
        let decl = axpby_with_source(&format!("#include <opbox_no_such_header.h>\n{AXPBY_CU}"));
        let err = match compile_cached(&decl, &[], Target::cubin(90), None) {
            Ok(_) => return Err("a kernel including a missing header compiled".into()),
            Err(e) => e.to_string(),
        };
        for want in [
            "opbox: NVRTC found no header \"opbox_no_such_header.h\". It is included at axpby.cu:1, and opbox's scanner found no file of that name",
            "The CUDA headers were looked for in:\n  $CUDA_HOME: ",
            "beside libnvrtc: ",
            "run scripts/install-nvrtc",
        ] {
            ensure(err.contains(want), || format!("the error lacks {want:?}:\n{err}"))?;
        }
        Ok(Outcome::Pass)
    })
}

/// What real kernels include, CUDA's and CCCL's.
const CUDA_HEADERS: &[&str] = &[
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cuda_fp8.h",
    "cuda/std/cstdint",
    "cuda/std/limits",
    "cuda/std/type_traits",
    "cuda/std/cmath",
    "cuda/std/cfloat",
    "cuda/std/climits",
    "cuda/std/cstddef",
    "cuda/std/cassert",
    "cuda/std/atomic",
    "cuda/atomic",
    "cub/cub.cuh",
    "cooperative_groups.h",
];

/// The CUDA headers are expected wherever NVRTC is (CI installs both with scripts/install-nvrtc).
fn with_headers(f: impl FnOnce(&[String]) -> TestResult) -> TestResult {
    with_nvrtc(|| {
        let include = cuda_include_options();
        if include.is_empty() {
            let why =
                "CUDA's headers were not found (scripts/install-nvrtc installs them beside NVRTC)";
            if std::env::var_os("OPBOX_REQUIRE_NVRTC").is_some() {
                return Err(why.into());
            }
            return Ok(Outcome::Skip(why.into()));
        }
        f(include)
    })
}

fn every_cuda_header() -> TestResult {
    with_headers(|_| {
        for header in CUDA_HEADERS {
            // The prelude's <stdint.h> comes first; the header, then the kernel's own
            // int64_t use, follow.
            let source = format!(
                "#include <{header}>\n#include <stdint.h>\n__device__ int64_t opbox_probe(int64_t x) {{ return x; }}\n{AXPBY_CU}"
            );
            let decl = axpby_with_source(&source);
            compile_cached(&decl, &[], Target::cubin(90), None)
                .map_err(|e| format!("#include <{header}>: {e}"))?;
        }
        Ok(Outcome::Pass)
    })
}

/// The standard headers' contract, checked by the compiler: types, limits, macros, functions.
const STANDARD: &str = r#"#include <stdint.h>
#include <cstdint>
#include <limits.h>
#include <climits>
#include <float.h>
#include <stddef.h>
#include <cstddef>
#include <math.h>
#include <cmath>
#include <assert.h>
#include <stdio.h>
#include <cuda/std/cstdint>
static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "int sizes");
static_assert(sizeof(uint64_t) == 8 && sizeof(intptr_t) == sizeof(void*) && sizeof(size_t) == 8, "pointer sizes");
static_assert(INT8_MIN == -128 && INT16_MAX == 32767 && INT32_MIN == -2147483647 - 1, "int limits");
static_assert(INT64_MAX == 9223372036854775807LL && UINT32_MAX == 4294967295u && UINT64_MAX == 18446744073709551615ull, "int limits");
static_assert(CHAR_BIT == 8 && INT_MAX == 2147483647 && LLONG_MIN < 0 && UCHAR_MAX == 255, "limits.h");
static_assert(FLT_MAX > 3.4e38f && FLT_EPSILON == 1.19209290e-7F && DBL_EPSILON < 1e-15 && FLT_MANT_DIG == 24, "float.h");
static_assert(sizeof(std::int64_t) == 8 && sizeof(std::uint8_t) == 1 && sizeof(std::size_t) == 8, "std names");
static_assert(sizeof(ptrdiff_t) == 8 && sizeof(std::nullptr_t) == sizeof(void*), "stddef");
static_assert(INFINITY > FLT_MAX && HUGE_VAL > DBL_MAX && M_PI > 3.14159 && M_PI < 3.1416, "math.h");
struct opbox_pair { int a; double b; };
extern "C" __global__ void standard(float* out, int64_t* ints) {
    float x = out[0];
    out[1] = INFINITY;
    out[2] = NAN;
    out[3] = isnan(out[2]) && isinf(out[1]) ? fminf(x, 2.0f) + fmaxf(x, 1.0f) : -1.0f;
    out[4] = std::sqrt(x) + std::fabs(x) + std::exp(x) + (std::isnan(x) ? 1.0f : 0.0f);
    ints[0] = INT64_MIN;
    ints[1] = offsetof(opbox_pair, b);
    assert(out != NULL);
    if (x < 0) printf("%f\n", x);
}
"#;

fn standard_headers() -> TestResult {
    with_headers(|include| {
        use std::borrow::Cow;
        let mut decl = axpby_with_source(STANDARD);
        decl.entry = Cow::Borrowed("standard");
        decl.params = Cow::Owned(vec![
            opbox_codegen::cuda::Param::new(
                "out",
                opbox_codegen::cuda::ParamKind::Out(opbox_codegen::cuda::ElemType::F32),
            ),
            opbox_codegen::cuda::Param::new(
                "ints",
                opbox_codegen::cuda::ParamKind::Out(opbox_codegen::cuda::ElemType::I64),
            ),
        ]);
        let unit = translation_unit(&decl, &[]).map_err(|e| e.to_string())?;
        let base = vec!["--gpu-architecture=sm_90".to_string(), "-std=c++17".into()];
        // With CCCL: the shims forward to cuda/std.
        let mut with = base.clone();
        with.extend(include.iter().cloned());
        nvrtc::compile(&unit, &with, ImageKind::Cubin, "standard")
            .map_err(|e| format!("with CCCL's headers: {e}"))?;
        // Without any header on the path (a bare NVRTC), only `<cuda/std/cstdint>` is missing:
        // compile the unit without that one line, so every shim's own definitions are checked.
        let mut bare = unit.clone();
        bare.source = bare.source.replace("#include <cuda/std/cstdint>\n", "\n");
        nvrtc::compile(&bare, &base, ImageKind::Cubin, "standard")
            .map_err(|e| format!("without CUDA headers: {e}"))?;
        Ok(Outcome::Pass)
    })
}
