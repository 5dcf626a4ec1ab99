//! The content-addressed cache key of one compiled module (one or more kernels of one file).
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
use super::module::ModuleMember;
use crate::native::NativeSchema;
use crate::types::ConstValue;

/// A digest of this crate's sources (build.rs): what the device alias names the emitter by.
const CODEGEN_DIGEST: &str = env!("OPBOX_CODEGEN_DIGEST");

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
    /// The kernels of the module, in the unit's order.
    pub members: &'a [ModuleMember<'a>],
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
        // A first launch names its cache entry with this: a table, not 32 `format!` calls.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(64);
        for b in self.0 {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 15)]));
        }
        out
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
    r.put("opbox-kernel-cache", b"2");
    r.put("opbox_version", k.opbox_version.as_bytes());
    r.put(
        "nvrtc_version",
        format!("{}.{}", k.nvrtc_version.0, k.nvrtc_version.1).as_bytes(),
    );
    r.put("arch", k.arch.as_bytes());
    for o in k.options {
        r.put("option", o.as_bytes());
    }
    for m in k.members {
        r.put_decl(m.decl, m.constexprs);
    }
    r.put_build(k.build);
    r.put("unit", k.unit.source.as_bytes());
    for e in &k.unit.name_expressions {
        r.put("name_expression", e.as_bytes());
    }
    for h in k.unit.headers {
        r.put("header", h.name.as_bytes());
        r.put("header_content", h.content.as_bytes());
    }
    CacheKey(r.0.finalize().into())
}

/// Everything a device alias depends on (see the runtime's `compile_for_device`).
#[derive(Clone, Copy, Debug)]
pub struct AliasInputs<'a> {
    pub opbox_version: &'a str,
    /// The device's `major * 10 + minor`.
    pub arch: u32,
    /// The NVRTC options the runtime passes, without the include paths (machine paths).
    pub options: &'a [String],
    /// The kernels of the module, in the unit's order.
    pub members: &'a [ModuleMember<'a>],
    pub build: Option<[u8; 32]>,
    /// The structs of the entry file's other kernels, which the unit defines too.
    pub shared_structs: &'a [&'static NativeSchema],
}

/// The device alias: the full key's inputs without NVRTC's version and without the emitted unit.
/// A first launch computes it without emitting anything; in place of the unit it names what the
/// unit is made from: the emitter (by `CODEGEN_DIGEST`), every declaration field the emitter
/// reads, and the shared structs.
pub fn alias_key(k: &AliasInputs<'_>) -> CacheKey {
    let mut r = Records(Sha256::new());
    r.put("opbox-device-alias", b"3");
    r.put("opbox_version", k.opbox_version.as_bytes());
    r.put("codegen", CODEGEN_DIGEST.as_bytes());
    r.put("arch", &k.arch.to_le_bytes());
    for o in k.options {
        r.put("option", o.as_bytes());
    }
    for m in k.members {
        r.put("rust_name", m.decl.rust_name.as_bytes());
        r.put("abi", format!("{:?}", m.decl.abi).as_bytes());
        r.put_decl(m.decl, m.constexprs);
    }
    r.put_build(k.build);
    for s in k.shared_structs {
        r.put("shared_struct", format!("{s:?}").as_bytes());
    }
    CacheKey(r.0.finalize().into())
}

impl Records {
    /// The declaration's part of both keys: what the emitter reads from it, and the values.
    fn put_decl(&mut self, decl: &KernelDecl, constexprs: &[ConstValue]) {
        self.put("preamble", decl.preamble.as_bytes());
        self.put("entry", decl.entry.as_bytes());
        self.put(
            "constexpr_style",
            format!("{:?}", decl.constexpr_style).as_bytes(),
        );
        for p in decl.params.iter() {
            self.put("param", format!("{}: {:?}", p.name, p.kind).as_bytes());
        }
        for v in constexprs {
            self.put("constexpr", v.key_text().as_bytes());
        }
        for f in decl.sources.iter() {
            self.put("file", f.name.as_bytes());
            self.put("content", f.content.as_bytes());
            for e in f.includes.iter() {
                self.put("include", format!("{}->{}", e.line, e.file).as_bytes());
            }
        }
    }

    fn put_build(&mut self, build: Option<[u8; 32]>) {
        if let Some(b) = &build {
            self.put("build_options", b);
        }
    }
}

#[cfg(test)]
mod tests;
