//! The host table: what this image offers the plugins it loads, and the registrar their
//! `register` fills. Every function here is an `extern "C"` edge: panics are caught, and
//! failures set this thread's error text (read back with `last_error`).

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void};
use std::mem::size_of;

use opbox_codegen::cpp_ident::is_identifier;

use super::arena::StrArena;
use super::convert;
use super::kernel::RawKernel;
use super::schemas::SchemaCache;
use super::tensor;
use crate::abi::plugin_v1::{
    host_size_for, opbox_version, AbiString, HostV1, ImplDesc, LibraryDesc, OpDesc, Registrar,
    StrRef, TensorHeader, Value, ABI_V1_0, ABI_V1_1, ABI_V1_2, ABI_V1_3, ABI_V1_4, ABI_V1_5,
    ABI_VERSION, LIBRARY_DEF, LIBRARY_FRAGMENT, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
};
use crate::dispatch::foreign::{ForeignImpl, ForeignLibrary, ForeignOp, ImplOp};
use crate::dispatch::{DispatchKey, LibraryKind};
use crate::error::Site;
use crate::tensor::dlpack::codes::{from_dl_device_for, from_dl_dtype_for};
use crate::tensor::dlpack::ffi::{DLDataType, DLDevice};
use crate::value::{StableValue, Stack};
use crate::{Error, Result, Tensor};

thread_local! {
    static ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Whether `ERROR` may hold a text: a plain flag (no destructor, so reading it is one
    /// load), which lets every kernel call clear the error without touching `ERROR`.
    static ERROR_SET: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn set_error_text(text: String) {
    ERROR.with(|e| *e.borrow_mut() = Some(text));
    ERROR_SET.set(true);
}

#[inline]
pub(crate) fn clear_error() {
    if ERROR_SET.get() {
        take_error_text();
    }
}

pub(crate) fn take_error_text() -> Option<String> {
    ERROR_SET.set(false);
    ERROR.with(|e| e.borrow_mut().take())
}

/// The tables this host can offer, oldest first: the same functions, with `size` and `version`
/// as a host of each minor version has them. A plugin is given the newest unless it must be
/// shown an older host (`LoadOptions::host_version`).
static TABLES: [HostV1; 7] = [
    table(ABI_V1_0),
    table(ABI_V1_1),
    table(ABI_V1_2),
    table(ABI_V1_3),
    table(ABI_V1_4),
    table(ABI_V1_5),
    table(ABI_VERSION),
];

/// The table of the newest version this host offers that is no newer than `version`.
pub(crate) fn table_for(version: u64) -> &'static HostV1 {
    TABLES
        .iter()
        .rev()
        .find(|t| t.version <= version)
        .unwrap_or(&TABLES[0])
}

pub(crate) const fn table(version: u64) -> HostV1 {
    HostV1 {
        size: host_size_for(version) as u64,
        version,
        opbox_version: opbox_version(),
        set_error,
        last_error,
        library,
        def,
        impl_kernel,
        tensor_empty,
        call_op,
        op_schema,
        warn,
        current_stream,
        tensor_from_bytes,
        tensor_to,
    }
}

/// Runs `f` at a C edge: its error or panic becomes this thread's error text and a status.
fn edge(f: impl FnOnce() -> Result<()>) -> i32 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => STATUS_OK,
        Ok(Err(e)) => {
            set_error_text(e.to_string());
            STATUS_ERROR
        }
        Err(payload) => {
            set_error_text(format!(
                "the host panicked: {}",
                crate::panic::dispose(payload)
            ));
            STATUS_PANIC
        }
    }
}

/// # Safety
/// `data` holds `len` bytes (or `len` is 0).
pub(crate) unsafe fn text<'a>(data: *const c_char, len: usize, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded.
    utf8(unsafe { bytes(data, len, what) }?, what)
}

/// # Safety
/// As [`text`].
unsafe fn bytes<'a>(data: *const c_char, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Error::InvalidArgument(format!(
            "plugin ABI: {what} is null with length {len}"
        )));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str> {
    // Names and schemas are ASCII: checking that is cheaper than a UTF-8 decode of a short text.
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes)
        .map_err(|_| Error::InvalidArgument(format!("plugin ABI: {what} is not UTF-8")))
}

/// # Safety
/// As [`text`], for a borrowed string.
unsafe fn bytes_ref<'a>(s: StrRef, what: &str) -> Result<&'a [u8]> {
    // SAFETY: forwarded.
    unsafe { bytes(s.data, s.len, what) }
}

