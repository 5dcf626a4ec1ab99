//! Op plugins: `cdylib`s (Rust, C or C++) that register ops over the versioned C ABI of
//! [`abi::plugin_v1`](crate::abi::plugin_v1), loaded with [`load`].
//!
//! A loaded plugin's ops resolve with `opbox::op` like the ones linked in, on every dispatch key
//! the plugin registered. Loading the same file again is a no-op that returns the same
//! [`PluginInfo`]. What a plugin registers is checked as one batch against everything already
//! registered (a namespace defined twice names both sites); on any problem nothing of it is
//! registered and the host is unchanged.
//!
//! Plugins are never unloaded: the host keeps pointers into the plugin for the rest of the
//! process (its kernels, the vtables of tensors it made, the descriptors it registered), its code
//! may still run on other threads, and a Rust cdylib leaves thread-local destructors that
//! `dlclose` would pull from under them. This is also what makes a refused plugin harmless to
//! load again.
//!
//! # Files
//!
//! `load.rs` the loader and the descriptor's checks; `host.rs` the host table and the registrar,
//! which parses schemas through `schemas.rs`'s signature cache and keeps names in `arena.rs`;
//! `kernel.rs` a plugin's kernel as the dispatcher calls it, with the checks `plan.rs` works out
//! once per op; `convert.rs` values across the boundary; `tensor.rs` tensor headers (a tensor
//! object's own are `tensor::own_header`'s, and another image's, read in place, are
//! `tensor::other_image`'s); `guest.rs` the plugin side (`export_plugin!`), with
//! `call_stream.rs` keeping the host's current stream for the length of a kernel call.

mod arena;
pub(crate) mod call_stream;
mod convert;
pub mod guest;
mod host;
mod kernel;
mod load;
#[cfg(test)]
mod other_image;
mod plan;
mod schemas;
pub(crate) mod tensor;

use std::path::{Path, PathBuf};

use crate::abi::plugin_v1::ABI_VERSION;
use crate::Result;

/// What [`load`] found in a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The file, canonical.
    pub path: PathBuf,
    /// The name its descriptor gives (a Rust plugin's crate name).
    pub name: String,
    /// The plugin ABI version it was built against, packed (see `abi::plugin_v1`).
    pub abi_version: u64,
    /// The opbox version it was built with, packed; 0 for a plugin not built with opbox's crates.
    pub opbox_version: u64,
    /// The namespaces its libraries and fragments name, in registration order.
    pub namespaces: Vec<String>,
    /// Its ops, `ns::name[.overload]`, in registration order.
    pub ops: Vec<&'static str>,
}

impl PluginInfo {
    /// `1.1.0`.
    pub fn abi_version_string(&self) -> String {
        crate::abi::plugin_v1::version_string(self.abi_version)
    }

    /// `0.1.0`.
    pub fn opbox_version_string(&self) -> String {
        crate::abi::plugin_v1::version_string(self.opbox_version)
    }
}

/// How [`load_with`] loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// The host ABI version to offer the plugin: [`ABI_VERSION`] (all of this host), or an
    /// older one, whose table ends where that version's did, as an older host would show it.
    pub host_version: u64,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            host_version: ABI_VERSION,
        }
    }
}

/// Loads the plugin at `path` and registers its ops (see the module docs).
pub fn load(path: impl AsRef<Path>) -> Result<PluginInfo> {
    load::load_with(path.as_ref(), &LoadOptions::default())
}

/// [`load`] with options.
pub fn load_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<PluginInfo> {
    load::load_with(path.as_ref(), options)
}

/// Every plugin loaded so far, in load order.
pub fn loaded() -> Vec<PluginInfo> {
    load::loaded()
}
