//! A #[kernel] and a #[device] fn that use the whole subset compile.
use opbox::native::f16;
use opbox::prelude::*;

#[device]
fn clip(v: f32, lo: f32, hi: f32) -> f32 {
    if v < lo {
        return lo;
    }
    v.min(hi)
}

#[kernel]
fn everything(x: In<[f32]>, h: Out<[f16]>, y: InOut<[f32]>, bits: Out<[u64]>, n: u32, #[constexpr] UNROLL: u32) {
    let i = global_id_x() + block_id_y() * grid_dim_x() * block_dim_x();
    if i >= n || i >= x.len() {
        return;
    }
    let mut acc: f32 = 0.0;
    for k in 0..UNROLL {
        acc += x[i] * (k as f32);
    }
    for k in (0..8u32).step_by(2) {
        acc = acc.mul_add(0.5, k as f32);
    }
    let mut w = 0u64;
    while w < 10 {
        w += 3;
    }
    let s = if acc > 1.0 { acc.sqrt() } else { -acc };
    y[i] = clip(s, -1.0, 1.0) + f32::EPSILON;
    h[i] = s as f16;
    bits[i] = (w << 70u32) ^ u64::MAX;
}

fn main() {}
