//! The C++ side of the `#[kernel]` DSL's semantics: small `__device__` helpers that make each
//! operator mean what it means in Rust. The DSL's emitted code calls these instead of C++'s own
//! operators wherever the two languages differ; the CPU build calls their Rust twins
//! (`opbox::dsl::ops`), so both sides compute the same bits.
//!
//! The rules (also in the README's DSL section):
//! - integer `+ - *`, unary `-` and `abs` wrap (two's complement), in debug and release alike;
//!   C++'s signed overflow is undefined, so the helpers compute in the unsigned twin type;
//! - integer `/` and `%` truncate toward zero, as both languages do; `x / 0`, `x % 0` are 0 and
//!   `MIN / -1` is `MIN` (`MIN % -1` is 0) on both sides, where Rust would panic;
//! - shifts mask the count to the bit width (`wrapping_shl`), any integer type on the right;
//! - `float as int` saturates and NaN becomes 0; `int as float` rounds to nearest even;
//! - `f16`/`bf16` arithmetic and math round through `f32` (as `half` does), and casts to and
//!   from them go through `f32`;
//! - float `min`/`max` return the other operand for one NaN and order `-0.0 < +0.0`; for two
//!   NaNs, f32 gives CUDA's canonical NaN (`0x7fffffff`) and f64 the right operand.
//!
//! It needs no header: the half types are opbox's own 16-bit storage, converted with PTX `cvt`.

use crate::types::ElemType;

/// The helpers, placed before any DSL code in a translation unit.
pub const DSL_PRELUDE: &str = r#"// opbox #[kernel] DSL helpers: Rust semantics for C++ operators.
namespace opbox_dsl {
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };
template <class A, class B> struct same { enum : bool { value = false }; };
template <class A> struct same<A, A> { enum : bool { value = true }; };
__device__ inline bool sign_bit(float a) { return (__float_as_uint(a) >> 31) != 0u; }
__device__ inline bool sign_bit(double a) { return __double_as_longlong(a) < 0; }
template <class T> struct info { enum : bool { is_int = false, is_half = false }; };
#define OPBOX_DSL_INT(T, U, S, B, MN, MX) template <> struct info<T> { \
  enum : bool { is_int = true, is_half = false, is_signed = S }; \
  enum : unsigned { bits = B }; typedef U uns; enum : T { min = MN, max = MX }; };
OPBOX_DSL_INT(signed char, unsigned char, true, 8, -128, 127)
OPBOX_DSL_INT(unsigned char, unsigned char, false, 8, 0, 255)
OPBOX_DSL_INT(int, unsigned int, true, 32, (-2147483647 - 1), 2147483647)
OPBOX_DSL_INT(unsigned int, unsigned int, false, 32, 0u, 4294967295u)
OPBOX_DSL_INT(long long, unsigned long long, true, 64, (-9223372036854775807LL - 1), 9223372036854775807LL)
OPBOX_DSL_INT(unsigned long long, unsigned long long, false, 64, 0ull, 18446744073709551615ull)
#undef OPBOX_DSL_INT
template <> struct info<f16> { enum : bool { is_int = false, is_half = true }; };
template <> struct info<bf16> { enum : bool { is_int = false, is_half = true }; };

