use opbox::prelude::*;

#[extern_kernel(source = "kernels/ok.cu")]
fn ok(out: Out<f32>, acc: InOut<i64>);

fn main() {}
