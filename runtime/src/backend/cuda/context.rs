//! One CUDA context and default stream per device, created on first use and kept for the
//! process: `CudaContext::new` costs 220-290 ms, so it must never run twice for one ordinal.

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::probe;
use crate::error::{Error, Result};

/// Devices beyond this ordinal are refused; no host holds more GPUs than this today.
pub const MAX_DEVICES: usize = 16;

/// A device that is ready for work.
#[derive(Debug)]
pub struct CudaDevice {
    /// The device's ordinal (`cuda:N`).
    pub ordinal: usize,
    /// Its primary context.
    pub context: Arc<CudaContext>,
    /// The context's default (legacy) stream: launches on it are ordered with every other user of
    /// the primary context.
    pub stream: Arc<CudaStream>,
    /// `(major, minor)`, e.g. `(9, 0)` for an H200.
    pub compute_capability: (u32, u32),
    /// The device's name, as the driver gives it.
    pub name: String,
    /// Streaming multiprocessors (132 on an H200): what a grid-stride kernel sizes its grid by.
    pub multiprocessors: u32,
}

static DEVICES: [OnceLock<CudaDevice>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];
/// Serializes first-time creation, so two threads never both pay for a context.
static CREATE: Mutex<()> = Mutex::new(());

/// The number of CUDA devices, or `NoCuda` when there is no driver or no device.
pub fn device_count() -> Result<usize> {
    probe::driver()?;
    let n = CudaContext::device_count().map_err(|e| no_cuda("counting devices", e))?;
    Ok(n.max(0) as usize)
}

/// The device `ordinal` when its context already exists: no driver call.
pub(crate) fn created(ordinal: usize) -> Option<&'static CudaDevice> {
    DEVICES.get(ordinal)?.get()
}

/// The device `ordinal`, creating its context on first use.
pub fn device(ordinal: usize) -> Result<&'static CudaDevice> {
    let slot = DEVICES.get(ordinal).ok_or_else(|| Error::Cuda {
        kernel: format!("device cuda:{ordinal}"),
        message: format!("opbox supports device ordinals below {MAX_DEVICES}"),
    })?;
    if let Some(d) = slot.get() {
        return Ok(d);
    }
    // A poisoned lock only means another thread panicked while creating a context; the slot
    // itself is still consistent (it is a OnceLock), so carry on.
    let _guard = CREATE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(d) = slot.get() {
        return Ok(d);
    }
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::Cuda {
            kernel: format!("device cuda:{ordinal}"),
            message: format!("no such device: this machine has {count} CUDA device(s)"),
        });
    }
    let created = create(ordinal)?;
    Ok(slot.get_or_init(|| created))
}

fn create(ordinal: usize) -> Result<CudaDevice> {
    let what = |e: DriverError| Error::Cuda {
        kernel: format!("device cuda:{ordinal}"),
        message: e.to_string(),
    };
    let context = CudaContext::new(ordinal).map_err(what)?;
    // SAFETY: cudarc's event tracking gives each `CudaSlice` a read and a write event, recorded
    // by cudarc's own calls on it and waited for before it is freed. opbox does not rely on it:
    // its launches and copies reach the driver by address on the thread's current stream
    // (`current.rs`), which cudarc never sees, and work on two streams is ordered by the caller,
    // as in PyTorch. The events only cost each allocation two creations, a record and two
    // destructions (about 2 µs of a 24 µs upload-compute-upload op on the H200).
    unsafe { context.disable_event_tracking() };
    let (major, minor) = context.compute_capability().map_err(what)?;
    let name = context.name().map_err(what)?;
    let multiprocessors = context
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .map_err(what)?;
    let stream = context.default_stream();
    let compute_capability = (major.max(0) as u32, minor.max(0) as u32);
    super::loader::prepare_first_lookup(compute_capability);
    Ok(CudaDevice {
        ordinal,
        context,
        stream,
        compute_capability,
        name,
        multiprocessors: multiprocessors.max(1) as u32,
    })
}

/// A driver that loads but cannot initialize (no device, driver too old) is "no CUDA" as well.
fn no_cuda(what: &str, e: DriverError) -> Error {
    Error::NoCuda {
        reason: format!("the CUDA driver failed while {what}: {e}"),
    }
}
