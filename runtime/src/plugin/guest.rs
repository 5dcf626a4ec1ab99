//! The plugin side: what `opbox::export_plugin!()` expands to calls this. The plugin's own
//! registrations (its `inventory`, filled by the usual macros) are sent through the host table;
//! its kernels run behind one shim that converts the host's values; and, once loaded, the
//! plugin's `opbox::op` finds the host's ops and `Tensor::empty` allocates through the host.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use smallvec::SmallVec;

use super::call_stream::CallScope;
use super::convert;
use super::tensor;
use crate::abi::plugin_v1::{
    host_size_for, unpack_version, version_string, HostV1, ImplDesc, LibraryDesc, OpDesc, PluginV1,
    Registrar, StrRef, TensorHeader, Value, ABI_V1_0, ABI_V1_1, ABI_V1_5, ABI_V1_6, ABI_VERSION,
    LIBRARY_DEF, LIBRARY_FRAGMENT, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
};
use crate::dispatch::foreign::{self, ForeignKernel};
use crate::dispatch::registry::OpEntry;
use crate::dispatch::{
    take_last_error, KernelGroup, KernelRegistration, LibraryKind, LibraryRegistration,
};
use crate::tensor::dlpack::codes::{to_dl_device, to_dl_dtype};
use crate::value::{StableValue, Stack};
use crate::{DType, Device, Error, Result, Tensor};

/// The host table this image was loaded with; null until then (and in a host).
static HOST: AtomicPtr<HostV1> = AtomicPtr::new(std::ptr::null_mut());

/// The host's table, when this image is a loaded plugin.
pub fn host() -> Option<&'static HostV1> {
    // SAFETY: set once by `entry` to the host's table, which lives as long as the process.
    unsafe { HOST.load(Ordering::Acquire).as_ref() }
}

/// True when the host's table has the field ending at `end` (a function added after 1.0).
pub fn host_has(end: usize) -> bool {
    host().is_some_and(|h| h.size as usize >= end)
}

/// A plugin's descriptor, as a `static` (it holds a pointer, which `static` needs to be Sync).
#[repr(transparent)]
pub struct Descriptor(pub PluginV1);

// SAFETY: the descriptor is immutable and its one pointer is a static string.
unsafe impl Sync for Descriptor {}

impl Descriptor {
    /// `name` ends with a NUL (`concat!(env!("CARGO_PKG_NAME"), "\0")`). The plugin runs on
    /// any host of ABI 1.0 or later: functions added after 1.0 are looked up with [`host_has`].
    pub const fn new(name: &'static str) -> Descriptor {
        Descriptor(PluginV1 {
            size: std::mem::size_of::<PluginV1>() as u64,
            abi_version: ABI_VERSION,
            min_host_version: ABI_V1_0,
            opbox_version: crate::abi::plugin_v1::opbox_version(),
            name: name.as_ptr().cast(),
            register,
        })
    }

    /// The same, refused by hosts older than `version`.
    pub const fn requiring(mut self, version: u64) -> Descriptor {
        self.0.min_host_version = version;
        self
    }
}

fn str_ref(s: &str) -> StrRef {
    StrRef {
        data: s.as_ptr().cast(),
        len: s.len(),
    }
}

fn say(host: &HostV1, message: &str) {
    // SAFETY: a 1.0 table's function, with `len` bytes at `data`.
    unsafe { (host.set_error)(message.as_ptr().cast(), message.len()) };
}

/// The entry: keeps the host's table and returns `desc`, or refuses a host it cannot use.
///
/// # Safety
/// `host` is null or the host's table, valid for the rest of the process.
pub unsafe fn entry(host: *const HostV1, desc: &'static Descriptor) -> *const PluginV1 {
    // SAFETY: per the contract.
    let Some(table) = (unsafe { host.as_ref() }) else {
        return std::ptr::null();
    };
    // Without a full 1.0 table not even `set_error` can be trusted: refuse silently.
    if unpack_version(table.version).0 != 1 || (table.size as usize) < host_size_for(ABI_V1_0) {
        return std::ptr::null();
    }
    if (table.size as usize) < host_size_for(table.version) {
        say(
            table,
            &format!(
                "the host's table is {} bytes, smaller than the {} bytes its version {} has",
                table.size,
                host_size_for(table.version),
                version_string(table.version)
            ),
        );
        return std::ptr::null();
    }
    if table.version < desc.0.min_host_version {
        say(
            table,
            &format!(
                "the plugin needs host ABI {}, but the host offers {}",
                version_string(desc.0.min_host_version),
                version_string(table.version)
            ),
        );
        return std::ptr::null();
    }
    HOST.store(host.cast_mut(), Ordering::Release);
    &desc.0
}

