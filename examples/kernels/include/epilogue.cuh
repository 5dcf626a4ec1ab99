// Epilogue functors for examples/epilogue_fusion.rs: each is a type, chosen at compile time as
// the kernel's template argument (a #[constexpr] #[derive(ConstexprEnum)] parameter in Rust).
#pragma once

namespace opbox_epilogue {
struct Identity {
    __device__ static float apply(float v, float) { return v; }
};
struct Relu {
    __device__ static float apply(float v, float) { return v > 0.0f ? v : 0.0f; }
};
struct Scale {
    __device__ static float apply(float v, float s) { return v * s; }
};
// The tanh approximation of GELU.
struct Gelu {
    __device__ static float apply(float v, float) {
        return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
};
}  // namespace opbox_epilogue
