use crate::cuda::module::ModuleMember;
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
        members: &[ModuleMember {
            decl: &decl,
            constexprs,
        }],
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
            members: &[ModuleMember {
                decl: &decl,
                constexprs: &[],
            }],
            unit: &unit,
            build: None,
        })
    };
    assert_ne!(
        key(&["ab".into(), "c".into()]),
        key(&["a".into(), "bc".into()])
    );
}

fn alias_of(decl: &KernelDecl, options: &[String], constexprs: &[ConstValue]) -> CacheKey {
    alias_key(&AliasInputs {
        opbox_version: "0.1.0",
        arch: 90,
        options,
        members: &[ModuleMember { decl, constexprs }],
        build: None,
        shared_structs: &[],
    })
}

#[test]
fn the_alias_moves_with_every_field_the_emitter_reads_and_not_with_the_site() {
    let base = axpby_decl("");
    let options = vec!["--gpu-architecture=sm_90".to_string()];
    let key = alias_of(&base, &options, &[]);
    let changed = |edit: &dyn Fn(&mut KernelDecl)| {
        let mut d = axpby_decl("");
        edit(&mut d);
        alias_of(&d, &options, &[])
    };
    assert_ne!(key, changed(&|d| d.rust_name = "other".into()));
    assert_ne!(key, changed(&|d| d.entry = "other".into()));
    assert_ne!(key, changed(&|d| d.preamble = "#define X 1\n".into()));
    assert_ne!(
        key,
        changed(&|d| d.abi = crate::cuda::EntryAbi::ConstantParams)
    );
    assert_ne!(
        key,
        changed(&|d| {
            let mut sources = d.sources.to_vec();
            sources[0].content = format!("{} ", sources[0].content).into();
            d.sources = sources.into();
        })
    );
    assert_ne!(
        key,
        changed(&|d| {
            let mut params = d.params.to_vec();
            params.pop();
            d.params = params.into();
        })
    );
    // Where the Rust declaration sits is not in the unit, so it stays out of the alias.
    assert_eq!(
        key,
        changed(&|d| d.declared_at = "src/elsewhere.rs:99".into())
    );
    assert_ne!(key, alias_of(&base, &[], &[]));
    assert_ne!(key, alias_of(&base, &options, &[ConstValue::I32(1)]));
}

#[test]
fn the_alias_is_never_a_full_key() {
    let decl = axpby_decl("");
    let unit = emit(&decl, &[]).expect("emit");
    let options = vec!["--gpu-architecture=sm_90".to_string()];
    let full = cache_key(&KeyInputs {
        opbox_version: "0.1.0",
        nvrtc_version: (0, 0),
        arch: "sm_90",
        options: &options,
        members: &[ModuleMember {
            decl: &decl,
            constexprs: &[],
        }],
        unit: &unit,
        build: None,
    });
    assert_ne!(full, alias_of(&decl, &options, &[]));
}

#[test]
fn a_key_is_named_by_its_bytes_in_lowercase_hex_high_nibble_first() {
    let mut bytes = [0u8; 32];
    bytes[..4].copy_from_slice(&[0x00, 0x0f, 0xa5, 0xf0]);
    bytes[31] = 0xff;
    let hex = CacheKey(bytes).hex();
    assert_eq!(&hex[..8], "000fa5f0");
    assert_eq!(&hex[8..62], "0".repeat(54));
    assert_eq!(&hex[62..], "ff");
}
