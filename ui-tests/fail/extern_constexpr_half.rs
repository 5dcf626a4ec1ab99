use opbox::prelude::*;

// f16 is a by-value launch argument, but C++ has no f16 literal: it cannot be a #[constexpr].
#[extern_kernel(source = "../../examples/kernels/axpby.cu", entry = "axpby")]
fn scaled(out: Out<[f32]>, #[constexpr] SCALE: f16);

fn main() {}
