use opbox::prelude::*;

// A local array's length is fixed at compile time (a literal, a #[constexpr] param, or an
// arithmetic of those), its element's type is one the macro sees, and it is used by element.
#[kernel]
fn locals(x: In<[f32]>, y: Out<[f32]>, n: u32, #[constexpr] K: u32) {
    let mut a = [0.0f32; n];
    let mut b = [0.0f32; 0];
    let mut c = [x.load4(0); K];
    let mut d = [[0u32; 4]; 4];
    let e = [1.0f32; 4];
    let mut f: [f32; 4] = [0.0f32; 4];
    let mut g = [0.0f32; K / 2];
    let h = g;
    y[0] = a[0] + b[0] + c[0].x + e[0] + f[0] + h[0];
}

fn main() {}
