//! `include/opbox.h` against the Rust ABI (`opbox::plugin::abi`): every size, offset and
//! constant, as this machine's C and C++ compilers see them, and the header compiles as C11 and
//! C++17 with warnings as errors.

use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use opbox::plugin::abi::*;
use opbox::tensor::dlpack::{DLDeviceType, DLTensor};
use opbox::{DType, Tag};

/// What the Rust side says, in layout.c's line format.
fn expected() -> Vec<String> {
    let sizes = [
        ("OpboxValue", size_of::<Value>()),
        ("OpboxStrRef", size_of::<StrRef>()),
        ("OpboxString", size_of::<AbiString>()),
        ("OpboxList", size_of::<AbiList>()),
        ("OpboxTensorVTable", size_of::<TensorVTable>()),
        ("OpboxTensor", size_of::<TensorHeader>()),
        ("OpboxDLTensor", size_of::<DLTensor>()),
        ("OpboxLibraryDesc", size_of::<LibraryDesc>()),
        ("OpboxOpDesc", size_of::<OpDesc>()),
        ("OpboxImplDesc", size_of::<ImplDesc>()),
        ("OpboxHostV1", size_of::<HostV1>()),
        ("OpboxPluginV1", size_of::<PluginV1>()),
    ];
    let offsets = [
        ("OpboxValue.payload", offset_of!(Value, payload)),
        ("OpboxString.release", offset_of!(AbiString, release)),
        ("OpboxList.data", offset_of!(AbiList, data)),
        ("OpboxList.release", offset_of!(AbiList, release)),
        (
            "OpboxTensorVTable.release",
            offset_of!(TensorVTable, release),
        ),
        ("OpboxTensor.refcount", offset_of!(TensorHeader, refcount)),
        ("OpboxTensor.flags", offset_of!(TensorHeader, flags)),
        ("OpboxTensor.dl", offset_of!(TensorHeader, dl)),
        ("OpboxDLTensor.dtype", offset_of!(DLTensor, dtype)),
        ("OpboxDLTensor.shape", offset_of!(DLTensor, shape)),
        (
            "OpboxDLTensor.byte_offset",
            offset_of!(DLTensor, byte_offset),
        ),
        // C++ reserves `namespace`: the header spells the field `name_space`.
        (
            "OpboxLibraryDesc.name_space",
            offset_of!(LibraryDesc, namespace),
        ),
        ("OpboxLibraryDesc.file", offset_of!(LibraryDesc, file)),
        ("OpboxOpDesc.schema", offset_of!(OpDesc, schema)),
        ("OpboxImplDesc.kernel", offset_of!(ImplDesc, kernel)),
        ("OpboxImplDesc.function", offset_of!(ImplDesc, function)),
        ("OpboxImplDesc.line", offset_of!(ImplDesc, line)),
        (
            "OpboxImplDesc.kernel_in_place",
            offset_of!(ImplDesc, kernel_in_place),
        ),
        ("OpboxHostV1.set_error", offset_of!(HostV1, set_error)),
        ("OpboxHostV1.library", offset_of!(HostV1, library)),
        ("OpboxHostV1.tensor_empty", offset_of!(HostV1, tensor_empty)),
        ("OpboxHostV1.call_op", offset_of!(HostV1, call_op)),
        ("OpboxHostV1.op_schema", offset_of!(HostV1, op_schema)),
        ("OpboxHostV1.warn", offset_of!(HostV1, warn)),
        (
            "OpboxHostV1.current_stream",
            offset_of!(HostV1, current_stream),
        ),
        (
            "OpboxHostV1.tensor_from_bytes",
            offset_of!(HostV1, tensor_from_bytes),
        ),
        ("OpboxHostV1.tensor_to", offset_of!(HostV1, tensor_to)),
        (
            "OpboxPluginV1.min_host_version",
            offset_of!(PluginV1, min_host_version),
        ),
        ("OpboxPluginV1.name", offset_of!(PluginV1, name)),
        // C reserves `register`: the header spells the field `register_ops`.
        ("OpboxPluginV1.register_ops", offset_of!(PluginV1, register)),
    ];
    let tags = [
        ("NONE", Tag::None),
        ("BOOL", Tag::Bool),
        ("INT", Tag::Int),
        ("FLOAT", Tag::Float),
        ("STR", Tag::Str),
        ("TENSOR", Tag::Tensor),
        ("LIST", Tag::List),
        ("DTYPE", Tag::DType),
        ("DEVICE", Tag::Device),
        ("SCALAR", Tag::Scalar),
    ];
    let dl_code = |d: DType| u64::from(d.elem().dlpack().0);
    let mut constants: Vec<(String, u64)> = vec![
        ("OPBOX_ABI_V1_0".into(), ABI_V1_0),
        ("OPBOX_ABI_V1_1".into(), ABI_V1_1),
        ("OPBOX_ABI_V1_2".into(), ABI_V1_2),
        ("OPBOX_ABI_V1_3".into(), ABI_V1_3),
        ("OPBOX_ABI_V1_4".into(), ABI_V1_4),
        ("OPBOX_ABI_V1_5".into(), ABI_V1_5),
        ("OPBOX_ABI_V1_6".into(), ABI_V1_6),
        ("OPBOX_ABI_VERSION".into(), ABI_VERSION),
        ("OPBOX_OK".into(), STATUS_OK as u64),
        ("OPBOX_ERROR".into(), STATUS_ERROR as u64),
        ("OPBOX_PANIC".into(), STATUS_PANIC as u64),
    ];
    constants.extend(
        tags.iter()
            .map(|(name, tag)| (format!("OPBOX_TAG_{name}"), *tag as u64)),
    );
    constants.extend([
        ("OPBOX_LIBRARY_DEF".into(), u64::from(LIBRARY_DEF)),
        ("OPBOX_LIBRARY_FRAGMENT".into(), u64::from(LIBRARY_FRAGMENT)),
        ("OPBOX_TENSOR_FLAG_READ_ONLY".into(), TENSOR_FLAG_READ_ONLY),
        ("OPBOX_DL_CPU".into(), DLDeviceType::CPU.0 as u64),
        ("OPBOX_DL_CUDA".into(), DLDeviceType::CUDA.0 as u64),
        ("OPBOX_DL_INT".into(), dl_code(DType::I32)),
        ("OPBOX_DL_UINT".into(), dl_code(DType::U8)),
        ("OPBOX_DL_FLOAT".into(), dl_code(DType::F32)),
        ("OPBOX_DL_BFLOAT".into(), dl_code(DType::BF16)),
        ("OPBOX_DL_BOOL".into(), dl_code(DType::Bool)),
    ]);
    sizes
        .iter()
        .map(|(name, v)| format!("sizeof {name} {v}"))
        .chain(
            offsets
                .iter()
                .map(|(name, v)| format!("offsetof {name} {v}")),
        )
        .chain(
            constants
                .iter()
                .map(|(name, v)| format!("const {name} {v}")),
        )
        .collect()
}

/// Compiles layout.c with `compiler` in `std` mode and runs it.
fn layout_as(compiler: &str, std: &str, language: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = dir.path().join("layout");
    let built = Command::new(compiler)
        .args([
            std,
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-x",
            language,
        ])
        .arg(format!("-I{}", root.join("include").display()))
        .arg(root.join("tests/fixtures/c_plugin/layout.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("running `{compiler}`: {e}"));
    assert!(
        built.status.success(),
        "{compiler} {std} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).output().expect("running layout");
    assert!(ran.status.success());
    String::from_utf8_lossy(&ran.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_header_matches_the_rust_abi_as_c11() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    assert_eq!(layout_as(&cc, "-std=c11", "c"), expected());
}

#[test]
fn the_header_matches_the_rust_abi_as_cpp17() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    assert_eq!(layout_as(&cxx, "-std=c++17", "c++"), expected());
}
