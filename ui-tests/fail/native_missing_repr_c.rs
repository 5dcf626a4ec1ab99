use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[native(name = "my_addon::Color", initializer = "aggregate")]
struct Color {
    r: f32,
    g: f32,
    b: f32,
}

fn main() {}
