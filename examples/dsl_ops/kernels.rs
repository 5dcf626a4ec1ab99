//! The kernels behind `dsl::sum`, `dsl::softmax` and `dsl::matmul` (issue 13): one `#[kernel]`
//! body each, built for the CPU and emitted as C++ for NVRTC. `examples/kernels/reductions.cu`
//! holds the same algorithms written by hand, which `benches/dsl_ops_gpu.rs` runs beside them.

use opbox::prelude::*;

/// The sum of `x` added to `total[0]` (zero it first). Each block takes one contiguous run of
/// the float4s, which its threads read side by side (`BLOCK` consecutive float4s a step, two
/// steps in flight): coalesced on a GPU, and on the CPU, where a block's threads run one after
/// another, each thread's reads stay 16 × `BLOCK` bytes apart inside its block's run instead of
/// a whole grid apart. Then its warp's shuffles and (for more than one warp) one shared slot
/// per warp reduce the block, whose first thread adds the block's sum atomically. Launch
/// `BLOCK` threads (a multiple of 32, at most 1024) in as many blocks as fill the device; any
/// grid is correct.
#[kernel]
pub fn sum_f32(x: In<[f32]>, total: InOut<[f32]>, n: u32, #[constexpr] BLOCK: u32) {
    let warp_sums = shared::<f32, 32>();
    let t = thread_id_x();
    let n4 = n / 4;
    let run = (n4 + grid_dim_x() - 1) / grid_dim_x();
    let start = block_id_x() * run;
    let end = (start + run).min(n4);
    let mut a = 0.0f32;
    let mut b = 0.0f32;
    let mut i = start + t;
    while i + BLOCK < end {
        let p = x.load4(i);
        let q = x.load4(i + BLOCK);
        a += (p.x + p.y) + (p.z + p.w);
        b += (q.x + q.y) + (q.z + q.w);
        i += 2 * BLOCK;
    }
    if i < end {
        let p = x.load4(i);
        a += (p.x + p.y) + (p.z + p.w);
    }
    let tail = 4 * n4 + global_id_x();
    if tail < n {
        a += x[tail];
    }
    let mut s = warp_reduce_sum(a + b);
    if BLOCK > 32 {
        if lane_id() == 0 {
            warp_sums[t / 32] = s;
        }
        sync_threads();
        let w = if lane_id() < BLOCK / 32 {
            warp_sums[lane_id()]
        } else {
            0.0
        };
        s = warp_reduce_sum(w);
    }
    if t == 0 {
        total.atomic_add(0u32, s);
    }
}

