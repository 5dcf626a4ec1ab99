//! Is CUDA usable here? cudarc panics on its first call into a library it cannot load, so every
//! path into cudarc asks these first and turns absence into `Error::NoCuda`.

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// `Ok` if libcuda (the driver) can be loaded. Probed once per process.
pub fn driver() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries `dlopen` on candidate library names and drops each
    // handle; it resolves no symbol and runs no CUDA code.
    let present = *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::NoCuda {
            reason: format!(
                "the CUDA driver library (libcuda) was not found (searched {}); this machine has no NVIDIA driver, or it is not on the loader path",
                candidates("cuda")
            ),
        })
    }
}

/// `Ok` if libnvrtc can be loaded: by the loader, else from a pip install
/// (`nvrtc_search`). Probed once per process.
pub fn nvrtc() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    let present = *PRESENT.get_or_init(|| {
        // SAFETY: as in `driver`: only `dlopen` attempts, no symbol is called.
        let found = || unsafe { cudarc::nvrtc::sys::is_culib_present() };
        found() || (super::nvrtc_search::preload() && found())
    });
    if present {
        Ok(())
    } else {
        Err(Error::NoCuda {
            reason: nvrtc_missing_reason(),
        })
    }
}

/// `Ok` if libcublas can be loaded (and the driver too: cuBLAS runs on it). Probed once.
pub fn cublas() -> Result<()> {
    driver()?;
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: as in `driver`: only `dlopen` attempts, no symbol is called.
    let present = *PRESENT.get_or_init(|| unsafe { cudarc::cublas::sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::NoCuda {
            reason: format!(
                "the cuBLAS library (libcublas) was not found (searched {}); install the CUDA toolkit's cuBLAS (or the nvidia-cublas wheel) and put its lib directory on LD_LIBRARY_PATH",
                candidates("cublas")
            ),
        })
    }
}

pub(crate) fn nvrtc_missing_reason() -> String {
    format!(
        "NVRTC (libnvrtc) was not found: the loader searched {}, and no pip install was found ({}); run `python3 -m pip install nvidia-cuda-nvrtc==13.0.*` (into the python3 on PATH or a virtualenv; or with `--target DIR` and {}=DIR), or put its nvidia/cu13/lib directory on LD_LIBRARY_PATH",
        candidates("nvrtc"),
        super::nvrtc_search::looked_in(),
        super::nvrtc_search::NVRTC_DIR_ENV,
    )
}

fn candidates(lib: &str) -> String {
    let names = cudarc::get_lib_name_candidates(lib);
    let shown: Vec<&str> = names.iter().map(String::as_str).take(3).collect();
    format!("{}, ... ({} names)", shown.join(", "), names.len())
}
