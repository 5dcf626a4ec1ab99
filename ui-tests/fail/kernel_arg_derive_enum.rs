use opbox::KernelArg;

#[derive(Clone, Copy, KernelArg)]
#[repr(C)]
pub enum Activation {
    Relu,
    Gelu,
}

fn main() {}
