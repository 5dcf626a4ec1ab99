use opbox::prelude::*;

#[kernel]
fn angle(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = x[i].atan2(1.0);
    }
}

fn main() {}
