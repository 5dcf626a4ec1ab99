// out[i] = Epi::apply(p.alpha * x[i] + y[i], p.scale): an elementwise kernel with a fused
// epilogue. `EpilogueParams` is not defined here: opbox generates it from the Rust
// #[derive(KernelArg)] struct and checks its layout.
#include "epilogue.cuh"

template <class Epi>
__global__ void axpy_epilogue(const float* x, const float* y, float* out, EpilogueParams p) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) {
        out[i] = Epi::apply(p.alpha * x[i] + y[i], p.scale);
    }
}
