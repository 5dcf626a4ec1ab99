//! Launch stubs: what `#[extern_kernel]`'s generated `launch(cfg, args…)` calls.
//!
//! [`launch`] checks every tensor against the declaration (dtype, CUDA device, one device for
//! all, contiguous, no `Out`/`InOut` sharing storage with an `In`), gets the loaded function from
//! the declaration's [`KernelHandle`] (a `OnceLock` read after the first launch: no hashing, no
//! file access), pushes device pointers and scalars with cudarc's launch builder on the device's
//! default stream (or [`LaunchConfig::stream`]), and maps driver errors to `Error::Cuda`.
//!
//! Kernels run asynchronously: a fault inside one (an illegal address, say) is reported by the
//! next call that synchronizes, such as [`synchronize`] or a download. [`synchronize`] names the
//! last kernel launched on the device, since the driver does not say which one faulted.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtrMut, DeviceRepr, PushKernelArg};
use opbox_codegen::cuda::{ConstValue, EntryAbi, KernelDecl, ParamKind, ScalarType};

use super::arg::NativeBytes;
use super::context::{device, MAX_DEVICES};
use super::loader::{KernelHandle, LoadedKernel};
use crate::error::{Error, Result};
use crate::tensor::{DType, Device};

/// `In<[T]>` in an `#[extern_kernel]` declaration: a read-only device buffer (`const T*`).
/// A marker for declarations only; the generated `launch` takes `&Tensor`.
pub struct In<T: ?Sized>(PhantomData<T>);
/// `Out<[T]>` in an `#[extern_kernel]` declaration: a written device buffer (`T*`).
pub struct Out<T: ?Sized>(PhantomData<T>);
/// `InOut<[T]>` in an `#[extern_kernel]` declaration: a read and written device buffer (`T*`).
pub struct InOut<T: ?Sized>(PhantomData<T>);

/// Grid, block, dynamic shared memory and stream of one launch.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
    /// `None`: the device's default stream, where opbox's own copies run, so a launch is
    /// ordered after the uploads that fed it. Another stream is the caller's to order.
    pub stream: Option<Arc<CudaStream>>,
}

impl LaunchConfig {
    /// Threads per block of [`LaunchConfig::for_elems`].
    pub const DEFAULT_BLOCK: u32 = 256;

