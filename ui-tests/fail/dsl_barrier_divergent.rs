use opbox::prelude::*;

// A barrier under a condition on the thread index, and one after some threads may have
// returned: every thread of a block must reach each barrier.
#[kernel]
fn half(x: InOut<[f32]>, n: u32) {
    let t = thread_id_x();
    if t < 16 {
        sync_threads();
    }
    let i = global_id_x();
    if i >= n {
        return;
    }
    sync_threads();
    x[i] = 0.0;
}

#[device]
fn helper(v: f32) -> f32 {
    sync_threads();
    v
}

fn main() {}