__device__ inline float to_f32(f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
__device__ inline float to_f32(bf16 h) { return __int_as_float(((unsigned int)h.bits) << 16); }
template <class H> __device__ inline H from_f32(float f);
template <> __device__ inline f16 from_f32<f16>(float f) { f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h; }
// Round to nearest even, quieting NaNs, exactly as half::bf16::from_f32.
template <> __device__ inline bf16 from_f32<bf16>(float f) {
  unsigned int x = __float_as_uint(f); bf16 h;
  if ((x & 0x7fffffffu) > 0x7f800000u) { h.bits = (unsigned short)((x >> 16) | 0x40u); return h; }
  unsigned int up = ((x & 0x8000u) != 0u && (x & 0x17fffu) != 0u) ? 1u : 0u;
  h.bits = (unsigned short)((x >> 16) + up); return h;
}

// Literals whose type C++ cannot see (arguments of builtins, fields of native types): each
// converts to the type it meets, from its exact spelling in that type.
struct flit { double d; float f;
  __device__ operator double() const { return d; } __device__ operator float() const { return f; }
  __device__ operator f16() const { return from_f32<f16>(f); } __device__ operator bf16() const { return from_f32<bf16>(f); } };

struct ilit { unsigned long long v;
  template <class T> __device__ operator T() const { return (T)v; } };
__device__ inline flit neg(flit a) { flit r = { -a.d, -a.f }; return r; }
__device__ inline ilit neg(ilit a) { ilit r = { 0ull - a.v }; return r; }

template <class To, class From> __device__ inline To cast(From v) {
  if constexpr (info<From>::is_half) { return cast<To>(to_f32(v)); }
  else if constexpr (info<To>::is_half) { return from_f32<To>(cast<float>(v)); }
  else if constexpr (info<To>::is_int && !info<From>::is_int && !same<From, bool>::value) {
    if (v != v) return (To)0;
    if (v <= (From)info<To>::min) return info<To>::min;
    if (v >= (From)info<To>::max) return info<To>::max;
    return (To)v;
  } else { return (To)v; }
}

#define OPBOX_DSL_HALF_BINOP(name, op) \
  template <class T> __device__ inline T name(T a, T b) { \
    if constexpr (info<T>::is_half) { return from_f32<T>(to_f32(a) op to_f32(b)); } \
    else if constexpr (info<T>::is_int) { typedef typename info<T>::uns U; return (T)(U)((U)a op (U)b); } \
    else { return a op b; } }
OPBOX_DSL_HALF_BINOP(add, +)
OPBOX_DSL_HALF_BINOP(sub, -)
OPBOX_DSL_HALF_BINOP(mul, *)
#undef OPBOX_DSL_HALF_BINOP
template <class T> __device__ inline T div(T a, T b) {
  if constexpr (info<T>::is_half) { return from_f32<T>(to_f32(a) / to_f32(b)); }
  else if constexpr (info<T>::is_int) {
    if (b == (T)0) return (T)0;
    if constexpr (info<T>::is_signed) { if (a == info<T>::min && b == (T)-1) return a; }
    return (T)(a / b);
  } else { return a / b; }
}
template <class T> __device__ inline T rem(T a, T b) {
  if constexpr (info<T>::is_half) { return from_f32<T>(fmodf(to_f32(a), to_f32(b))); }
  else if constexpr (info<T>::is_int) {
    if (b == (T)0) return (T)0;
    if constexpr (info<T>::is_signed) { if (b == (T)-1) return (T)0; }
    return (T)(a % b);
  } else if constexpr (same<T, float>::value) { return fmodf(a, b); }
  else { return fmod(a, b); }
}
template <class T> __device__ inline T neg(T a) {
  if constexpr (info<T>::is_half) { T r = a; r.bits ^= 0x8000u; return r; }
  else if constexpr (info<T>::is_int) { typedef typename info<T>::uns U; return (T)(U)((U)0 - (U)a); }
  else { return -a; }
}
template <class T> __device__ inline T bit_and(T a, T b) { return (T)(a & b); }
template <class T> __device__ inline T bit_or(T a, T b) { return (T)(a | b); }
template <class T> __device__ inline T bit_xor(T a, T b) { return (T)(a ^ b); }
template <class T> __device__ inline T bit_not(T a) { if constexpr (same<T, bool>::value) { return !a; } else { return (T)~a; } }
template <class T, class R> __device__ inline T shl(T a, R b) {
  typedef typename info<T>::uns U; unsigned s = ((unsigned)(unsigned long long)b) & (info<T>::bits - 1u);
  return (T)(U)((U)a << s);
}
template <class T, class R> __device__ inline T shr(T a, R b) {
  unsigned s = ((unsigned)(unsigned long long)b) & (info<T>::bits - 1u);
  return (T)(a >> s);
}
#define OPBOX_DSL_CMP(name, op) template <class T> __device__ inline bool name(T a, T b) { \
    if constexpr (info<T>::is_half) { return to_f32(a) op to_f32(b); } else { return a op b; } }
