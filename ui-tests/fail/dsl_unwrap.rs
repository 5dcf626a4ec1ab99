use opbox::prelude::*;

#[kernel]
fn first(x: In<[u32]>, y: Out<[u32]>) {
    let v = x[0].checked_add(1).unwrap();
    y[0] = v;
}

fn main() {}
