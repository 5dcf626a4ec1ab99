use opbox::prelude::*;

// CUDA's warp shuffles move 32- and 64-bit integers and floats: not u8.
#[kernel]
fn bytes(x: In<[u8]>, y: Out<[u8]>) {
    let i = global_id_x();
    y[i] = shfl_down(x[i], 1);
}

fn main() {}
