//! The C and C++ standard headers real kernels include (`<stdint.h>`, `<cmath>`, `<assert.h>`,
//! ...), which NVRTC does not have: it searches no system directory, and the host's own headers
//! are not written for it. Each is given to NVRTC as a named header, so it resolves the same way
//! on every machine, with or without a CUDA toolkit.
//!
//! Where CCCL's NVRTC-ready headers are on the include path (`scripts/install-nvrtc` installs
//! them; a CUDA toolkit has them), a header forwards to its `cuda/std` twin, and its types and
//! macros are CCCL's own. Only without CCCL does it define them itself, spelled exactly as CCCL
//! spells them under NVRTC (`int64_t` is `signed long long`), so a cache entry means the same on
//! both kinds of machine.
//!
//! `<cub/cub.cuh>` is here too: CUB's umbrella header pulls in its device-wide algorithms, which
//! are host code NVRTC refuses; under NVRTC it gives the block, warp, thread and iterator
//! primitives, which are what a kernel can call.

/// A header NVRTC gets by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedHeader {
    /// The name as written between `<>` or `""`: `stdint.h`, `cub/cub.cuh`.
    pub name: &'static str,
    pub content: &'static str,
}

const STDINT: &str = r#"#ifndef OPBOX_SHIM_STDINT
#define OPBOX_SHIM_STDINT
#if defined(__has_include) && __has_include(<cuda/std/cstdint>)
#  include <cuda/std/cstdint>
#else
typedef signed char int8_t;
typedef signed short int16_t;
typedef signed int int32_t;
typedef signed long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int8_t int_least8_t;
typedef int16_t int_least16_t;
typedef int32_t int_least32_t;
typedef int64_t int_least64_t;
typedef uint8_t uint_least8_t;
typedef uint16_t uint_least16_t;
typedef uint32_t uint_least32_t;
typedef uint64_t uint_least64_t;
typedef int8_t int_fast8_t;
typedef int16_t int_fast16_t;
typedef int32_t int_fast32_t;
typedef int64_t int_fast64_t;
typedef uint8_t uint_fast8_t;
typedef uint16_t uint_fast16_t;
typedef uint32_t uint_fast32_t;
typedef uint64_t uint_fast64_t;
typedef int64_t intptr_t;
typedef uint64_t uintptr_t;
typedef int64_t intmax_t;
typedef uint64_t uintmax_t;
#  define INT8_MIN (-128)
#  define INT16_MIN (-32767 - 1)
#  define INT32_MIN (-2147483647 - 1)
#  define INT64_MIN (-9223372036854775807LL - 1)
#  define INT8_MAX 127
#  define INT16_MAX 32767
#  define INT32_MAX 2147483647
#  define INT64_MAX 9223372036854775807LL
#  define UINT8_MAX 255
#  define UINT16_MAX 65535
#  define UINT32_MAX 4294967295U
#  define UINT64_MAX 18446744073709551615ULL
#  define INTPTR_MIN INT64_MIN
#  define INTPTR_MAX INT64_MAX
#  define UINTPTR_MAX UINT64_MAX
#  define INTMAX_MIN INT64_MIN
#  define INTMAX_MAX INT64_MAX
#  define UINTMAX_MAX UINT64_MAX
#  define PTRDIFF_MIN INT64_MIN
#  define PTRDIFF_MAX INT64_MAX
#  define SIZE_MAX UINT64_MAX
#  define INT8_C(X) ((::int_least8_t)(X))
#  define INT16_C(X) ((::int_least16_t)(X))
#  define INT32_C(X) ((::int_least32_t)(X))
#  define INT64_C(X) ((::int_least64_t)(X))
#  define UINT8_C(X) ((::uint_least8_t)(X))
#  define UINT16_C(X) ((::uint_least16_t)(X))
#  define UINT32_C(X) ((::uint_least32_t)(X))
#  define UINT64_C(X) ((::uint_least64_t)(X))
#endif
#endif
"#;

/// `<cstdint>` also names the types in `std`.
const CSTDINT: &str = r#"#include <stdint.h>
#ifndef OPBOX_SHIM_CSTDINT
#define OPBOX_SHIM_CSTDINT
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::int_least8_t; using ::int_least16_t; using ::int_least32_t; using ::int_least64_t;
using ::uint_least8_t; using ::uint_least16_t; using ::uint_least32_t; using ::uint_least64_t;
using ::int_fast8_t; using ::int_fast16_t; using ::int_fast32_t; using ::int_fast64_t;
using ::uint_fast8_t; using ::uint_fast16_t; using ::uint_fast32_t; using ::uint_fast64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
#endif
"#;

