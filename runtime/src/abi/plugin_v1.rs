//! The op plugin C ABI, version 1: the `#[repr(C)]` types a host and a plugin share, and nothing
//! else. `opbox.h` (at the repository root) declares the same types for C and C++ plugins, and
//! `tests/plugin_header.rs` checks it against this file with a C compiler.
//!
//! # Versions
//!
//! A version is packed into 64 bits as `major << 48 | minor << 32 | patch` ([`pack_version`]).
//! Within one major version the types are append-only: a minor version adds fields at the end of
//! a table, never changes or removes one. Every table starts with its `size` (in bytes, as its
//! maker built it) and, where it can grow, its packed version, so a reader knows which fields are
//! there before touching them. A different major version is refused at load.
//!
//! # The entry
//!
//! A plugin exports one symbol, [`ENTRY_V1`]: `const OpboxPluginV1* opbox_plugin_v1(const
//! OpboxHostV1* host)`. The host table lives as long as the process; the plugin keeps the pointer
//! (to allocate tensors, call host ops and report errors) and returns its static descriptor, or
//! null after `host->set_error` when it refuses the host. The host checks the descriptor and then
//! calls its `register` with a [`Registrar`], through which (and the host table) the plugin
//! defines libraries, ops and kernels. Nothing the plugin registers is used if any of it fails.
//!
//! # Values and ownership
//!
//! A [`Value`] has the in-process `StableValue`'s shape (a `u32` tag from `value::Tag`, a `u32`
//! aux and a `u64` payload) and the same tag numbers, but its handles are ABI objects:
//!
//! | tag | payload |
//! |-----|---------|
//! | None, Bool, Int, Float, DType, Device, Scalar | the same bits as in process |
//! | Str | `*mut AbiString` |
//! | Tensor | `*mut TensorHeader` |
//! | List | `*mut AbiList` (int, float and bool elements: `int64_t`, `double`, `uint8_t`) |
//!
//! A kernel's inputs are **borrowed** for the call: strings and lists come with a null
//! `release`, and a tensor header may live on the caller's stack. A kernel that keeps an input
//! tensor calls its vtable's `retain`, which returns an owned reference (possibly a new header).
//! Outputs are **owned**: each object carries the release function of the side that made it, and
//! the receiver calls it exactly once. One exception, since 1.3: a kernel that returns one of its
//! tensor inputs unchanged may write that input's header, as lent and not retained, into the
//! output slot; the host then takes its own reference to the tensor it lent (a host older than
//! 1.3 must be given a retained header). A tensor header has DLPack's `DLManagedTensorVersioned`
//! shape (a `DLTensor` plus manager fields), so its metadata is read with no call.
//!
//! Since 1.4 a kernel may come in a second form, [`ImplDesc::kernel_in_place`], which takes its
//! inputs as the host holds them: for an op of tensors and plain values the host then passes its
//! own stack, since each of its tensors is a header already, and nothing is lent or copied. A
//! plugin built with these crates runs its boxing shim on that stack directly: its values have
//! the in-process `StableValue`'s bits, and a tensor handle is a header in every image.
//!
//! # Errors
//!
//! Every function returns a status ([`STATUS_OK`], [`STATUS_ERROR`], [`STATUS_PANIC`]). The text
//! of a failure is thread-local on the host: a plugin sets it with `set_error` before returning a
//! failure, and reads the host's with `last_error` after a host function failed. No unwinding
//! crosses the boundary: both sides catch panics at each `extern "C"` edge.

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};

use crate::tensor::dlpack::ffi::{DLDataType, DLDevice, DLTensor};

/// The symbol every op plugin exports.
pub const ENTRY_V1: &[u8] = b"opbox_plugin_v1\0";

/// `major << 48 | minor << 32 | patch`.
pub const fn pack_version(major: u16, minor: u16, patch: u32) -> u64 {
    ((major as u64) << 48) | ((minor as u64) << 32) | patch as u64
}

/// The `(major, minor, patch)` of a packed version.
pub const fn unpack_version(v: u64) -> (u16, u16, u32) {
    ((v >> 48) as u16, (v >> 32) as u16, v as u32)
}

