use std::fs;

use super::format::encode;
use super::*;
use crate::backend::cuda::artifact::ImageKind;

fn artifact() -> Artifact {
    artifact_of(4096)
}

/// An artifact whose image is `len` bytes: 4 KiB is read in one go, 100 KB header first.
fn artifact_of(len: usize) -> Artifact {
    Artifact {
        kind: ImageKind::Cubin,
        lowered_names: vec!["axpby".into()],
        image: (0..=255u8).cycle().take(len).collect(),
    }
}

fn key(byte: u8) -> CacheKey {
    CacheKey([byte; 32])
}

#[test]
fn stores_and_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = DiskCache::new(dir.path().join("nested/kernels"));
    assert_eq!(cache.load(&key(1)), Lookup::Miss);
    cache.store(&key(1), &artifact()).expect("store");
    assert_eq!(cache.load(&key(1)), Lookup::Hit(artifact()));
    assert_eq!(cache.load(&key(2)), Lookup::Miss);
    // Only the entry is left behind: no temp files.
    let names: Vec<_> = fs::read_dir(cache.dir())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from(format!("{}.kernel", key(1).hex()))]
    );
}

#[test]
fn truncated_flipped_and_foreign_entries_read_as_corrupt_and_are_removed() {
    for len in [4096, 100_000] {
        corrupt_entries_of(artifact_of(len));
    }
}

fn corrupt_entries_of(artifact: Artifact) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = DiskCache::new(dir.path());
    let path = cache.entry_path(&key(1));
    let good = encode(&key(1), &artifact);
    let size = good.len();
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let mut bad_len = good.clone();
    bad_len[40] ^= 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated payload",
            good[..good.len() - 10].to_vec(),
            "header says",
        ),
        (
            "truncated header",
            good[..20].to_vec(),
            "shorter than the header",
        ),
        ("flipped byte", flipped, "hash mismatch"),
        ("wrong length", bad_len, "header says"),
        (
            "foreign file",
            b"hello, this is not a kernel entry at all, no sir, not at all; it only looks long enough to hold a header".to_vec(),
            "bad magic",
        ),
        ("empty", Vec::new(), "shorter than the header"),
    ];
    for (what, bytes, why) in cases {
        fs::write(&path, bytes).expect("write");
        assert!(!cache.holds(&key(1)), "{what} ({size} bytes): not held");
        assert!(
            path.exists(),
            "{what} ({size} bytes): `holds` removes nothing"
        );
        match cache.load(&key(1)) {
            Lookup::Corrupt(msg) => assert!(msg.contains(why), "{what} ({size} bytes): {msg}"),
            other => panic!("{what} ({size} bytes): expected Corrupt, got {other:?}"),
        }
        assert!(
            !path.exists(),
            "{what} ({size} bytes): the corrupt entry is removed"
        );
    }
    cache.store(&key(1), &artifact).expect("rebuild");
    assert!(cache.holds(&key(1)));
    assert_eq!(cache.load(&key(1)), Lookup::Hit(artifact));
}

#[test]
fn concurrent_writers_of_one_key_all_succeed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = DiskCache::new(dir.path());
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..20 {
                    cache.store(&key(3), &artifact()).expect("store");
                    assert_eq!(cache.load(&key(3)), Lookup::Hit(artifact()));
                }
            });
        }
    });
}

#[test]
fn env_selects_the_dir_and_empty_disables() {
    // One test owns this variable, so parallel tests do not race on it.
    std::env::set_var(CACHE_DIR_ENV, "/some/where");
    assert_eq!(DiskCache::from_env(), Some(DiskCache::new("/some/where")));
    std::env::set_var(CACHE_DIR_ENV, "");
    assert_eq!(DiskCache::from_env(), None);
    std::env::remove_var(CACHE_DIR_ENV);
    if let Some(c) = DiskCache::from_env() {
        assert!(c.dir().ends_with("opbox/kernels"), "{}", c.dir().display());
    }
}
