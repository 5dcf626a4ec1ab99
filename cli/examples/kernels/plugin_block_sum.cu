// Sums each BLOCK-sized chunk of x into out[chunk]: BLOCK is a #[constexpr] template argument,
// so this kernel has no single image and `opbox aot` skips it unless given values.
template <int BLOCK>
__global__ void plugin_block_sum(const float* __restrict__ x, float* __restrict__ out,
                                 long long n) {
    long long chunk = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (chunk * BLOCK < n) {
        float sum = 0.0f;
        for (int k = 0; k < BLOCK && chunk * BLOCK + k < n; ++k) {
            sum += x[chunk * BLOCK + k];
        }
        out[chunk] = sum;
    }
}
