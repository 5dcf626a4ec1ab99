use opbox::prelude::*;

#[derive(Clone, Copy, opbox::NativeType)]
#[repr(C)]
#[native(name = "ui::RenderParams", initializer = "aggregate")]
pub struct RenderParams {
    scale: f32,
}

#[derive(Clone, Copy, opbox::NativeType)]
#[repr(C)]
#[native(name = "ui::BlurParams", initializer = "aggregate")]
pub struct BlurParams {
    radius: i32,
}

// One params type per module: a second kernel here with the same type is fine...
#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn render(p: RenderParams);

#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn render_again(p: RenderParams);

// ...another type is not.
#[extern_kernel(source = "kernels/ok.cu", abi = "constant_params")]
fn blur(p: BlurParams);

fn main() {}
