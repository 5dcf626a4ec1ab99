//! `load`: open a plugin, check what it says it is, and register what it registers.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::guest::descriptor_name;
use super::host::{clear_error, table_for, take_error_text, Registration};
use super::kernel::PluginKernels;
use super::{LoadOptions, PluginInfo};
use crate::abi::plugin_v1::{
    unpack_version, version_string, EntryV1, HostV1, PluginV1, ABI_V1_4, ABI_VERSION, ENTRY_V1,
    HOST_FUNCTIONS_SINCE_1_0, PLUGIN_SIZE_V1_0, STATUS_OK,
};
use crate::dispatch::foreign::{self, ForeignBatch, Registered};
use crate::{Error, Result};

/// The plugins loaded so far, by canonical path, with their info less its `ops`, which their
/// batch gives. The lock also keeps two loads from interleaving their registrations.
static LOADED: Mutex<Vec<(PathBuf, PluginInfo, Registered)>> = Mutex::new(Vec::new());

/// `info` with its ops, from their batch.
fn with_ops(info: &PluginInfo, batch: Registered) -> PluginInfo {
    PluginInfo {
        ops: batch.op_names(),
        ..info.clone()
    }
}

fn refuse(path: &Path, message: impl Into<String>) -> Error {
    Error::Plugin {
        path: path.display().to_string(),
        source: Box::new(Error::Message(message.into())),
    }
}

pub(crate) fn loaded() -> Vec<PluginInfo> {
    LOADED
        .lock()
        .iter()
        .map(|&(_, ref info, batch)| with_ops(info, batch))
        .collect()
}

