//! Removing temp files that writers killed mid-write (SIGKILL, power loss) left behind. A temp
//! file is `.tmp-<pid>-<random>.kernel`; it is stale when it is older than a minute and its
//! writer is gone, or older than an hour whatever its name says (a pid reused by another
//! process, or a name from before pids were recorded).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

pub(super) const TEMP_PREFIX: &str = ".tmp-";
const QUIET: Duration = Duration::from_secs(60);
const ABANDONED: Duration = Duration::from_secs(60 * 60);

/// Sweeps `dir` the first time this process writes to it.
pub(super) fn once(dir: &Path) {
    static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let first = SWEPT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf());
    if first {
        sweep(dir, SystemTime::now());
    }
}

/// Best effort: a file that cannot be read or removed stays for the next sweep.
pub(super) fn sweep(dir: &Path, now: SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .filter(|n| n.ends_with(".kernel"))
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        let writer = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let stale = age > ABANDONED || (age > QUIET && !writer.is_some_and(alive));
        if stale && meta.is_file() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether process `pid` exists (it may belong to another user).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    // 0 and values past i32::MAX would address process groups: no writer has such a pid.
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that the process exists and may be
    // signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn alive(pid: u32) -> bool {
    pid == std::process::id()
}
