// The same kernel whose C++ Color declares its fields in another order than the Rust one.
namespace my_addon {
struct Color {
    float g, r, b;
};
}  // namespace my_addon

extern "C" __global__ void tint(float* out, my_addon::Color c, float s) {
    out[0] = (c.r + c.g + c.b) * s;
}
