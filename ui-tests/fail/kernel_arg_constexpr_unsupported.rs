use opbox::prelude::*;

/// A plain enum: no #[derive(ConstexprEnum)], so no C++ type per variant.
#[derive(Clone, Copy)]
pub enum Mode {
    Fast,
    Exact,
}

#[extern_kernel(source = "kernels/ok.cu", constexpr = "template")]
fn ok(out: Out<[f32]>, #[constexpr] mode: Mode);

fn main() {}
