use opbox::prelude::*;

// load4/store4 move 16 bytes as one access: a 12-byte native element cannot be moved so.
#[derive(Clone, Copy, opbox::NativeType)]
#[repr(C)]
#[native(name = "my_addon::Color", initializer = "aggregate")]
pub struct Color {
    r: f32,
    g: f32,
    b: f32,
}

#[kernel]
fn tint(colors: In<[Color]>, out: Out<[Color]>) {
    let i = global_id_x();
    out.store4(i, colors.load4(i));
}

fn main() {}
