//! opbox's DLPack types against a C compiler's view of the real `dlpack.h`: a small C program
//! prints `sizeof`, `offsetof` and the constants, and each must equal the Rust side.
//!
//! The header comes from `OPBOX_DLPACK_INCLUDE` (a directory holding `dlpack/dlpack.h` or
//! `dlpack.h`), else the first of the usual installs (system include dirs, a PyTorch wheel's
//! `torch/include/ATen/dlpack.h`). Without a header or a C compiler (`CC`, else `cc`) the test
//! prints why and passes: the sizes and offsets are also asserted at compile time in
//! `runtime/src/tensor/dlpack/ffi.rs`.

use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use opbox_runtime::tensor::dlpack::ffi::*;

fn find_header() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("OPBOX_DLPACK_INCLUDE") {
        dirs.push(d.into());
    }
    dirs.extend(["/usr/include", "/usr/local/include"].map(PathBuf::from));
    // PyTorch wheels ship the header; ask the Python on PATH where its packages live.
    if let Ok(out) = Command::new("python3")
        .args(["-c", "import site, sys; print('\\n'.join(site.getsitepackages() + [p for p in sys.path if p]))"])
        .output()
    {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            dirs.push(Path::new(line).join("torch/include/ATen"));
        }
    }
    dirs.push("/tmp/torchpy/torch/include/ATen".into());
    dirs.into_iter().find_map(|d| {
        [d.join("dlpack/dlpack.h"), d.join("dlpack.h")]
            .into_iter()
            .find(|h| h.is_file())
    })
}

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stddef.h>
#include HEADER
#define S(T) printf("sizeof %s %zu\n", #T, sizeof(T));
#define O(T, F) printf("offsetof %s.%s %zu\n", #T, #F, offsetof(T, F));
#define C(N) printf("const %s %llu\n", #N, (unsigned long long)(N));
int main(void) {
    S(DLPackVersion) S(DLDevice) S(DLDataType) S(DLTensor) S(DLManagedTensor)
    S(DLManagedTensorVersioned) S(DLDeviceType)
    O(DLPackVersion, major) O(DLPackVersion, minor)
    O(DLDevice, device_type) O(DLDevice, device_id)
    O(DLDataType, code) O(DLDataType, bits) O(DLDataType, lanes)
    O(DLTensor, data) O(DLTensor, device) O(DLTensor, ndim) O(DLTensor, dtype)
    O(DLTensor, shape) O(DLTensor, strides) O(DLTensor, byte_offset)
    O(DLManagedTensor, dl_tensor) O(DLManagedTensor, manager_ctx) O(DLManagedTensor, deleter)
    O(DLManagedTensorVersioned, version) O(DLManagedTensorVersioned, manager_ctx)
    O(DLManagedTensorVersioned, deleter) O(DLManagedTensorVersioned, flags)
    O(DLManagedTensorVersioned, dl_tensor)
    C(DLPACK_MAJOR_VERSION) C(DLPACK_FLAG_BITMASK_READ_ONLY) C(DLPACK_FLAG_BITMASK_IS_COPIED)
    C(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)
    C(kDLCPU) C(kDLCUDA) C(kDLCUDAHost) C(kDLOpenCL) C(kDLVulkan) C(kDLMetal) C(kDLVPI)
    C(kDLROCM) C(kDLROCMHost) C(kDLExtDev) C(kDLCUDAManaged) C(kDLOneAPI) C(kDLWebGPU)
    C(kDLHexagon) C(kDLMAIA)
    C(kDLInt) C(kDLUInt) C(kDLFloat) C(kDLBfloat) C(kDLComplex) C(kDLBool)
    return 0;
}
"#;

