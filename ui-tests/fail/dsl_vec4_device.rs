use opbox::prelude::*;

// load4/store4 are a kernel's: its launch checks that the slices they move are 16-byte
// aligned, and no launch sees the slices a #[device] fn is given.
#[device]
fn first4(x: In<[f32]>) -> f32 {
    let v = x.load4(0u32);
    (v.x + v.y) + (v.z + v.w)
}

fn main() {}