/// `1.2.3`, for messages.
pub fn version_string(v: u64) -> String {
    let (major, minor, patch) = unpack_version(v);
    format!("{major}.{minor}.{patch}")
}

/// The first version of the ABI.
pub const ABI_V1_0: u64 = pack_version(1, 0, 0);
/// Adds [`HostV1::warn`].
pub const ABI_V1_1: u64 = pack_version(1, 1, 0);
/// Adds [`HostV1::current_stream`].
pub const ABI_V1_2: u64 = pack_version(1, 2, 0);
/// Lets a kernel give back one of its tensor inputs as an output by writing the input's lent
/// header, unretained (see the module docs); the table is 1.2's.
pub const ABI_V1_3: u64 = pack_version(1, 3, 0);
/// Adds [`ImplDesc::kernel_in_place`]: a kernel may also take its inputs as the host holds
/// them; the table is 1.2's.
pub const ABI_V1_4: u64 = pack_version(1, 4, 0);
/// Adds [`HostV1::tensor_from_bytes`].
pub const ABI_V1_5: u64 = pack_version(1, 5, 0);
/// Adds [`HostV1::tensor_to`].
pub const ABI_V1_6: u64 = pack_version(1, 6, 0);
/// What this host offers and what plugins built from this crate are built against.
pub const ABI_VERSION: u64 = ABI_V1_6;

/// Success.
pub const STATUS_OK: i32 = crate::dispatch::STATUS_OK;
/// A failure; the text is in the host's thread-local error.
pub const STATUS_ERROR: i32 = crate::dispatch::STATUS_ERROR;
/// A caught panic; the text is in the host's thread-local error.
pub const STATUS_PANIC: i32 = crate::dispatch::STATUS_PANIC;

/// `LibraryDesc::kind` of a `#[stable_library]`: the one definer of a namespace.
pub const LIBRARY_DEF: u32 = 0;
/// `LibraryDesc::kind` of a `#[stable_fragment]`: more ops for a namespace.
pub const LIBRARY_FRAGMENT: u32 = 1;

/// `TensorHeader::flags`: the data must not be written (DLPack's read-only bit).
pub const TENSOR_FLAG_READ_ONLY: u64 = 1;

/// One boxed value (`OpboxValue`); see the module docs for the payloads.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Value {
    /// What the value holds: a [`Tag`](crate::Tag) number, as in process.
    pub tag: u32,
    /// Per-tag extra data (a Scalar's kind, a Stream's device index); 0 otherwise.
    pub aux: u32,
    /// The value, or a pointer to its box, as the module docs list per tag.
    pub payload: u64,
}

/// A borrowed UTF-8 string (`OpboxStrRef`): not NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrRef {
    /// The first byte.
    pub data: *const c_char,
    /// The length in bytes.
    pub len: usize,
}

/// A string value (`OpboxString`): borrowed (null `release`) as an input, owned as an output.
#[repr(C)]
#[derive(Debug)]
pub struct AbiString {
    /// The first byte (not NUL-terminated).
    pub data: *const c_char,
    /// The length in bytes.
    pub len: usize,
    /// Frees this string; null for a borrowed one.
    pub release: Option<unsafe extern "C" fn(*mut AbiString)>,
    /// The maker's own pointer.
    pub ctx: *mut c_void,
}

/// A list value (`OpboxList`) of `len` plain elements, borrowed or owned like a string.
#[repr(C)]
#[derive(Debug)]
pub struct AbiList {
    /// The elements' tag: Int (`int64_t`), Float (`double`) or Bool (`uint8_t`, 0 or 1).
    pub elem_tag: u32,
    /// Zero.
    pub reserved: u32,
    /// The first element.
    pub data: *const c_void,
    /// The number of elements.
    pub len: usize,
    /// Frees this list; null for a borrowed one.
    pub release: Option<unsafe extern "C" fn(*mut AbiList)>,
    /// The maker's own pointer.
    pub ctx: *mut c_void,
}

