//! Check and pack: the backend-neutral first half of every launch.
//!
//! [`prepare`] checks each argument against the declaration (dtype, device, one device for all,
//! contiguous, no `Out`/`InOut` sharing storage with an `In`, the constexpr count) and packs the
//! launch parameters into one 16-aligned buffer. The [`PreparedLaunch`] it returns is what a
//! backend submits, and what a graph records: it borrows the arguments, so each tensor's
//! direction (from the declaration) and storage stay at hand without a copy.

use std::mem::MaybeUninit;

use opbox_codegen::cuda::{ConstValue, EntryAbi, KernelDecl, ParamKind};

use super::arg::LaunchArg;
use super::config::LaunchConfig;
use super::handle::KernelHandle;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

/// Launch parameters beyond this count are refused (kernels rarely take more than a dozen).
pub const MAX_LAUNCH_ARGS: usize = 32;

/// Bytes of launch parameters, all together (CUDA's classic limit).
pub const MAX_PARAM_BYTES: usize = 4096;

/// 16 bytes of launch parameter space, 16-aligned: each parameter starts at a chunk, and the
/// driver copies as many bytes as the entry's parameter has from the address pushed.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Chunk(pub(crate) [MaybeUninit<u8>; 16]);

const CHUNK: usize = std::mem::size_of::<Chunk>();

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

/// Chunks in a launch's parameter buffer.
const ARENA_CHUNKS: usize = MAX_PARAM_BYTES / CHUNK;

/// The space a launch's parameters are packed into, and where each one starts. The caller owns
/// it (on its stack), so a [`PreparedLaunch`] borrows its 4 KiB instead of moving them, and
/// nothing in it is zeroed: `prepare` writes what it packs, and only that is read.
pub struct ParamBuffer {
    arena: [Chunk; ARENA_CHUNKS],
    /// The first chunk of each launch parameter, in order (the first `count` are written).
    starts: [u16; MAX_LAUNCH_ARGS],
}

impl ParamBuffer {
    /// An unfilled buffer; [`prepare`] writes what it packs.
    #[inline]
    pub fn new() -> ParamBuffer {
        ParamBuffer {
            arena: [Chunk([MaybeUninit::uninit(); CHUNK]); ARENA_CHUNKS],
            starts: [0; MAX_LAUNCH_ARGS],
        }
    }
}

impl Default for ParamBuffer {
    fn default() -> Self {
        ParamBuffer::new()
    }
}

/// A checked launch with its parameters packed: everything a backend needs to submit it.
pub struct PreparedLaunch<'a> {
    handle: &'static KernelHandle,
    config: &'a LaunchConfig,
    device: Device,
    args: &'a [LaunchArg<'a>],
    constexprs: &'a [ConstValue],
    arena: &'a mut ParamBuffer,
    /// Launch parameters packed (the arena's `starts` in use).
    count: u16,
    /// Chunks of the arena in use.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    used: u16,
}

