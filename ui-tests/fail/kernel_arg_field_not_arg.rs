use opbox::KernelArg;

#[derive(Clone, Copy, KernelArg)]
#[repr(C)]
pub struct Params {
    pub alpha: f32,
    /// A tuple has no C++ twin: use a [f32; 2] array or a nested #[derive(KernelArg)] struct.
    pub range: (f32, f32),
}

fn main() {}
