// out = -x, one thread per element.
extern "C" __global__ void negate(const int* __restrict__ x, int* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = -x[i];
    }
}
