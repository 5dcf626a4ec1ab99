use opbox::prelude::*;

#[kernel]
fn gather(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    let scratch: Vec<f32> = vec![0.0; 4];
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
