//! A plugin: a cdylib that links extern kernels and exports opbox's AOT entry, so that
//! `opbox aot --plugin target/debug/examples/libaot_plugin.so --arch sm_90` compiles them
//! without the plugin's source or build. Build it with `cargo build -p opbox-cli --example
//! aot_plugin`.

use opbox::prelude::*;

opbox::export_aot!();

#[extern_kernel(source = "kernels/plugin_scale.cu")]
pub fn plugin_scale(x: In<[f32]>, out: Out<[f32]>, s: f32, n: i64);

#[extern_kernel(source = "kernels/plugin_offset.cu")]
pub fn plugin_offset(x: In<[i32]>, out: Out<[i32]>, offset: i32, n: i64);

// Has a #[constexpr] parameter: listed, but skipped by a whole-plugin AOT run.
#[extern_kernel(source = "kernels/plugin_block_sum.cu", constexpr = "template")]
pub fn plugin_block_sum(x: In<[f32]>, out: Out<[f32]>, n: i64, #[constexpr] BLOCK: i32);
