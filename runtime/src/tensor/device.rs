//! [`Device`]: where a tensor's elements live.

use std::fmt;
use std::str::FromStr;

use opbox_codegen::schema::{parse_device, DeviceSpec};

use crate::{Error, Result};

/// Where a tensor's elements live.
///
/// Printed and parsed as `cpu`, `cuda:N` and `meta` (`cuda` alone parses as `cuda:0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(u32),
    /// No memory at all: a meta tensor has a shape, strides and a dtype, but no elements.
    Meta,
}

// Device type codes for `to_bits`: PyTorch's `c10::DeviceType` values.
const TYPE_CPU: u32 = 0;
const TYPE_CUDA: u32 = 1;
const TYPE_META: u32 = 9;

impl Device {
    /// Whether this is host memory.
    pub const fn is_cpu(self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// Whether this is a CUDA device.
    pub const fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// Whether this is the meta device.
    pub const fn is_meta(self) -> bool {
        matches!(self, Device::Meta)
    }

    /// The stable 64-bit form used by the boxed ABI: the device type code in the high 32 bits
    /// (PyTorch's `c10::DeviceType` values: cpu 0, cuda 1, meta 9) and the index in the low 32
    /// bits (0 for cpu and meta).
    pub const fn to_bits(self) -> u64 {
        let (ty, index) = match self {
            Device::Cpu => (TYPE_CPU, 0),
            Device::Cuda(i) => (TYPE_CUDA, i),
            Device::Meta => (TYPE_META, 0),
        };
        ((ty as u64) << 32) | index as u64
    }

    /// The inverse of [`Device::to_bits`]; `None` for an unknown type code, or for cpu or meta
    /// with a nonzero index.
    pub const fn from_bits(bits: u64) -> Option<Device> {
        let ty = (bits >> 32) as u32;
        let index = bits as u32;
        match (ty, index) {
            (TYPE_CPU, 0) => Some(Device::Cpu),
            (TYPE_CUDA, i) => Some(Device::Cuda(i)),
            (TYPE_META, 0) => Some(Device::Meta),
            _ => None,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Meta => f.write_str("meta"),
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Device> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown device '{s}'; expected cpu, cuda, cuda:N (N a device index) or meta"
            ))
        };
        // One grammar for device strings: the schema parser checks `Device` defaults with it.
        match parse_device(s).ok_or_else(bad)? {
            DeviceSpec::Cpu => Ok(Device::Cpu),
            DeviceSpec::Meta => Ok(Device::Meta),
            DeviceSpec::Cuda(index) => Ok(Device::Cuda(index)),
        }
    }
}