/// # Safety
/// As [`text`], for a borrowed string.
unsafe fn text_ref<'a>(s: StrRef, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded.
    unsafe { text(s.data, s.len, what) }
}

unsafe extern "C" fn set_error(data: *const c_char, len: usize) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the ABI's contract: `len` bytes at `data`.
        let message = match unsafe { text(data, len, "the error text") } {
            Ok(t) => t.to_string(),
            Err(e) => e.to_string(),
        };
        set_error_text(message);
    });
}

thread_local! {
    /// The text `last_error` lends: kept until the next call on the thread.
    static LENT: RefCell<String> = const { RefCell::new(String::new()) };
}

unsafe extern "C" fn last_error(out: *mut StrRef) -> usize {
    std::panic::catch_unwind(|| {
        let text = ERROR.with(|e| e.borrow().clone()).unwrap_or_default();
        LENT.with(|lent| {
            let mut lent = lent.borrow_mut();
            *lent = text;
            if !out.is_null() {
                // SAFETY: the caller passes writable space for one StrRef, or null.
                unsafe {
                    out.write(StrRef {
                        data: lent.as_ptr().cast(),
                        len: lent.len(),
                    })
                };
            }
            lent.len()
        })
    })
    .unwrap_or(0)
}

/// What one plugin registers through the table during its `register`.
pub(crate) struct Registration {
    pub(crate) libraries: Vec<ForeignLibrary>,
    pub(crate) ops: Vec<ForeignOp>,
    pub(crate) impls: Vec<ForeignImpl>,
    /// Each impl's kernel, in the order of `impls`.
    pub(crate) kernels: Vec<RawKernel>,
    pub(crate) errors: Vec<Error>,
    /// Names, kept for the process (plugins are never unloaded).
    strings: StrArena,
    /// The strings impls name by number (`ForeignImpl`): file and function names, which
    /// repeat across a plugin's registrations and are kept once each, and the names of ops an
    /// impl does not follow.
    pub(crate) names: Vec<&'static str>,
    /// Each file and function name's place in `names`.
    interned: std::collections::HashMap<&'static str, u32, foldhash::fast::FixedState>,
    /// The last two of them interned, with their places (a file and a function, as impls
    /// alternate them).
    recent: [(&'static str, u32); 2],
    schemas: SchemaCache,
}

/// The ops and impls a registration makes room for before its first: address space, not
/// memory, since a page is backed only once written. Grown by doubling instead, a plugin of
/// 10,000 ops copied its tables a dozen times into fresh pages, and a fresh page costs about
/// 2 µs to fault in (the kernel zeroes it), more than registering an op does. [`Registration::
/// shrink`] gives back the rest.
const RESERVED_OPS: usize = 1 << 16;

impl Registration {
    pub(crate) fn new() -> Registration {
        Registration {
            libraries: Vec::new(),
            ops: Vec::with_capacity(RESERVED_OPS),
            impls: Vec::with_capacity(RESERVED_OPS),
            kernels: Vec::with_capacity(RESERVED_OPS),
            errors: Vec::new(),
            strings: StrArena::default(),
            names: Vec::new(),
            interned: std::collections::HashMap::default(),
            recent: [("", u32::MAX); 2],
            schemas: SchemaCache::default(),
        }
    }

    /// `s` (checked to be UTF-8, as `what`), kept for the process, shared with earlier equal
    /// ones; with its place in `names`.
    fn intern(&mut self, s: &[u8], what: &str) -> Result<(&'static str, u32)> {
        // A plugin passes the same file and function names call after call: most end here.
        if let Some(&kept) = self.recent.iter().find(|(k, _)| k.as_bytes() == s) {
            return Ok(kept);
        }
        let s = utf8(s, what)?;
        let kept = match self.interned.get_key_value(s) {
            Some((&kept, &at)) => (kept, at),
            None => {
                let kept = self.strings.concat(&[s]);
                let at = self.name(kept);
                self.interned.insert(kept, at);
                (kept, at)
            }
        };
        self.recent.rotate_right(1);
        self.recent[0] = kept;
        Ok(kept)
    }

    /// `kept`'s place in `names`, as a new entry.
    fn name(&mut self, kept: &'static str) -> u32 {
        self.names.push(kept);
        (self.names.len() - 1) as u32
    }

    /// Gives back the unused part of the reservation (shrinking in place, without a copy).
    pub(crate) fn shrink(&mut self) {
        self.ops.shrink_to_fit();
        self.impls.shrink_to_fit();
        self.kernels.shrink_to_fit();
    }

    pub(crate) fn as_registrar(&mut self) -> *mut Registrar {
        (self as *mut Registration).cast()
    }
}

/// Runs `f` on the registration behind `reg`, recording its error.
///
/// # Safety
/// `reg` is the registrar the host passed to the `register` running now, on this thread.
unsafe fn with_registration(
    reg: *mut Registrar,
    f: impl FnOnce(&mut Registration) -> Result<()>,
) -> i32 {
    edge(|| {
        // SAFETY: per the contract, the host's live Registration, used by this call only.
        let registration = unsafe { reg.cast::<Registration>().as_mut() }
            .ok_or_else(|| Error::InvalidArgument("plugin ABI: a null registrar".to_string()))?;
        let result = f(registration);
        if let Err(e) = &result {
            registration.errors.push(e.clone());
        }
        result
    })
}

/// Checks that a descriptor is at least as large as this ABI's 1.0 form of it.
///
/// # Safety
/// `p` is null or points at a descriptor whose first field is its `u64` size.
unsafe fn sized<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: forwarded.
    unsafe { declared_size(p, what, size_of::<T>()) }?;
    // SAFETY: at least as large as T, per its size.
    Ok(unsafe { &*p })
}

/// A copy of the descriptor at `p`, which may be older (shorter) than `T`, down to `min` bytes
/// (its 1.0 size): the fields past its end read as zero (null, `None`).
///
/// # Safety
/// As [`sized`]; every field of `T` past `min` is valid as zero bytes.
unsafe fn read_grown<T: Copy>(p: *const T, what: &str, min: usize) -> Result<T> {
    // SAFETY: forwarded.
    let size = unsafe { declared_size(p, what, min) }?;
    let len = size.min(size_of::<T>());
    let mut copy = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: the descriptor holds `size >= len` bytes; `copy` has room for `size_of::<T>()`.
    // The first `min` bytes are a whole 1.0 descriptor and the rest valid as zero (the
    // contract), so the copy is a valid `T`.
    unsafe {
        std::ptr::copy_nonoverlapping(p.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), len);
        Ok(copy.assume_init())
    }
}

