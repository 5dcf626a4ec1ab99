// out[i] = alpha * x[i], one thread per element.
extern "C" __global__ void scale(const float* x, float* out, float alpha, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = alpha * x[i];
    }
}
