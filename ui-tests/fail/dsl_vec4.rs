use opbox::prelude::*;

// load4/store4 move four f32 as one float4: not on i32 slices, and store4 not on an In.
#[kernel]
fn vec4(x: In<[i32]>, y: In<[f32]>, out: Out<[f32]>) {
    let i = global_id_x();
    let a = x.load4(i);
    y.store4(i, out.load4(i));
}

fn main() {}
