use opbox::prelude::*;

#[kernel]
fn copy(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    let v = x[i];
    let r = &v;
    if i < n {
        y[i] = *r;
    }
}

fn main() {}