/// What the Rust side says for each line the C program prints.
fn expected() -> Vec<(String, u64)> {
    let mut e: Vec<(String, u64)> = Vec::new();
    let mut s = |k: &str, v: usize| e.push((k.to_string(), v as u64));
    s("sizeof DLPackVersion", size_of::<DLPackVersion>());
    s("sizeof DLDevice", size_of::<DLDevice>());
    s("sizeof DLDataType", size_of::<DLDataType>());
    s("sizeof DLTensor", size_of::<DLTensor>());
    s("sizeof DLManagedTensor", size_of::<DLManagedTensor>());
    s(
        "sizeof DLManagedTensorVersioned",
        size_of::<DLManagedTensorVersioned>(),
    );
    s("sizeof DLDeviceType", size_of::<DLDeviceType>());
    macro_rules! o {
        ($t:ident, $f:ident) => {
            s(
                concat!("offsetof ", stringify!($t), ".", stringify!($f)),
                offset_of!($t, $f),
            )
        };
    }
    o!(DLPackVersion, major);
    o!(DLPackVersion, minor);
    o!(DLDevice, device_type);
    o!(DLDevice, device_id);
    o!(DLDataType, code);
    o!(DLDataType, bits);
    o!(DLDataType, lanes);
    o!(DLTensor, data);
    o!(DLTensor, device);
    o!(DLTensor, ndim);
    o!(DLTensor, dtype);
    o!(DLTensor, shape);
    o!(DLTensor, strides);
    o!(DLTensor, byte_offset);
    o!(DLManagedTensor, dl_tensor);
    o!(DLManagedTensor, manager_ctx);
    o!(DLManagedTensor, deleter);
    o!(DLManagedTensorVersioned, version);
    o!(DLManagedTensorVersioned, manager_ctx);
    o!(DLManagedTensorVersioned, deleter);
    o!(DLManagedTensorVersioned, flags);
    o!(DLManagedTensorVersioned, dl_tensor);
    let mut c = |k: &str, v: u64| e.push((format!("const {k}"), v));
    c("DLPACK_MAJOR_VERSION", DLPACK_MAJOR_VERSION.into());
    c(
        "DLPACK_FLAG_BITMASK_READ_ONLY",
        DLPACK_FLAG_BITMASK_READ_ONLY,
    );
    c(
        "DLPACK_FLAG_BITMASK_IS_COPIED",
        DLPACK_FLAG_BITMASK_IS_COPIED,
    );
    c(
        "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED",
        DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    );
    for (name, t) in [
        ("kDLCPU", DLDeviceType::CPU),
        ("kDLCUDA", DLDeviceType::CUDA),
        ("kDLCUDAHost", DLDeviceType::CUDA_HOST),
        ("kDLOpenCL", DLDeviceType::OPENCL),
        ("kDLVulkan", DLDeviceType::VULKAN),
        ("kDLMetal", DLDeviceType::METAL),
        ("kDLVPI", DLDeviceType::VPI),
        ("kDLROCM", DLDeviceType::ROCM),
        ("kDLROCMHost", DLDeviceType::ROCM_HOST),
        ("kDLExtDev", DLDeviceType::EXT_DEV),
        ("kDLCUDAManaged", DLDeviceType::CUDA_MANAGED),
        ("kDLOneAPI", DLDeviceType::ONE_API),
        ("kDLWebGPU", DLDeviceType::WEB_GPU),
        ("kDLHexagon", DLDeviceType::HEXAGON),
        ("kDLMAIA", DLDeviceType::MAIA),
    ] {
        assert_eq!(t.name(), Some(name));
        c(name, t.0 as u64);
    }
    // The type codes opbox's dtypes use come from the type table; these are the kinds it has.
    for (name, code) in [
        ("kDLInt", 0u64),
        ("kDLUInt", 1),
        ("kDLFloat", 2),
        ("kDLBfloat", 4),
        ("kDLComplex", 5),
        ("kDLBool", 6),
    ] {
        c(name, code);
    }
    e
}

#[test]
fn rust_layout_matches_the_c_header() {
    let Some(header) = find_header() else {
        println!(
            "skipped: no dlpack.h found (set OPBOX_DLPACK_INCLUDE to a directory holding it); \
             ffi.rs's compile-time asserts still hold"
        );
        return;
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("layout.c");
    let exe = dir.path().join("layout");
    std::fs::write(&src, PROGRAM).unwrap();
    let define = format!("-DHEADER=\"{}\"", header.display());
    let built = match Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", &define, "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("skipped: no C compiler ({cc}: {e})");
            return;
        }
    };
    assert!(
        built.status.success(),
        "{cc} failed on {}:\n{}",
        header.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let printed: Vec<(String, u64)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    let expected = expected();
    assert_eq!(printed.len(), expected.len(), "one line per check");
    for ((pk, pv), (ek, ev)) in printed.iter().zip(&expected) {
        assert_eq!(pk, ek);
        assert_eq!(pv, ev, "{pk}: C says {pv}, opbox's Rust says {ev}");
    }
    println!(
        "checked {} sizes, offsets and constants against {}",
        printed.len(),
        header.display()
    );
}
