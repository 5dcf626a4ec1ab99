// Kernels over #[derive(NativeType)] values: by value, as slice elements, nested, padded and
// opaque. The C++ twins are the user's own; opbox's static_asserts check them against Rust.
namespace my_addon {
struct Color {
    float r, g, b;
};
struct Pixel {
    Color color;
    int index;
};
// u8 then u32: three padding bytes between the fields, on both sides.
struct Padded {
    unsigned char tag;
    unsigned int value;
};
// Opaque to opbox: only its size and alignment are checked.
struct Handle {
    unsigned long long bits;
};
}  // namespace my_addon

// Writes back the fields it was given, so the host can see what crossed.
extern "C" __global__ void see_color(float* out, my_addon::Color c) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = c.r;
        out[1] = c.g;
        out[2] = c.b;
    }
}

extern "C" __global__ void make_pixels(const my_addon::Color* colors, my_addon::Pixel* pixels,
                                       float s, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        my_addon::Color c = colors[i];
        pixels[i].color.r = c.r * s;
        pixels[i].color.g = c.g * s;
        pixels[i].color.b = c.b * s;
        pixels[i].index = (int)i;
    }
}

extern "C" __global__ void bump_padded(my_addon::Padded* xs, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        xs[i].value += xs[i].tag;
        xs[i].tag += 1;
    }
}

// out[i] = in[i] for i < n, and out[n] = h.
extern "C" __global__ void copy_handles(const my_addon::Handle* in, my_addon::Handle* out,
                                        my_addon::Handle h, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i];
    }
    if (i == 0) {
        out[n] = h;
    }
}

// Takes only Pixels: Color's checks come in through Pixel's field.
extern "C" __global__ void index_pixels(my_addon::Pixel* pixels, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        pixels[i].index = (int)i;
    }
}