/// The descriptor's `register`: every library, op and kernel this image links, sent through
/// the host table.
unsafe extern "C" fn register(reg: *mut Registrar) -> i32 {
    let Some(host) = host() else {
        return STATUS_ERROR;
    };
    let sent = std::panic::catch_unwind(|| {
        for lib in inventory::iter::<LibraryRegistration> {
            let desc = LibraryDesc {
                size: std::mem::size_of::<LibraryDesc>() as u64,
                kind: match lib.kind {
                    LibraryKind::Def => LIBRARY_DEF,
                    LibraryKind::Fragment => LIBRARY_FRAGMENT,
                },
                line: lib.site.line,
                namespace: str_ref(lib.namespace),
                file: str_ref(lib.site.file),
            };
            // SAFETY: the host's function, with the registrar it passed and a live descriptor.
            if unsafe { (host.library)(reg, &desc) } != STATUS_OK {
                continue;
            }
            for def in lib.ops {
                let schema = def.op.schema_text();
                let desc = OpDesc {
                    size: std::mem::size_of::<OpDesc>() as u64,
                    line: def.line,
                    reserved: 0,
                    schema: str_ref(&schema),
                };
                // SAFETY: as above; the host records its own errors.
                unsafe { (host.def)(reg, &desc) };
            }
        }
        let kernels = inventory::iter::<KernelGroup>
            .into_iter()
            .flat_map(|group| group.kernels.iter().map(move |kernel| (group, kernel)));
        for (group, k) in kernels {
            let desc = ImplDesc {
                size: std::mem::size_of::<ImplDesc>() as u64,
                op: str_ref(k.op.name()),
                key: str_ref(k.key.name()),
                kernel: guest_kernel,
                ctx: (k as *const KernelRegistration).cast_mut().cast(),
                // The host tells one function registered twice from two functions by this
                // name, with the op: the group's origin names the function.
                function: str_ref(group.origin),
                file: str_ref(group.file),
                line: k.line,
                reserved: 0,
                kernel_in_place: Some(guest_kernel_in_place),
            };
            // SAFETY: as above.
            unsafe { (host.impl_kernel)(reg, &desc) };
        }
    });
    match sent {
        Ok(()) => STATUS_OK,
        Err(payload) => {
            say(
                host,
                &format!(
                    "the plugin panicked while registering: {}",
                    crate::panic::dispose(payload)
                ),
            );
            STATUS_PANIC
        }
    }
}

/// Every kernel of this image, as the host calls it: `ctx` is its registration.
unsafe extern "C" fn guest_kernel(
    ctx: *mut c_void,
    stack: *mut Value,
    num_args: u64,
    num_outputs: u64,
) -> i32 {
    let call = |reg| {
        // SAFETY: the host passes `num_args + num_outputs` values, per the kernel ABI.
        unsafe { run_kernel(reg, stack, num_args as usize, num_outputs as usize) }
    };
    // SAFETY: `register` passed a registration as this kernel's ctx.
    unsafe { kernel_edge(ctx, call) }
}

/// Every kernel of this image in its in-place form (ABI 1.4), as the host calls it for an op of
/// tensors and plain values: the boxing shim runs on the host's stack itself. Its values are
/// this image's `StableValue`s bit for bit: a plain value has the same bits in every image, and
/// a tensor's payload is a header, which is a handle here too (this image's own, or another's
/// read in place). The shim only reads its arguments and writes its outputs, so what the host
/// owns stays the host's.
unsafe extern "C" fn guest_kernel_in_place(
    ctx: *mut c_void,
    stack: *mut Value,
    num_args: u64,
    num_outputs: u64,
) -> i32 {
    let call = |reg: &'static KernelRegistration| {
        let _stream = CallScope::enter();
        // SAFETY: the host passes `num_args` plain values and tensors whose handles are live
        // headers, then `num_outputs` Nones, valid and unaliased for the call (ABI 1.4); as
        // `StableValue`s they are the same values (see above), and the kernel is for its op.
        let status = unsafe {
            reg.kernel
                .call(reg.op, stack.cast::<StableValue>(), num_args, num_outputs)
        };
        if status == STATUS_OK {
            return Ok(());
        }
        Err(last_error_of(reg, status))
    };
    // SAFETY: `register` passed a registration as this kernel's ctx.
    unsafe { kernel_edge(ctx, call) }
}

