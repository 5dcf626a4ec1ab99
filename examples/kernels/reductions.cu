// dsl::sum, dsl::softmax and dsl::matmul's algorithms written by hand (examples/dsl_ops/
// kernels.rs has the #[kernel] versions): the baseline benches/dsl_ops_gpu.rs measures the DSL
// against, same launch shapes. Block sizes are the ops': 256 threads, 32x32 tiles, and for the
// warp-per-row softmax 4 warps a block, 8 float4s a lane (rows up to 1024 floats).

#define OPBOX_RED_BLOCK 256
#define OPBOX_TILE 32
#define OPBOX_WARP_ROWS 4
#define OPBOX_WARP_V4 8

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// total[0] += sum(x): each block one contiguous run of float4s, read BLOCK at a time, two in
// flight; warp shuffles, one shared slot a warp, one atomic a block.
extern "C" __global__ void sum_f32_hand(const float* __restrict__ x, float* total, unsigned int n) {
    __shared__ float warp_sums[32];
    const unsigned int t = threadIdx.x;
    const unsigned int n4 = n / 4;
    const unsigned int run = (n4 + gridDim.x - 1) / gridDim.x;
    const unsigned int start = blockIdx.x * run;
    const unsigned int end = min(start + run, n4);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float a = 0.0f, b = 0.0f;
    unsigned int i = start + t;
    for (; i + OPBOX_RED_BLOCK < end; i += 2 * OPBOX_RED_BLOCK) {
        float4 p = x4[i];
        float4 q = x4[i + OPBOX_RED_BLOCK];
        a += (p.x + p.y) + (p.z + p.w);
        b += (q.x + q.y) + (q.z + q.w);
    }
    if (i < end) {
        float4 p = x4[i];
        a += (p.x + p.y) + (p.z + p.w);
    }
    unsigned int tail = 4 * n4 + blockIdx.x * OPBOX_RED_BLOCK + t;
    if (tail < n) a += x[tail];
    float s = warp_sum(a + b);
    if ((t & 31) == 0) warp_sums[t / 32] = s;
    __syncthreads();
    float w = (t & 31) < OPBOX_RED_BLOCK / 32 ? warp_sums[t & 31] : 0.0f;
    float block_sum = warp_sum(w);
    if (t == 0) atomicAdd(total, block_sum);
}

