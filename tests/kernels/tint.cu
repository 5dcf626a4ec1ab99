// A kernel taking a #[derive(NativeType)] value by value: the C++ twin is the user's own.
namespace my_addon {
struct Color {
    float r, g, b;
};
}  // namespace my_addon

extern "C" __global__ void tint(float* out, my_addon::Color c, float s) {
    out[0] = (c.r + c.g + c.b) * s;
}