/// The size a descriptor declares, refused when `p` is null or the size is under `min` (its
/// ABI 1.0 size).
///
/// # Safety
/// As [`sized`].
unsafe fn declared_size<T>(p: *const T, what: &str, min: usize) -> Result<usize> {
    if p.is_null() {
        return Err(Error::InvalidArgument(format!("plugin ABI: a null {what}")));
    }
    // SAFETY: every descriptor begins with its size, per the contract.
    let size = unsafe { p.cast::<u64>().read() };
    if size < min as u64 {
        return Err(Error::InvalidArgument(format!(
            "plugin ABI: the {what} is {size} bytes, smaller than the {min} of ABI 1.0"
        )));
    }
    Ok(usize::try_from(size).unwrap_or(usize::MAX))
}

unsafe extern "C" fn library(reg: *mut Registrar, desc: *const LibraryDesc) -> i32 {
    // SAFETY: the registrar and the descriptor are the ABI's, live for this call.
    unsafe {
        with_registration(reg, |r| {
            let desc = sized(desc, "library descriptor")?;
            let namespace = text_ref(desc.namespace, "a namespace")?;
            let file = text_ref(desc.file, "a file name")?;
            if !is_identifier(namespace) {
                return Err(Error::InvalidArgument(format!(
                    "plugin library at {file}:{}: '{namespace}' is not a namespace (a C \
                     identifier)",
                    desc.line
                )));
            }
            let kind = match desc.kind {
                LIBRARY_DEF => LibraryKind::Def,
                LIBRARY_FRAGMENT => LibraryKind::Fragment,
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "plugin library '{namespace}' at {file}:{}: kind {other} is neither \
                         LIBRARY_DEF (0) nor LIBRARY_FRAGMENT (1)",
                        desc.line
                    )))
                }
            };
            let site = Site {
                file: r.intern(file.as_bytes(), "a file name")?.0,
                line: desc.line,
            };
            r.libraries.push(ForeignLibrary {
                namespace: r.strings.concat(&[namespace]),
                kind,
                site,
                ops: r.ops.len()..r.ops.len(),
            });
            Ok(())
        })
    }
}

