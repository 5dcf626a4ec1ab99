//! DLPack's C types, field for field as `dlpack.h` v1.x declares them (dmlc/dlpack,
//! `include/dlpack/dlpack.h`). Sizes and offsets are asserted below for 64-bit targets, and
//! `runtime/tests/dlpack_c_layout.rs` checks them against a C compiler's view of the real header.
//!
//! Enums that C declares as `enum` (`DLDeviceType`) are newtypes over their `int32_t` here, not
//! Rust enums: a producer may send a device type this header does not know yet, and a Rust enum
//! holding an unlisted value would be undefined behaviour before opbox could refuse it.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

/// The DLPack version opbox writes into the tensors it exports: the 1.1 codes are the ones its
/// device and dtype tables know. Any 1.x tensor is read (minor versions only add codes).
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The minor version opbox writes (see [`DLPACK_MAJOR_VERSION`]).
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the data.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy, which the consumer solely owns.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded, not packed.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Bumped for ABI-breaking changes: a consumer refuses another major.
    pub major: u32,
    /// Bumped for additions (new codes, flags).
    pub minor: u32,
}

/// `DLDeviceType` (an `int32_t`-sized C enum).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`: host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// `kDLOpenCL`.
    pub const OPENCL: DLDeviceType = DLDeviceType(4);
    /// `kDLVulkan`.
    pub const VULKAN: DLDeviceType = DLDeviceType(7);
    /// `kDLMetal`.
    pub const METAL: DLDeviceType = DLDeviceType(8);
    /// `kDLVPI`: Verilator.
    pub const VPI: DLDeviceType = DLDeviceType(9);
    /// `kDLROCM`: ROCm GPU memory.
    pub const ROCM: DLDeviceType = DLDeviceType(10);
    /// `kDLROCMHost`: pinned host memory for ROCm.
    pub const ROCM_HOST: DLDeviceType = DLDeviceType(11);
    /// `kDLExtDev`: a device outside the list, for testing.
    pub const EXT_DEV: DLDeviceType = DLDeviceType(12);
    /// `kDLCUDAManaged`: CUDA managed (unified) memory.
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);
    /// `kDLOneAPI`: oneAPI (SYCL) USM memory.
    pub const ONE_API: DLDeviceType = DLDeviceType(14);
    /// `kDLWebGPU`.
    pub const WEB_GPU: DLDeviceType = DLDeviceType(15);
    /// `kDLHexagon`: Qualcomm Hexagon DSP.
    pub const HEXAGON: DLDeviceType = DLDeviceType(16);
    /// `kDLMAIA`: Microsoft MAIA.
    pub const MAIA: DLDeviceType = DLDeviceType(17);
    /// `kDLTrn`: AWS Trainium.
    pub const TRN: DLDeviceType = DLDeviceType(18);

    /// The header's name for this code (`kDLCUDA`), or `None` for one it does not list.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "kDLCPU",
            2 => "kDLCUDA",
            3 => "kDLCUDAHost",
            4 => "kDLOpenCL",
            7 => "kDLVulkan",
            8 => "kDLMetal",
            9 => "kDLVPI",
            10 => "kDLROCM",
            11 => "kDLROCMHost",
            12 => "kDLExtDev",
            13 => "kDLCUDAManaged",
            14 => "kDLOneAPI",
            15 => "kDLWebGPU",
            16 => "kDLHexagon",
            17 => "kDLMAIA",
            18 => "kDLTrn",
            _ => return None,
        })
    }
}

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// Which kind of device.
    pub device_type: DLDeviceType,
    /// The device's ordinal among its kind (0 for the CPU).
    pub device_id: i32,
}

/// `DLDataType`: `code` is a `DLDataTypeCode` (kDLInt 0, kDLUInt 1, kDLFloat 2,
/// kDLOpaqueHandle 3, kDLBfloat 4, kDLComplex 5, kDLBool 6, float8 7-14, float6 15-16, float4 17).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// The type code (`DLDataTypeCode`).
    pub code: u8,
    /// Bits per lane (`32` for f32).
    pub bits: u8,
    /// Vector lanes per element (1 for a scalar dtype; opbox holds only 1).
    pub lanes: u16,
}

/// `DLTensor`: a view that manages no memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The data's base address (host or device), before `byte_offset`.
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: DLDevice,
    /// The number of dimensions.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// In elements; may be null only in legacy (pre-1.0) tensors, meaning row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the legacy (pre-1.0) managed tensor, no version and no flags.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context, for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it is done; null when there is nothing to free.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`: the DLPack 1.x exchange type.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's context, for its deleter.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it is done; null when there is nothing to free.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

// The header's layout on every 64-bit target opbox builds for (LP64 and LLP64 agree here).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<DLPackVersion>() == 8);
    assert!(size_of::<DLDevice>() == 8);
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLTensor>() == 48);
    assert!(offset_of!(DLTensor, data) == 0);
    assert!(offset_of!(DLTensor, device) == 8);
    assert!(offset_of!(DLTensor, ndim) == 16);
    assert!(offset_of!(DLTensor, dtype) == 20);
    assert!(offset_of!(DLTensor, shape) == 24);
    assert!(offset_of!(DLTensor, strides) == 32);
    assert!(offset_of!(DLTensor, byte_offset) == 40);
    assert!(size_of::<DLManagedTensor>() == 64);
    assert!(offset_of!(DLManagedTensor, manager_ctx) == 48);
    assert!(offset_of!(DLManagedTensor, deleter) == 56);
    assert!(size_of::<DLManagedTensorVersioned>() == 80);
    assert!(offset_of!(DLManagedTensorVersioned, version) == 0);
    assert!(offset_of!(DLManagedTensorVersioned, manager_ctx) == 8);
    assert!(offset_of!(DLManagedTensorVersioned, deleter) == 16);
    assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
    assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};
