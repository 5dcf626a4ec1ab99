// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):
// opbox: the #[derive(KernelArg)] twins go here
// source:
// #[kernel] axpy, generated from examples/dsl.rs
__global__ void axpy(const float* x__p, float* y__p, float a, unsigned int n, unsigned int x__len, unsigned int y__len) {
  opbox_dsl::wait_for_primaries();
  const opbox_dsl::Slice<const float> x{reinterpret_cast<const float*>(x__p), x__len};
  const opbox_dsl::Slice<float> y{reinterpret_cast<float*>(y__p), y__len};
#line 22 "examples/dsl.rs"
  const unsigned int i = opbox_dsl::global_id_x();
#line 23 "examples/dsl.rs"
  if (opbox_dsl::lt(i, n)) {
#line 24 "examples/dsl.rs"
    y[i] = opbox_dsl::add(opbox_dsl::mul(a, x[i]), y[i]);
  }
}
