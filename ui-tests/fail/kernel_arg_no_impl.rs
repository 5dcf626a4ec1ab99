use opbox::prelude::*;

/// A type from "another crate": no KernelArg impl, no derive.
pub struct CudaStreamHandle {
    pub raw: u64,
}

#[extern_kernel(source = "kernels/ok.cu")]
fn ok(out: Out<[f32]>, stream: CudaStreamHandle);

fn main() {}
