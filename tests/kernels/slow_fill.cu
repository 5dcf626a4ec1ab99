// Spins for `spin` clock cycles, then writes `v` to out[0..n): a kernel slow enough that work
// queued behind it is observably still pending (tests/cuda_interop.rs's stream tests).
__global__ void slow_fill(float* out, float v, long long n, long long spin) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long start = clock64();
    while (clock64() - start < spin) {
    }
    if (i < n) out[i] = v;
}
