#include "common/x.cuh"
#include <scale.h>

extern "C" __global__ void axpby(const float* x, const float* y, float* out, float a, float b,
                                 long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = scaled(x[i], a) + scaled(y[i], b) + 0.0f * twice(x[i]);
}

template <int K> __global__ void fill_k(int* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = K;
}
