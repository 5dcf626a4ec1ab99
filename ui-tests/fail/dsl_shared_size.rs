use opbox::prelude::*;

// A shared array's length is fixed at compile time: a literal or a #[constexpr] param.
#[kernel]
fn tiles(x: InOut<[f32]>, n: u32) {
    let a = shared::<f32, n>();
    let b = shared::<f32, 0>();
    a[0] = b[0];
    x[0] = a[0];
}

fn main() {}