unsafe extern "C" fn def(reg: *mut Registrar, desc: *const OpDesc) -> i32 {
    // SAFETY: as for `library`.
    unsafe {
        with_registration(reg, |r| {
            let desc = sized(desc, "op descriptor")?;
            let text = text_ref(desc.schema, "a schema")?;
            let library = r.libraries.len() as u32;
            let lib = r.libraries.last_mut().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "plugin op '{text}': defined before any library; call `library` first"
                ))
            })?;
            let site = Site {
                file: lib.site.file,
                line: desc.line,
            };
            let parsed = r.schemas.parse(text).map_err(|e| {
                Error::InvalidArgument(format!("the schema '{text}' at {site} does not parse: {e}"))
            })?;
            let op = &parsed;
            if let Some(ns) = op.namespace.as_deref() {
                if ns != lib.namespace {
                    return Err(Error::InvalidArgument(format!(
                        "the schema '{text}' at {site} names namespace '{ns}' inside library \
                         '{}'",
                        lib.namespace
                    )));
                }
            }
            // As the macros register in-process ops: the name carries its namespace.
            let dot = if op.overload.is_empty() { "" } else { "." };
            let name = r
                .strings
                .concat(&[lib.namespace, "::", &op.name, dot, &op.overload]);
            let signature = parsed.signature;
            let args = signature.arguments.iter().map(|a| (a.name.as_ref(), a.ty));
            let rets = signature.returns.iter().map(|r| ("", r.ty));
            for (i, (arg, ty)) in args.chain(rets).enumerate() {
                if !convert::carried(ty) {
                    let which = if i < signature.arguments.len() {
                        format!("argument #{i} ({arg})")
                    } else {
                        format!("return #{}", i - signature.arguments.len())
                    };
                    return Err(Error::Unsupported(format!(
                        "{name} at {site}: {which} is {ty}, which plugin ABI v1 does not carry"
                    )));
                }
            }
            r.ops.push(ForeignOp {
                name,
                signature,
                library: library - 1,
                line: desc.line,
            });
            lib.ops.end = r.ops.len();
            Ok(())
        })
    }
}

unsafe extern "C" fn impl_kernel(reg: *mut Registrar, desc: *const ImplDesc) -> i32 {
    // SAFETY: as for `library`.
    unsafe {
        with_registration(reg, |r| {
            let desc = read_grown(
                desc,
                "impl descriptor",
                std::mem::offset_of!(ImplDesc, kernel_in_place),
            )?;
            // An impl usually follows its op's def: then its op is that one.
            let op = bytes_ref(desc.op, "an op name")?;
            let (op, op_name) = match r.ops.last() {
                Some(last) if last.name.as_bytes() == op => {
                    (ImplOp::Def(r.ops.len() as u32 - 1), last.name)
                }
                _ => {
                    let name = r.strings.concat(&[utf8(op, "an op name")?]);
                    (ImplOp::Named(r.name(name)), name)
                }
            };
            let key_name = text_ref(desc.key, "a dispatch key")?;
            let (file, file_at) = r.intern(bytes_ref(desc.file, "a file name")?, "a file name")?;
            let function = bytes_ref(desc.function, "a function name")?;
            let (_, function) = r.intern(function, "a function name")?;
            let key = DispatchKey::from_name(key_name).ok_or_else(|| {
                let keys: Vec<&str> = DispatchKey::ALL.iter().map(|k| k.name()).collect();
                let site = Site {
                    file,
                    line: desc.line,
                };
                Error::InvalidArgument(format!(
                    "the kernel for '{op_name}' at {site}: unknown dispatch key '{key_name}' \
                     (one of {})",
                    keys.join(", ")
                ))
            })?;
            r.impls.push(ForeignImpl {
                op,
                key,
                function,
                file: file_at,
                line: desc.line,
            });
            r.kernels.push(RawKernel {
                kernel: desc.kernel,
                in_place: desc.kernel_in_place,
                ctx: SendPtr(desc.ctx),
            });
            Ok(())
        })
    }
}