impl<'a> PreparedLaunch<'a> {
    /// The kernel's handle.
    pub fn handle(&self) -> &'static KernelHandle {
        self.handle
    }

    /// The kernel's declaration.
    pub fn decl(&self) -> &'static KernelDecl {
        self.handle.decl()
    }

    /// The launch's grid, block and shared memory.
    pub fn config(&self) -> &'a LaunchConfig {
        self.config
    }

    /// The device of the tensor arguments (`cuda:0` for a launch without tensors).
    pub fn device(&self) -> Device {
        self.device
    }

    /// The checked arguments, one per launch parameter of [`PreparedLaunch::decl`], in order.
    pub fn args(&self) -> &'a [LaunchArg<'a>] {
        self.args
    }

    /// One value per `#[constexpr]` parameter, in declaration order.
    pub fn constexprs(&self) -> &'a [ConstValue] {
        self.constexprs
    }

    /// The tensor arguments with their declared direction: what a graph derives edges from.
    pub fn tensors(&self) -> impl Iterator<Item = (Access, &'a crate::Tensor)> + '_ {
        let decl = self.handle.decl();
        decl.params
            .iter()
            .filter(|p| p.kind.in_launch_abi())
            .zip(self.args)
            .filter_map(|(p, a)| match (Access::of(p.kind), *a) {
                (Some(access), LaunchArg::Tensor(t)) => Some((access, t)),
                _ => None,
            })
    }

    /// The packed parameter chunks in use and the first chunk of each parameter: what a graph
    /// copies to keep a launch's parameters past this borrow.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn packed(&self) -> (&[Chunk], &[u16]) {
        (
            &self.arena.arena[..self.used as usize],
            &self.arena.starts[..self.count as usize],
        )
    }

    /// Fills `out` with the address of each packed parameter, in order, for a driver call that
    /// takes `void**`, and returns how many it wrote. The addresses point into `self`.
    pub fn param_addresses(&mut self, out: &mut [*mut std::ffi::c_void; MAX_LAUNCH_ARGS]) -> usize {
        let count = self.count as usize;
        let base = self.arena.arena.as_mut_ptr();
        for (slot, &start) in out.iter_mut().zip(&self.arena.starts[..count]) {
            // SAFETY: every start was written by `prepare` and indexes a chunk of the arena.
            *slot = unsafe { base.add(start as usize) }.cast();
        }
        count
    }
}

/// Which way a tensor parameter's data flows, from its declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `In`: the kernel reads it.
    Read,
    /// `Out`: the kernel writes it.
    Write,
    /// `InOut`: both.
    ReadWrite,
}

impl Access {
    /// The direction of a slice parameter, or `None` for a by-value one.
    pub const fn of(kind: ParamKind) -> Option<Access> {
        match kind {
            ParamKind::In(_) | ParamKind::NativeIn(_) => Some(Access::Read),
            ParamKind::Out(_) | ParamKind::NativeOut(_) => Some(Access::Write),
            ParamKind::InOut(_) | ParamKind::NativeInOut(_) => Some(Access::ReadWrite),
            _ => None,
        }
    }
}

/// The alignment, in bytes, that a tensor a DSL kernel moves with `load4`/`store4` must start
/// at (one float4): the launch refuses a view that does not.
pub const VECTOR_ALIGN: u64 = 16;

/// A tensor that a DSL kernel moves as float4 (`method` on parameter `param`) starts at a
/// 16-byte boundary, on either device: the CUDA build issues one 16-byte access per vector,
/// which faults where it is not aligned, and the CPU build refuses the same launches so that a
/// kernel tested on the CPU does not fail on the GPU.
fn vector_aligned(kernel: &str, param: &str, method: &str, x: &Tensor) -> Result<()> {
    // A host address on the CPU, a device address on CUDA.
    let past = x.data_ptr() as u64 % VECTOR_ALIGN;
    if past == 0 {
        return Ok(());
    }
    Err(misaligned(kernel, param, method, x, past))
}

#[cold]
#[inline(never)]
fn misaligned(kernel: &str, param: &str, method: &str, x: &Tensor, past: u64) -> Error {
    // A native tensor's elements are its rows of bytes: a view of whole 16-byte values is
    // aligned when its storage is, so only a view that starts mid-value can be off.
    let unit = match x.native_schema() {
        Some(native) => format!("starts at a whole `{}` value", native.rust_name),
        None => format!(
            "offset is a multiple of {} {}s",
            VECTOR_ALIGN / (x.dtype().size() as u64).max(1),
            x.dtype()
        ),
    };
    Error::InvalidArgument(format!(
        "parameter {param} of {kernel} starts {past} bytes past a 16-byte boundary (element offset {} in its storage); {method} needs 16-byte alignment: pass a view whose {unit}, or a copy (`let y = x.empty_like()?; y.copy_from(&x)?;`)",
        x.offset(),
    ))
}

