use super::*;

#[test]
fn merged_keeps_first_occurrences_joins_preambles_and_leaves_inputs_untouched() {
    let base = BuildOptions::new()
        .include_dir("/base/include")
        .include_dir("/shared/include")
        .preamble("#define BASE_CUDA 1")
        .dependency("/base/dep.h");
    let addon = BuildOptions::new()
        .include_dir("/shared/include")
        .include_dir("/addon/include")
        .preamble("#define ADDON_CUDA 1\n")
        .dependency("/addon/dep.h")
        .dependency("/base/dep.h");
    let (base_before, addon_before) = (base.clone(), addon.clone());
    let m = base.merged([&addon]);
    assert_eq!(base, base_before);
    assert_eq!(addon, addon_before);
    assert_eq!(
        m.include_dirs,
        [
            PathBuf::from("/base/include"),
            "/shared/include".into(),
            "/addon/include".into()
        ]
    );
    assert_eq!(
        m.dependencies,
        [PathBuf::from("/base/dep.h"), "/addon/dep.h".into()]
    );
    // Warp's own test case.
    assert_eq!(m.preamble, "#define BASE_CUDA 1\n#define ADDON_CUDA 1\n");
}

#[test]
fn preambles_join_only_when_both_are_there_and_no_newline_is_added_at_the_end() {
    let p = |s: &str| BuildOptions::new().preamble(s);
    assert_eq!(p("a").merged([&p("")]).preamble, "a");
    assert_eq!(p("").merged([&p("b")]).preamble, "b");
    assert_eq!(p("a\n").merged([&p("b")]).preamble, "a\nb");
    assert_eq!(p("a").merged([&p("b"), &p("c")]).preamble, "a\nb\nc");
    assert_eq!(p("").merged([]).preamble, "");
}

#[test]
fn merged_with_several_and_with_none() {
    let a = BuildOptions::new().include_dir("/a").include_dir("/a");
    let b = BuildOptions::new().include_dir("/b").include_dir("/a");
    let c = BuildOptions::new().include_dir("/c").include_dir("/b");
    assert_eq!(
        a.merged([&b, &c]).include_dirs,
        [PathBuf::from("/a"), "/b".into(), "/c".into()]
    );
    assert_eq!(a.merged([]).include_dirs, [PathBuf::from("/a")]);
    // Exact spelling: no normalization, as Warp compares os.fspath strings.
    let d = BuildOptions::new().include_dir("/a/");
    assert_eq!(a.merged([&d]).include_dirs.len(), 2);
}

#[test]
fn construction_and_merge_check_nothing_resolve_lists_every_offender() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dep.h");
    std::fs::write(&file, "x").unwrap();
    let missing_dir = dir.path().join("nope");
    let missing_file = dir.path().join("nope.h");
    let opts = BuildOptions::new()
        .include_dir("relative/include")
        .include_dir(&file)
        .include_dir(dir.path())
        .dependency("rel.h")
        .dependency(dir.path())
        .dependency(&missing_file)
        .dependency(&file)
        .include_dir(&missing_dir);
    let merged = opts.merged([&BuildOptions::new()]);
    let e = merged.resolve().unwrap_err();
    assert_eq!(
        e.include_dirs,
        [
            "'relative/include' (not absolute)".to_string(),
            format!("'{}' (not a directory)", file.display()),
            format!("'{}' (not a directory)", missing_dir.display()),
        ]
    );
    assert_eq!(
        e.dependencies,
        [
            "'rel.h' (not absolute)".to_string(),
            format!("'{}' (not a file)", dir.path().display()),
            format!("'{}' (not a file)", missing_file.display()),
        ]
    );
    let text = e.to_string();
    assert!(
        text.starts_with(
            "include dirs must be absolute existing directories: 'relative/include' (not absolute), "
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "; build dependencies must be absolute existing files: 'rel.h' (not absolute), "
        ),
        "{text}"
    );
}

#[test]
fn resolve_normalizes_the_preamble_and_hashes_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dep.h");
    std::fs::write(&file, "#define X 1\n").unwrap();
    let r = BuildOptions::new()
        .include_dir(dir.path())
        .preamble("#define P 1")
        .dependency(&file)
        .resolve()
        .unwrap();
    assert_eq!(r.preamble, "#define P 1\n");
    assert_eq!(r.include_dirs, [dir.path().to_path_buf()]);
    assert_eq!(r.dependencies.len(), 1);
    assert_eq!(
        r.dependencies[0].sha256,
        <[u8; 32]>::from(Sha256::digest(b"#define X 1\n"))
    );
}

#[test]
fn one_changed_byte_in_a_dependency_changes_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dep.h");
    let opts = BuildOptions::new()
        .dependency(&file)
        .preamble("#define P 1");
    std::fs::write(&file, "#define X 1\n").unwrap();
    let k1 = opts.resolve().unwrap().key_component();
    assert_eq!(opts.resolve().unwrap().key_component(), k1, "stable");
    std::fs::write(&file, "#define X 2\n").unwrap();
    let k2 = opts.resolve().unwrap().key_component();
    assert_ne!(k1, k2);
    std::fs::write(&file, "#define X 1\n").unwrap();
    assert_eq!(opts.resolve().unwrap().key_component(), k1);
    // The preamble enters too.
    let other = opts.clone().preamble("#define P 2");
    assert_ne!(other.resolve().unwrap().key_component(), k1);
}

#[test]
fn the_key_does_not_depend_on_where_the_tree_is() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        std::fs::write(d.path().join("dep.h"), "same").unwrap();
    }
    let key = |d: &tempfile::TempDir| {
        BuildOptions::new()
            .include_dir(d.path())
            .dependency(d.path().join("dep.h"))
            .resolve()
            .unwrap()
            .key_component()
    };
    assert_eq!(key(&a), key(&b));
}
