use opbox::KernelArg;

#[derive(Clone, Copy, KernelArg)]
#[repr(C, packed)]
pub struct Params {
    pub tag: u8,
    pub scale: f32,
}

fn main() {}
