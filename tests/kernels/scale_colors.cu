// Calls the scale builtin through its generated wrapper; Color and my_addon::scale come from the
// group's preamble (Warp's native header), the wrapper right after them.
extern "C" __global__ void scale_colors(const my_addon::Color* in, my_addon::Color* out, float s,
                                        long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = opbox_builtin_scale(in[i], s);
    }
}
