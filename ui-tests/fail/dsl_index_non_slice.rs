use opbox::prelude::*;

#[kernel]
fn pick(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    let v = x[i];
    if i < n {
        y[i] = v[0];
    }
}

fn main() {}
