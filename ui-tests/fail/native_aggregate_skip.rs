use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Color", initializer = "aggregate")]
struct Color {
    r: f32,
    g: f32,
    #[native(skip)]
    cached_luma: f32,
}

fn main() {}
