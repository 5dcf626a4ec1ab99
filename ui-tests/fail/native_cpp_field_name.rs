use opbox::NativeType;

#[derive(Clone, Copy, NativeType)]
#[repr(C)]
#[native(name = "my_addon::Token")]
struct Token {
    class: u32,
    new: u8,
    #[native(skip)]
    union_: u8,
    größe: u16,
}

fn main() {}
