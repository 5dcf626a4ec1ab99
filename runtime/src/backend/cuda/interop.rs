//! Ordering opbox's CUDA work with another library's streams, by raw `CUstream` handle (DLPack's
//! `stream` argument, interop with code that owns its own streams).
//!
//! One event per call: recorded on the stream whose work must come first, waited for on the
//! other. The wait is queued on the device, so the host never blocks. Destroying the event right
//! away is allowed: the driver releases it once the queued wait is done.

use cudarc::driver::{result, sys, DriverError};

use super::context::device;
use crate::{Error, Result};

/// Makes later work on `waiter` wait for the work queued so far on `first`, both streams of
/// `cuda:ordinal` (raw handles; null is the legacy default stream, `0x1` and `0x2` the driver's
/// legacy and per-thread default handles).
///
/// # Safety
///
/// Both handles must be live streams of that device's primary context (or the special values).
pub(crate) unsafe fn stream_waits_for(
    ordinal: u32,
    waiter: sys::CUstream,
    first: sys::CUstream,
) -> Result<()> {
    let dev = device(ordinal as usize)?;
    let err = |what: &str, e: DriverError| Error::Cuda {
        kernel: format!("device cuda:{ordinal} (DLPack stream ordering: {what})"),
        message: e.to_string(),
    };
    dev.context
        .bind_to_thread()
        .map_err(|e| err("binding the context", e))?;
    let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
        .map_err(|e| err("creating an event", e))?;
    // SAFETY: `event` was just created and is destroyed only below; the caller guarantees the
    // streams are live.
    let queued = unsafe {
        result::event::record(event, first).and_then(|()| {
            result::stream::wait_event(
                waiter,
                event,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        })
    };
    // SAFETY: created above, not used after this; a pending wait keeps the driver's copy alive.
    let destroyed = unsafe { result::event::destroy(event) };
    queued.map_err(|e| err("record and wait", e))?;
    destroyed.map_err(|e| err("destroying the event", e))
}

/// The raw handle of the stream opbox queues `cuda:ordinal`'s work on, on this thread (its
/// current stream; null is the legacy default stream).
pub(crate) fn opbox_stream(ordinal: u32) -> Result<sys::CUstream> {
    Ok(super::current::cuda_stream_for(ordinal as usize)?.cu_stream())
}

/// Whether a DLPack stream handle (`1` legacy default, `2` per-thread default, else a handle)
/// is the very stream `ours` is, so that ordering needs nothing.
pub(crate) fn same_stream(handle: usize, ours: sys::CUstream) -> bool {
    handle == ours as usize || (handle == 1 && ours.is_null())
}