/// How a tensor header is kept alive and freed (`OpboxTensorVTable`), by the side that made it.
#[repr(C)]
#[derive(Debug)]
pub struct TensorVTable {
    /// `size_of` the table as its maker built it.
    pub size: u64,
    /// An owned reference to the same tensor: the header itself with its count raised, or a new
    /// header (always so for a borrowed one). Null when out of memory.
    pub retain: unsafe extern "C" fn(*mut TensorHeader) -> *mut TensorHeader,
    /// Gives up one owned reference. Never called on a borrowed header.
    pub release: unsafe extern "C" fn(*mut TensorHeader),
}

/// A tensor (`OpboxTensor`): DLPack's `DLManagedTensorVersioned` with a vtable in place of the
/// deleter. Both sides read the metadata directly; only the maker's vtable frees it.
#[repr(C)]
#[derive(Debug)]
pub struct TensorHeader {
    /// How the header is retained and released.
    pub vtable: *const TensorVTable,
    /// The maker's own pointer.
    pub manager_ctx: *mut c_void,
    /// The maker's reference count; 0 for a borrowed header. Only the maker's vtable touches it.
    pub refcount: u64,
    /// [`TENSOR_FLAG_READ_ONLY`].
    pub flags: u64,
    /// Shape and strides are in elements; `data` plus `byte_offset` is element `[0, ...]`.
    pub dl: DLTensor,
}

/// A boxed kernel (`OpboxKernelFn`): `stack[0..num_args]` are borrowed inputs,
/// `stack[num_args..num_args + num_outputs]` hold None and receive owned outputs. On failure it
/// sets the host's error and returns a failure status; it never unwinds.
///
/// The host checks the inputs' tags against the schema before the call (a C kernel may trust
/// them), and each output's tag after it; one more None slot follows the outputs, so a kernel
/// that writes one output too many is caught instead of writing past the stack.
pub type KernelFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    stack: *mut Value,
    num_args: u64,
    num_outputs: u64,
) -> i32;

/// One `#[stable_library]` or `#[stable_fragment]` (`OpboxLibraryDesc`); the ops defined after it
/// belong to it.
#[repr(C)]
#[derive(Debug)]
pub struct LibraryDesc {
    /// `size_of` the descriptor as the plugin built it.
    pub size: u64,
    /// [`LIBRARY_DEF`] or [`LIBRARY_FRAGMENT`].
    pub kind: u32,
    /// The line of the library in its source.
    pub line: u32,
    /// The namespace.
    pub namespace: StrRef,
    /// The source file of the library.
    pub file: StrRef,
}

/// One `m.def` (`OpboxOpDesc`) in the last library registered.
#[repr(C)]
#[derive(Debug)]
pub struct OpDesc {
    /// `size_of` the descriptor as the plugin built it.
    pub size: u64,
    /// The line of the `m.def`.
    pub line: u32,
    /// Zero.
    pub reserved: u32,
    /// The schema string, as `m.def` takes it.
    pub schema: StrRef,
}

/// One kernel (`OpboxImplDesc`) for an op the same plugin defines.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImplDesc {
    /// `size_of` the descriptor as the plugin built it.
    pub size: u64,
    /// `ns::name[.overload]`.
    pub op: StrRef,
    /// A dispatch key's name: `CPU`, `CUDA`, `Meta`, `CompositeExplicit`.
    pub key: StrRef,
    /// The kernel.
    pub kernel: KernelFn,
    /// Passed to the kernel as its first argument.
    pub ctx: *mut c_void,
    /// The implementing function, to tell a repeated registration from a second kernel.
    pub function: StrRef,
    /// The source file of the impl.
    pub file: StrRef,
    /// Its line.
    pub line: u32,
    /// Zero.
    pub reserved: u32,
    /// 1.4: the same kernel, for the host to call on its inputs as it holds them, or null. A
    /// tensor input is then a header the host owns and keeps through the call, not one lent
    /// for it (never released by the kernel, never written back unretained: every tensor
    /// output is owned), and a tensor input's `aux` is reserved. The host calls it only for
    /// ops whose arguments and returns are all tensors and plain values, and `kernel`
    /// otherwise; a descriptor shorter than this field has none.
    pub kernel_in_place: Option<KernelFn>,
}

/// The host's state for one plugin's registration (`OpboxRegistrar`): opaque to plugins.
#[repr(C)]
pub struct Registrar {
    _opaque: [u8; 0],
}

