// preamble (after the opbox_dsl helpers of opbox_codegen::cuda::dsl_prelude):
// opbox: the #[derive(KernelArg)] twins go here
// #[device] expose, generated from examples/dsl.rs
__device__ inline float opbox_dev_expose(float v, float gain) {
#line 76 "examples/dsl.rs"
  return opbox_dsl::clamp(opbox_dsl::mul(v, gain), 0.0f, 1.0f);
}

#define OPBOX_DSL_C0 opbox_dev_expose
// source:
// #[kernel] brighten, generated from examples/dsl.rs
__global__ void brighten(const float* img__p, float* out__p, unsigned int width, unsigned int height, unsigned int stride, float gain, unsigned int img__len, unsigned int out__len) {
  opbox_dsl::wait_for_primaries();
  const opbox_dsl::Slice<const float> img{reinterpret_cast<const float*>(img__p), img__len};
  const opbox_dsl::Slice<float> out{reinterpret_cast<float*>(out__p), out__len};
#line 81 "examples/dsl.rs"
  const unsigned int x = opbox_dsl::global_id_x();
#line 82 "examples/dsl.rs"
  const unsigned int y = opbox_dsl::global_id_y();
#line 83 "examples/dsl.rs"
  if ((opbox_dsl::lt(x, width) && opbox_dsl::lt(y, height))) {
#line 84 "examples/dsl.rs"
    const unsigned int at = opbox_dsl::add(opbox_dsl::mul(y, stride), x);
#line 85 "examples/dsl.rs"
    out[at] = OPBOX_DSL_C0(img[at], gain);
  }
}
