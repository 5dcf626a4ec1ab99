use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Color", initializer = "designated")]
struct Color {
    r: f32,
}

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Handle", opaque, initializer = "aggregate")]
struct Handle {
    bits: u64,
}

#[derive(Clone, Copy, NativeType)]
#[repr(C, packed)]
#[native(name = "my_addon::Packed")]
struct Packed {
    tag: u8,
    value: u32,
}

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
struct Unnamed {
    x: f32,
}

fn main() {}
