use opbox::prelude::*;

// A shared array's length is fixed at compile time: a literal, a #[constexpr] param, or an
// arithmetic of those in braces (not of a runtime value like `n`).
#[kernel]
fn tiles(x: InOut<[f32]>, n: u32) {
    let a = shared::<f32, n>();
    let b = shared::<f32, 0>();
    let c = shared::<f32, { n * 2 }>();
    a[0] = b[0] + c[0];
    x[0] = a[0];
}

fn main() {}
