use opbox::prelude::*;

// Atomics write: not on an In slice; and CUDA has no atomicMin for floats.
#[kernel]
fn tally(x: In<[u32]>, lo: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        x.atomic_add(0, 1);
        lo.atomic_min(0, 1.0);
    }
}

fn main() {}
