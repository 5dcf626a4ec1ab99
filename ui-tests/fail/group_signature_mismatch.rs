// Every member takes the parameters the group exposes: its first member's.
use opbox::prelude::*;

#[kernel_group]
mod step {
    use super::*;

    #[kernel]
    fn times(x: InOut<[f32]>, s: f32, n: u32) {}

    #[kernel]
    fn plus(x: InOut<[f32]>, s: f64, n: u32) {}

    #[kernel]
    fn short(x: InOut<[f32]>, s: f32) {}
}

fn main() {}