unsafe extern "C" fn tensor_empty(
    shape: *const i64,
    ndim: i32,
    dtype: DLDataType,
    device: DLDevice,
    out: *mut *mut TensorHeader,
) -> i32 {
    edge(|| {
        let out = out_pointer(out, "tensor_empty")?;
        // SAFETY: the caller passes `ndim` sizes.
        let dims = unsafe { sizes(shape, ndim, "tensor_empty") }?;
        let t = Tensor::empty(
            dims,
            from_dl_dtype_for(dtype, "tensor_empty")?,
            from_dl_device_for(device, "tensor_empty")?,
        )?;
        // SAFETY: checked non-null; the caller gives space for one pointer.
        unsafe { out.write(tensor::fresh(t)?) };
        Ok(())
    })
}

/// `out`, refused when null (`function` names the host function, for the message).
fn out_pointer<T>(out: *mut T, function: &str) -> Result<*mut T> {
    if out.is_null() {
        return Err(Error::InvalidArgument(format!(
            "{function}: the out pointer is null"
        )));
    }
    Ok(out)
}

/// The `ndim` sizes at `shape` as a tensor's shape, read in place (`int64_t` is `usize`'s
/// size: asserted with the ABI's layouts); a negative one is refused.
///
/// # Safety
/// `shape` holds `ndim` sizes, live for `'a` (or `ndim` is 0).
unsafe fn sizes<'a>(shape: *const i64, ndim: i32, function: &str) -> Result<&'a [usize]> {
    let ndim = usize::try_from(ndim)
        .map_err(|_| Error::InvalidArgument(format!("{function}: ndim {ndim}")))?;
    if ndim == 0 {
        return Ok(&[]);
    }
    if shape.is_null() {
        return Err(Error::InvalidArgument(format!(
            "{function}: the shape is null"
        )));
    }
    // SAFETY: per the contract.
    let dims = unsafe { std::slice::from_raw_parts(shape, ndim) };
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(Error::InvalidArgument(format!(
            "{function}: a negative size {d}"
        )));
    }
    // SAFETY: the same `ndim` values, none negative, as `usize`s of the same size.
    Ok(unsafe { std::slice::from_raw_parts(shape.cast::<usize>(), ndim) })
}

unsafe extern "C" fn tensor_from_bytes(
    data: *const c_void,
    len: usize,
    shape: *const i64,
    ndim: i32,
    dtype: DLDataType,
    out: *mut *mut TensorHeader,
) -> i32 {
    edge(|| {
        let out = out_pointer(out, "tensor_from_bytes")?;
        // SAFETY: the caller passes `ndim` sizes.
        let dims = unsafe { sizes(shape, ndim, "tensor_from_bytes") }?;
        // SAFETY: the caller passes `len` bytes at `data`.
        let bytes = unsafe { bytes(data.cast(), len, "tensor_from_bytes: the data") }?;
        let t = Tensor::from_bytes(bytes, dims, from_dl_dtype_for(dtype, "tensor_from_bytes")?)?;
        // SAFETY: checked non-null; the caller gives space for one pointer.
        unsafe { out.write(tensor::fresh(t)?) };
        Ok(())
    })
}

unsafe extern "C" fn tensor_to(
    t: *mut TensorHeader,
    device: DLDevice,
    out: *mut *mut TensorHeader,
) -> i32 {
    edge(|| {
        let out = out_pointer(out, "tensor_to")?;
        // SAFETY: the caller lends a live header for the call.
        let t = unsafe { tensor::borrow(t) }?;
        let moved = t.to(from_dl_device_for(device, "tensor_to")?)?;
        // SAFETY: checked non-null; the caller gives space for one pointer.
        unsafe { out.write(tensor::owned(moved)?) };
        Ok(())
    })
}

