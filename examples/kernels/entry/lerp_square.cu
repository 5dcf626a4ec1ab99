// out[i] = lerp(a[i], b[i], t)^2, from two headers: one next to this file, one from an include dir.
#include "../common/x.cuh"
#include <opbox_ex/lerp.cuh>

template <int BLOCK>
__global__ void lerp_square(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ out, float t, long long n) {
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) {
        out[i] = opbox_ex_square(opbox_ex_lerp(a[i], b[i], t));
    }
}
