//! The C ABIs: `#[repr(C)]` types frozen per version, and the entries that speak them.
//!
//! - [`aot_v1`]: `opbox_aot_v1`, through which `opbox aot --plugin` drives a plugin's AOT session.
//! - [`plugin_v1`]: `opbox_plugin_v1`, through which a host loads op plugins (`crate::plugin`).

#[cfg(feature = "cuda")]
pub mod aot_v1;
pub mod plugin_v1;