OPBOX_DSL_CMP(eq, ==) OPBOX_DSL_CMP(ne, !=) OPBOX_DSL_CMP(lt, <) OPBOX_DSL_CMP(le, <=) OPBOX_DSL_CMP(gt, >) OPBOX_DSL_CMP(ge, >=)
#undef OPBOX_DSL_CMP
// Overloads for a literal operand whose type only the other side knows.
#define OPBOX_DSL_LIT(name, L) template <class T> __device__ inline auto name(T a, L b) { return name(a, (T)b); } \
  template <class T> __device__ inline auto name(L a, T b) { return name((T)a, b); }
#define OPBOX_DSL_LITS(L) OPBOX_DSL_LIT(add, L) OPBOX_DSL_LIT(sub, L) OPBOX_DSL_LIT(mul, L) OPBOX_DSL_LIT(div, L) \
  OPBOX_DSL_LIT(rem, L) OPBOX_DSL_LIT(eq, L) OPBOX_DSL_LIT(ne, L) OPBOX_DSL_LIT(lt, L) OPBOX_DSL_LIT(le, L) \
  OPBOX_DSL_LIT(gt, L) OPBOX_DSL_LIT(ge, L)
OPBOX_DSL_LITS(flit) OPBOX_DSL_LITS(ilit)
OPBOX_DSL_LIT(bit_and, ilit) OPBOX_DSL_LIT(bit_or, ilit) OPBOX_DSL_LIT(bit_xor, ilit)
#undef OPBOX_DSL_LITS
#undef OPBOX_DSL_LIT

// Numeric methods. Floats: the same operation as Rust's std, or (min, max) spelled out.
template <class T> __device__ inline T abs(T a) {
  if constexpr (info<T>::is_half) { T r = a; r.bits &= 0x7fffu; return r; }
  else if constexpr (info<T>::is_int) { if constexpr (info<T>::is_signed) { return a < (T)0 ? neg(a) : a; } else { return a; } }
  else { return a < (T)0 ? -a : (a == (T)0 ? (T)0 : a); }
}
// f32: the hardware's max.f32/min.f32 are exactly the rule (-0.0 < +0.0, the other operand for
// one NaN, the canonical NaN for two, which the CPU build returns too); a comparison chain cost
// the warp-a-row softmax a fifth of its bandwidth on an H200.
template <class T> __device__ inline T max(T a, T b) {
  if constexpr (info<T>::is_half) { return from_f32<T>(max(to_f32(a), to_f32(b))); }
  else if constexpr (info<T>::is_int) { return a > b ? a : b; }
  else if constexpr (same<T, float>::value) { return fmaxf(a, b); }
  else { if (a != a) return b; if (b != b) return a; if (a > b) return a; if (b > a) return b; return sign_bit(a) ? b : a; }
}
template <class T> __device__ inline T min(T a, T b) {
  if constexpr (info<T>::is_half) { return from_f32<T>(min(to_f32(a), to_f32(b))); }
  else if constexpr (info<T>::is_int) { return a < b ? a : b; }
  else if constexpr (same<T, float>::value) { return fminf(a, b); }
  else { if (a != a) return b; if (b != b) return a; if (a < b) return a; if (b < a) return b; return sign_bit(a) ? a : b; }
}
template <class T> __device__ inline T clamp(T x, T lo, T hi) {
  if constexpr (info<T>::is_half) { return from_f32<T>(clamp(to_f32(x), to_f32(lo), to_f32(hi))); }
  else { return x < lo ? lo : (x > hi ? hi : x); }
}
__device__ inline float mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double mul_add(double a, double b, double c) { return fma(a, b, c); }
template <class H> __device__ inline H mul_add(H a, H b, H c) { return from_f32<H>(fmaf(to_f32(a), to_f32(b), to_f32(c))); }
__device__ inline float powf_(float a, float b) { return powf(a, b); }
__device__ inline double powf_(double a, double b) { return pow(a, b); }
template <class H> __device__ inline H powf_(H a, H b) { return from_f32<H>(powf(to_f32(a), to_f32(b))); }
#define OPBOX_DSL_UNARY(name, f32fn, f64fn) \
  __device__ inline float name(float a) { return f32fn(a); } \
  __device__ inline double name(double a) { return f64fn(a); } \
  template <class H> __device__ inline H name(H a) { return from_f32<H>(f32fn(to_f32(a))); }
