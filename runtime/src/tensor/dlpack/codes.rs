//! DLPack's dtype and device codes for opbox's [`DType`] and [`Device`].
//!
//! The dtype codes are not written here: each dtype's `(type code, bits)` is its row's DLPack
//! column in codegen's one type table (`codegen/src/types/table.rs`), read through
//! [`ElemType::dlpack`](opbox_codegen::types::ElemType::dlpack). A dtype added to the table is
//! imported and exported with no change here.

use super::ffi::{DLDataType, DLDevice, DLDeviceType};
use crate::{DType, Device, Error, Result};

/// The names of DLPack's type codes, for errors.
fn type_code_name(code: u8) -> &'static str {
    match code {
        0 => "kDLInt",
        1 => "kDLUInt",
        2 => "kDLFloat",
        3 => "kDLOpaqueHandle",
        4 => "kDLBfloat",
        5 => "kDLComplex",
        6 => "kDLBool",
        7 => "kDLFloat8_e3m4",
        8 => "kDLFloat8_e4m3",
        9 => "kDLFloat8_e4m3b11fnuz",
        10 => "kDLFloat8_e4m3fn",
        11 => "kDLFloat8_e4m3fnuz",
        12 => "kDLFloat8_e5m2",
        13 => "kDLFloat8_e5m2fnuz",
        14 => "kDLFloat8_e8m0fnu",
        15 => "kDLFloat6_e2m3fn",
        16 => "kDLFloat6_e3m2fn",
        17 => "kDLFloat4_e2m1fn",
        _ => "an unknown type code",
    }
}

/// `dtype` as DLPack spells it (one lane).
pub(crate) fn to_dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = dtype.elem().dlpack();
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The dtype DLPack's `t` names, or an error saying why opbox cannot hold it.
pub(crate) fn from_dl_dtype(t: DLDataType) -> Result<DType> {
    from_dl_dtype_for(t, "from_dlpack")
}

/// [`from_dl_dtype`] for `doing`, which its error names (a plugin host function, say).
pub(crate) fn from_dl_dtype_for(t: DLDataType, doing: &str) -> Result<DType> {
    match dl_dtype(t) {
        Some(d) => Ok(d),
        None => no_dtype(t, doing),
    }
}

/// The dtype DLPack's `t` names, None for one opbox cannot hold: the lookup alone, for a
/// header already checked.
#[inline]
pub(crate) fn dl_dtype(t: DLDataType) -> Option<DType> {
    if t.lanes == 1 && t.bits.is_power_of_two() && (8..=128).contains(&t.bits) {
        let by_bits = BY_DLPACK.get(usize::from(t.code))?;
        return *by_bits.get((t.bits.trailing_zeros() - 3) as usize)?;
    }
    None
}

/// The dtype of each DLPack `(code, bits)` the type table gives, indexed by code and by bits as
/// 8 << i: built from the table at compile time, so that importing a header (a plugin call
/// imports one per tensor) is an index, not a search.
const BY_DLPACK: [[Option<DType>; 5]; 32] = {
    let mut table = [[None; 5]; 32];
    let mut i = 0;
    while i < DType::ALL.len() {
        let d = DType::ALL[i];
        let (code, bits) = d.elem().dlpack();
        assert!(
            (code as usize) < 32 && bits.is_power_of_two() && bits >= 8 && bits <= 128,
            "a DLPack code past the lookup table"
        );
        let slot = &mut table[code as usize][(bits.trailing_zeros() - 3) as usize];
        assert!(slot.is_none(), "two dtypes with one DLPack (code, bits)");
        *slot = Some(d);
        i += 1;
    }
    table
};

/// Why `t`, which `BY_DLPACK` does not hold, is no opbox dtype.
#[cold]
#[inline(never)]
fn no_dtype(t: DLDataType, doing: &str) -> Result<DType> {
    let named = || {
        format!(
            "DLPack dtype {{code {} ({}), bits {}, lanes {}}}",
            t.code,
            type_code_name(t.code),
            t.bits,
            t.lanes
        )
    };
    if t.lanes != 1 {
        return Err(Error::Unsupported(format!(
            "{doing}: {} is a vector type ({} lanes); opbox tensors hold one value per \
             element (lanes = 1)",
            named(),
            t.lanes
        )));
    }
    let same_code: Vec<String> = DType::ALL
        .into_iter()
        .filter(|d| d.elem().dlpack().0 == t.code)
        .map(|d| format!("{d} ({} bits)", d.elem().dlpack().1))
        .collect();
    let hint = if same_code.is_empty() {
        "opbox has no dtype of this kind".to_string()
    } else {
        format!("of this kind opbox holds {}", same_code.join(", "))
    };
    Err(Error::Unsupported(format!(
        "{doing}: {} has no opbox dtype: {hint}",
        named()
    )))
}

/// `device` as DLPack spells it; meta has no DLPack form.
pub(crate) fn to_dl_device(device: Device) -> Result<DLDevice> {
    match device {
        Device::Cpu => Ok(DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        }),
        Device::Cuda(i) => Ok(DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: i32::try_from(i).map_err(|_| {
                Error::InvalidArgument(format!("to_dlpack: cuda:{i} does not fit DLPack's int32"))
            })?,
        }),
        Device::Meta => Err(Error::Unsupported(
            "to_dlpack: a meta tensor has no memory to share, and DLPack has no meta device"
                .to_string(),
        )),
    }
}

/// The device DLPack's `d` names (see [`from_dl_device`]), None for one opbox cannot reach:
/// the match alone, for a header already checked.
#[inline]
pub(crate) fn dl_device(d: DLDevice) -> Option<Device> {
    match d.device_type {
        _ if is_host(d) => Some(Device::Cpu),
        DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED => {
            u32::try_from(d.device_id).ok().map(Device::Cuda)
        }
        _ => None,
    }
}

/// Whether `d` is memory the host addresses, which opbox holds as [`Device::Cpu`].
pub(crate) fn is_host(d: DLDevice) -> bool {
    matches!(d.device_type, DLDeviceType::CPU | DLDeviceType::CUDA_HOST)
}

/// The device DLPack's `d` names, or an error naming the device type opbox cannot reach.
/// Pinned host memory (`kDLCUDAHost`) is host memory: it becomes a cpu tensor. Managed memory
/// (`kDLCUDAManaged`) is addressable from its device: it becomes a cuda tensor there.
pub(crate) fn from_dl_device(d: DLDevice) -> Result<Device> {
    from_dl_device_for(d, "from_dlpack")
}

/// [`from_dl_device`] for `doing`, which its error names (a plugin host function, say).
pub(crate) fn from_dl_device_for(d: DLDevice, doing: &str) -> Result<Device> {
    if let Some(device) = dl_device(d) {
        return Ok(device);
    }
    match d.device_type {
        DLDeviceType::CUDA | DLDeviceType::CUDA_MANAGED => Err(Error::InvalidArgument(format!(
            "{doing}: DLPack device {} has a negative device id {}",
            d.device_type.name().unwrap_or("kDLCUDA"),
            d.device_id
        ))),
        other => Err(Error::Unsupported(format!(
            "{doing}: DLPack device type {} ({}) is not one opbox holds; it takes kDLCPU, \
             kDLCUDAHost (as cpu), kDLCUDA and kDLCUDAManaged (as cuda)",
            other.0,
            other.name().unwrap_or("unknown to DLPack 1.x")
        ))),
    }
}
