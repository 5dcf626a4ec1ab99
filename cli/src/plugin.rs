//! `--plugin`: load a cdylib and run the session inside it, through its `opbox_aot_v1`.

use std::path::{Path, PathBuf};

use opbox::aot::plugin::{call_v1, AotEntryV1, AOT_ENTRY_V1};
use opbox::aot::{AotEvent, AotRequest, AotSummary};
use opbox::{Error, Result};

pub struct Plugin {
    path: PathBuf,
    entry: AotEntryV1,
}

impl Plugin {
    pub fn load(path: &Path) -> Result<Plugin> {
        let refuse =
            |why: String| Error::InvalidArgument(format!("plugin '{}': {why}", path.display()));
        if !path.is_file() {
            return Err(refuse("no such file".into()));
        }
        // SAFETY: loading runs the library's initializers (its inventory registrations); the
        // user named this library as an opbox plugin, which is what they are asking to run.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| refuse(format!("cannot be loaded: {}", with_sources(&e))))?;
        // SAFETY: the symbol, when present, is `export_aot!`'s entry, of exactly this type.
        let entry = unsafe { library.get::<AotEntryV1>(AOT_ENTRY_V1) }
            .map(|symbol| *symbol)
            .map_err(|_| {
                refuse(
                    "does not export opbox_aot_v1; add `opbox::export_aot!();` to the plugin's \
                     crate root, build it as a cdylib, and try again"
                        .into(),
                )
            })?;
        // The library stays loaded for the rest of the process: its registrations and the
        // entry point must outlive every call, and unloading Rust code is not reliably safe.
        std::mem::forget(library);
        Ok(Plugin {
            path: path.to_path_buf(),
            entry,
        })
    }

    pub fn run(
        &self,
        request: &AotRequest,
        on_event: &(dyn Fn(AotEvent<'_>) + Sync),
    ) -> Result<AotSummary> {
        // SAFETY: `entry` is the plugin's `opbox_aot_v1` (export_aot!), which keeps the ABI's
        // contract, and its library is never unloaded.
        unsafe { call_v1(self.entry, request, on_event) }.map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("plugin '{}': {m}", self.path.display()))
            }
            other => other,
        })
    }
}

/// `e` and each error under it: libloading says "dlopen failed" and keeps dlerror's reason
/// ("...: invalid ELF header") as its source.
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
