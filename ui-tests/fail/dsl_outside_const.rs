use opbox::prelude::*;

const SCALE: f32 = 2.0;

#[kernel]
fn scale(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = x[i] * SCALE;
    }
}

fn main() {}
