use opbox::prelude::*;

#[kernel]
fn generic<T: Copy>(x: In<[f32]>, y: Out<[f32]>, n: u32) {
    let i = global_id_x();
    if i < n {
        y[i] = x[i];
    }
}

#[kernel]
fn with_impl(y: Out<[f32]>) {
    impl Clone for Local {
        fn clone(&self) -> Self {
            Local
        }
    }
    y[0] = 1.0;
}

struct Local;

fn main() {}