/// Runs `f` on the kernel registration `ctx` is, at a C edge: its error or panic goes to the
/// host as the thread's error text, with the status it returns.
///
/// # Safety
/// `ctx` is a `&'static KernelRegistration`, as `register` passes it.
unsafe fn kernel_edge(
    ctx: *mut c_void,
    f: impl FnOnce(&'static KernelRegistration) -> Result<()>,
) -> i32 {
    let Some(host) = host() else {
        return STATUS_ERROR;
    };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: per the contract.
        f(unsafe { &*ctx.cast_const().cast::<KernelRegistration>() })
    }));
    let (status, message) = match run {
        Ok(Ok(())) => return STATUS_OK,
        Ok(Err(Error::KernelPanic { message, .. })) => (STATUS_PANIC, message),
        Ok(Err(Error::Kernel { message, .. })) => (STATUS_ERROR, message),
        Ok(Err(e)) => (STATUS_ERROR, e.to_string()),
        Err(payload) => (STATUS_PANIC, crate::panic::dispose(payload)),
    };
    say(host, &message);
    status
}

/// The error the kernel of `reg` left on this thread as it returned `status`, not OK.
fn last_error_of(reg: &KernelRegistration, status: i32) -> Error {
    take_last_error().unwrap_or_else(|| Error::Kernel {
        op: reg.op.name().to_string(),
        message: format!("the kernel failed with status {status} and left no error"),
    })
}

