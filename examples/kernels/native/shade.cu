// Each thread scales its color through the builtin's generated wrapper and writes a Pixel that
// holds the result and the thread's index.
extern "C" __global__ void shade(const my_addon::Color* colors, my_addon::Pixel* pixels, float s,
                                 long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        pixels[i] = my_addon::Pixel{opbox_builtin_scale(colors[i], s), (int)i};
    }
}
