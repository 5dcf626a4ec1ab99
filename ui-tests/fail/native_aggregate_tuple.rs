use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Rgb", initializer = "aggregate")]
struct Rgb(f32, f32, f32);

fn main() {}
