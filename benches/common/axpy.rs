//! The axpy kernels the DSL benches set side by side (each bench includes this file with
//! `#[path]`): the hand-written `examples/kernels/axpby.cu`, one f32 and four a thread, and the
//! DSL's one-f32 form; the DSL's `load4` form is `examples/dsl.rs`'s `axpy4`, which users copy.

use opbox::prelude::*;

#[extern_kernel(source = "../../examples/kernels/axpby.cu", entry = "axpby")]
pub fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[extern_kernel(source = "../../examples/kernels/axpby.cu", entry = "axpby4")]
pub fn axpby4_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

/// One f32 a thread: each access 4 bytes.
#[kernel]
pub fn axpy_dsl(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, n: u32) {
    let i = global_id_x();
    if i < n {
        out[i] = a * x[i] + y[i];
    }
}
