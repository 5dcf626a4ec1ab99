use opbox::prelude::*;

fn double(v: f32) -> f32 {
    v * 2.0
}

#[kernel]
fn twice(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = double(x[i]);
    }
}

fn main() {}