    /// One thread per element, 256 per block, enough blocks to cover `n` (at least one).
    pub fn for_elems(n: usize) -> LaunchConfig {
        let block = Self::DEFAULT_BLOCK;
        let blocks = n.div_ceil(block as usize).clamp(1, u32::MAX as usize) as u32;
        LaunchConfig {
            grid: (blocks, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
            stream: None,
        }
    }

    /// One block of one thread.
    pub fn single() -> LaunchConfig {
        LaunchConfig {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_mem_bytes: 0,
            stream: None,
        }
    }

    pub fn grid(mut self, x: u32, y: u32, z: u32) -> LaunchConfig {
        self.grid = (x, y, z);
        self
    }

    pub fn block(mut self, x: u32, y: u32, z: u32) -> LaunchConfig {
        self.block = (x, y, z);
        self
    }

    pub fn shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Launch on `stream` instead of the device's default stream.
    pub fn stream(mut self, stream: Arc<CudaStream>) -> LaunchConfig {
        self.stream = Some(stream);
        self
    }
}

pub use super::arg::LaunchArg;

/// Launch parameters beyond this count are refused (kernels rarely take more than a dozen).
pub const MAX_LAUNCH_ARGS: usize = 32;

/// Bytes of launch parameters, all together (CUDA's classic limit).
pub const MAX_PARAM_BYTES: usize = 4096;

/// 16 bytes of launch parameter space, 16-aligned: each parameter starts at a chunk, and the
/// driver copies as many bytes as the entry's parameter has from the address pushed.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([MaybeUninit<u8>; 16]);

// SAFETY: plain bytes, 16-aligned (the largest alignment of a kernel parameter opbox pushes:
// pointers, scalars, and native structs whose alignment the check below bounds); the driver
// reads only the parameter's own size from the pushed address.
unsafe impl DeviceRepr for Chunk {}

const CHUNK: usize = std::mem::size_of::<Chunk>();

/// The last kernel launched per device, for [`synchronize`]'s message.
static LAST_LAUNCHED: [AtomicPtr<KernelDecl>; MAX_DEVICES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_DEVICES];

/// Whether tensor `x` holds the elements `kind` (a slice param) declares. A native element's
/// tensor must carry that element's schema ([`crate::Tensor::from_native_vec`]), with the bytes
/// of one element as its last dimension.
pub(crate) fn elem_matches(kind: ParamKind, x: &crate::Tensor) -> bool {
    if let Some(n) = kind.native_slice() {
        let s = n.schema;
        return x.dtype() == DType::U8
            && x.shape().last() == Some(&s.size)
            && x.native_schema()
                .is_some_and(|t| t.native_name == s.native_name && t.same_contract(s));
    }
    match kind {
        ParamKind::In(t) | ParamKind::Out(t) | ParamKind::InOut(t) => {
            DType::from_elem(t) == x.dtype()
        }
        _ => false,
    }
}

/// A slice param's element as messages name it: `f32`, or `Color (my_ns::Color, nt…)`.
pub(crate) fn elem_name(kind: ParamKind) -> String {
    if let Some(n) = kind.native_slice() {
        let s = n.schema;
        let name = s.rust_name.rsplit("::").next().unwrap_or(s.rust_name);
        let code = opbox_codegen::native::type_code(s);
        return format!("{name} ({}, {code})", s.native_name);
    }
    match kind {
        ParamKind::In(t) | ParamKind::Out(t) | ParamKind::InOut(t) => t.to_string(),
        _ => kind.rust_type(),
    }
}

/// Checks `args` against `handle`'s declaration, then launches it with `cfg`, specialized by
/// `constexprs` (one value per `#[constexpr]` param, in declaration order).
pub fn launch(
    handle: &'static KernelHandle,
    cfg: &LaunchConfig,
    args: &[LaunchArg<'_>],
    constexprs: &[ConstValue],
) -> Result<()> {
    let decl = handle.decl();
    let kernel = || format!("kernel {}", decl.rust_name);
    let mut arena = [Chunk([MaybeUninit::uninit(); CHUNK]); MAX_PARAM_BYTES / CHUNK];
    // (first chunk) of each pushed parameter.
    let mut starts = [0u16; MAX_LAUNCH_ARGS];
    let mut used = 0usize;
    let mut count = 0usize;
    // (index, name, device) of the first tensor: all others must be on its device.
    let mut first: Option<(usize, &str, Device)> = None;
    // Messages count every declared parameter (constexprs too), as the stack path does.
    let mut params = decl
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind.in_launch_abi());
    for (index, arg) in args.iter().enumerate() {
        let Some((decl_index, param)) = params.next() else {
            return Err(arg_count(decl, args.len()));
        };
        if index >= MAX_LAUNCH_ARGS {
            return Err(Error::InvalidArgument(format!(
                "{} has more than {MAX_LAUNCH_ARGS} launch parameters",
                kernel()
            )));
        }
        let bad = |expected: String, got: String| Error::ArgType {
            op: kernel(),
            index: decl_index,
            name: param.name.to_string(),
            expected,
            got,
        };
        let bytes: &[u8];
        let scalar_bytes: [u8; 8];
        let mut native = None;
        match (param.kind, *arg) {
            (
                ParamKind::In(_)
                | ParamKind::Out(_)
                | ParamKind::InOut(_)
                | ParamKind::NativeIn(_)
                | ParamKind::NativeOut(_)
                | ParamKind::NativeInOut(_),
                LaunchArg::Tensor(x),
            ) => {
                let on_cuda = matches!(x.device(), Device::Cuda(_));
                if !elem_matches(param.kind, x) || !on_cuda {
                    let t = elem_name(param.kind);
                    return Err(bad(format!("{t} CUDA tensor"), arg.describe()));
                }
                if !x.is_contiguous() {
                    return Err(bad(
                        format!("contiguous {} CUDA tensor", elem_name(param.kind)),
                        format!(
                            "a non-contiguous view (shape {:?}, strides {:?}); call .contiguous() first",
                            x.shape(),
                            x.strides()
                        ),
                    ));
                }
                match first {
                    None => first = Some((decl_index, &param.name, x.device())),
                    Some((fi, fname, fdev)) if fdev != x.device() => {
                        return Err(Error::MixedDevices {
                            op: kernel(),
                            first_index: fi,
                            first_name: fname.to_string(),
                            first_device: fdev,
                            index: decl_index,
                            name: param.name.to_string(),
                            device: x.device(),
                        })
                    }
                    Some(_) => {}
                }
                let (ptr, _) = x.cuda_ptr()?;
                scalar_bytes = ptr.to_ne_bytes();
                bytes = &scalar_bytes;
            }
            (ParamKind::Scalar(t), a) => {
                let (raw, len): ([u8; 8], usize) = match a {
                    LaunchArg::I32(v) if t == ScalarType::I32 => (widen(&v.to_ne_bytes()), 4),
                    LaunchArg::I64(v) if t == ScalarType::I64 => (v.to_ne_bytes(), 8),
                    LaunchArg::U32(v) if t == ScalarType::U32 => (widen(&v.to_ne_bytes()), 4),
                    LaunchArg::U64(v) if t == ScalarType::U64 => (v.to_ne_bytes(), 8),
                    LaunchArg::F32(v) if t == ScalarType::F32 => (widen(&v.to_ne_bytes()), 4),
                    LaunchArg::F64(v) if t == ScalarType::F64 => (v.to_ne_bytes(), 8),
                    LaunchArg::Bool(v) if t == ScalarType::Bool => (widen(&[u8::from(v)]), 1),
                    other => return Err(bad(t.to_string(), other.describe())),
                };
                scalar_bytes = raw;
                bytes = &scalar_bytes[..len];
            }
            (ParamKind::Native(p), LaunchArg::Native(n))
                if n.schema.native_name == p.schema.native_name
                    && n.schema.same_contract(p.schema)
                    && n.len() == p.schema.size =>
            {
                if p.schema.align > CHUNK {
                    return Err(bad(
                        format!("a struct aligned to at most {CHUNK} bytes"),
                        format!("{} aligned to {}", p.schema.rust_name, p.schema.align),
                    ));
                }
                native = Some(n);
                bytes = &[];
            }
            (kind, a) => return Err(bad(kind.rust_type(), a.describe())),
        }
        let len = native.map_or(bytes.len(), |n| n.len());
        let chunks = len.div_ceil(CHUNK).max(1);
        if used + chunks > arena.len() {
            return Err(Error::InvalidArgument(format!(
                "{} has more than {MAX_PARAM_BYTES} bytes of launch parameters",
                kernel()
            )));
        }
        let region = chunk_bytes(&mut arena[used..used + chunks]);
        match native {
            Some(n) => n.copy_to(region),
            None => {
                for (d, b) in region.iter_mut().zip(bytes) {
                    *d = MaybeUninit::new(*b);
                }
            }
        }
        starts[index] = used as u16;
        used += chunks;
        count = index + 1;
    }
    if params.next().is_some() {
        return Err(arg_count(decl, args.len()));
    }
    check_aliases(decl, args)?;

    let ordinal = match first {
        Some((_, _, Device::Cuda(i))) => i as usize,
        _ => 0,
    };
    let dev = device(ordinal)?;
    let stream = cfg.stream.as_ref().unwrap_or(&dev.stream);
    let specialized;
    let loaded: &LoadedKernel = if decl.constexpr_params().next().is_none() {
        handle.get(ordinal)?
    } else {
        specialized = handle.get_specialized(ordinal, constexprs)?;
        &specialized
    };
    let mut pushed = count;
    if decl.abi == EntryAbi::ConstantParams {
        // The one struct goes to the module's `params` symbol, ordered on `stream` before the
        // launch (and after any earlier launch on it); the entry takes no parameters.
        let [LaunchArg::Native(n)] = args else {
            return Err(Error::InvalidArgument(format!(
                "{}: abi constant_params takes exactly one struct argument",
                kernel()
            )));
        };
        write_params(decl, loaded, stream, ordinal, n)?;
        pushed = 0;
    }
    let mut builder = stream.launch_builder(&loaded.function);
    for &start in &starts[..pushed] {
        builder.arg(&arena[start as usize]);
    }
    if let Some(last) = LAST_LAUNCHED.get(ordinal) {
        last.store((decl as *const KernelDecl).cast_mut(), Ordering::Relaxed);
    }
    let config = cudarc::driver::LaunchConfig {
        grid_dim: cfg.grid,
        block_dim: cfg.block,
        shared_mem_bytes: cfg.shared_mem_bytes,
    };
    // SAFETY: the pushed parameters are exactly the declaration's launch parameters in order
    // (checked above), and the translation unit's static_assert proved at compile time that the
    // entry's C++ signature is the one the declaration implies; each slot holds a device pointer
    // of a live CUDA tensor (kept alive by the caller's borrow for the call) or a scalar of that
    // parameter's size. What the kernel does with the grid and the buffers' lengths is the
    // kernel's contract, as with any CUDA launch; faults surface as errors at synchronization.
    unsafe { builder.launch(config) }.map_err(|e| Error::Cuda {
        kernel: decl.rust_name.to_string(),
        message: format!("launch on cuda:{ordinal} failed: {e}"),
    })?;
    Ok(())
}

/// Copies `n` into `loaded`'s `__constant__ params` symbol on `stream`.
fn write_params(
    decl: &KernelDecl,
    loaded: &LoadedKernel,
    stream: &Arc<CudaStream>,
    ordinal: usize,
    n: &NativeBytes<'_>,
) -> Result<()> {
    let driver = |what: &str, e: cudarc::driver::DriverError| Error::Cuda {
        kernel: decl.rust_name.to_string(),
        message: format!("{what} on cuda:{ordinal}: {e}"),
    };
    let mut global = loaded
        .module
        .get_global("params", stream)
        .map_err(|e| driver("finding the __constant__ symbol 'params'", e))?;
    if global.len() != n.len() {
        return Err(Error::Cuda {
            kernel: decl.rust_name.to_string(),
            message: format!(
                "the module's 'params' symbol has {} bytes, but {} has {}",
                global.len(),
                n.schema.rust_name,
                n.len()
            ),
        });
    }
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| driver("binding the context", e))?;
    let (dst, _sync) = global.device_ptr_mut(stream);
    let src = n.as_uninit();
    // SAFETY: `dst` is the module's `params` symbol, exactly `src.len()` bytes (checked above),
    // alive while `loaded` is; `src` is borrowed for the call and a pageable source is staged
    // before the call returns. The copy is ordered on `stream` before the launch that follows.
    unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, stream.cu_stream()) }
        .map_err(|e| driver("writing 'params'", e))
}

