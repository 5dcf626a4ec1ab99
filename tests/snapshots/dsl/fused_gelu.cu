// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):
#include <stdint.h>
namespace opbox_ex {
__device__ inline float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978846f * (x + 0.044715f * x * x * x)));
}
}
// opbox: the #[derive(KernelArg)] twins go here
__device__ inline float opbox_builtin_gelu(float x) { return opbox_ex::gelu(x); }

#define OPBOX_DSL_C0 opbox_builtin_gelu
// source:
// #[kernel] fused_gelu, generated from examples/dsl.rs
__global__ void fused_gelu(const float* x__p, float* y__p, float a, float b, unsigned int n, unsigned int x__len, unsigned int y__len) {
  opbox_dsl::wait_for_primaries();
  const opbox_dsl::Slice<const float> x{reinterpret_cast<const float*>(x__p), x__len};
  const opbox_dsl::Slice<float> y{reinterpret_cast<float*>(y__p), y__len};
#line 67 "examples/dsl.rs"
  const unsigned int i = opbox_dsl::global_id_x();
#line 68 "examples/dsl.rs"
  if (opbox_dsl::lt(i, n)) {
#line 69 "examples/dsl.rs"
    y[i] = OPBOX_DSL_C0(opbox_dsl::add(opbox_dsl::mul(a, x[i]), b));
  }
}
