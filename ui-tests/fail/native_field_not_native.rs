use opbox::NativeType;

#[derive(Clone, Copy)]
struct Meters(f32);

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Marker", initializer = "aggregate")]
struct Marker {
    id: u32,
    distance: Meters,
    flags: [char; 2],
}

fn main() {}
