// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):
// opbox: the #[derive(KernelArg)] twins go here
#define OPBOX_DSL_N0 float4
// source:
// #[kernel] local_arrays, generated from tests/dsl.rs
template <unsigned int K>
__global__ void local_arrays(const float* x__p, float* out__p, unsigned int n, unsigned int pick, unsigned int x__len, unsigned int out__len) {
  opbox_dsl::wait_for_primaries();
  const opbox_dsl::Slice<const float> x{reinterpret_cast<const float*>(x__p), x__len};
  const opbox_dsl::Slice<float> out{reinterpret_cast<float*>(out__p), out__len};
#line 393 "tests/dsl.rs"
  const unsigned int i = opbox_dsl::global_id_x();
#line 394 "tests/dsl.rs"
  if (opbox_dsl::lt(i, n)) {
#line 395 "tests/dsl.rs"
    const float v__v = 0.0f;
    float v[4u];
    #pragma unroll
    for (unsigned int opbox_k0 = 0u; opbox_k0 < 4u; ++opbox_k0) v[opbox_k0] = v__v;
#line 396 "tests/dsl.rs"
    {
      unsigned int opbox_i1 = 0u;
      const unsigned int opbox_e1 = 4u;
      #pragma unroll
      for (; opbox_i1 < opbox_e1; ++opbox_i1) {
        unsigned int j = opbox_i1;
#line 397 "tests/dsl.rs"
        v[j] = opbox_dsl::mul(x[i], opbox_dsl::cast<float>(opbox_dsl::add(j, 1u)));
      }
    }
#line 399 "tests/dsl.rs"
    OPBOX_DSL_N0 opbox_agg0{};
    opbox_agg0.x = opbox_dsl::flit{1.0, 1.0f};
    opbox_agg0.y = opbox_dsl::flit{2.0, 2.0f};
    opbox_agg0.z = opbox_dsl::flit{3.0, 3.0f};
    opbox_agg0.w = opbox_dsl::flit{4.0, 4.0f};
    const OPBOX_DSL_N0 w__v = opbox_agg0;
    OPBOX_DSL_N0 w[K];
    #pragma unroll
    for (unsigned int opbox_k2 = 0u; opbox_k2 < K; ++opbox_k2) w[opbox_k2] = w__v;
#line 405 "tests/dsl.rs"
    {
      unsigned int opbox_i3 = 0u;
      const unsigned int opbox_e3 = K;
      #pragma unroll
      for (; opbox_i3 < opbox_e3; ++opbox_i3) {
        unsigned int j_1 = opbox_i3;
#line 406 "tests/dsl.rs"
        w[j_1].x = opbox_dsl::add(w[j_1].x, v[opbox_dsl::rem(j_1, 4u)]);
#line 407 "tests/dsl.rs"
        w[j_1].w = opbox_dsl::mul(w[j_1].w, opbox_dsl::flit{0.5, 0.5f});
      }
    }
#line 409 "tests/dsl.rs"
    float acc = 0.0f;
#line 410 "tests/dsl.rs"
    {
      unsigned int opbox_i4 = 0u;
      const unsigned int opbox_e4 = K;
      #pragma unroll
      for (; opbox_i4 < opbox_e4; ++opbox_i4) {
        unsigned int j_2 = opbox_i4;
#line 411 "tests/dsl.rs"
        acc = opbox_dsl::add(acc, opbox_dsl::add(w[j_2].x, w[j_2].w));
      }
    }
#line 413 "tests/dsl.rs"
    out[i] = opbox_dsl::add(acc, v[pick]);
  }
}
