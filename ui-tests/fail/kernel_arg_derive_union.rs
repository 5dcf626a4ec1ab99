use opbox::KernelArg;

#[derive(Clone, Copy, KernelArg)]
#[repr(C)]
pub union Bits {
    f: f32,
    i: i32,
}

fn main() {}
