use opbox::builtin;

#[builtin(native = "my_addon::scale()")]
fn scale(x: f32, s: f32) -> f32;

#[builtin(native = "my_addon::")]
fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

fn main() {}
