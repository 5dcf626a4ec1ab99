//! NVRTC through `cudarc::nvrtc::sys`: cudarc's safe API yields PTX only, and opbox wants a cubin
//! for the device's exact arch (loading one costs ~0.1 ms; JIT-ing PTX in the driver costs 10+ ms).
//! Needs no GPU: CI compiles every kernel here, with NVRTC from the PyPI wheel.

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr;
use std::sync::{Mutex, OnceLock};

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};
use opbox_codegen::cuda::TranslationUnit;

use super::artifact::{Artifact, ImageKind};
use super::probe;
use crate::error::{Error, Result};

pub use super::nvrtc_search::pip_lib_dir;

/// NVRTC's `(major, minor)`, asked once.
pub fn version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    probe::nvrtc()?;
    VERSION
        .get_or_init(|| {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: the library is present (probed above); both pointers are valid for writes.
            let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
            check(r, "nvrtcVersion").map(|()| (major, minor))
        })
        .clone()
        .map_err(|reason| Error::NoCuda { reason })
}

/// The `sm_XX` numbers this NVRTC can emit a cubin for, ascending.
pub fn supported_archs() -> Result<Vec<i32>> {
    probe::nvrtc()?;
    let mut n: c_int = 0;
    // SAFETY: library present; `n` is valid for writes.
    check(
        unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) },
        "nvrtcGetNumSupportedArchs",
    )
    .map_err(|reason| Error::NoCuda { reason })?;
    let mut archs = vec![0 as c_int; n.max(0) as usize];
    // SAFETY: `archs` holds exactly the `n` ints NVRTC reported it will write.
    check(
        unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) },
        "nvrtcGetSupportedArchs",
    )
    .map_err(|reason| Error::NoCuda { reason })?;
    archs.sort_unstable();
    Ok(archs)
}

/// Whether NVRTC compiles for `--gpu-architecture=<name>` (`sm_90a`, `compute_100f`): the
/// suffixed names are not in [`supported_archs`], so an empty program is compiled for it, once
/// per name and process.
pub fn accepts_arch(name: &str) -> Result<bool> {
    static ASKED: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
    probe::nvrtc()?;
    if let Some(&(_, known)) = lock(&ASKED).iter().find(|(n, _)| n == name) {
        return Ok(known);
    }
    let option = CString::new(format!("--gpu-architecture={name}"))
        .map_err(|_| Error::InvalidArgument(format!("GPU arch '{name}' contains a NUL byte")))?;
    let program = Program::create(
        c"// opbox: arch probe\n",
        c"opbox-arch-probe.cu",
        &[],
        &[],
        "arch probe",
    )?;
    let options = [option.as_ptr()];
    // SAFETY: `program` is live; `options` holds one pointer to a NUL-terminated string that
    // outlives the call.
    let r = unsafe { sys::nvrtcCompileProgram(program.0, 1, options.as_ptr()) };
    let accepted = match r {
        nvrtcResult::NVRTC_SUCCESS => true,
        nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE => {
            return Err(Error::NoCuda {
                reason: builtins_missing(&program.log()),
            })
        }
        _ => false,
    };
    lock(&ASKED).push((name.to_string(), accepted));
    Ok(accepted)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// libnvrtc loads libnvrtc-builtins by name at compile time; the wheel's lib dir must be on
/// LD_LIBRARY_PATH for that, even when libnvrtc itself was found.
fn builtins_missing(log: &str) -> String {
    format!(
        "NVRTC could not load its builtins library: {}; put the directory holding libnvrtc-builtins (the wheel's nvidia/cu13/lib) on LD_LIBRARY_PATH",
        log.trim()
    )
}

/// Compiles `unit` with `options` (which must hold the `--gpu-architecture`) to a cubin, or to
/// PTX when `kind` says so; `kernel` names the kernel in errors.
pub fn compile(
    unit: &TranslationUnit,
    options: &[String],
    kind: ImageKind,
    kernel: &str,
) -> Result<Artifact> {
    probe::nvrtc()?;
    let invalid = |what: &str| {
        Error::InvalidArgument(format!("kernel '{kernel}': {what} contains a NUL byte"))
    };
    let src = CString::new(unit.source.as_str()).map_err(|_| invalid("the translation unit"))?;
    let name = CString::new(unit.program_name.as_str()).map_err(|_| invalid("the program name"))?;
    let exprs: Vec<CString> = unit
        .name_expressions
        .iter()
        .map(|e| CString::new(e.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| invalid("an entry name"))?;
    let header_names: Vec<CString> = unit
        .headers
        .iter()
        .map(|h| CString::new(h.name))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| invalid("a header name"))?;
    let header_texts: Vec<CString> = unit
        .headers
        .iter()
        .map(|h| CString::new(h.content))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| invalid("a header"))?;
    let opts: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| invalid("an option"))?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let n_opts = c_int::try_from(opt_ptrs.len()).map_err(|_| {
        Error::InvalidArgument(format!("kernel '{kernel}': too many NVRTC options"))
    })?;

    let program = Program::create(&src, &name, &header_names, &header_texts, kernel)?;
    for expr in &exprs {
        // SAFETY: `program` is live; `expr` outlives the call (NVRTC copies it).
        program.check(
            unsafe { sys::nvrtcAddNameExpression(program.0, expr.as_ptr()) },
            "nvrtcAddNameExpression",
        )?;
    }
    // SAFETY: `program` is live; `opt_ptrs` holds `n_opts` pointers to NUL-terminated strings
    // that outlive the call.
    let r = unsafe { sys::nvrtcCompileProgram(program.0, n_opts, opt_ptrs.as_ptr()) };
    let log = program.log();
    match r {
        nvrtcResult::NVRTC_SUCCESS => {}
        nvrtcResult::NVRTC_ERROR_COMPILATION => {
            return Err(Error::Compile {
                kernel: kernel.to_string(),
                log,
            });
        }
        nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE => {
            return Err(Error::NoCuda {
                reason: builtins_missing(&log),
            });
        }
        other => {
            return Err(Error::Compile {
                kernel: kernel.to_string(),
                log: format!("{}\n{}", describe(other, "nvrtcCompileProgram"), log)
                    .trim()
                    .to_string(),
            });
        }
    }
    let lowered_names = exprs
        .iter()
        .map(|e| program.lowered_name(e))
        .collect::<Result<Vec<_>>>()?;
    let image = match kind {
        ImageKind::Cubin => {
            program.output(sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN, "nvrtcGetCUBIN")?
        }
        ImageKind::Ptx => {
            let mut ptx = program.output(sys::nvrtcGetPTXSize, sys::nvrtcGetPTX, "nvrtcGetPTX")?;
            // NVRTC counts the terminating NUL; the driver gets it back when the PTX is loaded.
            while ptx.last() == Some(&0) {
                ptx.pop();
            }
            ptx
        }
    };
    Ok(Artifact {
        kind,
        lowered_names,
        image,
    })
}