/// What the host offers (`OpboxHostV1`). Fields after `size`'s end are absent: check
/// `size` (or `version`) before calling a field added after 1.0.
#[repr(C)]
#[derive(Debug)]
pub struct HostV1 {
    /// `size_of` the table the host filled: fields past it are absent.
    pub size: u64,
    /// The ABI version this table is ([`ABI_VERSION`], or older when a host offers less).
    pub version: u64,
    /// The host's opbox crate version, packed.
    pub opbox_version: u64,
    /// Sets this thread's error text, before a kernel or `register` returns a failure.
    pub set_error: unsafe extern "C" fn(data: *const c_char, len: usize),
    /// This thread's error text (borrowed until the next failure on the thread); returns its
    /// length, 0 when there is none.
    pub last_error: unsafe extern "C" fn(out: *mut StrRef) -> usize,
    /// Starts a library or fragment: the ops defined next belong to it.
    pub library: unsafe extern "C" fn(reg: *mut Registrar, desc: *const LibraryDesc) -> i32,
    /// Defines one op in the current library.
    pub def: unsafe extern "C" fn(reg: *mut Registrar, desc: *const OpDesc) -> i32,
    /// Registers a kernel for an op this plugin defines.
    pub impl_kernel: unsafe extern "C" fn(reg: *mut Registrar, desc: *const ImplDesc) -> i32,
    /// A new tensor in the host's memory (uninitialised data), owned by the caller.
    pub tensor_empty: unsafe extern "C" fn(
        shape: *const i64,
        ndim: i32,
        dtype: DLDataType,
        device: DLDevice,
        out: *mut *mut TensorHeader,
    ) -> i32,
    /// Calls a host op by name: `args` are borrowed; `outs` receive owned values (their count
    /// must be the op's).
    pub call_op: unsafe extern "C" fn(
        name: *const c_char,
        name_len: usize,
        args: *const Value,
        num_args: u64,
        outs: *mut Value,
        num_outputs: u64,
    ) -> i32,
    /// The schema of a host op, as an owned string.
    pub op_schema:
        unsafe extern "C" fn(name: *const c_char, name_len: usize, out: *mut *mut AbiString) -> i32,
    /// 1.1: a warning through the host's warning channel.
    pub warn: unsafe extern "C" fn(data: *const c_char, len: usize),
    /// 1.2: the CUDA stream (a `CUstream`) that the host's code has made current for CUDA
    /// device `device` on this thread (opbox's `with_stream`), written to `out`; null when none
    /// is, which means the legacy default stream. A plugin queues its copies and launches there,
    /// so they are ordered with the host's work on that stream. The stream stays valid for the
    /// call that asked.
    pub current_stream: unsafe extern "C" fn(device: i32, out: *mut *mut c_void) -> i32,
    /// 1.5: a new contiguous CPU tensor of `shape` and `dtype` in the host's memory, holding a
    /// copy of the `len` bytes at `data` (exactly the shape's size), owned by the caller. A
    /// plugin's tensor made from its own elements is then the host's, as one made in the host
    /// is: the host takes it back with nothing to wrap.
    pub tensor_from_bytes: unsafe extern "C" fn(
        data: *const c_void,
        len: usize,
        shape: *const i64,
        ndim: i32,
        dtype: DLDataType,
        out: *mut *mut TensorHeader,
    ) -> i32,
    /// 1.6: `t` on `device`, as opbox's `Tensor::to` gives it (a contiguous copy, or `t`
    /// itself when it is there already), owned by the caller; `t` is borrowed. The host copies
    /// on its current stream and waits for the copy. A plugin's transfers of the host's tensors
    /// are then the host's own, with nothing wrapped on either side.
    pub tensor_to: unsafe extern "C" fn(
        t: *mut TensorHeader,
        device: DLDevice,
        out: *mut *mut TensorHeader,
    ) -> i32,
}

/// The size of the host table of version `version`: each minor version appends functions.
pub const fn host_size_for(version: u64) -> usize {
    if version >= ABI_V1_6 {
        size_of::<HostV1>()
    } else if version >= ABI_V1_5 {
        offset_of!(HostV1, tensor_to)
    } else if version >= ABI_V1_2 {
        offset_of!(HostV1, tensor_from_bytes)
    } else if version >= ABI_V1_1 {
        offset_of!(HostV1, current_stream)
    } else {
        offset_of!(HostV1, warn)
    }
}