OPBOX_DSL_UNARY(sqrt_, sqrtf, sqrt) OPBOX_DSL_UNARY(exp_, expf, exp) OPBOX_DSL_UNARY(exp2_, exp2f, exp2)
OPBOX_DSL_UNARY(ln_, logf, log) OPBOX_DSL_UNARY(log2_, log2f, log2) OPBOX_DSL_UNARY(log10_, log10f, log10)
OPBOX_DSL_UNARY(tanh_, tanhf, tanh) OPBOX_DSL_UNARY(sin_, sinf, sin) OPBOX_DSL_UNARY(cos_, cosf, cos)
OPBOX_DSL_UNARY(floor_, floorf, floor) OPBOX_DSL_UNARY(ceil_, ceilf, ceil) OPBOX_DSL_UNARY(round_, roundf, round)
OPBOX_DSL_UNARY(trunc_, truncf, trunc)
#undef OPBOX_DSL_UNARY
template <class T> __device__ inline T recip(T a) { if constexpr (info<T>::is_half) { return from_f32<T>(1.0f / to_f32(a)); } else { return (T)1 / a; } }
template <class T> __device__ inline bool is_nan(T a) { if constexpr (info<T>::is_half) { float f = to_f32(a); return f != f; } else { return a != a; } }

// A slice parameter with its element count: what `x[i]` and `x.len()` read. Debug builds
// (OPBOX_DSL_BOUNDS) trap on an index outside it; the launch then fails at the next synchronize.
template <class I> __device__ inline bool in_bounds(I i, unsigned int len) {
  if constexpr (info<I>::is_signed) { if (i < (I)0) return false; }
  return (unsigned long long)i < (unsigned long long)len;
}
template <class T> struct Slice {
  T* ptr; unsigned int n;
  template <class I> __device__ T& operator[](I i) const {
#ifdef OPBOX_DSL_BOUNDS
    if (!in_bounds(i, n)) __trap();
#endif
    return ptr[i];
  }
  __device__ unsigned int len() const { return n; }
};

// Range loops, as Rust's iterators step: `a..b` (exclusive) and `.step_by(s)`; the next index
// is computed without overflowing past the end.
template <class T> __device__ inline T step_next(T i, T end, unsigned long long s) {
  typedef typename info<T>::uns U; U left = (U)((U)end - (U)i);
  if ((unsigned long long)left <= s) return end;
  return (T)(U)((U)i + (U)s);
}

// `a..=b` (with `.step_by(s)`): after yielding `i`, the next one, or the end.
template <class T> __device__ inline void step_incl(T& i, T end, unsigned long long s, bool& more) {
  typedef typename info<T>::uns U; U left = (U)((U)end - (U)i);
  if ((unsigned long long)left < s) { more = false; } else { i = (T)(U)((U)i + (U)s); }
}

#define OPBOX_DSL_XYZ(name, x, y, z) __device__ inline unsigned int name##_x() { return x; } \
  __device__ inline unsigned int name##_y() { return y; } __device__ inline unsigned int name##_z() { return z; }
OPBOX_DSL_XYZ(thread_id, threadIdx.x, threadIdx.y, threadIdx.z)
OPBOX_DSL_XYZ(block_id, blockIdx.x, blockIdx.y, blockIdx.z)
OPBOX_DSL_XYZ(block_dim, blockDim.x, blockDim.y, blockDim.z)
OPBOX_DSL_XYZ(grid_dim, gridDim.x, gridDim.y, gridDim.z)
OPBOX_DSL_XYZ(global_id, blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
  blockIdx.z * blockDim.z + threadIdx.z)
