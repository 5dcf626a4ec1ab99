//! Build inputs for a group of kernels (Warp's `ModuleBuildOptions`): extra include dirs, a
//! preamble, and dependency files whose contents feed the cache key.
//!
//! Construction and [`BuildOptions::merged`] never touch the file system ("keeps composition
//! cheap", as Warp puts it); paths are checked when a kernel group is built, by
//! [`BuildOptions::resolve`], which also reads every dependency once.
//!
//! Where options attach: an extern-kernel group names a static,
//! `#[extern_kernel(source = "…", build = path::to::OPTIONS)]`, where `OPTIONS` is any static that
//! derefs to `BuildOptions`, typically a `std::sync::LazyLock<BuildOptions>` (absolute paths are
//! usually built from `env!("CARGO_MANIFEST_DIR")`). The options are resolved when the group is
//! first compiled in a process. The preamble goes after opbox's own header and before generated
//! code, so it may use opbox's macros and cannot define macros opbox's header reads.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BuildOptions {
    /// Absolute directories for `#include <…>` and `#include "…"`.
    pub include_dirs: Vec<PathBuf>,
    /// C++ text placed after opbox's header, before generated code.
    pub preamble: String,
    /// Absolute files the build depends on: their contents enter the cache key.
    pub dependencies: Vec<PathBuf>,
}

impl BuildOptions {
    pub fn new() -> BuildOptions {
        BuildOptions::default()
    }

    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> BuildOptions {
        self.include_dirs.push(dir.into());
        self
    }

    pub fn preamble(mut self, text: impl Into<String>) -> BuildOptions {
        self.preamble = text.into();
        self
    }

    pub fn dependency(mut self, file: impl Into<PathBuf>) -> BuildOptions {
        self.dependencies.push(file.into());
        self
    }

    /// A new set: `self` then each of `others`, in order. Include dirs and dependencies are
    /// appended and deduplicated by their exact spelling, the first occurrence winning.
    /// Preambles join with a newline: `a` if `b` is empty, `b` if `a` is empty, else `a` (with a
    /// `\n` added when it lacks one) followed by `b`; no newline is added after the last one.
    /// Nothing is mutated and nothing is checked.
    pub fn merged<'a>(&self, others: impl IntoIterator<Item = &'a BuildOptions>) -> BuildOptions {
        let mut out = self.clone();
        out.include_dirs = dedupe(&out.include_dirs, &[]);
        out.dependencies = dedupe(&out.dependencies, &[]);
        for o in others {
            out.include_dirs = dedupe(&out.include_dirs, &o.include_dirs);
            out.dependencies = dedupe(&out.dependencies, &o.dependencies);
            out.preamble = join_preambles(&out.preamble, &o.preamble);
        }
        out
    }

    /// Checks every path (all offenders are reported at once) and reads every dependency.
    pub fn resolve(&self) -> Result<ResolvedBuildOptions, BuildInputsError> {
        let mut err = BuildInputsError::default();
        for dir in &self.include_dirs {
            if !dir.is_absolute() {
                err.include_dirs.push(offender(dir, "not absolute"));
            } else if !dir.is_dir() {
                err.include_dirs.push(offender(dir, "not a directory"));
            }
        }
        let mut dependencies = Vec::with_capacity(self.dependencies.len());
        for file in &self.dependencies {
            if !file.is_absolute() {
                err.dependencies.push(offender(file, "not absolute"));
                continue;
            }
            if !file.is_file() {
                err.dependencies.push(offender(file, "not a file"));
                continue;
            }
            match std::fs::read(file) {
                Ok(content) => dependencies.push(Dependency {
                    path: file.clone(),
                    sha256: Sha256::digest(&content).into(),
                }),
                Err(e) => err
                    .dependencies
                    .push(offender(file, &format!("cannot be read: {e}"))),
            }
        }
        if !err.include_dirs.is_empty() || !err.dependencies.is_empty() {
            return Err(err);
        }
        let mut preamble = self.preamble.clone();
        if !preamble.is_empty() && !preamble.ends_with('\n') {
            preamble.push('\n');
        }
        Ok(ResolvedBuildOptions {
            include_dirs: self.include_dirs.clone(),
            preamble,
            dependencies,
        })
    }
}

fn dedupe(first: &[PathBuf], second: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(first.len() + second.len());
    for p in first.iter().chain(second) {
        if !out.iter().any(|q| q.as_os_str() == p.as_os_str()) {
            out.push(p.clone());
        }
    }
    out
}

fn join_preambles(a: &str, b: &str) -> String {
    if b.is_empty() {
        a.to_string()
    } else if a.is_empty() {
        b.to_string()
    } else if a.ends_with('\n') {
        format!("{a}{b}")
    } else {
        format!("{a}\n{b}")
    }
}

fn offender(p: &Path, why: &str) -> String {
    format!("'{}' ({why})", p.display())
}

/// One declared dependency, read at resolve time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dependency {
    pub path: PathBuf,
    pub sha256: [u8; 32],
}

/// Options whose paths were checked, ready for a build.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedBuildOptions {
    pub include_dirs: Vec<PathBuf>,
    /// The preamble with a trailing newline (when not empty).
    pub preamble: String,
    pub dependencies: Vec<Dependency>,
}

impl ResolvedBuildOptions {
    /// The options' part of a kernel cache key: SHA-256 over labeled, length-prefixed records of
    /// the preamble and each dependency's file name and content hash, in order.
    ///
    /// Absolute paths stay out, so the key survives moving the tree: include dirs enter through
    /// the include closure the scanner embeds (each file's relative name and content), and a
    /// dependency through its content. One changed byte in a dependency changes the key.
    pub fn key_component(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        let mut put = |label: &str, bytes: &[u8]| {
            for part in [label.as_bytes(), bytes] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part);
            }
        };
        put("opbox-build-options", b"1");
        put("preamble", self.preamble.as_bytes());
        for d in &self.dependencies {
            let name = d.path.file_name().unwrap_or(OsStr::new(""));
            put("dependency", name.as_encoded_bytes());
            put("sha256", &d.sha256);
        }
        h.finalize().into()
    }
}

/// Paths that failed validation, each with why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildInputsError {
    /// `'/x' (not a directory)`, `'rel' (not absolute)`.
    pub include_dirs: Vec<String>,
    /// `'/x.h' (not a file)`, `'rel.h' (not absolute)`.
    pub dependencies: Vec<String>,
}

impl fmt::Display for BuildInputsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.include_dirs.is_empty() {
            parts.push(format!(
                "include dirs must be absolute existing directories: {}",
                self.include_dirs.join(", ")
            ));
        }
        if !self.dependencies.is_empty() {
            parts.push(format!(
                "build dependencies must be absolute existing files: {}",
                self.dependencies.join(", ")
            ));
        }
        f.write_str(&parts.join("; "))
    }
}

impl std::error::Error for BuildInputsError {}

#[cfg(test)]
mod tests;
