use std::path::Path;

use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("test paths have a parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

/// The multi-file layout: an entry that includes `../common/x.cuh` and a header from an
/// include dir, which includes a sibling.
pub(crate) fn multi_file_tree(root: &Path) {
    write(
        root,
        "kernels/axpby.cu",
        "#include \"../common/x.cuh\"\n#include <mylib/h.cuh>\n#include <cuda_fp16.h>\n\
         extern \"C\" __global__ void axpby() {}\n",
    );
    write(
        root,
        "common/x.cuh",
        "#pragma once\n#include <mylib/h.cuh>\n__device__ int x() { return 1; }\n",
    );
    write(
        root,
        "inc/mylib/h.cuh",
        "#pragma once\n#include \"detail.cuh\"\n",
    );
    write(
        root,
        "inc/mylib/detail.cuh",
        "#pragma once\n__device__ int d() { return 2; }\n",
    );
}

fn scan(root: &Path, source: &str, include_dirs: &[&str]) -> Result<Closure, ScanError> {
    scan_closure(&ScanRequest {
        source,
        include_dirs,
        base_dir: root,
        declared_in: "src/lib.rs",
    })
}

fn names(c: &Closure) -> Vec<&str> {
    c.files.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn follows_relative_and_include_dir_headers_in_discovery_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    multi_file_tree(dir.path());
    let c = scan(dir.path(), "kernels/axpby.cu", &["inc"]).expect("scan");
    assert_eq!(
        names(&c),
        [
            "axpby.cu",
            "../common/x.cuh",
            "mylib/h.cuh",
            "mylib/detail.cuh"
        ]
    );
    // x.cuh and the entry both include h.cuh: one file, two edges.
    assert_eq!(
        c.files[0].includes,
        [
            IncludeEdge { line: 1, file: 1 },
            IncludeEdge { line: 2, file: 2 }
        ]
    );
    assert_eq!(c.files[1].includes, [IncludeEdge { line: 2, file: 2 }]);
    assert_eq!(c.files[2].includes, [IncludeEdge { line: 2, file: 3 }]);
    assert_eq!(
        c.unresolved,
        [Unresolved {
            file: "axpby.cu".into(),
            line: 3,
            spelling: "cuda_fp16.h".into(),
            angled: true
        }]
    );
    assert!(c.files.iter().all(|f| f.path.is_absolute()));
}

#[test]
fn quoted_prefers_the_including_dir_and_angled_never_uses_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(
        root,
        "k/main.cu",
        "#include \"util.h\"\n#include <util.h>\n",
    );
    write(root, "k/util.h", "// local\n");
    write(root, "inc/util.h", "// from include dir\n");
    let c = scan(root, "k/main.cu", &["inc"]).expect("scan");
    assert_eq!(names(&c), ["main.cu", "util.h", "util.h"]);
    assert_eq!(c.files[1].content, "// local\n");
    assert_eq!(c.files[2].content, "// from include dir\n");
}

#[test]
fn a_missing_source_names_the_written_path_the_absolute_one_and_the_declaring_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = scan(dir.path(), "x.cu", &[]).expect_err("missing");
    let expected = format!(
        "kernel source `x.cu` not found at {} (relative to the declaring file src/lib.rs)",
        dir.path().join("x.cu").display()
    );
    assert_eq!(err.to_string(), expected);
}

#[test]
fn a_missing_include_dir_is_an_error_even_if_unused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "k.cu", "\n");
    let err = scan(dir.path(), "k.cu", &["nope"]).expect_err("missing dir");
    let expected = format!(
        "include dir `nope` not found at {} (relative to the declaring file src/lib.rs)",
        dir.path().join("nope").display()
    );
    assert_eq!(err.to_string(), expected);
    // A file is not a directory.
    let err = scan(dir.path(), "k.cu", &["k.cu"]).expect_err("file as dir");
    assert!(matches!(err, ScanError::IncludeDirNotFound { .. }), "{err}");
}

#[test]
fn an_unguarded_cycle_is_an_error_naming_the_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "k.cu", "#include \"a.h\"\n");
    write(root, "a.h", "#include \"b.h\"\n");
    write(root, "b.h", "\n#include \"a.h\"\n");
    let err = scan(root, "k.cu", &[]).expect_err("cycle");
    assert_eq!(
        err,
        ScanError::Cycle {
            chain: vec!["k.cu".into(), "a.h".into(), "b.h".into(), "a.h".into()]
        }
    );
    assert!(
        err.to_string().contains("k.cu -> a.h -> b.h -> a.h"),
        "{err}"
    );
}

#[test]
fn a_guarded_cycle_is_fine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "k.cu", "#include \"a.h\"\n");
    write(
        root,
        "a.h",
        "// guard\n#ifndef A_H\n#define A_H\n#include \"b.h\"\n#endif\n",
    );
    write(root, "b.h", "#pragma once\n#include \"a.h\"\n");
    let c = scan(root, "k.cu", &[]).expect("guarded cycle");
    assert_eq!(names(&c), ["k.cu", "a.h", "b.h"]);
    assert_eq!(c.files[2].includes, [IncludeEdge { line: 2, file: 1 }]);
}

#[test]
fn non_utf8_sources_are_a_read_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("k.cu"), b"int x;\xff\n").expect("write");
    let err = scan(dir.path(), "k.cu", &[]).expect_err("not utf-8");
    assert!(
        err.to_string()
            .contains("not UTF-8 (invalid byte at offset 6)"),
        "{err}"
    );
}

#[test]
fn relative_path_climbs_out_of_the_entry_dir() {
    assert_eq!(
        relative_path(Path::new("/a/b/k"), Path::new("/a/c/x.h")),
        Path::new("../../c/x.h")
    );
    assert_eq!(
        relative_path(Path::new("/a"), Path::new("/a/x.h")),
        Path::new("x.h")
    );
}