#undef OPBOX_DSL_XYZ

// A kernel's first statement: under programmatic dependent launch (the edges a kernel graph
// gives a #[kernel] node) the grid may start before its predecessors finish, and waits here until
// they have, their writes visible. Launched any other way, it returns at once. (It does not also
// trigger its dependents early with griddepcontrol.launch_dependents: that took a graph chain
// from 0.69 to 0.62 µs a kernel, but cost every eager launch of many short blocks, the one-f32
// axpy 27% of its bandwidth on an H200.)
__device__ inline void wait_for_primaries() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
}  // namespace opbox_dsl
"#;

/// Helpers only some kernels call, each in its own reopening of the namespace: a kernel's
/// preamble takes a section when its code (or a callee's) calls one of the section's helpers,
/// so a kernel pays NVRTC's parse only for what it uses (issue 12's compile-time goal).
/// `(the calls that pull it in, as the emitted C++ spells them, the C++)`; the atomics' and warp
/// fns' names come from their tables.
pub fn dsl_sections() -> [(Vec<String>, &'static str); 3] {
    let call = |name: &str| format!("opbox_dsl::{name}(");
    [
        (["load4", "store4"].map(call).to_vec(), DSL_VEC4),
        (
            DSL_ATOMICS.iter().map(|a| call(a.rust)).collect(),
            DSL_ATOMICS_CPP,
        ),
        (
            DSL_WARP_FNS.iter().map(|f| call(f.rust)).collect(),
            DSL_WARP,
        ),
    ]
}

const DSL_VEC4: &str = r#"namespace opbox_dsl {
// `x.load4(i)` / `y.store4(i, v)`: 16 bytes as one access, elements 4i..4i+3 of an f32 slice as
// a float4, or element i of a slice of a 16-byte native type (its bytes through an int4, so
// the type's own alignment, often 4, does not split the access). Every slice they reach is
// 16-byte aligned: a kernel parameter's launch checks it (`VectorParam`), and shared arrays are
// declared `__align__(16)`; #[device] fns, which take slices the launch does not see, cannot
// call them. Debug builds trap on a vector past the end.
template <class T> struct unconst { typedef T type; };
template <class T> struct unconst<const T> { typedef T type; };
// How many 16-byte vectors `s` holds: its elements for a 16-byte type, a quarter of them for f32.
template <class T> __device__ inline unsigned int vectors(const Slice<T>& s) {
  return sizeof(T) == 16 ? s.n : s.n / 4u;
}
template <class T, class I> __device__ inline auto load4(const Slice<T>& s, I i) {
#ifdef OPBOX_DSL_BOUNDS
  if (!in_bounds(i, vectors(s))) __trap();
#endif
  if constexpr (sizeof(T) == 16) {
    const int4 bits = *reinterpret_cast<const int4*>(s.ptr + i);
    typename unconst<T>::type v;
    memcpy(&v, &bits, 16);
    return v;
  } else {
    return *reinterpret_cast<const float4*>(s.ptr + 4ull * (unsigned long long)i);
  }
}
template <class T, class I, class V> __device__ inline void store4(const Slice<T>& s, I i, const V& v) {
#ifdef OPBOX_DSL_BOUNDS
  if (!in_bounds(i, vectors(s))) __trap();
#endif
  if constexpr (sizeof(T) == 16) {
    const T value = v;
    int4 bits;
    memcpy(&bits, &value, 16);
    *reinterpret_cast<int4*>(s.ptr + i) = bits;
  } else {
    *reinterpret_cast<float4*>(s.ptr + 4ull * (unsigned long long)i) = make_float4(v.x, v.y, v.z, v.w);
  }
}
}  // namespace opbox_dsl
"#;