/// Row-wise softmax of a `[rows, d]` matrix, one block of `BLOCK` threads a row: the row's max,
/// then `exp(x - max)` summed, each reduced over the block through warp shuffles and (for more
/// than one warp) one shared slot per warp, then `exp(x - max) / sum` written. A row of at most
/// `BLOCK` float4s is read once into registers, one float4 a thread, and written once; a longer
/// one moves as float4s a pass at a time (`exp` written to `y`, then scaled there, the row
/// found in cache); a row whose length is not a multiple of 4, element by element.
#[kernel]
pub fn softmax_rows(x: In<[f32]>, y: Out<[f32]>, d: u32, #[constexpr] BLOCK: u32) {
    let partial = shared::<f32, 32>();
    let t = thread_id_x();
    let lane = lane_id();
    let row = block_id_x();
    let vector = d % 4 == 0;
    let d4 = d / 4;
    let base4 = row * d4;
    let base = row * d;
    let cached = vector && d4 <= BLOCK;
    let mut v = F32x4 {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 0.0,
    };
    let mut m = f32::NEG_INFINITY;
    if cached {
        if t < d4 {
            v = x.load4(base4 + t);
            m = v.x.max(v.y).max(v.z.max(v.w));
        }
    } else if vector {
        let mut j = t;
        while j < d4 {
            let v = x.load4(base4 + j);
            // One max a vector on the running maximum's chain (the CPU build runs a thread's
            // loop as one dependent chain; the GPU hides it behind other warps either way).
            m = m.max(v.x.max(v.y).max(v.z.max(v.w)));
            j += BLOCK;
        }
    } else {
        let mut j = t;
        while j < d {
            m = m.max(x[base + j]);
            j += BLOCK;
        }
    }
    let mut row_max = warp_reduce_max(m);
    if BLOCK > 32 {
        if lane == 0 {
            partial[t / 32] = row_max;
        }
        sync_threads();
        let pm = if lane < BLOCK / 32 {
            partial[lane]
        } else {
            f32::NEG_INFINITY
        };
        row_max = warp_reduce_max(pm);
        // Every warp has read the maxima before any thread writes a sum over them.
        sync_threads();
    }
    // exp(x - max) goes to y, which the last pass scales, so each is computed once.
    let mut s = 0.0f32;
    if cached {
        if t < d4 {
            v = F32x4 {
                x: (v.x - row_max).exp(),
                y: (v.y - row_max).exp(),
                z: (v.z - row_max).exp(),
                w: (v.w - row_max).exp(),
            };
            s = (v.x + v.y) + (v.z + v.w);
        }
    } else if vector {
        let mut j = t;
        while j < d4 {
            let v = x.load4(base4 + j);
            let e = F32x4 {
                x: (v.x - row_max).exp(),
                y: (v.y - row_max).exp(),
                z: (v.z - row_max).exp(),
                w: (v.w - row_max).exp(),
            };
            s += (e.x + e.y) + (e.z + e.w);
            y.store4(base4 + j, e);
            j += BLOCK;
        }
    } else {
        let mut j = t;
        while j < d {
            let e = (x[base + j] - row_max).exp();
            s += e;
            y[base + j] = e;
            j += BLOCK;
        }
    }
    let mut row_sum = warp_reduce_sum(s);
    if BLOCK > 32 {
        if lane == 0 {
            partial[t / 32] = row_sum;
        }
        sync_threads();
        let ps = if lane < BLOCK / 32 {
            partial[lane]
        } else {
            0.0
        };
        row_sum = warp_reduce_sum(ps);
    }
    let inv = 1.0 / row_sum;
    if cached {
        if t < d4 {
            let p = F32x4 {
                x: v.x * inv,
                y: v.y * inv,
                z: v.z * inv,
                w: v.w * inv,
            };
            y.store4(base4 + t, p);
        }
    } else if vector {
        let mut j = t;
        while j < d4 {
            let e = y.load4(base4 + j);
            let p = F32x4 {
                x: e.x * inv,
                y: e.y * inv,
                z: e.z * inv,
                w: e.w * inv,
            };
            y.store4(base4 + j, p);
            j += BLOCK;
        }
    } else {
        let mut j = t;
        while j < d {
            y[base + j] *= inv;
            j += BLOCK;
        }
    }
}

