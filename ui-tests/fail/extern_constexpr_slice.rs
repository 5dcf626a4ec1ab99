use opbox::prelude::*;

#[extern_kernel(source = "kernels/ok.cu")]
fn ok(#[constexpr] out: Out<[f32]>);

fn main() {}
