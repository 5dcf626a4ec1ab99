// Spins for `spin` clock cycles, then writes `value` to out[0..n): a kernel that is still
// running when the host queues the next work, to show which stream that work waits on.
__global__ void slow_fill(float* out, float value, long long n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) {
    }
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
