use opbox::prelude::*;

#[extern_kernel(source = "kernels/ok.cu", include_dirs = ["kernels", "kernels/include"])]
fn ok(out: Out<[f32]>);

fn main() {}
