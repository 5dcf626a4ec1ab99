//! opbox's own header, the first thing in every translation unit. It must compile under a bare
//! NVRTC (the PyPI wheel ships no headers at all: no <cstdint>, no <type_traits>, no
//! <cuda_fp16.h>), so it defines what it needs itself and only includes a system header when
//! `__has_include` finds it.

/// Fixed-width integers, unless a real <stdint.h> is reachable. The fallbacks are the LP64 (Linux)
/// and LLP64 (Windows) spellings, so they agree with the host's own typedefs if both appear.
const STDINT: &str = r#"#if defined(__has_include)
#  if __has_include(<stdint.h>)
#    include <stdint.h>
#    define OPBOX_HAVE_STDINT 1
#  endif
#endif
#ifndef OPBOX_HAVE_STDINT
#define OPBOX_HAVE_STDINT 1
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
#  if defined(_WIN32)
typedef long long int64_t;
typedef unsigned long long uint64_t;
#  else
typedef long int64_t;
typedef unsigned long uint64_t;
#  endif
#endif
"#;

/// The type machinery of the signature check. `abi_sig` maps `long` to `long long` (and the
/// unsigned pair) where both are 64 bits, so `int64_t` parameters match an `i64` declaration; it
/// leaves every other difference, including const on a pointee, for the comparison to catch.
const CHECK: &str = r#"namespace opbox_detail {
template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };
template <class T> struct abi { typedef T type; };
template <class T> struct abi<const T> { typedef const typename abi<T>::type type; };
template <class T> struct abi<volatile T> { typedef volatile typename abi<T>::type type; };
template <class T> struct abi<const volatile T> { typedef const volatile typename abi<T>::type type; };
template <class T> struct abi<T*> { typedef typename abi<T>::type* type; };
template <bool LongIs64> struct abi_long { typedef long type; typedef unsigned long utype; };
template <> struct abi_long<true> { typedef long long type; typedef unsigned long long utype; };
template <> struct abi<long> { typedef abi_long<sizeof(long) == 8>::type type; };
template <> struct abi<unsigned long> { typedef abi_long<sizeof(long) == 8>::utype type; };
template <class F> struct abi_sig { typedef F type; };
template <class... A> struct abi_sig<void (*)(A...)> { typedef void (*type)(typename abi<A>::type...); };
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

/// The prelude for a kernel; the half and bfloat16 parts only when its declaration uses them, as
/// those headers cost NVRTC 15-25 ms.
pub fn prelude(needs_f16: bool, needs_bf16: bool) -> String {
    let mut s = String::with_capacity(STDINT.len() + CHECK.len() + HALF.len() + BF16.len());
    s.push_str(STDINT);
    s.push_str(CHECK);
    if needs_f16 {
        s.push_str(HALF);
    }
    if needs_bf16 {
        s.push_str(BF16);
    }
    s
}
