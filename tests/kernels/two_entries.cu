// Two entries of one file: the Rust side declares one of them wrongly (tests/module_fallback.rs).
extern "C" __global__ void scale_ok(const float* x, float* out, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}

extern "C" __global__ void shift_ok(const float* x, float* out, float b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + b;
}