/// Checks `args` against `handle`'s declaration and packs them for a launch with `cfg`,
/// specialized by `constexprs` (one value per `#[constexpr]` param, in declaration order).
///
/// Every error is built by a cold function of its own: the checks a launch passes stay a short
/// run of code, which matters because a launch runs right after the driver's previous one has
/// pushed this code out of the first-level caches.
pub fn prepare<'a>(
    handle: &'static KernelHandle,
    cfg: &'a LaunchConfig,
    args: &'a [LaunchArg<'a>],
    constexprs: &'a [ConstValue],
    buffer: &'a mut ParamBuffer,
) -> Result<PreparedLaunch<'a>> {
    let decl = handle.decl();
    let ParamBuffer { arena, starts } = buffer;
    let mut used = 0usize;
    let mut count = 0usize;
    // (declaration index, device) of the first tensor: all others must be on its device.
    let mut first: Option<(usize, Device)> = None;
    // Whether a tensor is written: only then can two arguments alias harmfully.
    let mut writes = false;
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
            return Err(invalid(
                decl,
                format_args!(" has more than {MAX_LAUNCH_ARGS} launch parameters"),
            ));
        }
        // Every parameter but a struct fits one 8-byte word, which goes to a chunk of its own
        // as one store (the driver reads only the parameter's own size of it).
        let word: [u8; 8] = match (param.kind, arg) {
            (kind, &LaunchArg::Tensor(x)) if kind.is_slice() => {
                let device = x.device();
                let on_cuda = device.is_cuda();
                // A DSL kernel also runs on CPU tensors, through its CPU build.
                let on_cpu_build = device == Device::Cpu && handle.cpu().is_some();
                if !(on_cuda || on_cpu_build) || !elem_matches(kind, x) {
                    return Err(wrong_tensor(handle, decl_index, arg));
                }
                if !x.is_contiguous() {
                    return Err(not_contiguous(decl, decl_index, x));
                }
                writes |= !matches!(Access::of(kind), Some(Access::Read));
                match first {
                    None => first = Some((decl_index, device)),
                    Some(at) if at.1 != device => {
                        return Err(mixed_devices(decl, at, decl_index, device))
                    }
                    Some(_) => {}
                }
                if let Some(method) = handle.vector_method(decl_index) {
                    vector_aligned(&decl.rust_name, &param.name, method, x)?;
                }
                // The CPU build reads its tensors itself (`Buffers::lock`), not this word.
                if on_cuda { x.device_ptr()? } else { 0 }.to_ne_bytes()
            }
            (kind, LaunchArg::Null) if kind.is_slice() && param.nullable => [0; 8],
            (ParamKind::Scalar(t), a) => match a.scalar() {
                Some((given, raw)) if given == t => raw,
                _ => return Err(wrong_arg(decl, decl_index, arg)),
            },
            (ParamKind::Native(p), LaunchArg::Native(n))
                if n.schema.native_name == p.schema.native_name
                    && n.schema.same_contract(p.schema)
                    && n.len() == p.schema.size =>
            {
                used = pack_native(decl, decl_index, arena, starts, (index, used), n)?;
                count = index + 1;
                continue;
            }
            _ => return Err(wrong_arg(decl, decl_index, arg)),
        };
        let Some(chunk) = arena.get_mut(used) else {
            return Err(invalid(
                decl,
                format_args!(" has more than {MAX_PARAM_BYTES} bytes of launch parameters"),
            ));
        };
        put(chunk, word);
        starts[index] = used as u16;
        used += 1;
        count = index + 1;
    }
    if params.next().is_some() {
        return Err(arg_count(decl, args.len()));
    }
    if writes {
        check_aliases(decl, args)?;
    }
    if decl.abi == EntryAbi::ParamsAndLens {
        (used, count) = pack_lens(decl, args, arena, starts, (used, count))?;
    }

    let device = match first {
        Some((_, device)) => device,
        None => Device::Cuda(0),
    };
    // Every param the loop did not take is a constexpr (`in_launch_abi`), and the loop took one
    // per argument.
    let declared_constexprs = decl.params.len().saturating_sub(args.len());
    if declared_constexprs != constexprs.len() {
        return Err(invalid(
            decl,
            format_args!(
                " takes {declared_constexprs} #[constexpr] values, but {} were given",
                constexprs.len()
            ),
        ));
    }
    if decl.abi == EntryAbi::ConstantParams && !matches!(args, [LaunchArg::Native(_)]) {
        return Err(invalid(
            decl,
            format_args!(": abi constant_params takes exactly one struct argument"),
        ));
    }
    Ok(PreparedLaunch {
        handle,
        config: cfg,
        device,
        args,
        constexprs,
        arena: buffer,
        count: count as u16,
        used: used as u16,
    })
}

