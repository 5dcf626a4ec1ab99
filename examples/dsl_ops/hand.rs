//! The hand-written CUDA twins of the dsl ops' kernels (examples/kernels/reductions.cu), the
//! baseline benches/dsl_ops_gpu.rs measures them against; CI compiles them with NVRTC.

use opbox::prelude::*;

#[extern_kernel(source = "../kernels/reductions.cu", entry = "sum_f32_hand")]
pub fn sum_f32_hand(x: In<[f32]>, total: InOut<[f32]>, n: u32);

#[extern_kernel(source = "../kernels/reductions.cu", entry = "softmax_rows_hand")]
pub fn softmax_rows_hand(x: In<[f32]>, y: Out<[f32]>, d: u32);

#[extern_kernel(source = "../kernels/reductions.cu", entry = "softmax_warp_rows_hand")]
pub fn softmax_warp_rows_hand(x: In<[f32]>, y: Out<[f32]>, rows: u32, d: u32);

#[extern_kernel(source = "../kernels/reductions.cu", entry = "matmul_tiled_hand")]
pub fn matmul_tiled_hand(a: In<[f32]>, b: In<[f32]>, c: Out<[f32]>, m: u32, n: u32, k: u32);