/// Owns an `nvrtcProgram` and destroys it on every path out.
struct Program(nvrtcProgram, String);

type SizeFn = unsafe fn(nvrtcProgram, *mut usize) -> nvrtcResult;
type DataFn = unsafe fn(nvrtcProgram, *mut c_char) -> nvrtcResult;

impl Program {
    /// A program of `src` named `name`, with the named headers `header_names[i]` ->
    /// `header_texts[i]` (the two lists are as long as each other).
    fn create(
        src: &CStr,
        name: &CStr,
        header_names: &[CString],
        header_texts: &[CString],
        kernel: &str,
    ) -> Result<Program> {
        let count = header_names.len().min(header_texts.len());
        let names: Vec<*const c_char> = header_names[..count].iter().map(|h| h.as_ptr()).collect();
        let texts: Vec<*const c_char> = header_texts[..count].iter().map(|h| h.as_ptr()).collect();
        let n = c_int::try_from(count).map_err(|_| Error::Compile {
            kernel: kernel.to_string(),
            log: "too many named headers".into(),
        })?;
        let mut prog: nvrtcProgram = ptr::null_mut();
        // SAFETY: library present (the caller probed); `src` and `name` are NUL-terminated and
        // outlive the call; `names` and `texts` hold `n` pointers each, to NUL-terminated strings
        // that outlive the call (NVRTC copies them).
        let r = unsafe {
            sys::nvrtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                n,
                texts.as_ptr(),
                names.as_ptr(),
            )
        };
        let program = Program(prog, kernel.to_string());
        program.check(r, "nvrtcCreateProgram")?;
        Ok(program)
    }

    fn check(&self, r: nvrtcResult, call: &str) -> Result<()> {
        check(r, call).map_err(|message| Error::Compile {
            kernel: self.1.clone(),
            log: message,
        })
    }

    /// The program log, empty if there is none or it cannot be read.
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: the program is live; `size` is valid for writes.
        if unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) } != nvrtcResult::NVRTC_SUCCESS
            || size == 0
        {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes NVRTC said the log needs, NUL included.
        if unsafe { sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr().cast()) }
            != nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
    }

    fn lowered_name(&self, expr: &CStr) -> Result<String> {
        let mut lowered: *const c_char = ptr::null();
        // SAFETY: the program is live and compiled with `expr` added as a name expression.
        self.check(
            unsafe { sys::nvrtcGetLoweredName(self.0, expr.as_ptr(), &mut lowered) },
            "nvrtcGetLoweredName",
        )?;
        if lowered.is_null() {
            return Err(Error::Compile {
                kernel: self.1.clone(),
                log: "NVRTC returned no lowered name for the entry".into(),
            });
        }
        // SAFETY: NVRTC returned a NUL-terminated string owned by the program, which is still live;
        // it is copied out before the program is destroyed.
        Ok(unsafe { CStr::from_ptr(lowered) }
            .to_string_lossy()
            .into_owned())
    }

    fn output(&self, size_fn: SizeFn, data_fn: DataFn, call: &str) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is valid for writes.
        self.check(unsafe { size_fn(self.0, &mut size) }, call)?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` holds the `size` bytes NVRTC said the output needs.
        self.check(unsafe { data_fn(self.0, buf.as_mut_ptr().cast()) }, call)?;
        Ok(buf)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the program was created by nvrtcCreateProgram and is destroyed only here.
            unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
        }
    }
}

fn check(r: nvrtcResult, call: &str) -> std::result::Result<(), String> {
    if r == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(describe(r, call))
    }
}

fn describe(r: nvrtcResult, call: &str) -> String {
    // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string for any result code.
    let text = unsafe { sys::nvrtcGetErrorString(r) };
    let text = if text.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: non-null, static, NUL-terminated (see above).
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    format!("{call} failed: {text}")
}