/// The host functions added after 1.0, with the version that added each, for messages that
/// name what a plugin needs.
pub const HOST_FUNCTIONS_SINCE_1_0: &[(&str, u64)] = &[
    ("warn", ABI_V1_1),
    ("current_stream", ABI_V1_2),
    ("tensor_from_bytes", ABI_V1_5),
    ("tensor_to", ABI_V1_6),
];

/// What a plugin is (`OpboxPluginV1`), returned by its entry.
#[repr(C)]
#[derive(Debug)]
pub struct PluginV1 {
    /// `size_of` the descriptor as the plugin built it.
    pub size: u64,
    /// The ABI version the plugin was built against.
    pub abi_version: u64,
    /// The oldest host ABI it runs on (at least 1.0).
    pub min_host_version: u64,
    /// The opbox version it was built with (0 for a plugin not built with opbox's crates).
    pub opbox_version: u64,
    /// Its name, NUL-terminated, static.
    pub name: *const c_char,
    /// Registers the plugin's libraries, ops and kernels through the host's table.
    pub register: unsafe extern "C" fn(reg: *mut Registrar) -> i32,
}

/// The size of a 1.0 plugin descriptor (no field has been added since).
pub const PLUGIN_SIZE_V1_0: usize = size_of::<PluginV1>();

/// The entry's type.
pub type EntryV1 = unsafe extern "C" fn(host: *const HostV1) -> *const PluginV1;

/// The crate version, packed, as both sides report it.
pub const fn opbox_version() -> u64 {
    const fn parse(s: &str) -> u64 {
        let b = s.as_bytes();
        let (mut parts, mut part, mut i) = ([0u64; 3], 0, 0);
        while i < b.len() && part < 3 {
            match b[i] {
                b'0'..=b'9' => parts[part] = parts[part] * 10 + (b[i] - b'0') as u64,
                b'.' => part += 1,
                _ => break,
            }
            i += 1;
        }
        pack_version(parts[0] as u16, parts[1] as u16, parts[2] as u32)
    }
    parse(env!("CARGO_PKG_VERSION"))
}

// The layout opbox.h declares, on the 64-bit targets opbox builds for.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<Value>() == 16);
    assert!(size_of::<Value>() == size_of::<crate::value::StableValue>());
    assert!(size_of::<StrRef>() == 16);
    assert!(size_of::<AbiString>() == 32);
    assert!(size_of::<AbiList>() == 40);
    assert!(size_of::<TensorVTable>() == 24);
    assert!(size_of::<TensorHeader>() == 80);
    assert!(offset_of!(TensorHeader, dl) == 32);
    assert!(size_of::<LibraryDesc>() == 48);
    assert!(size_of::<OpDesc>() == 32);
    assert!(size_of::<ImplDesc>() == 104);
    assert!(offset_of!(ImplDesc, kernel_in_place) == 96);
    assert!(size_of::<HostV1>() == 120);
    assert!(offset_of!(HostV1, warn) == 88);
    assert!(size_of::<PluginV1>() == 48);
    // Shapes and strides are handed out in place: usize and isize are int64_t's size.
    assert!(size_of::<usize>() == size_of::<i64>());
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pack_and_unpack() {
        assert_eq!(ABI_V1_0, 0x0001_0000_0000_0000);
        assert_eq!(ABI_V1_1, 0x0001_0001_0000_0000);
        assert_eq!(unpack_version(pack_version(3, 4, 5)), (3, 4, 5));
        assert_eq!(version_string(ABI_V1_1), "1.1.0");
        assert_eq!(version_string(opbox_version()), env!("CARGO_PKG_VERSION"));
        assert_eq!(host_size_for(ABI_V1_0), 88);
        assert_eq!(host_size_for(ABI_V1_1), 96);
        assert_eq!(host_size_for(ABI_V1_2), 104);
        assert_eq!(host_size_for(ABI_V1_4), 104);
        assert_eq!(host_size_for(ABI_V1_5), 112);
        assert_eq!(host_size_for(ABI_V1_6), 120);
    }
}
