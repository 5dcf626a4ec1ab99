use opbox::prelude::*;

#[extern_kernel(source = "kernels/ok.cu")]
fn ok(out: Out<[f32]>) {
    let _ = out;
}

fn main() {}