fn arg_count(decl: &KernelDecl, got: usize) -> Error {
    let expected = decl
        .params
        .iter()
        .filter(|p| p.kind.in_launch_abi())
        .count();
    Error::ArgCount {
        op: format!("kernel {}", decl.rust_name),
        expected,
        got,
        schema: decl.rust_signature(),
    }
}

/// An `Out`/`InOut` that shares storage with an `In` would race with the kernel's reads.
fn check_aliases(decl: &KernelDecl, args: &[LaunchArg<'_>]) -> Result<()> {
    // `#N` is the declaration's index, as in every other message.
    let launch_params = || {
        decl.params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind.in_launch_abi())
    };
    // Few params: a quadratic scan beats any set, and allocates nothing.
    for ((i, p), a) in launch_params().zip(args) {
        let (
            ParamKind::Out(_)
            | ParamKind::InOut(_)
            | ParamKind::NativeOut(_)
            | ParamKind::NativeInOut(_),
            LaunchArg::Tensor(w),
        ) = (p.kind, a)
        else {
            continue;
        };
        for ((j, q), b) in launch_params().zip(args) {
            let (ParamKind::In(_) | ParamKind::NativeIn(_), LaunchArg::Tensor(r)) = (q.kind, b)
            else {
                continue;
            };
            if w.same_storage(r) {
                return Err(Error::InvalidArgument(format!(
                    "kernel {} writes argument #{i} ({}) but reads argument #{j} ({}), and they share storage; pass a separate output tensor, or declare the parameter InOut and pass it once",
                    decl.rust_name, p.name, q.name
                )));
            }
        }
    }
    Ok(())
}

