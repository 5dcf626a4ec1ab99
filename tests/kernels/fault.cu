// Writes far past the end of `out`: an illegal address, reported at the next synchronization.
extern "C" __global__ void write_out_of_bounds(float* out) {
    out[(1ll << 40) + threadIdx.x] = 1.0f;
}
