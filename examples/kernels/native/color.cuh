// my_addon's native header: the C++ side of the Rust Color and Pixel types, and the scale
// function that #[builtin(native = "my_addon::scale")] declares. opbox checks at compile time
// that these structs have the Rust types' size, alignment and field types.
#pragma once

namespace my_addon {

struct Color {
    float r, g, b;
};

struct Pixel {
    Color color;
    int index;
};

__device__ inline Color scale(Color c, float s) {
    return Color{c.r * s, c.g * s, c.b * s};
}

}  // namespace my_addon
