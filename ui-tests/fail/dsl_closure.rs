use opbox::prelude::*;

#[kernel]
fn scale(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    let twice = |v: f32| v * 2.0;
    if i < n {
        y[i] = twice(x[i]);
    }
}

fn main() {}
