//! Extern kernels: slices, scalars, a `#[constexpr]` template argument, a quoted include next to
//! the source and an angle include from an include dir. Compiling is the test (no GPU needed).

use opbox::prelude::*;

#[extern_kernel(source = "kernels/axpby.cu", include_dirs = ["kernels/include"], entry = "axpby")]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

/// Fills `out` with `K`.
#[extern_kernel(source = "kernels/axpby.cu", entry = "fill_k", constexpr = "template")]
pub fn fill_k(out: InOut<[i32]>, n: i64, #[constexpr] K: i32);

fn main() {
    let decl = &axpby_f32::DECL;
    assert_eq!(decl.entry, "axpby");
    let names: Vec<&str> = decl.sources.iter().map(|f| f.name.as_ref()).collect();
    assert_eq!(names, ["axpby.cu", "common/x.cuh", "include/scale.h"]);
    assert_eq!(
        decl.rust_signature(),
        "fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64)"
    );
    let _: fn(LaunchConfig, &Tensor, &Tensor, &Tensor, f32, f32, i64) -> opbox::Result<()> =
        axpby_f32::launch;
    let _: fn(LaunchConfig, &Tensor, i64, i32) -> opbox::Result<()> = fill_k::launch;
    assert!(fill_k::HANDLE.decl().c_signature().starts_with("template <int K>"));
}
