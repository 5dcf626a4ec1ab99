//! The `#[kernel]` and `#[device]` macros (the backend library, in process) on arbitrary token
//! streams: whatever the input, they return tokens (an expansion or compile errors) and never
//! panic. `cargo +nightly fuzz run kernel_macro`.

#![no_main]

use std::path::PathBuf;
use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use opbox_codegen::cuda::{Closure, ScanError, ScanRequest};
use opbox_macros_backend::{DeclaringFile, SourceLoader};
use proc_macro2::TokenStream;

/// No files: the DSL macros read only the declaring file's name.
struct NoFiles;

impl SourceLoader for NoFiles {
    fn declaring_file(&self) -> DeclaringFile {
        DeclaringFile {
            dir: PathBuf::from("."),
            shown: "fuzz/input.rs".into(),
        }
    }

    fn closure(&self, req: &ScanRequest<'_>) -> Result<Closure, ScanError> {
        Err(ScanError::SourceNotFound {
            written: req.source.to_string(),
            path: PathBuf::from(req.source),
            declared_in: req.declared_in.to_string(),
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // The first line is the attribute's arguments, the rest the item.
    let (attr, item) = text.split_once('\n').unwrap_or(("", text));
    let (Ok(attr), Ok(item)) = (TokenStream::from_str(attr), TokenStream::from_str(item)) else {
        return;
    };
    let _ = opbox_macros_backend::kernel(attr.clone(), item.clone(), &NoFiles);
    let _ = opbox_macros_backend::device(attr, item, &NoFiles);
});