/// # Safety
/// `stack` holds `num_args` borrowed inputs and `num_outputs` Nones, per the kernel ABI.
unsafe fn run_kernel(
    reg: &KernelRegistration,
    stack: *mut Value,
    num_args: usize,
    num_outputs: usize,
) -> Result<()> {
    let _stream = CallScope::enter();
    let mut local = Stack::new();
    for i in 0..num_args {
        // SAFETY: per the contract; the inputs are lent until this function returns.
        local.push_value(unsafe { convert::borrow_in(&*stack.add(i)) }?);
    }
    let base = local.reserve_outputs(num_outputs);
    // SAFETY: `base` points at the local stack's `num_args + num_outputs` values, per the
    // boxed kernel ABI, and the registration's kernel is for its op.
    let status = unsafe {
        reg.kernel
            .call(reg.op, base, num_args as u64, num_outputs as u64)
    };
    if status != STATUS_OK {
        return Err(last_error_of(reg, status));
    }
    let outputs = &mut local.as_mut_slice()[num_args..];
    for (i, out) in outputs.iter_mut().enumerate() {
        // SAFETY: output slot `num_args + i` exists, per the contract.
        let slot = unsafe { stack.add(num_args + i) };
        match convert::give_in(out) {
            // SAFETY: as above; it holds None, so nothing is overwritten.
            Ok(v) => unsafe { convert::write_value(slot, &v) },
            Err(e) => {
                for j in 0..i {
                    // SAFETY: the owned values written just above, handed to no one yet: each
                    // released once, and its slot set back to None.
                    unsafe {
                        let written = stack.add(num_args + j);
                        convert::discard(*written);
                        written.write(Value::default());
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The host's text for a failed host call.
fn host_error(host: &HostV1) -> String {
    let mut out = StrRef {
        data: std::ptr::null(),
        len: 0,
    };
    // SAFETY: a 1.0 table's function; the text it lends is copied at once.
    let len = unsafe { (host.last_error)(&mut out) };
    if len == 0 || out.data.is_null() {
        return "the host call failed and set no error".to_string();
    }
    // SAFETY: the host lends `len` bytes until its next call on this thread.
    match unsafe { super::host::text(out.data, out.len, "the host's error") } {
        Ok(t) => t.to_string(),
        Err(e) => e.to_string(),
    }
}

/// A host op, called from this plugin by name through the host table.
#[derive(Debug)]
struct HostOp {
    name: &'static str,
}

impl ForeignKernel for HostOp {
    fn call(&self, op: &'static OpEntry, stack: &mut Stack) -> Result<()> {
        foreign::with_outputs(op, stack, |stack| self.call_on(op, stack))
    }
}

impl HostOp {
    /// The call on the op's arguments, outputs and guard slot (see `foreign::with_outputs`).
    fn call_on(&self, op: &'static OpEntry, stack: &mut [StableValue]) -> Result<()> {
        let host = host().ok_or_else(|| Error::msg("this plugin is not loaded by a host"))?;
        let (num_args, num_outputs) = (op.num_args(), op.num_outputs());
        let (inputs, outputs) = stack.split_at_mut(num_args);
        let mut outs: SmallVec<[Value; 8]> = (0..num_outputs).map(|_| Value::default()).collect();
        let status = convert::with_lent(inputs, 0, |values| {
            // SAFETY: a 1.0 table's function; `values` are lent for the call and `outs` has
            // room for the op's outputs.
            unsafe {
                (host.call_op)(
                    self.name.as_ptr().cast::<c_char>(),
                    self.name.len(),
                    values.as_ptr(),
                    num_args as u64,
                    outs.as_mut_ptr(),
                    num_outputs as u64,
                )
            }
        })?;
        if status != STATUS_OK {
            return Err(Error::Message(host_error(host)));
        }
        let mut first_error = None;
        for (slot, v) in outputs.iter_mut().zip(outs) {
            // SAFETY: the host wrote owned values, each taken once (also after an error, so
            // none leaks).
            match unsafe { convert::take(v) } {
                Ok(value) => *slot = value,
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The host's op `name`, when this image is a loaded plugin and the host has one.
pub(crate) fn host_op(name: &str) -> Result<Option<&'static OpEntry>> {
    let Some(host) = host() else {
        return Ok(None);
    };
    let mut out: *mut crate::abi::plugin_v1::AbiString = std::ptr::null_mut();
    // SAFETY: a 1.0 table's function, with `len` bytes at `name` and room for one pointer.
    let status = unsafe { (host.op_schema)(name.as_ptr().cast(), name.len(), &mut out) };
    if status != STATUS_OK {
        return Ok(None);
    }
    // SAFETY: the host handed over one owned string.
    let text = unsafe { convert::take_string(out) }?;
    let schema = opbox_codegen::schema::parse(&text).map_err(|e| {
        Error::InvalidArgument(format!(
            "the host's schema '{text}' for '{name}' does not parse here: {e}"
        ))
    })?;
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let kernel: &'static HostOp = Box::leak(Box::new(HostOp { name }));
    Ok(Some(foreign::adopt(
        name,
        Box::leak(Box::new(schema)),
        kernel,
        "<host>",
    )))
}

/// In a loaded plugin, a new tensor in the host's memory (through its `tensor_empty`); `None`
/// in a host.
pub(crate) fn host_empty(shape: &[usize], dtype: DType, device: Device) -> Option<Result<Tensor>> {
    let host = host()?;
    Some((|| {
        let (dims, ndim) = host_dims(shape)?;
        let mut out: *mut TensorHeader = std::ptr::null_mut();
        // SAFETY: a 1.0 table's function, with `ndim` sizes and room for one pointer.
        let status = unsafe {
            (host.tensor_empty)(
                dims,
                ndim,
                to_dl_dtype(dtype),
                to_dl_device(device)?,
                &mut out,
            )
        };
        // SAFETY: what the host function just wrote.
        unsafe { made(host, status, out) }
    })())
}

/// In a loaded plugin on a host of ABI 1.5 or later, a new CPU tensor in the host's memory
/// holding a copy of `bytes` (through its `tensor_from_bytes`), so that a tensor this plugin
/// makes from its own elements is the host's from the start; `None` in a host and on an older
/// one (the caller then makes it here, and the host wraps it when it takes it).
pub(crate) fn host_from_bytes(
    bytes: &[u8],
    shape: &[usize],
    dtype: DType,
) -> Option<Result<Tensor>> {
    let host = host().filter(|_| host_has(host_size_for(ABI_V1_5)))?;
    Some((|| {
        let (dims, ndim) = host_dims(shape)?;
        let mut out: *mut TensorHeader = std::ptr::null_mut();
        // SAFETY: a 1.5 table (its size covers `tensor_from_bytes`), with `len` bytes at `data`,
        // `ndim` sizes and room for one pointer.
        let status = unsafe {
            (host.tensor_from_bytes)(
                bytes.as_ptr().cast(),
                bytes.len(),
                dims,
                ndim,
                to_dl_dtype(dtype),
                &mut out,
            )
        };
        // SAFETY: what the host function just wrote.
        unsafe { made(host, status, out) }
    })())
}

/// In a loaded plugin on a host of ABI 1.6 or later, another image's tensor `h` on `device`,
/// moved by the host (through its `tensor_to`) as its own `Tensor::to` moves it: nothing is
/// wrapped on either side, and the copy goes on the host's current stream. `None` in a host
/// and on an older one (the caller then wraps the header and moves it here).
pub(crate) fn host_to(h: &TensorHeader, device: Device) -> Option<Result<Tensor>> {
    let host = host().filter(|_| host_has(host_size_for(ABI_V1_6)))?;
    Some((|| {
        let mut out: *mut TensorHeader = std::ptr::null_mut();
        // SAFETY: a 1.6 table (its size covers `tensor_to`), a live header lent for the call,
        // and room for one pointer.
        let status = unsafe {
            (host.tensor_to)(
                std::ptr::from_ref(h).cast_mut(),
                to_dl_device(device)?,
                &mut out,
            )
        };
        // SAFETY: what the host function just wrote.
        unsafe { made(host, status, out) }
    })())
}

/// `shape` as the ABI's sizes (`int64_t`, which is `usize`'s size: asserted with the ABI's
/// layouts), and their count. A size past `i64::MAX` reads as negative, which the host refuses.
fn host_dims(shape: &[usize]) -> Result<(*const i64, i32)> {
    let ndim = i32::try_from(shape.len())
        .map_err(|_| Error::InvalidArgument(format!("{} dimensions", shape.len())))?;
    Ok((shape.as_ptr().cast(), ndim))
}

/// The tensor a host function that returned `status` made at `out`, or the host's error.
///
/// # Safety
/// On success `out` is one owned header the host handed over.
unsafe fn made(host: &HostV1, status: i32, out: *mut TensorHeader) -> Result<Tensor> {
    if status != STATUS_OK {
        return Err(Error::Message(host_error(host)));
    }
    // SAFETY: per the contract.
    unsafe { tensor::take_from_host(out) }
}

/// Sends a warning through the host's channel (ABI 1.1), or returns it when the host is older
/// (the caller's fallback, as PyTorch's `TORCH_DYNAMIC_VERSION_CALL` has one).
pub fn host_warn(message: &str) -> std::result::Result<(), &str> {
    match host() {
        Some(h) if host_has(host_size_for(ABI_V1_1)) => {
            // SAFETY: a 1.1 table (its size covers `warn`), with `len` bytes at `data`.
            unsafe { (h.warn)(message.as_ptr().cast(), message.len()) };
            Ok(())
        }
        _ => Err(message),
    }
}

/// The name in a plugin descriptor, for messages.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub(crate) unsafe fn descriptor_name(name: *const c_char) -> Option<String> {
    if name.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    Some(
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::host::{table, take_error_text};

    static DESC: Descriptor = Descriptor::new("test\0");
    static NEEDS_1_1: Descriptor = Descriptor::new("test\0").requiring(ABI_V1_1);

    #[test]
    fn the_host_names_no_stream_when_none_is_scoped_and_refuses_a_negative_device() {
        let host = table(ABI_VERSION);
        // A sentinel, so the test sees the host write null.
        let mut out = std::ptr::NonNull::<u8>::dangling()
            .as_ptr()
            .cast::<c_void>();
        // SAFETY: a 1.2 table's function, with room for one pointer.
        assert_eq!(unsafe { (host.current_stream)(0, &mut out) }, STATUS_OK);
        assert!(out.is_null(), "none scoped: the legacy default stream");
        // SAFETY: as above.
        assert_eq!(unsafe { (host.current_stream)(-1, &mut out) }, STATUS_ERROR);
        assert_eq!(
            take_error_text().as_deref(),
            Some("invalid argument: current_stream: device -1 is negative")
        );
    }

    #[test]
    fn a_plugin_refuses_a_host_table_it_cannot_trust() {
        // A 1.1 table cut to 1.0's size: `warn` would be read past its end.
        let mut short = table(ABI_V1_1);
        short.size = host_size_for(ABI_V1_0) as u64;
        // SAFETY: a live table; the refusal keeps no pointer to it.
        assert!(unsafe { entry(&short, &DESC) }.is_null());
        assert_eq!(
            take_error_text().as_deref(),
            Some("the host's table is 88 bytes, smaller than the 96 bytes its version 1.1.0 has")
        );
        let old = table(ABI_V1_0);
        // SAFETY: as above.
        assert!(unsafe { entry(&old, &NEEDS_1_1) }.is_null());
        assert_eq!(
            take_error_text().as_deref(),
            Some("the plugin needs host ABI 1.1.0, but the host offers 1.0.0")
        );
        assert!(host().is_none(), "a refused host is not kept");
    }
}
