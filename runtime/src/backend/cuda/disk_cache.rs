//! The on-disk kernel cache: one file per cache key, so a fresh process skips NVRTC entirely.
//!
//! An entry is a 48-byte header (magic, payload length, SHA-256 of the payload) and the payload.
//! Reads verify all three, so a truncated or corrupt entry reads as a miss and is replaced.
//! Writes go to a temp file in the same directory and are renamed over the entry, which is atomic:
//! a reader sees the old entry, no entry, or the whole new one, and two processes writing the
//! same key both succeed (their payloads are identical; the last rename wins).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use opbox_codegen::cuda::CacheKey;
use sha2::{Digest, Sha256};

use super::artifact::Artifact;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"OPBOXK\x00\x01";
const HEADER: usize = 8 + 8 + 32;

/// The environment variable that moves the cache; set to an empty string to turn it off.
pub const CACHE_DIR_ENV: &str = "OPBOX_CACHE_DIR";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit(Artifact),
    Miss,
    /// An entry existed but failed verification; it has been removed.
    Corrupt(String),
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// `$OPBOX_CACHE_DIR`, else `<platform cache dir>/opbox/kernels` (`$XDG_CACHE_HOME` or
    /// `~/.cache` on Linux); `None` when the variable is set but empty, or no cache dir is known.
    pub fn from_env() -> Option<DiskCache> {
        match std::env::var_os(CACHE_DIR_ENV) {
            Some(v) if v.is_empty() => None,
            Some(v) => Some(DiskCache::new(v)),
            None => dirs::cache_dir().map(|d| DiskCache::new(d.join("opbox").join("kernels"))),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.kernel", key.hex()))
    }

    pub fn load(&self, key: &CacheKey) -> Lookup {
        let path = self.entry_path(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(_) => return Lookup::Miss,
        };
        match verify(&bytes) {
            Ok(artifact) => Lookup::Hit(artifact),
            Err(why) => {
                // Best effort: if removal fails, the rebuilt entry's rename replaces it anyway.
                let _ = fs::remove_file(&path);
                Lookup::Corrupt(format!("{}: {why}", path.display()))
            }
        }
    }

    /// Writes the entry atomically (temp file + rename).
    pub fn store(&self, key: &CacheKey, artifact: &Artifact) -> Result<()> {
        let io = |what: &str, e: std::io::Error| {
            Error::Message(format!(
                "kernel cache: cannot {what} in {}: {e}",
                self.dir.display()
            ))
        };
        fs::create_dir_all(&self.dir).map_err(|e| io("create the directory", e))?;
        let bytes = encode(artifact);
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .suffix(".kernel")
            .tempfile_in(&self.dir)
            .map_err(|e| io("create a temp file", e))?;
        tmp.write_all(&bytes)
            .map_err(|e| io("write a temp file", e))?;
        tmp.persist(self.entry_path(key))
            .map_err(|e| io("rename an entry", e.error))?;
        Ok(())
    }
}

fn encode(artifact: &Artifact) -> Vec<u8> {
    let payload = artifact.encode();
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&payload));
    out.extend_from_slice(&payload);
    out
}

fn verify(bytes: &[u8]) -> std::result::Result<Artifact, String> {
    if bytes.len() < HEADER {
        return Err(format!("{} bytes, shorter than the header", bytes.len()));
    }
    let (header, payload) = bytes.split_at(HEADER);
    if &header[..8] != MAGIC {
        return Err("not an opbox kernel entry (bad magic)".into());
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[8..16]);
    let len = u64::from_le_bytes(len);
    if len != payload.len() as u64 {
        return Err(format!(
            "payload is {} bytes, header says {len}",
            payload.len()
        ));
    }
    if Sha256::digest(payload).as_slice() != &header[16..] {
        return Err("payload hash mismatch".into());
    }
    Artifact::decode(payload).ok_or_else(|| "payload does not decode".into())
}

#[cfg(test)]
mod tests;
