//! The on-disk kernel cache: one file per cache key, so a fresh process skips NVRTC entirely.
//!
//! - [`format`]: an entry is a header (magic, its key, payload length, SHA-256 of the payload)
//!   and the payload. A truncated, corrupt or misplaced entry reads as [`Lookup::Corrupt`], is
//!   removed, and is rebuilt.
//! - `read`: a lookup never follows a symlink, never blocks on a special file and never reads
//!   more than a valid header announces; anything but a regular file at an entry's path is
//!   removed (healed) like a corrupt entry.
//! - [`write`]: temp file, fsync, rename, fsync of the directory; entries are 0644 less the umask.
//!   Two processes writing the same key both succeed (same bytes; the last rename wins).
//! - `sweep`: temp files of killed writers are removed by the next process that writes.

mod format;
mod read;
mod sweep;
mod write;

use std::path::{Path, PathBuf};

use opbox_codegen::cuda::CacheKey;

use super::artifact::Artifact;
use crate::error::{Error, Result};
use read::{read_entry, remove, Read};

/// The environment variable that moves the cache; set to an empty string to turn it off.
pub const CACHE_DIR_ENV: &str = "OPBOX_CACHE_DIR";

/// The kernel disk cache: one verified file per cache key under a directory, written atomically
/// (see the README's CUDA section for what it trusts and sweeps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The entry, verified.
    Hit(Artifact),
    /// No entry.
    Miss,
    /// An entry existed but failed verification, or something other than an entry sat at its
    /// path; it has been removed (the message says so, or why it could not be).
    Corrupt(String),
    /// The entry or the directory could not be read (permissions, I/O, a file where the
    /// directory should be): a miss, whose reason belongs in any error that follows.
    Unreadable(String),
}

impl DiskCache {
    /// A cache in `dir` (created on the first store).
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

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `key`'s entry lives: `<dir>/<key hex>.kernel`.
    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.kernel", key.hex()))
    }

    /// Reads and verifies `key`'s entry; a corrupt one is removed.
    pub fn load(&self, key: &CacheKey) -> Lookup {
        let path = self.entry_path(key);
        let why = match read_entry(&path, key) {
            Read::Missing => return Lookup::Miss,
            Read::Entry(Ok(artifact)) => return Lookup::Hit(artifact),
            Read::Unreadable(e) => {
                return Lookup::Unreadable(format!("cannot read {}: {e}", path.display()))
            }
            Read::Entry(Err(why)) => why,
            Read::NotAFile(what) => format!("{what}, not a cache entry"),
        };
        // If removal fails, the rebuilt entry's store says why it cannot replace it.
        let removed = match remove(&path) {
            Ok(()) => "removed".to_string(),
            Err(e) => format!("could not be removed: {e}"),
        };
        Lookup::Corrupt(format!("{}: {why} ({removed})", path.display()))
    }

    /// Whether `key`'s entry is there and verifies, read exactly as [`load`](Self::load) reads
    /// it; unlike `load`, nothing is removed, whatever sits at the path.
    pub(crate) fn holds(&self, key: &CacheKey) -> bool {
        matches!(read_entry(&self.entry_path(key), key), Read::Entry(Ok(_)))
    }

    /// Writes the entry atomically and durably (see [`write`]).
    pub fn store(&self, key: &CacheKey, artifact: &Artifact) -> Result<()> {
        let bytes = format::encode(key, artifact);
        if bytes.len() as u64 > format::HEADER as u64 + format::MAX_PAYLOAD {
            return Err(Error::Message(format!(
                "kernel cache: an image of {} bytes is larger than an entry may be",
                bytes.len()
            )));
        }
        sweep::once(&self.dir);
        write::write_atomically(&self.dir, &self.entry_path(key), &bytes).map_err(|(what, e)| {
            Error::Message(format!(
                "kernel cache: cannot {what} in {}: {e}",
                self.dir.display()
            ))
        })
    }
}

#[cfg(test)]
mod tests;
