//! The content-addressed cache key of one compiled kernel specialization.
//!
//! SHA-256 over labeled, length-prefixed records (so no two different input lists can run
//! together into the same byte stream): the opbox version, the NVRTC version, the arch, the
//! options, the preamble, the constexpr values, each closure file's relative name, content and
//! resolved includes, and finally the emitted translation unit itself, which also catches any
//! change in the emitter between two builds of one opbox version. Absolute paths never enter, so a
//! cache stays valid when the source tree moves.

use std::fmt;

use sha2::{Digest, Sha256};

use super::decl::KernelDecl;
use super::emit::TranslationUnit;
use crate::types::ConstValue;

/// Everything a compiled artifact depends on.
#[derive(Clone, Copy, Debug)]
pub struct KeyInputs<'a> {
    pub opbox_version: &'a str,
    /// `(major, minor)` from `nvrtcVersion`.
    pub nvrtc_version: (i32, i32),
    /// `sm_90`, or `compute_90` for PTX.
    pub arch: &'a str,
    /// Every NVRTC option, the declaration's included, in the order passed.
    pub options: &'a [String],
    pub decl: &'a KernelDecl,
    pub constexprs: &'a [ConstValue],
    pub unit: &'a TranslationUnit,
    /// The build options' part ([`crate::build_options::ResolvedBuildOptions::key_component`]):
    /// preamble and dependency contents. Their include dirs stay out (absolute paths).
    pub build: Option<[u8; 32]>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey(pub [u8; 32]);

impl CacheKey {
    /// 64 lowercase hex digits: the cache file's name.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.hex())
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

struct Records(Sha256);

impl Records {
    fn put(&mut self, label: &str, bytes: &[u8]) {
        for part in [label.as_bytes(), bytes] {
            self.0.update((part.len() as u64).to_le_bytes());
            self.0.update(part);
        }
    }
}

pub fn cache_key(k: &KeyInputs<'_>) -> CacheKey {
    let mut r = Records(Sha256::new());
    r.put("opbox-kernel-cache", b"1");
    r.put("opbox_version", k.opbox_version.as_bytes());
    r.put(
        "nvrtc_version",
        format!("{}.{}", k.nvrtc_version.0, k.nvrtc_version.1).as_bytes(),
    );
    r.put("arch", k.arch.as_bytes());
    for o in k.options {
        r.put("option", o.as_bytes());
    }
    r.put("preamble", k.decl.preamble.as_bytes());
    r.put("entry", k.decl.entry.as_bytes());
    r.put(
        "constexpr_style",
        format!("{:?}", k.decl.constexpr_style).as_bytes(),
    );
    for p in k.decl.params.iter() {
        r.put("param", format!("{}: {:?}", p.name, p.kind).as_bytes());
    }
    for v in k.constexprs {
        r.put("constexpr", v.key_text().as_bytes());
    }
    for f in k.decl.sources.iter() {
        r.put("file", f.name.as_bytes());
        r.put("content", f.content.as_bytes());
        for e in f.includes.iter() {
            r.put("include", format!("{}->{}", e.line, e.file).as_bytes());
        }
    }
    if let Some(b) = &k.build {
        r.put("build_options", b);
    }
    r.put("unit", k.unit.source.as_bytes());
    r.put("name_expression", k.unit.name_expression.as_bytes());
    CacheKey(r.0.finalize().into())
}

#[cfg(test)]
mod tests;
