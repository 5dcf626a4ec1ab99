use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my-addon::Color", initializer = "aggregate")]
struct Color {
    r: f32,
    g: f32,
    b: f32,
}

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Vec<3>")]
struct Vec3 {
    v: [f32; 3],
}

fn main() {}
