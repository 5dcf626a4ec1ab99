use opbox::builtin;

#[builtin(native = "my_addon::label")]
fn label(id: u32, text: String) -> f32;

#[builtin(native = "my_addon::ids")]
fn ids(n: u32) -> Vec<u32>;

fn main() {}