const LIMITS: &str = r#"#ifndef OPBOX_SHIM_LIMITS
#define OPBOX_SHIM_LIMITS
#if defined(__has_include) && __has_include(<cuda/std/climits>)
#  include <cuda/std/climits>
#else
#  define CHAR_BIT 8
#  define SCHAR_MIN (-128)
#  define SCHAR_MAX 127
#  define UCHAR_MAX 255
#  define CHAR_MIN SCHAR_MIN
#  define CHAR_MAX SCHAR_MAX
#  define SHRT_MIN (-SHRT_MAX - 1)
#  define SHRT_MAX 0x7fff
#  define USHRT_MAX 0xffff
#  define INT_MIN (-INT_MAX - 1)
#  define INT_MAX 0x7fffffff
#  define UINT_MAX 0xffffffff
#  define LONG_MIN (-LONG_MAX - 1)
#  define LONG_MAX 0x7fffffffffffffffL
#  define ULONG_MAX 0xffffffffffffffffUL
#  define LLONG_MIN (-LLONG_MAX - 1)
#  define LLONG_MAX 0x7fffffffffffffffLL
#  define ULLONG_MAX 0xffffffffffffffffULL
#endif
#endif
"#;

/// Always opbox's own: CCCL's `<cuda/std/cfloat>` is this header under NVRTC (it includes
/// `<float.h>`), so forwarding would define nothing.
const FLOAT: &str = r#"#ifndef OPBOX_SHIM_FLOAT
#define OPBOX_SHIM_FLOAT
#  define FLT_RADIX 2
#  define FLT_MANT_DIG 24
#  define DBL_MANT_DIG 53
#  define FLT_DIG 6
#  define DBL_DIG 15
#  define FLT_MIN_EXP (-125)
#  define DBL_MIN_EXP (-1021)
#  define FLT_MAX_EXP 128
#  define DBL_MAX_EXP 1024
#  define FLT_MAX 3.40282347e+38F
#  define DBL_MAX 1.7976931348623157e+308
#  define FLT_MIN 1.17549435e-38F
#  define DBL_MIN 2.2250738585072014e-308
#  define FLT_EPSILON 1.19209290e-7F
#  define DBL_EPSILON 2.2204460492503131e-16
#  define FLT_TRUE_MIN 1.40129846e-45F
#  define DBL_TRUE_MIN 4.9406564584124654e-324
#endif
"#;

/// `size_t` and `ptrdiff_t` are NVRTC builtins; `NULL` and `offsetof` are not.
const STDDEF: &str = r#"#ifndef OPBOX_SHIM_STDDEF
#define OPBOX_SHIM_STDDEF
#if defined(__has_include) && __has_include(<cuda/std/cstddef>)
#  include <cuda/std/cstddef>
#endif
#ifndef NULL
#  define NULL 0
#endif
#ifndef offsetof
#  define offsetof(type, member) ((size_t)&reinterpret_cast<const volatile char&>((((type*)0)->member)))
#endif
typedef decltype(nullptr) nullptr_t;
namespace std { using ::size_t; using ::ptrdiff_t; using ::nullptr_t; }
#endif
"#;

/// NVRTC declares the math functions itself (`sqrtf`, `fminf`, `isnan`, ...); the macros are
/// missing. With CCCL they are CCCL's NVRTC spelling, token for token, so a later
/// `<cuda/std/cmath>` redefines them identically instead of warning.
const MATH: &str = r#"#ifndef OPBOX_SHIM_MATH
#define OPBOX_SHIM_MATH
#if defined(__has_include) && __has_include(<cuda/std/limits>)
#  include <cuda/std/limits>
#  define INFINITY _CUDA_VSTD::numeric_limits<float>::infinity()
#  define NAN      _CUDA_VSTD::numeric_limits<float>::quiet_NaN()
#else
#  define INFINITY (1.0f / 0.0f)
#  define NAN (0.0f / 0.0f)
#endif
#define HUGE_VALF INFINITY
#define HUGE_VAL ((double)INFINITY)
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
"#;