const DSL_ATOMICS_CPP: &str = r#"namespace opbox_dsl {
// Atomics on a slice element, as CUDA defines them (relaxed, device scope), each returning the
// old value. 64-bit signed add, exchange and compare-exchange go through CUDA's unsigned long
// long forms: two's complement gives the same bits.
template <class T, class I> __device__ inline T* atomic_at(const Slice<T>& s, I i) {
#ifdef OPBOX_DSL_BOUNDS
  if (!in_bounds(i, s.n)) __trap();
#endif
  return s.ptr + i;
}
template <class T> struct atomic_word { typedef T type; };
template <> struct atomic_word<long long> { typedef unsigned long long type; };
template <class T, class I> __device__ inline T atomic_add(const Slice<T>& s, I i, T v) {
  typedef typename atomic_word<T>::type W;
  return (T)atomicAdd(reinterpret_cast<W*>(atomic_at(s, i)), (W)v);
}
template <class T, class I> __device__ inline T atomic_min(const Slice<T>& s, I i, T v) { return atomicMin(atomic_at(s, i), v); }
template <class T, class I> __device__ inline T atomic_max(const Slice<T>& s, I i, T v) { return atomicMax(atomic_at(s, i), v); }
// Exchange and compare-exchange are PTX's own `atom` on the value's bits (relaxed, device scope,
// a generic address: what atomicExch and atomicCAS compile to). Resolving CUDA's overloads of
// those instantiates a class with a static member (`__nv_atomic_triv_cp_helper<T>::__val`),
// which put a device global into every module that used them, and loading a module with
// globals costs its first launch a device allocation and a copy.
__device__ inline unsigned int atom_bits(int v) { return (unsigned int)v; }
__device__ inline unsigned int atom_bits(unsigned int v) { return v; }
__device__ inline unsigned int atom_bits(float v) { return __float_as_uint(v); }
__device__ inline unsigned long long atom_bits(long long v) { return (unsigned long long)v; }
__device__ inline unsigned long long atom_bits(unsigned long long v) { return v; }
template <class T> __device__ inline T atom_value(unsigned int w) { return (T)w; }
template <> __device__ inline float atom_value<float>(unsigned int w) { return __uint_as_float(w); }
template <class T> __device__ inline T atom_value(unsigned long long w) { return (T)w; }
__device__ inline unsigned int atom_exch(void* p, unsigned int v) {
  unsigned int old;
  asm volatile("atom.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ inline unsigned long long atom_exch(void* p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.exch.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
__device__ inline unsigned int atom_cas(void* p, unsigned int compare, unsigned int v) {
  unsigned int old;
  asm volatile("atom.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(p), "r"(compare), "r"(v) : "memory");
  return old;
}
__device__ inline unsigned long long atom_cas(void* p, unsigned long long compare, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.cas.b64 %0, [%1], %2, %3;" : "=l"(old) : "l"(p), "l"(compare), "l"(v) : "memory");
  return old;
}
template <class T, class I> __device__ inline T atomic_exch(const Slice<T>& s, I i, T v) {
  return atom_value<T>(atom_exch(atomic_at(s, i), atom_bits(v)));
}
template <class T, class I> __device__ inline T atomic_cas(const Slice<T>& s, I i, T compare, T v) {
  return atom_value<T>(atom_cas(atomic_at(s, i), atom_bits(compare), atom_bits(v)));
}
}  // namespace opbox_dsl
"#;

const DSL_WARP: &str = r#"namespace opbox_dsl {
// Warp operations over the full mask (every lane of the warp takes part), the CPU build's
// emulation (`opbox::dsl` warp fns) computes the same; the reductions are a butterfly of
// shfl_xor with the DSL's own add and max, so every lane gets the same bits on both sides.
template <class T> __device__ inline T shfl_down(T v, unsigned int d) { return __shfl_down_sync(0xffffffffu, v, d); }
template <class T> __device__ inline T shfl_xor(T v, unsigned int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
template <class T> __device__ inline T shfl_idx(T v, unsigned int l) { return __shfl_sync(0xffffffffu, v, l); }
__device__ inline unsigned int ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
__device__ inline bool any(bool p) { return __any_sync(0xffffffffu, p) != 0; }
__device__ inline bool all(bool p) { return __all_sync(0xffffffffu, p) != 0; }
__device__ inline unsigned int lane_id() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
}
template <class T> __device__ inline T warp_reduce_sum(T v) {
  for (unsigned int o = 16; o > 0; o >>= 1) v = add(v, shfl_xor(v, o));
  return v;
}
template <class T> __device__ inline T warp_reduce_max(T v) {
  for (unsigned int o = 16; o > 0; o >>= 1) v = max(v, shfl_xor(v, o));
  return v;
}
}  // namespace opbox_dsl
"#;

/// The DSL's thread-index functions: `(Rust name, what it is)`. The macro accepts exactly these
/// calls as indices, and the CPU build and the C++ helpers define each of them.
pub const THREAD_INDEX_FNS: [&str; 15] = [
    "thread_id_x",
    "thread_id_y",
    "thread_id_z",
    "block_id_x",
    "block_id_y",
    "block_id_z",
    "block_dim_x",
    "block_dim_y",
    "block_dim_z",
    "grid_dim_x",
    "grid_dim_y",
    "grid_dim_z",
    "global_id_x",
    "global_id_y",
    "global_id_z",
];

/// An atomic method of a written slice (`y.atomic_add(i, v)`): its Rust name (also the C++
/// helper's in `opbox_dsl`), the values it takes after the index, and the element types CUDA
/// defines it for. The one list the macro's check, its messages and the CPU build's traits follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DslAtomic {
    pub rust: &'static str,
    pub values: usize,
    pub types: &'static [ElemType],
}

