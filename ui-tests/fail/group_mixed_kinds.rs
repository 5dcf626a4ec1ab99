// A group is all #[extern_kernel] or all #[kernel] fns (PyPTO's rule).
use opbox::prelude::*;

#[kernel_group]
mod mixed {
    use super::*;

    #[extern_kernel(source = "kernels/ok.cu", entry = "ok")]
    fn hand_written(x: In<[f32]>, n: i64);

    #[kernel]
    fn in_rust(x: In<[f32]>, n: i64) {}
}

fn main() {}
