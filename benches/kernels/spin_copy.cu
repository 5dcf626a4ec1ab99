// Spins for `cycles` clock cycles, then copies a[0..n) to out: a kernel whose duration is set
// by its caller and that occupies exactly the blocks it is launched with (benches/graph.rs's
// diamond, where two of them must share the GPU).
extern "C" __global__ void spin_copy(const float* a, float* out, long long n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i];
}