/// Packs struct argument `n` (checked against its param) as launch parameter `index`, from
/// chunk `used`; returns the chunks used after it.
fn pack_native(
    decl: &KernelDecl,
    decl_index: usize,
    arena: &mut [Chunk],
    starts: &mut [u16; MAX_LAUNCH_ARGS],
    (index, used): (usize, usize),
    n: &super::arg::NativeBytes<'_>,
) -> Result<usize> {
    if n.schema.align > CHUNK {
        return Err(arg_type(
            decl,
            decl_index,
            format!("a struct aligned to at most {CHUNK} bytes"),
            format!("{} aligned to {}", n.schema.rust_name, n.schema.align),
        ));
    }
    let chunks = n.len().div_ceil(CHUNK).max(1);
    if used + chunks > arena.len() {
        return Err(invalid(
            decl,
            format_args!(" has more than {MAX_PARAM_BYTES} bytes of launch parameters"),
        ));
    }
    n.copy_to(chunk_bytes(&mut arena[used..used + chunks]));
    starts[index] = used as u16;
    Ok(used + chunks)
}

fn kernel_name(decl: &KernelDecl) -> String {
    format!("kernel {}", decl.rust_name)
}

#[cold]
#[inline(never)]
fn arg_type(decl: &KernelDecl, decl_index: usize, expected: String, got: String) -> Error {
    Error::ArgType {
        op: kernel_name(decl),
        index: decl_index,
        name: decl.params[decl_index].name.to_string(),
        expected,
        got,
    }
}

/// A tensor of the wrong element type, or on a device the kernel has no build for.
#[cold]
#[inline(never)]
fn wrong_tensor(handle: &KernelHandle, decl_index: usize, arg: &LaunchArg<'_>) -> Error {
    let decl = handle.decl();
    let t = elem_name(decl.params[decl_index].kind);
    let devices = if handle.cpu().is_some() {
        "CPU or CUDA"
    } else {
        "CUDA"
    };
    arg_type(
        decl,
        decl_index,
        format!("{t} {devices} tensor"),
        arg.describe(),
    )
}

#[cold]
#[inline(never)]
fn not_contiguous(decl: &KernelDecl, decl_index: usize, x: &Tensor) -> Error {
    arg_type(
        decl,
        decl_index,
        format!(
            "contiguous {} CUDA tensor",
            elem_name(decl.params[decl_index].kind)
        ),
        format!(
            "a non-contiguous view (shape {:?}, strides {:?}); call .contiguous() first",
            x.shape(),
            x.strides()
        ),
    )
}

/// An argument of another kind than its param (a scalar of another type, say).
#[cold]
#[inline(never)]
fn wrong_arg(decl: &KernelDecl, decl_index: usize, arg: &LaunchArg<'_>) -> Error {
    let expected = match decl.params[decl_index].kind {
        ParamKind::Scalar(t) => t.to_string(),
        kind => kind.rust_type(),
    };
    arg_type(decl, decl_index, expected, arg.describe())
}

#[cold]
#[inline(never)]
fn mixed_devices(
    decl: &KernelDecl,
    (first_index, first_device): (usize, Device),
    index: usize,
    device: Device,
) -> Error {
    Error::MixedDevices {
        op: kernel_name(decl),
        first_index,
        first_name: decl.params[first_index].name.to_string(),
        first_device,
        index,
        name: decl.params[index].name.to_string(),
        device,
    }
}

/// "kernel NAME" and `rest`, as an invalid argument.
#[cold]
#[inline(never)]
fn invalid(decl: &KernelDecl, rest: std::fmt::Arguments<'_>) -> Error {
    Error::InvalidArgument(format!("{}{rest}", kernel_name(decl)))
}

