//! The disk cache's entries and directory, without NVRTC:
//! 3. an entry copied onto another key's path is refused and rebuilt, not served;
//! 4. a FIFO, a symlink to /dev/zero, a sparse 4 GiB file, a header claiming 4 GiB, a socket
//!    and a directory at an entry's path are removed without being read (healed) and rebuilt;
//! 8. entries are created 0644 less the umask, readable by other users;
//! 9. temp files that a killed writer left are swept by the next writer.

use std::fs::{self, File};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::process::Command;
use std::time::{Duration, SystemTime};

use opbox::cuda::codegen::CacheKey;
use opbox::cuda::{Artifact, DiskCache, ImageKind, Lookup};

use crate::harness::{ensure, s, Outcome, TestResult};

fn artifact() -> Artifact {
    Artifact {
        kind: ImageKind::Cubin,
        lowered_names: vec!["axpby".into()],
        image: (0..=255u8).cycle().take(4096).collect(),
    }
}

fn key(byte: u8) -> CacheKey {
    CacheKey([byte; 32])
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// Expects `key`'s lookup to find a bad entry naming `why`, leave nothing at the path, and the
/// rebuilt entry to be served.
fn expect_rebuilt(cache: &DiskCache, key: &CacheKey, why: &str) -> Result<(), String> {
    match cache.load(key) {
        Lookup::Corrupt(msg) if msg.contains(why) && msg.ends_with("(removed)") => {}
        other => return Err(format!("expected a removed entry ({why}), got {other:?}")),
    }
    let path = cache.entry_path(key);
    ensure(fs::symlink_metadata(&path).is_err(), || {
        format!("{why}: something is still at {}", path.display())
    })?;
    cache.store(key, &artifact()).map_err(s)?;
    ensure(cache.load(key) == Lookup::Hit(artifact()), || {
        format!("{why}: the rebuilt entry is not served")
    })
}

pub fn copied_entry() -> TestResult {
    let dir = tempfile::tempdir().map_err(io)?;
    let cache = DiskCache::new(dir.path());
    cache.store(&key(1), &artifact()).map_err(s)?;
    fs::copy(cache.entry_path(&key(1)), cache.entry_path(&key(2))).map_err(io)?;
    expect_rebuilt(&cache, &key(2), "the entry belongs to another cache key")?;
    ensure(cache.load(&key(1)) == Lookup::Hit(artifact()), || {
        "the original entry is still served".into()
    })?;
    Ok(Outcome::Pass)
}

pub fn special_files() -> TestResult {
    let dir = tempfile::tempdir().map_err(io)?;
    let cache = DiskCache::new(dir.path());
    let path = |k: u8| cache.entry_path(&key(k));

    // A FIFO: reading it would wait for a writer forever.
    let made = Command::new("mkfifo").arg(path(1)).status();
    if !made.is_ok_and(|s| s.success()) {
        return Ok(Outcome::Skip(
            "mkfifo is not available to make a FIFO".into(),
        ));
    }
    expect_rebuilt(&cache, &key(1), "a FIFO, not a cache entry")?;

    // A symlink to /dev/zero: following it would read without end.
    symlink("/dev/zero", path(2)).map_err(io)?;
    expect_rebuilt(&cache, &key(2), "a symbolic link, not a cache entry")?;

    // A sparse 4 GiB file: reading it whole would take 4 GiB.
    File::create(path(3))
        .and_then(|f| f.set_len(4 << 30))
        .map_err(io)?;
    expect_rebuilt(&cache, &key(3), "bad magic")?;

    // A valid header (this key's) that claims a 4 GiB payload, on a file that size.
    cache.store(&key(4), &artifact()).map_err(s)?;
    let mut header = fs::read(path(4)).map_err(io)?;
    header.truncate(80);
    header[40..48].copy_from_slice(&(4u64 << 30).to_le_bytes());
    fs::write(path(4), &header).map_err(io)?;
    File::options()
        .write(true)
        .open(path(4))
        .and_then(|f| f.set_len(80 + (4 << 30)))
        .map_err(io)?;
    expect_rebuilt(&cache, &key(4), "over the")?;

    // A socket.
    let listener = std::os::unix::net::UnixListener::bind(path(5)).map_err(io)?;
    expect_rebuilt(&cache, &key(5), "a socket, not a cache entry")?;
    drop(listener);

    // A directory with a file in it: it used to make every run compile again, silently.
    fs::create_dir(path(6)).map_err(io)?;
    fs::write(path(6).join("inside"), "x").map_err(io)?;
    expect_rebuilt(&cache, &key(6), "a directory, not a cache entry")?;
    Ok(Outcome::Pass)
}

pub fn entry_mode() -> TestResult {
    let dir = tempfile::tempdir().map_err(io)?;
    let cache = DiskCache::new(dir.path());
    cache.store(&key(1), &artifact()).map_err(s)?;
    // A plain create is 0666 less the umask, so this is 0644 less the umask.
    let probe = dir.path().join("probe");
    File::create(&probe).map_err(io)?;
    let mode = |p: &std::path::Path| fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    let expected = mode(&probe).map_err(io)? & 0o644;
    let got = mode(&cache.entry_path(&key(1))).map_err(io)?;
    ensure(got == expected, || {
        format!("entry mode {got:o}, expected {expected:o}")
    })?;
    Ok(Outcome::Pass)
}

pub fn stale_temps() -> TestResult {
    let dir = tempfile::tempdir().map_err(io)?;
    let now = SystemTime::now();
    let two_minutes_ago = now - Duration::from_secs(120);
    let two_hours_ago = now - Duration::from_secs(2 * 60 * 60);
    // No process has pid i32::MAX: pids stay below 2^22 on Linux.
    let dead = i32::MAX;
    let live = std::process::id();
    let files = [
        // Its writer is gone and it has been quiet for a minute: removed.
        (format!(".tmp-{dead}-killed.kernel"), two_minutes_ago),
        // Its writer may still be writing: kept.
        (format!(".tmp-{dead}-recent.kernel"), now),
        // Its writer (this process) is alive: kept.
        (format!(".tmp-{live}-slow.kernel"), two_minutes_ago),
        // No pid to ask, and an hour old: removed.
        (".tmp-Xa8f2Q.kernel".to_string(), two_hours_ago),
        // Not a temp file of the cache: kept.
        ("notes.txt".to_string(), two_hours_ago),
    ];
    for (name, mtime) in &files {
        File::create(dir.path().join(name))
            .and_then(|f| f.set_modified(*mtime))
            .map_err(io)?;
    }
    let cache = DiskCache::new(dir.path());
    cache.store(&key(1), &artifact()).map_err(s)?;
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .map_err(io)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected = vec![
        format!(".tmp-{dead}-recent.kernel"),
        format!(".tmp-{live}-slow.kernel"),
        format!("{}.kernel", key(1).hex()),
        "notes.txt".to_string(),
    ];
    expected.sort();
    ensure(names == expected, || {
        format!("left: {names:?}, expected {expected:?}")
    })?;
    Ok(Outcome::Pass)
}