pub(crate) fn load_with(path: &Path, options: &LoadOptions) -> Result<PluginInfo> {
    let canonical = path
        .canonicalize()
        .map_err(|e| refuse(path, format!("cannot be opened: {e}")))?;
    let mut loaded = LOADED.lock();
    if let Some(&(_, ref info, batch)) = loaded.iter().find(|(p, ..)| *p == canonical) {
        return Ok(with_ops(info, batch));
    }
    // SAFETY: loading runs the library's initializers; the caller named it as a plugin to run.
    let library = unsafe { libloading::Library::new(&canonical) }
        .map_err(|e| refuse(path, format!("cannot be loaded: {}", with_sources(&e))))?;
    // SAFETY: the symbol, when present, is a plugin entry of exactly this type (the ABI).
    let entry: EntryV1 = match unsafe { library.get::<EntryV1>(ENTRY_V1) } {
        Ok(symbol) => *symbol,
        Err(_) => {
            return Err(refuse(
                path,
                "does not export opbox_plugin_v1: build it as a cdylib with \
                 `opbox::export_plugin!();` at its crate root (or, in C, define the entry \
                 opbox.h declares)",
            ))
        }
    };
    // A plugin is never unloaded, also when it is refused: its code may already be running on
    // other threads (initializers may start them), the host holds pointers into it (kernels,
    // vtables of tensors it made, leaked registration strings), and Rust cdylibs leave
    // thread-local destructors and statics behind that dlclose would pull from under them.
    std::mem::forget(library);

    let host: &'static HostV1 = table_for(options.host_version);
    clear_error();
    // SAFETY: the plugin's entry, called once with a table that lives for the process.
    let desc = unsafe { entry(host) };
    if desc.is_null() {
        let why = take_error_text().unwrap_or_else(|| "no reason given".to_string());
        return Err(refuse(path, format!("refused to load: {why}")));
    }
    // SAFETY: a non-null descriptor, static in the plugin; its fields are read only as far as
    // its size says they exist.
    let desc = unsafe { check_descriptor(path, desc, host.version)? };
    // SAFETY: the name is null or a static NUL-terminated string.
    let name = unsafe { descriptor_name(desc.name) }.unwrap_or_else(|| {
        canonical
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let image: &'static str = Box::leak(canonical.display().to_string().into_boxed_str());
    let mut registration = Registration::new();
    clear_error();
    // SAFETY: the descriptor's `register`, with a registrar that lives for the call.
    let status = unsafe { (desc.register)(registration.as_registrar()) };
    registration.shrink();
    let Registration {
        libraries,
        ops,
        impls,
        names,
        mut kernels,
        mut errors,
        ..
    } = registration;
    if host.version < ABI_V1_4 {
        // A host shown as older than 1.4 (`LoadOptions::host_version`) calls only `kernel`, as
        // such a host would.
        kernels.iter_mut().for_each(|k| k.in_place = None);
    }
    let failed = |e: Error| Error::Plugin {
        path: path.display().to_string(),
        source: Box::new(e),
    };
    match errors.len() {
        0 => {}
        1 => return Err(failed(errors.remove(0))),
        _ => return Err(failed(Error::Registration(errors))),
    }
    if status != STATUS_OK {
        let why = take_error_text().unwrap_or_else(|| "no reason given".to_string());
        return Err(refuse(path, format!("registration failed: {why}")));
    }
    let mut namespaces: Vec<String> = Vec::new();
    for lib in &libraries {
        if !namespaces.iter().any(|n| n == lib.namespace) {
            namespaces.push(lib.namespace.to_string());
        }
    }
    let batch = foreign::register(ForeignBatch {
        image,
        libraries,
        ops,
        impls,
        names,
        kernels: Box::new(PluginKernels {
            raw: kernels,
            image,
        }),
    })
    .map_err(failed)?;
    let info = PluginInfo {
        path: canonical.clone(),
        name,
        abi_version: desc.abi_version,
        opbox_version: desc.opbox_version,
        namespaces,
        ops: Vec::new(),
    };
    let whole = with_ops(&info, batch);
    loaded.push((canonical, info, batch));
    Ok(whole)
}

/// # Safety
/// `desc` is a live descriptor whose first field is its size.
unsafe fn check_descriptor<'a>(
    path: &Path,
    desc: *const PluginV1,
    offered: u64,
) -> Result<&'a PluginV1> {
    // SAFETY: every descriptor starts with its u64 size.
    let size = unsafe { desc.cast::<u64>().read() };
    if size < 16 {
        return Err(refuse(
            path,
            format!("its descriptor is {size} bytes, too small to hold its version"),
        ));
    }
    // SAFETY: at least 16 bytes: the version follows the size.
    let version = unsafe { desc.cast::<u64>().add(1).read() };
    let (major, _, _) = unpack_version(version);
    let (host_major, _, _) = unpack_version(ABI_VERSION);
    if major != host_major {
        return Err(refuse(
            path,
            format!(
                "it was built for plugin ABI {}, but this host speaks major version {host_major} \
                 (it offers {}); rebuild the plugin against this opbox",
                version_string(version),
                version_string(offered)
            ),
        ));
    }
    if (size as usize) < PLUGIN_SIZE_V1_0 {
        return Err(refuse(
            path,
            format!(
                "its descriptor is {size} bytes, smaller than the {PLUGIN_SIZE_V1_0} bytes its \
                 version {} has",
                version_string(version)
            ),
        ));
    }
    // SAFETY: as large as a 1.0 descriptor, every field of which is read below.
    let desc = unsafe { &*desc };
    if desc.min_host_version > offered {
        let needed: Vec<&str> = HOST_FUNCTIONS_SINCE_1_0
            .iter()
            .filter(|(_, since)| *since > offered && *since <= desc.min_host_version)
            .map(|(name, _)| *name)
            .collect();
        let needed = if needed.is_empty() {
            String::new()
        } else {
            format!(" (for {})", needed.join(", "))
        };
        return Err(refuse(
            path,
            format!(
                "it needs host ABI {}{needed}, but this host offers {}",
                version_string(desc.min_host_version),
                version_string(offered)
            ),
        ));
    }
    Ok(desc)
}

/// `e` and each error under it: libloading's "dlopen failed" keeps dlerror's text as a source.
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}
