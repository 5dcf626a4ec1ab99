// Two entries with one signature: the members of tests/graph.rs's extern kernel group.
extern "C" __global__ void grp_scale(const float* x, float* out, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}

extern "C" __global__ void grp_addx(const float* x, float* out, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] += x[i];
}
