//! opbox's own header, the first thing in every translation unit. It must compile under a bare
//! NVRTC (the PyPI wheel ships no headers at all: no `<cstdint>`, no `<type_traits>`, no
//! `<cuda_fp16.h>`), so it defines what it needs itself and only includes a system header when
//! `__has_include` finds it.

/// Fixed-width integers through opbox's `<stdint.h>` (see `host_headers`): CCCL's own where its
/// headers are installed, identical typedefs where not, so a kernel that includes a CCCL header
/// after the prelude redeclares nothing differently.
const STDINT: &str = "#include <stdint.h>\n#define OPBOX_HAVE_STDINT 1\n";

/// The type machinery of the signature check. `abi` maps `long` to `long long` (and the
/// unsigned pair) where both are 64 bits, so `long` and `size_t` parameters match an `i64`/`u64`
/// declaration; it leaves every other difference, including const on a pointee, for the
/// comparison to catch.
const CHECK: &str = r#"namespace opbox_detail {
template <class A, class B> struct is_same { enum : bool { value = false }; };
template <class A> struct is_same<A, A> { enum : bool { value = true }; };
template <class T> struct abi { typedef T type; };
template <class T> struct abi<const T> { typedef const typename abi<T>::type type; };
template <class T> struct abi<volatile T> { typedef volatile typename abi<T>::type type; };
template <class T> struct abi<const volatile T> { typedef const volatile typename abi<T>::type type; };
template <class T> struct abi<T*> { typedef typename abi<T>::type* type; };
template <bool LongIs64> struct abi_long { typedef long type; typedef unsigned long utype; };
template <> struct abi_long<true> { typedef long long type; typedef unsigned long long utype; };
template <> struct abi<long> { typedef abi_long<sizeof(long) == 8>::type type; };
template <> struct abi<unsigned long> { typedef abi_long<sizeof(long) == 8>::utype type; };
}  // namespace opbox_detail
"#;

/// A storage-only stand-in when <cuda_fp16.h> is not reachable: the signature check needs the
/// type to exist, not its arithmetic. With the CUDA headers on the include path the real one wins.
const HALF: &str = r#"#if defined(__has_include) && !defined(__CUDA_FP16_H__)
#  if __has_include(<cuda_fp16.h>)
#    include <cuda_fp16.h>
#  endif
#endif
#ifndef __CUDA_FP16_H__
struct __align__(2) __half { unsigned short __x; };
#endif
"#;

const BF16: &str = r#"#if defined(__has_include) && !defined(__CUDA_BF16_H__)
#  if __has_include(<cuda_bf16.h>)
#    include <cuda_bf16.h>
#  endif
#endif
#ifndef __CUDA_BF16_H__
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
#endif
"#;

/// `<cuda_fp8.h>` includes the half and bfloat16 headers itself, so its stand-ins are only
/// written where it is missing.
const FP8: &str = r#"#if defined(__has_include) && !defined(__CUDA_FP8_H__)
#  if __has_include(<cuda_fp8.h>)
#    include <cuda_fp8.h>
#  endif
#endif
#ifndef __CUDA_FP8_H__
struct __align__(1) __nv_fp8_e4m3 { unsigned char __x; };
struct __align__(1) __nv_fp8_e5m2 { unsigned char __x; };
#endif
"#;

/// Which of the optional parts of the prelude a unit needs: each CUDA header costs NVRTC
/// 15-25 ms, so it is included only when a declaration uses its type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreludeParts {
    pub f16: bool,
    pub bf16: bool,
    pub fp8: bool,
    /// `<stdint.h>`, for units with C++ a user wrote. The code of a `#[kernel]` spells its
    /// types itself, and under a CUDA toolkit the header pulls in CCCL's `<cuda/std/cstdint>`,
    /// the largest part of a small kernel's NVRTC time.
    pub stdint: bool,
}

/// The prelude for a unit.
pub fn prelude(parts: PreludeParts) -> String {
    let mut s = String::with_capacity(STDINT.len() + CHECK.len() + HALF.len() + BF16.len());
    if parts.stdint {
        s.push_str(STDINT);
    }
    s.push_str(CHECK);
    s.push_str(super::signature_check::CHECK_TEMPLATES);
    if parts.f16 {
        s.push_str(HALF);
    }
    if parts.bf16 {
        s.push_str(BF16);
    }
    if parts.fp8 {
        s.push_str(FP8);
    }
    s
}
