// The CUDA half of torch_dispatch.cpp, compiled by nvcc on its own so that the PyTorch headers
// never go through nvcc: the same empty kernel as examples/kernels/empty.cu, and its launches.
#include <cuda_runtime.h>

extern "C" __global__ void peer_empty(const float* x) {}

// The launch a PyTorch extension's kernel writes; the caller checks errors the PyTorch way
// (C10_CUDA_KERNEL_LAUNCH_CHECK).
extern "C" void peer_launch_chevron(const float* x, cudaStream_t stream) {
  peer_empty<<<1, 1, 0, stream>>>(x);
}

// The baseline: the runtime's launch call with the argument array packed once by the caller,
// the counterpart of benches/launch.rs's raw cuLaunchKernel (a0).
extern "C" int peer_launch_raw(void** packed_args, cudaStream_t stream) {
  return static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(&peer_empty), dim3(1),
                                           dim3(1), packed_args, 0, stream));
}
