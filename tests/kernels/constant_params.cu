// abi = "constant_params": extern "C" entries with no parameters read their one struct from the
// __constant__ symbol `params`, which opbox declares before this file and the host writes.
namespace my_addon {
struct RenderParams {
    unsigned long long out;  // a device address
    float scale;
    int n;
};
}  // namespace my_addon

__device__ inline const my_addon::RenderParams& render_params() {
    return *reinterpret_cast<const my_addon::RenderParams*>(params);
}

extern "C" __global__ void render() {
    const my_addon::RenderParams& p = render_params();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) {
        reinterpret_cast<float*>(p.out)[i] = p.scale * (float)i;
    }
}

extern "C" __global__ void render_add() {
    const my_addon::RenderParams& p = render_params();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) {
        reinterpret_cast<float*>(p.out)[i] += p.scale;
    }
}
