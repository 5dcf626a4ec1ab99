//! Exports `OPBOX_CODEGEN_DIGEST`, a SHA-256 over this crate's sources. The device-alias cache key
//! (see `cuda::key::alias_key`) is computed without emitting the translation unit, so it names
//! the emitter by this digest instead: any change to the code that writes units moves every alias.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    collect(Path::new("src"), &mut files);
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        // Paths relative to the crate (with `/`), so the digest does not depend on where the
        // crate was built.
        let name = file.to_string_lossy().replace('\\', "/");
        let content = fs::read(file).unwrap_or_default();
        for part in [name.as_bytes(), &content] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=OPBOX_CODEGEN_DIGEST={digest}");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "cuh" || e == "h")
        {
            out.push(path);
        }
    }
}
