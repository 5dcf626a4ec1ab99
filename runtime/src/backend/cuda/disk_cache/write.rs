//! Publishing one entry: written to a temp file in the cache directory, flushed to disk, renamed
//! over the entry, and the directory flushed, so a crash at any point leaves the old entry, no
//! entry, or the whole new one, never a torn one. Entries are mode 0644 less the umask, so a
//! cache filled by one user serves others.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::Path;

use super::read::remove;
use super::sweep::TEMP_PREFIX;

/// The failed step (for the message) and its error.
pub(super) type WriteError = (&'static str, io::Error);

pub(super) fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|e| ("create the directory", e))?;
    let mut builder = tempfile::Builder::new();
    // The pid lets a later sweep tell a dead writer's leftovers from a live writer's file.
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    builder.prefix(&prefix).suffix(".kernel");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o644));
    }
    let mut tmp = builder
        .tempfile_in(dir)
        .map_err(|e| ("create a temp file", e))?;
    tmp.write_all(bytes).map_err(|e| ("write a temp file", e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| ("flush a temp file to disk", e))?;
    if let Err(e) = tmp.persist(path) {
        // A directory at the entry's path cannot be renamed over: remove it, then try again.
        let is_dir = fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
        if !is_dir {
            return Err(("rename an entry", e.error));
        }
        remove(path).map_err(|e| ("remove a directory at an entry's path", e))?;
        e.file
            .persist(path)
            .map_err(|e| ("rename an entry", e.error))?;
    }
    sync_dir(dir).map_err(|e| ("flush the directory to disk", e))
}

/// Makes the rename durable. Some file systems cannot sync a directory at all; there the
/// rename is as durable as they make it.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}
