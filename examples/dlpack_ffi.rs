//! A tiny C library over opbox's DLPack import and export, for checking them against a real
//! framework in the same process: `tests/dlpack_python.py` loads it with ctypes and trades
//! tensors with PyTorch (cpu and cuda) or NumPy (cpu).
//!
//! ```sh
//! cargo build --example dlpack_ffi && python3 tests/dlpack_python.py target/debug/examples/libdlpack_ffi.so
//! ```

use opbox::tensor::dlpack::{DLManagedTensor, DLManagedTensorVersioned};
use opbox::{Device, Tensor};

/// Takes a managed tensor (its deleter runs when opbox is done), returns the sum of its f32
/// elements, or NaN (with the error on stderr) when opbox refuses it.
///
/// # Safety
/// `managed` is a live DLPack 1.x managed tensor whose ownership the caller gives up.
#[no_mangle]
pub unsafe extern "C" fn opbox_dlpack_sum(managed: *mut DLManagedTensorVersioned) -> f64 {
    let run = || -> opbox::Result<f64> {
        // SAFETY: forwarded from this function's contract.
        let t = unsafe { Tensor::from_dlpack(managed) }?;
        Ok(t.to_vec::<f32>()?.iter().map(|&x| x as f64).sum())
    };
    match std::panic::catch_unwind(run) {
        Ok(Ok(sum)) => sum,
        Ok(Err(e)) => {
            eprintln!("opbox_dlpack_sum: {e}");
            f64::NAN
        }
        Err(_) => f64::NAN,
    }
}

/// [`opbox_dlpack_sum`] for a legacy (pre-1.0) `DLManagedTensor`.
///
/// # Safety
/// `managed` is a live legacy managed tensor whose ownership the caller gives up.
#[no_mangle]
pub unsafe extern "C" fn opbox_dlpack_sum_legacy(managed: *mut DLManagedTensor) -> f64 {
    let run = || -> opbox::Result<f64> {
        // SAFETY: forwarded from this function's contract.
        let t = unsafe { Tensor::from_dlpack_legacy(managed) }?;
        Ok(t.to_vec::<f32>()?.iter().map(|&x| x as f64).sum())
    };
    match std::panic::catch_unwind(run) {
        Ok(Ok(sum)) => sum,
        Ok(Err(e)) => {
            eprintln!("opbox_dlpack_sum_legacy: {e}");
            f64::NAN
        }
        Err(_) => f64::NAN,
    }
}

/// A new `[rows, cols]` f32 tensor holding 0, 1, 2, ... on `device` (-1: cpu, else that cuda
/// ordinal), transposed (so strided), as a managed tensor the caller owns; null on error.
#[no_mangle]
pub extern "C" fn opbox_dlpack_arange_t(
    rows: usize,
    cols: usize,
    device: i32,
) -> *mut DLManagedTensorVersioned {
    let run = || -> opbox::Result<*mut DLManagedTensorVersioned> {
        let values = (0..rows * cols).map(|i| i as f32).collect();
        let mut t = Tensor::from_vec(values, &[rows, cols])?;
        if device >= 0 {
            t = t.to(Device::Cuda(device as u32))?;
        }
        t.transpose(0, 1)?.to_dlpack()
    };
    match std::panic::catch_unwind(run) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            eprintln!("opbox_dlpack_arange_t: {e}");
            std::ptr::null_mut()
        }
        Err(_) => std::ptr::null_mut(),
    }
}

/// Live opbox tensors, so the script can check that every import and export was released.
#[no_mangle]
pub extern "C" fn opbox_live_tensors() -> usize {
    opbox::tensor::live_tensors()
}