/// `<cmath>` also names NVRTC's math functions in `std` (the ones NVRTC declares).
const CMATH: &str = r#"#include <math.h>
#ifndef OPBOX_SHIM_CMATH
#define OPBOX_SHIM_CMATH
namespace std {
using ::abs; using ::fabs; using ::fmod; using ::remainder; using ::fma; using ::fmax; using ::fmin;
using ::fdim; using ::exp; using ::exp2; using ::expm1; using ::log; using ::log10; using ::log2;
using ::log1p; using ::pow; using ::sqrt; using ::cbrt; using ::hypot; using ::sin; using ::cos;
using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2; using ::sinh; using ::cosh;
using ::tanh; using ::asinh; using ::acosh; using ::atanh; using ::erf; using ::erfc; using ::tgamma;
using ::lgamma; using ::ceil; using ::floor; using ::trunc; using ::round; using ::lround;
using ::llround; using ::nearbyint; using ::rint; using ::lrint; using ::llrint; using ::frexp;
using ::ldexp; using ::modf; using ::scalbn; using ::scalbln; using ::ilogb; using ::logb;
using ::nextafter; using ::copysign; using ::isfinite; using ::isinf; using ::isnan; using ::signbit;
using ::min; using ::max;
}
#endif
"#;

/// NVRTC defines `assert` once, before any source; a C `<assert.h>` redefines it on every
/// inclusion, so `NDEBUG` set in between is honoured.
const ASSERT: &str = r#"#undef assert
#ifdef NDEBUG
#  define assert(e) (static_cast<void>(0))
#else
#  define assert(e) ((e) ? static_cast<void>(0) : __assertfail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif
"#;

/// `printf` is an NVRTC builtin; the header only has to exist.
const STDIO: &str = "/* opbox: printf is built into NVRTC */\n";

const CUB: &str = r#"#ifndef OPBOX_SHIM_CUB
#define OPBOX_SHIM_CUB
#if defined(__has_include) && __has_include(<cub/block/block_reduce.cuh>)
#  include <cub/block/block_adjacent_difference.cuh>
#  include <cub/block/block_discontinuity.cuh>
#  include <cub/block/block_exchange.cuh>
#  include <cub/block/block_histogram.cuh>
#  include <cub/block/block_load.cuh>
#  include <cub/block/block_merge_sort.cuh>
#  include <cub/block/block_radix_rank.cuh>
#  include <cub/block/block_radix_sort.cuh>
#  include <cub/block/block_reduce.cuh>
#  include <cub/block/block_scan.cuh>
#  include <cub/block/block_store.cuh>
#  include <cub/warp/warp_exchange.cuh>
#  include <cub/warp/warp_load.cuh>
#  include <cub/warp/warp_merge_sort.cuh>
#  include <cub/warp/warp_reduce.cuh>
#  include <cub/warp/warp_scan.cuh>
#  include <cub/warp/warp_store.cuh>
#  include <cub/thread/thread_load.cuh>
#  include <cub/thread/thread_operators.cuh>
#  include <cub/thread/thread_reduce.cuh>
#  include <cub/thread/thread_scan.cuh>
#  include <cub/thread/thread_store.cuh>
#  include <cub/iterator/arg_index_input_iterator.cuh>
#  include <cub/iterator/cache_modified_input_iterator.cuh>
#  include <cub/iterator/cache_modified_output_iterator.cuh>
#  include <cub/util_ptx.cuh>
#  include <cub/util_type.cuh>
#else
#  error "opbox: cub/cub.cuh needs CCCL's headers on the include path: run scripts/install-nvrtc (it installs nvidia-cuda-cccl beside NVRTC) or set CUDA_HOME to a CUDA toolkit"
#endif
#endif
"#;

/// Every header opbox names for NVRTC, C and C++ spellings both.
pub const NAMED_HEADERS: &[NamedHeader] = &[
    NamedHeader {
        name: "stdint.h",
        content: STDINT,
    },
    NamedHeader {
        name: "cstdint",
        content: CSTDINT,
    },
    NamedHeader {
        name: "limits.h",
        content: LIMITS,
    },
    NamedHeader {
        name: "climits",
        content: LIMITS,
    },
    NamedHeader {
        name: "float.h",
        content: FLOAT,
    },
    NamedHeader {
        name: "cfloat",
        content: FLOAT,
    },
    NamedHeader {
        name: "stddef.h",
        content: STDDEF,
    },
    NamedHeader {
        name: "cstddef",
        content: STDDEF,
    },
    NamedHeader {
        name: "math.h",
        content: MATH,
    },
    NamedHeader {
        name: "cmath",
        content: CMATH,
    },
    NamedHeader {
        name: "assert.h",
        content: ASSERT,
    },
    NamedHeader {
        name: "cassert",
        content: ASSERT,
    },
    NamedHeader {
        name: "stdio.h",
        content: STDIO,
    },
    NamedHeader {
        name: "cstdio",
        content: STDIO,
    },
    NamedHeader {
        name: "cub/cub.cuh",
        content: CUB,
    },
];

/// Whether `name` (as written in an `#include`) is one of [`NAMED_HEADERS`].
pub fn is_named_header(name: &str) -> bool {
    NAMED_HEADERS.iter().any(|h| h.name == name)
}
