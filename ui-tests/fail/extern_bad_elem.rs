use opbox::prelude::*;

#[extern_kernel(source = "kernels/ok.cu")]
fn ok(out: Out<[usize]>, n: usize);

fn main() {}
