//! The C ABIs: `#[repr(C)]` types frozen per version, and the entries that speak them.
//!
//! - [`aot_v1`]: `opbox_aot_v1`, through which `opbox aot --plugin` drives a plugin's AOT session.

#[cfg(feature = "cuda")]
pub mod aot_v1;