const ATOMIC_INTS: &[ElemType] = &[ElemType::I32, ElemType::U32, ElemType::I64, ElemType::U64];

pub const DSL_ATOMICS: &[DslAtomic] = &[
    DslAtomic {
        rust: "atomic_add",
        values: 1,
        types: &[
            ElemType::I32,
            ElemType::U32,
            ElemType::I64,
            ElemType::U64,
            ElemType::F32,
            ElemType::F64,
        ],
    },
    DslAtomic {
        rust: "atomic_min",
        values: 1,
        types: ATOMIC_INTS,
    },
    DslAtomic {
        rust: "atomic_max",
        values: 1,
        types: ATOMIC_INTS,
    },
    DslAtomic {
        rust: "atomic_exch",
        values: 1,
        types: &[
            ElemType::I32,
            ElemType::U32,
            ElemType::I64,
            ElemType::U64,
            ElemType::F32,
        ],
    },
    DslAtomic {
        rust: "atomic_cas",
        values: 2,
        types: ATOMIC_INTS,
    },
];

/// The atomic methods' names, for messages: `atomic_add, atomic_min, ...`.
pub fn dsl_atomic_list() -> String {
    let names: Vec<&str> = DSL_ATOMICS.iter().map(|a| a.rust).collect();
    names.join(", ")
}

/// The atomic method named `name`, if there is one.
pub fn dsl_atomic(name: &str) -> Option<&'static DslAtomic> {
    DSL_ATOMICS.iter().find(|a| a.rust == name)
}

/// What a warp fn returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpReturns {
    /// The first argument's type.
    Value,
    U32,
    Bool,
}

/// A warp fn of the DSL (`shfl_down(v, 1)`): its name (also its C++ helper's in `opbox_dsl` and
/// the CPU build's method), its argument count and what it returns. The one list the macro's
/// lowering, its CPU rewrite and the C++ helpers follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DslWarpFn {
    pub rust: &'static str,
    pub args: usize,
    pub returns: WarpReturns,
}

const fn w(rust: &'static str, args: usize, returns: WarpReturns) -> DslWarpFn {
    DslWarpFn {
        rust,
        args,
        returns,
    }
}

pub const DSL_WARP_FNS: &[DslWarpFn] = &[
    w("shfl_down", 2, WarpReturns::Value),
    w("shfl_xor", 2, WarpReturns::Value),
    w("shfl_idx", 2, WarpReturns::Value),
    w("ballot", 1, WarpReturns::U32),
    w("any", 1, WarpReturns::Bool),
    w("all", 1, WarpReturns::Bool),
    w("warp_reduce_sum", 1, WarpReturns::Value),
    w("warp_reduce_max", 1, WarpReturns::Value),
    w("lane_id", 0, WarpReturns::U32),
];