#[cold]
#[inline(never)]
fn arg_count(decl: &KernelDecl, got: usize) -> Error {
    let expected = decl
        .params
        .iter()
        .filter(|p| p.kind.in_launch_abi())
        .count();
    // A kernel's parameters have no defaults.
    Error::ArgCount {
        op: format!("kernel {}", decl.rust_name),
        min: expected,
        expected,
        got,
        schema: decl.rust_signature(),
        defaulted: Vec::new(),
    }
}

/// An `Out`/`InOut` that shares storage with an `In` would race with the kernel's reads. Out of
/// line, as is [`pack_lens`]: only some launches need them.
#[inline(never)]
pub(crate) fn check_aliases(decl: &KernelDecl, args: &[LaunchArg<'_>]) -> Result<()> {
    // `#N` is the declaration's index, as in every other message.
    let launch_params = || {
        decl.params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind.in_launch_abi())
    };
    // Few params: a quadratic scan beats any set, and allocates nothing.
    for ((i, p), a) in launch_params().zip(args) {
        let (Some(Access::Write | Access::ReadWrite), LaunchArg::Tensor(w)) =
            (Access::of(p.kind), a)
        else {
            continue;
        };
        for ((j, q), b) in launch_params().zip(args) {
            let (Some(Access::Read), LaunchArg::Tensor(r)) = (Access::of(q.kind), b) else {
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

/// Under [`EntryAbi::ParamsAndLens`] (DSL kernels), one `u32` element count per slice param,
/// after the params, in order: what the kernel's `len()` and bounds checks read. `(used,
/// count)` are the chunks and params packed so far; returns them updated.
#[inline(never)]
fn pack_lens(
    decl: &KernelDecl,
    args: &[LaunchArg<'_>],
    arena: &mut [Chunk],
    starts: &mut [u16; MAX_LAUNCH_ARGS],
    (mut used, mut count): (usize, usize),
) -> Result<(usize, usize)> {
    let params = decl.params.iter().filter(|p| p.kind.in_launch_abi());
    for (param, arg) in params.zip(args) {
        let LaunchArg::Tensor(x) = *arg else { continue };
        let elems = crate::backend::cpu::dsl::args::element_count(param.kind, x);
        let len = u32::try_from(elems).map_err(|_| {
            Error::InvalidArgument(format!(
                "kernel {}: {} has {elems} elements; a #[kernel]'s buffers hold at most u32::MAX (its len() is a u32)",
                decl.rust_name, param.name
            ))
        })?;
        if count >= MAX_LAUNCH_ARGS || used >= arena.len() {
            return Err(Error::InvalidArgument(format!(
                "kernel {} has more than {MAX_LAUNCH_ARGS} launch parameters with its buffer lengths",
                decl.rust_name
            )));
        }
        put(&mut arena[used], len.to_ne_bytes());
        starts[count] = used as u16;
        used += 1;
        count += 1;
    }
    Ok((used, count))
}

/// Writes `bytes` (at most a chunk's 16) at the start of `chunk`: a fixed-size copy, which
/// compiles to one store where a length known only at run time was a call to `memcpy`.
fn put<const N: usize>(chunk: &mut Chunk, bytes: [u8; N]) {
    const { assert!(N <= CHUNK) };
    chunk.0[..N].copy_from_slice(&bytes.map(MaybeUninit::new));
}

/// The bytes of a run of chunks.
fn chunk_bytes(chunks: &mut [Chunk]) -> &mut [MaybeUninit<u8>] {
    let len = std::mem::size_of_val(chunks);
    // SAFETY: `Chunk` is `repr(C)` over `[MaybeUninit<u8>; 16]` with size 16 (no padding), so a
    // slice of chunks is `len` contiguous `MaybeUninit<u8>`, borrowed mutably for the result's
    // lifetime.
    unsafe { std::slice::from_raw_parts_mut(chunks.as_mut_ptr().cast(), len) }
}
