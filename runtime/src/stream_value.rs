//! [`Stream`]: what a schema's `Stream` argument holds (`record_stream(Tensor(a!) self, Stream
//! s)`): which device, and which stream on it, as plain values, as PyTorch's `c10::Stream` is.
//!
//! It names a stream; it does not own one. The backend's live stream object is
//! `opbox::kernel::Stream`; this is the value that crosses the boxed ABI, and what a kernel
//! passes to the backend to find the stream it names.

/// A stream named by value: a device index and the backend's raw stream id (for CUDA, the
/// `CUstream` pointer as an integer; 0 is the legacy default stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The device index, as the schema's `DeviceIndex` (-1: the current device).
    pub device_index: i8,
    /// The backend's raw stream handle as an integer.
    pub id: u64,
}

impl Stream {
    /// The stream `id` of device `device_index` (-1: the current device).
    pub const fn new(device_index: i8, id: u64) -> Stream {
        Stream { device_index, id }
    }

    /// The default stream of `device_index`.
    pub const fn default_for(device_index: i8) -> Stream {
        Stream::new(device_index, 0)
    }
}