/// The element types a warp shuffle or reduction moves (CUDA's `__shfl_*_sync` overloads).
pub const WARP_VALUE_TYPES: &[ElemType] = &[
    ElemType::I32,
    ElemType::U32,
    ElemType::I64,
    ElemType::U64,
    ElemType::F32,
    ElemType::F64,
];

/// The warp fn named `name`, if there is one.
pub fn dsl_warp_fn(name: &str) -> Option<&'static DslWarpFn> {
    DSL_WARP_FNS.iter().find(|f| f.rust == name)
}

/// How a numeric method of the DSL maps to C++: `(Rust method, C++ helper in opbox_dsl, argument
/// count besides the receiver, which types take it)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DslMethod {
    pub rust: &'static str,
    pub cpp: &'static str,
    pub args: usize,
    pub on: MethodOn,
    /// The result is `bool` rather than the receiver's type.
    pub returns_bool: bool,
}

/// The receiver types a [`DslMethod`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodOn {
    /// Integers and floats.
    Numbers,
    /// Floats only (`f32`, `f64`, `f16`, `bf16`).
    Floats,
}

const fn m(rust: &'static str, cpp: &'static str, args: usize, on: MethodOn) -> DslMethod {
    DslMethod {
        rust,
        cpp,
        args,
        on,
        returns_bool: false,
    }
}

/// Every numeric method the DSL accepts (besides a slice's `len()`): the one list the macro's
/// check, its error message and the C++ emitter read; the CPU build's traits implement each.
pub const DSL_METHODS: &[DslMethod] = &[
    m("abs", "abs", 0, MethodOn::Numbers),
    m("min", "min", 1, MethodOn::Numbers),
    m("max", "max", 1, MethodOn::Numbers),
    m("clamp", "clamp", 2, MethodOn::Numbers),
    m("sqrt", "sqrt_", 0, MethodOn::Floats),
    m("exp", "exp_", 0, MethodOn::Floats),
    m("exp2", "exp2_", 0, MethodOn::Floats),
    m("ln", "ln_", 0, MethodOn::Floats),
    m("log2", "log2_", 0, MethodOn::Floats),
    m("log10", "log10_", 0, MethodOn::Floats),
    m("tanh", "tanh_", 0, MethodOn::Floats),
    m("sin", "sin_", 0, MethodOn::Floats),
    m("cos", "cos_", 0, MethodOn::Floats),
    m("powf", "powf_", 1, MethodOn::Floats),
    m("mul_add", "mul_add", 2, MethodOn::Floats),
    m("floor", "floor_", 0, MethodOn::Floats),
    m("ceil", "ceil_", 0, MethodOn::Floats),
    m("round", "round_", 0, MethodOn::Floats),
    m("trunc", "trunc_", 0, MethodOn::Floats),
    m("recip", "recip", 0, MethodOn::Floats),
    DslMethod {
        rust: "is_nan",
        cpp: "is_nan",
        args: 0,
        on: MethodOn::Floats,
        returns_bool: true,
    },
];

/// The method named `rust`, if the DSL has it.
pub fn dsl_method(rust: &str) -> Option<&'static DslMethod> {
    DSL_METHODS.iter().find(|m| m.rust == rust)
}

/// The methods' names, for messages: `abs, min, max, ...`.
pub fn dsl_method_list() -> String {
    let names: Vec<&str> = DSL_METHODS.iter().map(|m| m.rust).collect();
    names.join(", ")
}

/// Methods whose result is bit-exact on both sides (the rest, transcendental functions, are
/// each side's correctly-rounded-or-close library function and may differ in the last bits).
pub fn is_exact_method(rust: &str) -> bool {
    !matches!(
        rust,
        "exp" | "exp2" | "ln" | "log2" | "log10" | "tanh" | "sin" | "cos" | "powf"
    )
}
