// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):
namespace opbox_dsl {
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
// opbox: the #[derive(KernelArg)] twins go here
#define OPBOX_DSL_N0 float4
// source:
// #[kernel] axpy4, generated from examples/dsl.rs
__global__ void axpy4(const float* x__p, const float* y__p, float* out__p, float a, unsigned int n, unsigned int x__len, unsigned int y__len, unsigned int out__len) {
  opbox_dsl::wait_for_primaries();
  const opbox_dsl::Slice<const float> x{reinterpret_cast<const float*>(x__p), x__len};
  const opbox_dsl::Slice<const float> y{reinterpret_cast<const float*>(y__p), y__len};
  const opbox_dsl::Slice<float> out{reinterpret_cast<float*>(out__p), out__len};
#line 33 "examples/dsl.rs"
  const unsigned int i = opbox_dsl::global_id_x();
#line 34 "examples/dsl.rs"
  if (opbox_dsl::lt(i, opbox_dsl::div(n, 4u))) {
#line 35 "examples/dsl.rs"
    const auto p = opbox_dsl::load4(x, i);
#line 36 "examples/dsl.rs"
    const auto q = opbox_dsl::load4(y, i);
#line 37 "examples/dsl.rs"
    OPBOX_DSL_N0 opbox_agg0{};
    opbox_agg0.x = opbox_dsl::add(opbox_dsl::mul(a, p.x), q.x);
    opbox_agg0.y = opbox_dsl::add(opbox_dsl::mul(a, p.y), q.y);
    opbox_agg0.z = opbox_dsl::add(opbox_dsl::mul(a, p.z), q.z);
    opbox_agg0.w = opbox_dsl::add(opbox_dsl::mul(a, p.w), q.w);
    const OPBOX_DSL_N0 r = opbox_agg0;
#line 43 "examples/dsl.rs"
    opbox_dsl::store4(out, i, r);
  } else {
#line 44 "examples/dsl.rs"
    if (opbox_dsl::eq(i, opbox_dsl::div(n, 4u))) {
#line 45 "examples/dsl.rs"
      {
        unsigned int opbox_i0 = opbox_dsl::mul(4u, i);
        const unsigned int opbox_e0 = n;
        for (; opbox_i0 < opbox_e0; ++opbox_i0) {
          unsigned int j = opbox_i0;
#line 46 "examples/dsl.rs"
          out[j] = opbox_dsl::add(opbox_dsl::mul(a, x[j]), y[j]);
        }
      }
    }
  }
}