unsafe extern "C" fn call_op(
    name: *const c_char,
    name_len: usize,
    args: *const Value,
    num_args: u64,
    outs: *mut Value,
    num_outputs: u64,
) -> i32 {
    edge(|| {
        // SAFETY: the ABI's contract: `name_len` bytes at `name`.
        let name = unsafe { text(name, name_len, "an op name") }?;
        let op = crate::dispatch::op(name)?;
        let (num_args, num_outputs) = (num_args as usize, num_outputs as usize);
        if num_outputs != op.schema().returns.len() {
            return Err(Error::ReturnCount {
                op: name.to_string(),
                expected: op.schema().returns.len(),
                got: num_outputs,
                schema: op.schema().to_string(),
            });
        }
        if (num_args > 0 && args.is_null()) || (num_outputs > 0 && outs.is_null()) {
            return Err(Error::InvalidArgument(format!(
                "call_op {name}: a null argument or output array"
            )));
        }
        let mut stack = Stack::new();
        for i in 0..num_args {
            // SAFETY: `args` holds `num_args` values, borrowed for the call.
            stack.push_value(unsafe { convert::borrow(&*args.add(i)) }?);
        }
        op.call_boxed(&mut stack)?;
        let mut given = 0;
        let results: Vec<StableValue> = stack.into_iter().collect();
        for value in results {
            match convert::give(value) {
                Ok(v) => {
                    // SAFETY: `outs` has room for `num_outputs` values, the op's count.
                    unsafe { outs.add(given).write(v) };
                    given += 1;
                }
                Err(e) => {
                    for i in 0..given {
                        // SAFETY: written just above, owned, not yet handed out.
                        unsafe { convert::discard(outs.add(i).read()) };
                        // SAFETY: as above.
                        unsafe { outs.add(i).write(Value::default()) };
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn op_schema(
    name: *const c_char,
    name_len: usize,
    out: *mut *mut AbiString,
) -> i32 {
    edge(|| {
        // SAFETY: the ABI's contract: `name_len` bytes at `name`.
        let name = unsafe { text(name, name_len, "an op name") }?;
        let out = out_pointer(out, "op_schema")?;
        let op = crate::dispatch::op(name)?;
        // The qualified form, so the plugin's parse names the op as the host does.
        let schema = op.schema().to_string();
        let schema = match schema.find("::") {
            Some(_) => schema,
            None => format!("{}::{schema}", name.split("::").next().unwrap_or_default()),
        };
        let given = convert::give(StableValue::str(schema))?;
        // SAFETY: checked non-null; a Str value's payload is its owned string.
        unsafe {
            out.write(std::ptr::with_exposed_provenance_mut(
                given.payload as usize,
            ))
        };
        Ok(())
    })
}

unsafe extern "C" fn warn(data: *const c_char, len: usize) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the ABI's contract: `len` bytes at `data`.
        let message = match unsafe { text(data, len, "a warning") } {
            Ok(t) => t.to_string(),
            Err(e) => e.to_string(),
        };
        crate::warning::deliver(&crate::warning::Warning {
            message,
            file: "<plugin>",
            line: 0,
            module: "opbox::plugin",
        });
    });
}

unsafe extern "C" fn current_stream(device: i32, out: *mut *mut c_void) -> i32 {
    edge(|| {
        if out.is_null() {
            return Err(Error::InvalidArgument(
                "current_stream: a null out pointer".to_string(),
            ));
        }
        let ordinal = usize::try_from(device).map_err(|_| {
            Error::InvalidArgument(format!("current_stream: device {device} is negative"))
        })?;
        let stream = scoped_stream(ordinal);
        // SAFETY: checked non-null; the ABI gives room for one pointer there.
        unsafe { out.write(stream) };
        Ok(())
    })
}

/// The stream this thread's `with_stream` made current on `cuda:ordinal`, or null (the legacy
/// default stream, which is also what the plugin's own runtime uses when nothing is scoped).
/// Only a scoped stream is looked up, so asking creates no CUDA context.
fn scoped_stream(ordinal: usize) -> *mut c_void {
    #[cfg(feature = "cuda")]
    if let Some(s) = crate::backend::cuda::current::scoped(ordinal) {
        // The scope that made it current holds it for the plugin call that asked.
        return s.cu_stream().cast();
    }
    let _ = ordinal;
    std::ptr::null_mut()
}

/// The context pointer of a plugin's kernel, which its maker promises any thread may pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendPtr(pub(crate) *mut c_void);
// SAFETY: the ABI requires a kernel's ctx to be usable from any thread.
unsafe impl Send for SendPtr {}
// SAFETY: as for Send.
unsafe impl Sync for SendPtr {}

#[cfg(test)]
mod tests {
    use super::{table, take_error_text, tensor, utf8, TensorHeader, STATUS_ERROR, STATUS_OK};
    use crate::abi::plugin_v1::ABI_VERSION;
    use crate::tensor::dlpack::codes::{to_dl_device, to_dl_dtype};
    use crate::{DType, Device, Tensor};

    /// `tensor_from_bytes` on `data` (as bytes) and `shape`: the tensor, or the host's error.
    fn from_bytes(data: &[f32], len: usize, shape: &[i64]) -> Result<Tensor, String> {
        let host = table(ABI_VERSION);
        let mut out: *mut TensorHeader = std::ptr::null_mut();
        // SAFETY: `len` is at most `data`'s size in bytes; `shape.len()` sizes; room for one
        // pointer.
        let status = unsafe {
            (host.tensor_from_bytes)(
                data.as_ptr().cast(),
                len,
                shape.as_ptr(),
                shape.len() as i32,
                to_dl_dtype(DType::F32),
                &mut out,
            )
        };
        // SAFETY: what the host function just wrote.
        unsafe { taken(status, out) }
    }

    /// The tensor a host function that returned `status` handed over at `out`, or the error
    /// text it left.
    ///
    /// # Safety
    /// On success `out` is one owned header the host handed over.
    unsafe fn taken(status: i32, out: *mut TensorHeader) -> Result<Tensor, String> {
        if status != STATUS_OK {
            assert_eq!(status, STATUS_ERROR);
            return Err(take_error_text().unwrap_or_default());
        }
        // SAFETY: per the contract.
        unsafe { tensor::take(out) }.map_err(|e| e.to_string())
    }

    #[test]
    fn tensor_from_bytes_copies_into_a_host_tensor_and_refuses_what_does_not_fit() {
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let t = from_bytes(&data, 24, &[2, 3]).unwrap();
        assert_eq!(t.shape(), [2, 3]);
        assert_eq!(t.to_vec::<f32>().unwrap(), data);
        assert_ne!(t.data_ptr(), data.as_ptr().cast(), "a copy");
        assert_eq!(t.ref_count(), 1, "the caller's one reference, taken back");
        assert_eq!(
            from_bytes(&data, 20, &[2, 3]).unwrap_err(),
            "shape error: 5 values cannot fill a tensor of shape [2, 3], which has 6 elements"
        );
        assert_eq!(
            from_bytes(&data, 23, &[2, 3]).unwrap_err(),
            "shape error: 23 bytes are not a whole number of f32 elements"
        );
        assert_eq!(
            from_bytes(&data, 24, &[-6]).unwrap_err(),
            "invalid argument: tensor_from_bytes: a negative size -6"
        );
    }

    /// `tensor_to` on `header` (lent for the call): the moved tensor, or the host's error.
    fn moved(header: *mut TensorHeader, device: Device) -> Result<Tensor, String> {
        let host = table(ABI_VERSION);
        let mut out: *mut TensorHeader = std::ptr::null_mut();
        // SAFETY: a live header, and room for one pointer.
        let status = unsafe { (host.tensor_to)(header, to_dl_device(device).unwrap(), &mut out) };
        // SAFETY: what the host function just wrote.
        unsafe { taken(status, out) }
    }

    #[test]
    fn tensor_to_moves_a_lent_tensor_as_tensor_to_does() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let own = t.own_header().unwrap();
        let same = moved(own, Device::Cpu).unwrap();
        assert!(same.ptr_eq(&t), "already there: the tensor itself");
        assert_eq!(t.ref_count(), 2);
        drop(same);
        let mut lent = tensor::borrowed(&t).unwrap();
        assert!(moved(&mut lent, Device::Cpu).unwrap().ptr_eq(&t));
        assert_eq!(t.ref_count(), 1, "nothing kept");

        // As the host's own `to` does, with or without a GPU.
        match (moved(own, Device::Cuda(0)), t.to(Device::Cuda(0))) {
            (Ok(host), Ok(local)) => {
                assert_eq!(host.device(), Device::Cuda(0));
                assert_eq!(
                    host.to_vec::<f32>().unwrap(),
                    local.to_vec::<f32>().unwrap()
                );
            }
            (Err(host), Err(local)) => assert_eq!(host, local.to_string()),
            (host, local) => panic!("tensor_to gave {host:?}, Tensor::to {local:?}"),
        }
        assert_eq!(
            moved(std::ptr::null_mut(), Device::Cpu).unwrap_err(),
            "invalid argument: plugin ABI: a null tensor"
        );
    }

    #[test]
    fn names_are_taken_as_utf8_and_refused_otherwise() {
        assert_eq!(utf8(b"many::op_7", "an op name").unwrap(), "many::op_7");
        assert_eq!(utf8("ns::é".as_bytes(), "an op name").unwrap(), "ns::é");
        let refused = utf8(b"op_\xff", "an op name").unwrap_err().to_string();
        assert!(
            refused.contains("plugin ABI: an op name is not UTF-8"),
            "{refused}"
        );
    }
}