fn widen(b: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..b.len()].copy_from_slice(b);
    out
}

/// The bytes of a run of chunks.
fn chunk_bytes(chunks: &mut [Chunk]) -> &mut [MaybeUninit<u8>] {
    let len = std::mem::size_of_val(chunks);
    // SAFETY: `Chunk` is `repr(C)` over `[MaybeUninit<u8>; 16]` with size 16 (no padding), so a
    // slice of chunks is `len` contiguous `MaybeUninit<u8>`, borrowed mutably for the result's
    // lifetime.
    unsafe { std::slice::from_raw_parts_mut(chunks.as_mut_ptr().cast(), len) }
}

/// Waits for all work on device `ordinal` and returns any fault it raised, such as an illegal
/// address in a kernel, as `Error::Cuda` naming the last kernel launched there. After such a
/// fault the device's context is unusable for the rest of the process (CUDA's rule).
pub fn synchronize(ordinal: usize) -> Result<()> {
    let dev = device(ordinal)?;
    dev.context.synchronize().map_err(|e| {
        let last = LAST_LAUNCHED
            .get(ordinal)
            .map(|p| p.load(Ordering::Relaxed))
            .unwrap_or(std::ptr::null_mut());
        // SAFETY: LAST_LAUNCHED only ever holds null or a `&'static KernelDecl` (from a
        // `&'static KernelHandle`), which lives for the whole process.
        let kernel = match unsafe { last.as_ref() } {
            Some(d) => d.rust_name.to_string(),
            None => format!("device cuda:{ordinal}"),
        };
        Error::Cuda {
            kernel,
            message: format!(
                "a kernel on cuda:{ordinal} failed (reported at synchronization; this was the last kernel launched there): {e}"
            ),
        }
    })
}
