use opbox::prelude::*;

#[derive(Clone, Copy, opbox::NativeType)]
#[repr(C)]
#[native(name = "ui::Params", initializer = "aggregate")]
pub struct Params {
    scale: f32,
}

// Two parameters: the constant_params entry reads exactly one struct.
#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn two(p: Params, n: i32);

// A scalar is not a struct.
#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn scalar(n: i32);

// A buffer is not a struct.
#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn buffer(out: Out<[f32]>);

fn main() {}
