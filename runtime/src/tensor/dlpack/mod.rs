//! DLPack 1.x: sharing tensors with other libraries (PyTorch, NumPy, CuPy, JAX, ...) with no
//! copy. [`crate::Tensor::from_dlpack`] takes a `DLManagedTensorVersioned` (and
//! [`crate::Tensor::from_dlpack_legacy`] the pre-1.0 `DLManagedTensor`); [`crate::Tensor::to_dlpack`] gives one.
//!
//! # Ownership
//!
//! - **Import** takes the managed tensor: on success the producer's deleter runs exactly once,
//!   when the last opbox tensor viewing the memory is dropped; if opbox refuses the tensor (a
//!   dtype, device or major version it cannot hold) the deleter runs before the error returns,
//!   as the spec asks of a consumer. Either way the caller never calls it.
//! - **Export** gives the consumer a managed tensor that keeps the opbox tensor alive; the
//!   consumer calls its `deleter` exactly once when done (from any thread).
//!
//! # Flags
//!
//! `DLPACK_FLAG_BITMASK_READ_ONLY` on import makes a read-only tensor: every write through opbox
//! (`with_slice_mut`, `fill_`, `copy_from` into it, `mutable_data_ptr`) is an error. Export sets it
//! for such tensors. `IS_COPIED` is set on export when [`ToDlpack::copy`] asked for a copy; on
//! import, [`FromDlpack::copy`] asks opbox to copy into its own memory and release the producer's
//! at once.
//!
//! # CUDA streams
//!
//! opbox queues its CUDA work (allocations, copies, launches) on the thread's current stream
//! (`opbox::cuda::current_stream`: the innermost `with_stream`, else the device's legacy default
//! stream). As the DLPack spec gives it, the `stream` of an exchange is the *consumer's* stream,
//! and the producer makes the data safe to use there:
//! - exporting with [`ToDlpack::stream`] = `Some(s)`, opbox makes `s` wait (on the device, through
//!   an event) for the work queued on its current stream, unless `s` is that very stream; `-1` is
//!   no synchronization, `1` (or `None` in Python's protocol) the legacy default stream, `2` the
//!   per-thread default stream, any other value a `CUstream` handle; `0` is refused for CUDA, as
//!   the spec says;
//! - importing, a tensor whose producer already ordered it for opbox's current stream needs
//!   nothing (pass [`consumer_stream`] as the producer's `stream=`); if the producer's work is
//!   still pending on a stream of its own, [`FromDlpack::producer_stream`] names that stream and
//!   opbox's current stream waits for it.
//!
//! # For the plugin ABI
//!
//! The plugin tensor header (`abi::plugin_v1::TensorHeader`) has `DLManagedTensorVersioned`'s
//! shape: another image's header is imported through `import::wrap_dltensor` (a `DLTensor` plus a
//! release closure), and `crate::plugin`'s own headers reuse `codes` for dtypes and devices (their
//! shape and strides point into the tensor itself, so lending one allocates nothing).
//!
//! # Files
//!
//! `ffi.rs` the C types as `dlpack.h` declares them; `codes.rs` dtype and device codes (dtypes
//! from the one type table); `import.rs`; `export.rs`.

// The error type is large; see tensor/mod.rs.
#![allow(clippy::result_large_err)]

pub mod ffi;

pub(crate) mod codes;
pub(crate) mod export;
pub(crate) mod import;

#[cfg(test)]
mod tests;

pub use ffi::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion,
    DLTensor,
};

use crate::{Error, Result};

/// A CUDA stream as DLPack's `stream` argument names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DlpackStream {
    /// `-1`: no synchronization; the caller orders the work itself.
    NoSync,
    /// `1`: the legacy default stream (opbox's own).
    LegacyDefault,
    /// `2`: the per-thread default stream.
    PerThreadDefault,
    /// Any other value: a `CUstream` handle, as an integer.
    Handle(usize),
}

impl DlpackStream {
    /// The stream a Python-style `stream=` argument names (`None` is the legacy default stream
    /// for CUDA); `0` is ambiguous for CUDA and refused, as the spec says.
    pub fn from_arg(stream: Option<i64>) -> Result<DlpackStream> {
        match stream {
            None | Some(1) => Ok(DlpackStream::LegacyDefault),
            Some(-1) => Ok(DlpackStream::NoSync),
            Some(2) => Ok(DlpackStream::PerThreadDefault),
            Some(0) => Err(Error::InvalidArgument(
                "DLPack stream 0 is disallowed for CUDA (ambiguous between the legacy and \
                 per-thread default streams); pass 1 or 2"
                    .to_string(),
            )),
            Some(s) if s > 2 => Ok(DlpackStream::Handle(s as usize)),
            Some(s) => Err(Error::InvalidArgument(format!(
                "DLPack stream {s} names no CUDA stream (-1, 1, 2 or a stream handle)"
            ))),
        }
    }

    /// The raw handle the driver takes for this stream, or `None` for no synchronization.
    /// `CU_STREAM_LEGACY` is `0x1` and `CU_STREAM_PER_THREAD` `0x2` in the driver API.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn handle(self) -> Option<usize> {
        match self {
            DlpackStream::NoSync => None,
            DlpackStream::LegacyDefault => Some(1),
            DlpackStream::PerThreadDefault => Some(2),
            DlpackStream::Handle(h) => Some(h),
        }
    }
}

/// How [`Tensor::from_dlpack_with`](crate::Tensor::from_dlpack_with) imports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromDlpack {
    /// `Some(true)`: copy into opbox's own memory and release the producer's at once;
    /// `Some(false)` or `None`: share the producer's memory (opbox never needs to copy).
    pub copy: Option<bool>,
    /// A CUDA tensor's data is still being written on this stream of the producer's: opbox's
    /// stream waits for it. `None`: the producer already ordered it (or it is on cpu).
    pub producer_stream: Option<DlpackStream>,
}

/// How [`Tensor::to_dlpack_with`](crate::Tensor::to_dlpack_with) exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToDlpack {
    /// `Some(true)`: export a fresh contiguous copy (flagged `IS_COPIED`); otherwise share.
    pub copy: Option<bool>,
    /// The consumer's CUDA stream, which opbox makes wait for the work it queued; `None` is
    /// the legacy default stream, opbox's own, which needs nothing.
    pub stream: Option<DlpackStream>,
}

/// The `stream=` value to pass to a producer's `__dlpack__` so that the tensor it gives is
/// ready on opbox's current stream for `cuda:ordinal`: `1` for the legacy default stream, else
/// the current stream's handle. `None` without CUDA.
pub fn consumer_stream(ordinal: usize) -> Option<i64> {
    #[cfg(feature = "cuda")]
    {
        let handle = crate::backend::cuda::interop::opbox_stream(ordinal as u32).ok()?;
        Some(if handle.is_null() {
            1
        } else {
            handle as usize as i64
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        None
    }
}

/// The flags a managed tensor carries.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn flag(flags: u64, bit: u64) -> bool {
    flags & bit != 0
}
