// out = a * x + b * y, one thread per element.
extern "C" __global__ void axpby(const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out, float a, float b, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + b * y[i];
    }
}
