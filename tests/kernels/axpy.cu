// y = a * x + y: the kernel of the runtime-typed launch tests (tests/kernel_args.rs).
extern "C" __global__ void axpy(float a, long long n, float* y, const float* x) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
