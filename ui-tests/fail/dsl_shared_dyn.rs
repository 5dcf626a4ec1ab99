use opbox::prelude::*;

// The launch's dynamic shared memory holds one of the DSL's scalar types; its length comes from
// the launch, so it takes no length argument.
#[kernel]
fn staged(x: InOut<[f32]>) {
    let a = shared_dyn::<(f32, f32)>();
    let b = shared_dyn::<f32, 64>();
    x[0] = a[0] + b[0];
}

fn main() {}
