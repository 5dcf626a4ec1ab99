use opbox::prelude::*;

#[extern_kernel(source = "kernels/missing.cu")]
fn missing(out: Out<[f32]>);

fn main() {}
