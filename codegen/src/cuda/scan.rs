//! The include-closure scanner: from an entry `.cu` file, follow every `#include` that resolves to
//! a file, and return the closure in discovery order with each file's relative name and content.
//!
//! Resolution mirrors the preprocessor's: `#include "x"` tries the including file's directory,
//! then the include dirs in order; `#include <x>` tries the include dirs only. An include that
//! resolves nowhere (`<cuda_fp16.h>`) is left to NVRTC and listed in [`Closure::unresolved`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::decl::{IncludeEdge, SourceFile};
use super::directive::{directives, DirectiveKind};
use super::error::ScanError;
use super::guard::include_guard;

/// Deeper nesting than this is treated as a runaway include chain.
const MAX_DEPTH: usize = 200;

/// What to scan. Relative paths are relative to `base_dir`, the declaring Rust file's directory,
/// as with `include_str!`.
#[derive(Clone, Debug)]
pub struct ScanRequest<'a> {
    pub source: &'a str,
    pub include_dirs: &'a [&'a str],
    pub base_dir: &'a Path,
    /// The declaring file as messages show it: `src/lib.rs`.
    pub declared_in: &'a str,
}

/// One scanned file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedFile {
    /// Relative name (see [`SourceFile::name`]).
    pub name: String,
    /// Canonical absolute path: for the macro's `include_str!`, never for the cache key.
    pub path: PathBuf,
    pub content: String,
    pub includes: Vec<IncludeEdge>,
}

/// An include that resolved to no file; NVRTC's own headers are the usual case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unresolved {
    /// Name of the including file.
    pub file: String,
    pub line: u32,
    pub spelling: String,
    pub angled: bool,
}

/// The ordered, deduplicated include closure; `files[0]` is the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closure {
    pub files: Vec<ScannedFile>,
    pub unresolved: Vec<Unresolved>,
    /// The include dirs, canonical, in declaration order.
    pub include_dirs: Vec<PathBuf>,
}

impl Closure {
    /// The closure as the owned model the emitter and the runtime take.
    pub fn to_sources(&self) -> Vec<SourceFile> {
        self.files
            .iter()
            .map(|f| SourceFile {
                name: Cow::Owned(f.name.clone()),
                content: Cow::Owned(f.content.clone()),
                includes: Cow::Owned(f.includes.clone()),
            })
            .collect()
    }
}

/// Scans the closure of `req.source`.
pub fn scan_closure(req: &ScanRequest<'_>) -> Result<Closure, ScanError> {
    let entry_written = req.base_dir.join(req.source);
    let entry = match fs::canonicalize(&entry_written) {
        Ok(p) if p.is_file() => p,
        _ => {
            return Err(ScanError::SourceNotFound {
                written: req.source.to_string(),
                path: absolute(&entry_written),
                declared_in: req.declared_in.to_string(),
            })
        }
    };
    let mut include_dirs = Vec::with_capacity(req.include_dirs.len());
    for written in req.include_dirs {
        let joined = req.base_dir.join(written);
        match fs::canonicalize(&joined) {
            Ok(p) if p.is_dir() => include_dirs.push(p),
            _ => {
                return Err(ScanError::IncludeDirNotFound {
                    written: written.to_string(),
                    path: absolute(&joined),
                    declared_in: req.declared_in.to_string(),
                })
            }
        }
    }
    // The entry's dir always exists: the entry is a file in it.
    let entry_dir = entry.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut scanner = Scanner {
        entry_dir,
        include_dirs,
        files: Vec::new(),
        index: HashMap::new(),
        stack: Vec::new(),
        unresolved: Vec::new(),
    };
    scanner.visit(&entry)?;
    Ok(Closure {
        files: scanner.files,
        unresolved: scanner.unresolved,
        include_dirs: scanner.include_dirs,
    })
}

struct Scanner {
    entry_dir: PathBuf,
    include_dirs: Vec<PathBuf>,
    files: Vec<ScannedFile>,
    /// Canonical path → index in `files`.
    index: HashMap<PathBuf, usize>,
    /// Indices of the files being expanded, outermost first.
    stack: Vec<usize>,
    unresolved: Vec<Unresolved>,
}

impl Scanner {
    /// Adds `path` (canonical) and, depth first, everything it includes; returns its index.
    fn visit(&mut self, path: &Path) -> Result<usize, ScanError> {
        if let Some(&i) = self.index.get(path) {
            return Ok(i);
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(ScanError::TooDeep {
                chain: self.chain_names(),
            });
        }
        let content = read_text(path)?;
        let i = self.files.len();
        self.files.push(ScannedFile {
            name: self.relative_name(path),
            path: path.to_path_buf(),
            content,
            includes: Vec::new(),
        });
        self.index.insert(path.to_path_buf(), i);
        self.stack.push(i);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for d in directives(&self.files[i].content) {
            let DirectiveKind::Include { spelling, angled } = d.kind else {
                continue;
            };
            let Some(target) = self.resolve(&dir, &spelling, angled) else {
                self.unresolved.push(Unresolved {
                    file: self.files[i].name.clone(),
                    line: d.line,
                    spelling,
                    angled,
                });
                continue;
            };
            if let Some(&j) = self.index.get(&target) {
                if self.stack.contains(&j) && include_guard(&self.files[j].content).is_none() {
                    let mut chain = self.chain_names();
                    chain.push(self.files[j].name.clone());
                    return Err(ScanError::Cycle { chain });
                }
            }
            let j = self.visit(&target)?;
            self.files[i].includes.push(IncludeEdge {
                line: d.line,
                file: j as u32,
            });
        }
        self.stack.pop();
        Ok(i)
    }

    fn resolve(&self, dir: &Path, spelling: &str, angled: bool) -> Option<PathBuf> {
        let local = (!angled).then(|| dir.join(spelling));
        let from_dirs = self.include_dirs.iter().map(|d| d.join(spelling));
        local
            .into_iter()
            .chain(from_dirs)
            .find_map(|p| fs::canonicalize(p).ok().filter(|p| p.is_file()))
    }

    /// Relative to the entry's dir when inside it, else to the first include dir holding it, else
    /// a `../` path from the entry's dir. Always `/`-separated.
    fn relative_name(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(&self.entry_dir) {
            return slash_path(rel);
        }
        for d in &self.include_dirs {
            if let Ok(rel) = path.strip_prefix(d) {
                return slash_path(rel);
            }
        }
        slash_path(&relative_path(&self.entry_dir, path))
    }

    fn chain_names(&self) -> Vec<String> {
        self.stack
            .iter()
            .map(|&i| self.files[i].name.clone())
            .collect()
    }
}

fn read_text(path: &Path) -> Result<String, ScanError> {
    let bytes = fs::read(path).map_err(|e| ScanError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|e| ScanError::Read {
        path: path.to_path_buf(),
        message: format!(
            "not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

fn slash_path(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `to` relative to `from`, both absolute: `../common/x.cuh`.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// For messages about paths that do not exist, so cannot be canonicalized.
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests;
