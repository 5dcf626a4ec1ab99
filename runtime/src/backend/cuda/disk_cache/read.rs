//! Reading one entry without trusting what sits at its path. The path is opened without
//! following a symlink and without waiting on a FIFO, anything but a regular file is refused
//! before a byte is read, and the header is checked (magic, key, a capped length that must match
//! the file's size) before the payload is read: so no special file hangs a lookup, and no sparse
//! or endless file takes the memory its size claims. A small entry (at most 64 KiB, which every
//! image of a kernel or two is) is read whole in one `read`, then checked the same way.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _};
use std::path::Path;

use opbox_codegen::cuda::CacheKey;

use super::format::{check_header, decode_payload, HEADER};
use crate::backend::cuda::artifact::Artifact;

/// What the path held.
pub(super) enum Read {
    Missing,
    /// A regular file: the artifact, or why it is not a valid entry for this key.
    Entry(Result<Artifact, String>),
    /// Something else sits at the path (what it is, for the message).
    NotAFile(&'static str),
    /// A regular entry or the directory could not be read (permissions, I/O).
    Unreadable(io::Error),
}

pub(super) fn read_entry(path: &Path, key: &CacheKey) -> Read {
    let mut file = match open_no_follow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Read::Missing,
        Err(e) if is_symlink_refusal(&e) => return Read::NotAFile("a symbolic link"),
        // A socket cannot be opened at all (ENXIO): say what it is, rather than unreadable.
        Err(e) => {
            return match fs::symlink_metadata(path) {
                Ok(m) if !m.is_file() => Read::NotAFile(kind_of(&m.file_type())),
                _ => Read::Unreadable(e),
            }
        }
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Read::Unreadable(e),
    };
    if !meta.is_file() {
        return Read::NotAFile(kind_of(&meta.file_type()));
    }
    let size = meta.len();
    if size < HEADER as u64 {
        return Read::Entry(Err(format!("{size} bytes, shorter than the header")));
    }
    if size <= ONE_READ {
        return read_small(&mut file, size as usize, key);
    }
    let mut header = [0u8; HEADER];
    if let Err(e) = file.read_exact(&mut header) {
        return Read::Unreadable(e);
    }
    let len = match announced(&header, key, size) {
        Ok(len) => len,
        Err(why) => return Read::Entry(Err(why)),
    };
    let mut payload = vec![0u8; len];
    match file.read_exact(&mut payload) {
        Ok(()) => Read::Entry(decode_payload(&header, &payload)),
        Err(e) => read_failed(e),
    }
}

/// Entries up to this size (every NVRTC image of a kernel or two is a few KiB) are read whole in
/// one `read`, header and payload together; larger ones read their header first, and only the
/// payload it announces after it is checked.
const ONE_READ: u64 = 64 << 10;

/// An entry of `size` bytes (at least a header, at most [`ONE_READ`]), read in one go.
fn read_small(file: &mut File, size: usize, key: &CacheKey) -> Read {
    let mut whole = vec![0u8; size];
    if let Err(e) = file.read_exact(&mut whole) {
        return read_failed(e);
    }
    let (header, payload) = whole.split_at(HEADER);
    let Ok(header) = <&[u8; HEADER]>::try_from(header) else {
        return Read::Entry(Err(format!("{size} bytes, shorter than the header")));
    };
    Read::Entry(announced(header, key, size as u64).and_then(|_| decode_payload(header, payload)))
}

/// The payload length `header` announces, checked against `key` and the file's `size`.
fn announced(header: &[u8; HEADER], key: &CacheKey, size: u64) -> Result<usize, String> {
    let len = check_header(header, key)?;
    let actual = size - HEADER as u64;
    match (actual == len, usize::try_from(len)) {
        (true, Ok(len)) => Ok(len),
        _ => Err(format!("payload is {actual} bytes, header says {len}")),
    }
}

/// A read of an entry that failed: one that ran out before the size the file had is an entry
/// that shrank.
fn read_failed(e: io::Error) -> Read {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        Read::Entry(Err("the entry shrank while it was read".into()))
    } else {
        Read::Unreadable(e)
    }
}

/// Removes whatever sits at `path` (a directory with its contents): the path is the cache's own,
/// named after a key, so nothing there is anyone else's.
pub(super) fn remove(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NOFOLLOW: a symlink (to /dev/zero, say) is refused, not followed. O_NONBLOCK: opening a
    // FIFO returns at once instead of waiting for a writer, and the type check refuses it; on a
    // regular file it changes nothing.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<File> {
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other(SYMLINK));
    }
    OpenOptions::new().read(true).open(path)
}

#[cfg(not(unix))]
const SYMLINK: &str = "opbox: a symbolic link at a cache entry's path";

#[cfg(unix)]
fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_symlink_refusal(e: &io::Error) -> bool {
    e.to_string() == SYMLINK
}

#[cfg(unix)]
fn kind_of(t: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device file"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn kind_of(t: &fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}