// Row-wise softmax of [rows, d], one block a row, d a multiple of 4: the max; the sum of
// exp(x - max); exp(x - max) / sum written. A row of at most BLOCK float4s is read once into
// registers and written once; a longer one writes exp and then scales it in place.
extern "C" __global__ void softmax_rows_hand(const float* __restrict__ x, float* y, unsigned int d) {
    __shared__ float partial[32];
    const unsigned int t = threadIdx.x, lane = t & 31;
    const unsigned int d4 = d / 4;
    const bool cached = d4 <= OPBOX_RED_BLOCK;
    const float4* row = reinterpret_cast<const float4*>(x) + (size_t)blockIdx.x * d4;
    float4* out = reinterpret_cast<float4*>(y) + (size_t)blockIdx.x * d4;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float m = __int_as_float(0xff800000);
    if (cached) {
        if (t < d4) {
            v = row[t];
            m = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        }
    } else {
        for (unsigned int j = t; j < d4; j += OPBOX_RED_BLOCK) {
            float4 e = row[j];
            m = fmaxf(m, fmaxf(fmaxf(e.x, e.y), fmaxf(e.z, e.w)));
        }
    }
    m = warp_max(m);
    if (lane == 0) partial[t / 32] = m;
    __syncthreads();
    const float row_max = warp_max(lane < OPBOX_RED_BLOCK / 32 ? partial[lane] : __int_as_float(0xff800000));
    __syncthreads();
    float s = 0.0f;
    if (cached) {
        if (t < d4) {
            v = make_float4(expf(v.x - row_max), expf(v.y - row_max), expf(v.z - row_max), expf(v.w - row_max));
            s = (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (unsigned int j = t; j < d4; j += OPBOX_RED_BLOCK) {
            float4 e = row[j];
            e = make_float4(expf(e.x - row_max), expf(e.y - row_max), expf(e.z - row_max), expf(e.w - row_max));
            s += (e.x + e.y) + (e.z + e.w);
            out[j] = e;
        }
    }
    s = warp_sum(s);
    if (lane == 0) partial[t / 32] = s;
    __syncthreads();
    const float inv = 1.0f / warp_sum(lane < OPBOX_RED_BLOCK / 32 ? partial[lane] : 0.0f);
    if (cached) {
        if (t < d4) out[t] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    } else {
        for (unsigned int j = t; j < d4; j += OPBOX_RED_BLOCK) {
            float4 e = out[j];
            out[j] = make_float4(e.x * inv, e.y * inv, e.z * inv, e.w * inv);
        }
    }
}

// c = a . b, row-major [m, k] . [k, n]: 32x32 tiles of a and b in shared memory, blocks of
// 32x8 threads, each computing four outputs of one column, rows 8 apart.
extern "C" __global__ void matmul_tiled_hand(const float* __restrict__ a, const float* __restrict__ b,
                                             float* __restrict__ c, unsigned int m, unsigned int n,
                                             unsigned int k) {
    __shared__ float a_tile[OPBOX_TILE * OPBOX_TILE];
    __shared__ float b_tile[OPBOX_TILE * OPBOX_TILE];
    const unsigned int tx = threadIdx.x, ty = threadIdx.y, rows = OPBOX_TILE / 4;
    const unsigned int col = blockIdx.x * OPBOX_TILE + tx;
    const unsigned int row0 = blockIdx.y * OPBOX_TILE + ty;
    float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
    for (unsigned int k0 = 0; k0 < k; k0 += OPBOX_TILE) {
#pragma unroll
        for (unsigned int r = 0; r < 4; ++r) {
            const unsigned int tr = ty + r * rows;
            const unsigned int ar = blockIdx.y * OPBOX_TILE + tr, ac = k0 + tx;
            a_tile[tr * OPBOX_TILE + tx] = ar < m && ac < k ? a[ar * k + ac] : 0.0f;
            const unsigned int br = k0 + tr;
            b_tile[tr * OPBOX_TILE + tx] = br < k && col < n ? b[br * n + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (unsigned int kk = 0; kk < OPBOX_TILE; ++kk) {
            const float bv = b_tile[kk * OPBOX_TILE + tx];
            acc0 += a_tile[ty * OPBOX_TILE + kk] * bv;
            acc1 += a_tile[(ty + rows) * OPBOX_TILE + kk] * bv;
            acc2 += a_tile[(ty + 2 * rows) * OPBOX_TILE + kk] * bv;
            acc3 += a_tile[(ty + 3 * rows) * OPBOX_TILE + kk] * bv;
        }
        __syncthreads();
    }
    if (col < n) {
        if (row0 < m) c[row0 * n + col] = acc0;
        if (row0 + rows < m) c[(row0 + rows) * n + col] = acc1;
        if (row0 + 2 * rows < m) c[(row0 + 2 * rows) * n + col] = acc2;
        if (row0 + 3 * rows < m) c[(row0 + 3 * rows) * n + col] = acc3;
    }
}

// Row-wise softmax for rows of at most 32 * 4 * OPBOX_WARP_V4 floats, d a multiple of 4: one
// warp a row, OPBOX_WARP_ROWS rows a block; each lane holds its float4s (lane, lane + 32, ...)
// in registers, the max and the sum are warp shuffles, the row is read and written once.
extern "C" __global__ void softmax_warp_rows_hand(const float* __restrict__ x, float* __restrict__ y,
                                                  unsigned int rows, unsigned int d) {
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int row = blockIdx.x * OPBOX_WARP_ROWS + threadIdx.x / 32;
    const bool live = row < rows;
    const unsigned int d4 = d / 4;
    const float4* in = reinterpret_cast<const float4*>(x) + (size_t)row * d4;
    float4* out = reinterpret_cast<float4*>(y) + (size_t)row * d4;
    float4 v[OPBOX_WARP_V4];
    float m = __int_as_float(0xff800000);
#pragma unroll
    for (unsigned int j = 0; j < OPBOX_WARP_V4; ++j) {
        const unsigned int c = j * 32 + lane;
        if (live && c < d4) {
            v[j] = in[c];
            m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
        }
    }
    const float row_max = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (unsigned int j = 0; j < OPBOX_WARP_V4; ++j) {
        if (live && j * 32 + lane < d4) {
            v[j] = make_float4(expf(v[j].x - row_max), expf(v[j].y - row_max), expf(v[j].z - row_max),
                               expf(v[j].w - row_max));
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    const float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (unsigned int j = 0; j < OPBOX_WARP_V4; ++j) {
        const unsigned int c = j * 32 + lane;
        if (live && c < d4) out[c] = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
    }
}
