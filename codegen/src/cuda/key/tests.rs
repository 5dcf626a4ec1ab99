use std::borrow::Cow;
use std::fs;
use std::path::Path;

use super::*;
use crate::cuda::decl::tests::axpby_decl;
use crate::cuda::emit::emit;
use crate::cuda::scan::{scan_closure, ScanRequest};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

fn tree(root: &Path, header: &str) {
    write(
        root,
        "kernels/axpby.cu",
        "#include \"../common/x.cuh\"\n#include <mylib/h.cuh>\n",
    );
    write(
        root,
        "common/x.cuh",
        "#pragma once\n__device__ int x() { return 1; }\n",
    );
    write(root, "inc/mylib/h.cuh", header);
}

/// Key of the tree at `root`, scanned as the macro would scan it.
fn key_of(root: &Path, arch: &str, constexprs: &[ConstValue]) -> CacheKey {
    let closure = scan_closure(&ScanRequest {
        source: "kernels/axpby.cu",
        include_dirs: &["inc"],
        base_dir: root,
        declared_in: "src/lib.rs",
    })
    .expect("scan");
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(closure.to_sources());
    let unit = emit(&decl, &[]).expect("emit");
    let options = vec![
        "--gpu-architecture=sm_90".to_string(),
        "-std=c++17".to_string(),
    ];
    cache_key(&KeyInputs {
        opbox_version: "0.1.0",
        nvrtc_version: (13, 0),
        arch,
        options: &options,
        decl: &decl,
        constexprs,
        unit: &unit,
        build: None,
    })
}

#[test]
fn relocating_the_tree_keeps_the_key() {
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    let b_deeper = b.path().join("some/other/place");
    tree(a.path(), "#pragma once\nint h;\n");
    tree(&b_deeper, "#pragma once\nint h;\n");
    assert_eq!(
        key_of(a.path(), "sm_90", &[]),
        key_of(&b_deeper, "sm_90", &[])
    );
}

#[test]
fn one_byte_in_a_header_changes_the_key() {
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    tree(a.path(), "#pragma once\nint h;\n");
    tree(b.path(), "#pragma once\nint i;\n");
    assert_ne!(
        key_of(a.path(), "sm_90", &[]),
        key_of(b.path(), "sm_90", &[])
    );
}

#[test]
fn arch_and_constexpr_values_change_the_key() {
    let a = tempfile::tempdir().expect("tempdir");
    tree(a.path(), "\n");
    let base = key_of(a.path(), "sm_90", &[]);
    assert_ne!(base, key_of(a.path(), "sm_80", &[]));
    assert_ne!(base, key_of(a.path(), "sm_90", &[ConstValue::I32(1)]));
    assert_ne!(
        key_of(a.path(), "sm_90", &[ConstValue::F32(0.0)]),
        key_of(a.path(), "sm_90", &[ConstValue::F32(-0.0)])
    );
    assert_eq!(base.hex().len(), 64);
}

#[test]
fn records_cannot_run_together() {
    // ("ab", "c") and ("a", "bc") as two options must not collide.
    let decl = axpby_decl("");
    let unit = emit(&decl, &[]).expect("emit");
    let key = |options: &[String]| {
        cache_key(&KeyInputs {
            opbox_version: "0.1.0",
            nvrtc_version: (13, 0),
            arch: "sm_90",
            options,
            decl: &decl,
            constexprs: &[],
            unit: &unit,
            build: None,
        })
    };
    assert_ne!(
        key(&["ab".into(), "c".into()]),
        key(&["a".into(), "bc".into()])
    );
}