/// `c = a · b` for row-major `a` [m, k], `b` [k, n], `c` [m, n]: a block computes a
/// `TILE`×`TILE` tile of `c` from `TILE`×`TILE` tiles of `a` and `b` staged in shared memory;
/// each of its `TILE`×`TILE/4` threads computes four outputs of one column, rows `TILE/4`
/// apart, so each `b` element read from shared memory feeds four multiply-adds. Launch blocks
/// of (`TILE`, `TILE / 4`) over a grid of (`n / TILE`, `m / TILE`), rounded up.
#[kernel]
pub fn matmul_tiled(
    a: In<[f32]>,
    b: In<[f32]>,
    c: Out<[f32]>,
    m: u32,
    n: u32,
    k: u32,
    #[constexpr] TILE: u32,
) {
    let a_tile = shared::<f32, { TILE * TILE }>();
    let b_tile = shared::<f32, { TILE * TILE }>();
    let tx = thread_id_x();
    let ty = thread_id_y();
    let rows = TILE / 4;
    let col = block_id_x() * TILE + tx;
    let row0 = block_id_y() * TILE + ty;
    let mut acc0 = 0.0f32;
    let mut acc1 = 0.0f32;
    let mut acc2 = 0.0f32;
    let mut acc3 = 0.0f32;
    let mut k0 = 0u32;
    while k0 < k {
        // Each thread stages four elements of each tile, zero outside the matrices.
        for r in 0..4u32 {
            let tr = ty + r * rows;
            let ar = block_id_y() * TILE + tr;
            let ac = k0 + tx;
            a_tile[tr * TILE + tx] = if ar < m && ac < k {
                a[ar * k + ac]
            } else {
                0.0
            };
            let br = k0 + tr;
            b_tile[tr * TILE + tx] = if br < k && col < n {
                b[br * n + col]
            } else {
                0.0
            };
        }
        sync_threads();
        for kk in 0..TILE {
            let bv = b_tile[kk * TILE + tx];
            acc0 += a_tile[ty * TILE + kk] * bv;
            acc1 += a_tile[(ty + rows) * TILE + kk] * bv;
            acc2 += a_tile[(ty + 2 * rows) * TILE + kk] * bv;
            acc3 += a_tile[(ty + 3 * rows) * TILE + kk] * bv;
        }
        sync_threads();
        k0 += TILE;
    }
    if col < n {
        if row0 < m {
            c[row0 * n + col] = acc0;
        }
        if row0 + rows < m {
            c[(row0 + rows) * n + col] = acc1;
        }
        if row0 + 2 * rows < m {
            c[(row0 + 2 * rows) * n + col] = acc2;
        }
        if row0 + 3 * rows < m {
            c[(row0 + 3 * rows) * n + col] = acc3;
        }
    }
}

/// Row-wise softmax of a `[rows, d]` matrix for rows that fit in one warp's registers (`d` a
/// multiple of 4, at most `32 * 4 * V4`): one warp a row, as many rows a block as it has warps.
/// Each lane reads the float4s `lane, lane + 32, ..` of its row once into a local array of
/// `V4`, which the unrolled loops keep in registers; the max and the sum are warp shuffles
/// only (no shared memory, no barrier), and the row is written once. A warp past the last row
/// still takes part in its shuffles, with nothing to read or write. Launch blocks of a multiple
/// of 32 threads, `rows` over the block's warps rounded up.
#[kernel]
pub fn softmax_warp_rows(x: In<[f32]>, y: Out<[f32]>, rows: u32, d: u32, #[constexpr] V4: u32) {
    let lane = lane_id();
    let row = block_id_x() * (block_dim_x() / 32) + thread_id_x() / 32;
    let live = row < rows;
    let d4 = d / 4;
    let base4 = row * d4;
    let mut v = [F32x4 {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 0.0,
    }; V4];
    let mut m = f32::NEG_INFINITY;
    for j in 0..V4 {
        let c = j * 32 + lane;
        if live && c < d4 {
            v[j] = x.load4(base4 + c);
            m = m.max(v[j].x.max(v[j].y).max(v[j].z.max(v[j].w)));
        }
    }
    let row_max = warp_reduce_max(m);
    let mut s = 0.0f32;
    for j in 0..V4 {
        if live && j * 32 + lane < d4 {
            v[j] = F32x4 {
                x: (v[j].x - row_max).exp(),
                y: (v[j].y - row_max).exp(),
                z: (v[j].z - row_max).exp(),
                w: (v[j].w - row_max).exp(),
            };
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    let row_sum = warp_reduce_sum(s);
    let inv = 1.0 / row_sum;
    for j in 0..V4 {
        let c = j * 32 + lane;
        if live && c < d4 {
            let p = F32x4 {
                x: v[j].x * inv,
                y: v[j].y * inv,
                z: v[j].z * inv,
                w: v[j].w * inv,
            };
            y.store4(base4 + c, p);
        }
    }
}
