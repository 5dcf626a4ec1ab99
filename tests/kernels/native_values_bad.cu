// A Pixel whose nested Color declares its fields in another order than the Rust one: the kernel
// takes Pixels only, so this is caught through Pixel's field, recursively.
namespace my_addon {
struct Color {
    float g, r, b;
};
struct Pixel {
    Color color;
    int index;
};
}  // namespace my_addon

extern "C" __global__ void index_pixels(my_addon::Pixel* pixels, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        pixels[i].index = (int)i;
    }
}
