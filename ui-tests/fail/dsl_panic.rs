use opbox::prelude::*;

#[kernel]
fn checked(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if x.len() != y.len() {
        panic!("lengths differ");
    }
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
