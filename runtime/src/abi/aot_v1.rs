//! The C ABI between `opbox aot --plugin lib.so` and a plugin (a cdylib that calls
//! `opbox::export_aot!()`): the plugin's kernels are registered in the plugin's own copy of the
//! runtime, so the plugin runs the session (`backend::cuda::aot_session`) itself and streams its
//! events back through a callback.
//!
//! Version 1, symbol [`AOT_ENTRY_V1`]:
//! `int32_t opbox_aot_v1(const AotRequestV1*, AotEventCallbackV1, void* ctx)`. Strings are
//! NUL-terminated UTF-8, borrowed for the duration of the call (requests) or of the callback
//! (events). The callback is never called concurrently. Return: 0 all compiled, 1 some kernels
//! failed (each reported by a `FAILED` event), 2 the request was refused (one `ERROR` event
//! says why).

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use crate::backend::cuda::aot::AotTargets;
use crate::backend::cuda::aot_session::{run_request, AotEvent, AotRequest, AotSummary};
use crate::error::{Error, Result};

/// The symbol a plugin exports.
pub const AOT_ENTRY_V1: &[u8] = b"opbox_aot_v1\0";

/// The exported entry's type.
pub type AotEntryV1 =
    unsafe extern "C" fn(*const AotRequestV1, AotEventCallbackV1, *mut c_void) -> i32;

/// Receives each event; `ctx` is the caller's pointer, passed through.
pub type AotEventCallbackV1 = unsafe extern "C" fn(ctx: *mut c_void, event: *const AotEventV1);

/// The request `opbox aot --plugin` passes to a plugin's `opbox_aot_v1`: an `AotRequest` as C
/// data, every pointer valid for the call.
#[repr(C)]
pub struct AotRequestV1 {
    /// `size_of::<AotRequestV1>()` as the caller built it: a later version appends fields.
    pub size: usize,
    /// `sm_XX` / `compute_XX` target names, `arch_count` of them.
    pub arches: *const *const c_char,
    /// The length of `arches`.
    pub arch_count: usize,
    /// CUDA device ordinals, `device_count` of them.
    pub devices: *const u32,
    /// The length of `devices`.
    pub device_count: usize,
    /// Kernel names; none means every registered kernel.
    pub kernels: *const *const c_char,
    /// The length of `kernels`.
    pub kernel_count: usize,
    /// The directory the images are written to (NUL-terminated UTF-8).
    pub out_dir: *const c_char,
    /// Compile threads; 0 means one per core.
    pub jobs: u32,
    /// Nonzero: list the kernels instead of compiling.
    pub list_only: u8,
}

/// One event: `kind` says which of the string fields are set (the others are null).
#[repr(C)]
pub struct AotEventV1 {
    /// Which event: one of the `EVENT_*` constants.
    pub kind: u32,
    /// `PLANNED`: the number of jobs.
    pub count: u64,
    /// The kernel's Rust name (every event but `PLANNED` and `ERROR`).
    pub kernel: *const c_char,
    /// `LISTED`: the Rust module. `DONE`, `FAILED`: the target (`sm_90`).
    pub detail: *const c_char,
    /// `LISTED`: where it is declared. `DONE`: the file written.
    pub path: *const c_char,
    /// `SKIPPED`: why. `FAILED`, `ERROR`: the message.
    pub message: *const c_char,
}

/// `AotEvent::Listed`: a registered kernel, for `--list`.
pub const EVENT_LISTED: u32 = 1;
/// `AotEvent::Skipped`: a kernel with `#[constexpr]` parameters, not compiled.
pub const EVENT_SKIPPED: u32 = 2;
/// `AotEvent::Planned`: how many jobs will run.
pub const EVENT_PLANNED: u32 = 3;
/// `AotEvent::Done`: one image written.
pub const EVENT_DONE: u32 = 4;
/// `AotEvent::Failed`: one (kernel, target) did not compile.
pub const EVENT_FAILED: u32 = 5;
/// The session could not start (no targets, an unknown kernel, NVRTC missing): `message` says
/// why, and no other event follows.
pub const EVENT_ERROR: u32 = 6;

/// The plugin side: decodes the request, runs the session over the plugin's kernels, and
/// forwards each event.
///
/// # Safety
/// `request` points to a valid `AotRequestV1` whose pointers and counts describe live arrays of
/// NUL-terminated strings (and `u32`s), all valid for the duration of the call; `callback` is
/// safe to call with `ctx` from any thread, one call at a time.
pub unsafe fn serve_v1(
    request: *const AotRequestV1,
    callback: AotEventCallbackV1,
    ctx: *mut c_void,
) -> i32 {
    let ctx = SendPtr(ctx);
    let emit = move |event: &AotEventV1| {
        // SAFETY: the caller guarantees the callback accepts `ctx` from any thread; `run_jobs`
        // serializes the calls, and `event` with its strings outlives the call.
        unsafe { callback(ctx.get(), event) }
    };
    // SAFETY: forwarded from this function's contract.
    let decoded = unsafe { decode_request(request) };
    // A panic must not unwind into the caller's C frame.
    let outcome = crate::panic::catch(|| {
        let request = decoded?;
        run_request(&request, &|event| send(&emit, event))
    });
    let refused = |message: String| {
        let message = c_string(&message);
        emit(&AotEventV1 {
            kind: EVENT_ERROR,
            message: message.as_ptr(),
            ..empty_event()
        });
        2
    };
    match outcome {
        Ok(Ok(summary)) => i32::from(summary.failed > 0),
        // The host wraps the message in its own error again: send it without the kind.
        Ok(Err(Error::InvalidArgument(message))) => refused(message),
        Ok(Err(e)) => refused(e.to_string()),
        Err(message) => refused(format!(
            "aot: the plugin panicked while compiling: {message}"
        )),
    }
}

/// The host side: calls a plugin's entry with `request`, turning its events back into
/// [`AotEvent`]s. A refused request comes back as `Err` with the plugin's message.
///
/// # Safety
/// `entry` is a plugin's `opbox_aot_v1`, which must keep the contract above.
pub unsafe fn call_v1(
    entry: AotEntryV1,
    request: &AotRequest,
    on_event: &(dyn Fn(AotEvent<'_>) + Sync),
) -> Result<AotSummary> {
    let arches: Vec<CString> = request.targets.arches.iter().map(|a| c_string(a)).collect();
    let arch_ptrs: Vec<*const c_char> = arches.iter().map(|a| a.as_ptr()).collect();
    let kernels: Vec<CString> = request.kernels.iter().map(|k| c_string(k)).collect();
    let kernel_ptrs: Vec<*const c_char> = kernels.iter().map(|k| k.as_ptr()).collect();
    let devices = request
        .targets
        .devices
        .iter()
        .map(|&d| {
            u32::try_from(d)
                .map_err(|_| Error::InvalidArgument(format!("aot: device ordinal {d} too large")))
        })
        .collect::<Result<Vec<u32>>>()?;
    let out_dir = c_string(&request.targets.out_dir.to_string_lossy());
    let raw = AotRequestV1 {
        size: std::mem::size_of::<AotRequestV1>(),
        arches: arch_ptrs.as_ptr(),
        arch_count: arch_ptrs.len(),
        devices: devices.as_ptr(),
        device_count: devices.len(),
        kernels: kernel_ptrs.as_ptr(),
        kernel_count: kernel_ptrs.len(),
        out_dir: out_dir.as_ptr(),
        jobs: u32::try_from(request.jobs).unwrap_or(u32::MAX),
        list_only: u8::from(request.list_only),
    };
    let mut state = HostState {
        on_event,
        summary: AotSummary::default(),
        refused: None,
    };
    // SAFETY: `raw` and every array and string it points to live until the call returns;
    // `host_callback` matches the callback type and reads `state` through `ctx`, which the
    // plugin passes back unchanged and, per the contract, never from two threads at once.
    let code = unsafe {
        entry(
            &raw,
            host_callback,
            (&mut state as *mut HostState<'_>).cast(),
        )
    };
    match (code, state.refused) {
        (0 | 1, _) => Ok(state.summary),
        (_, Some(message)) => Err(Error::InvalidArgument(message)),
        (code, None) => Err(Error::InvalidArgument(format!(
            "aot: the plugin returned {code} without saying why"
        ))),
    }
}

struct HostState<'a> {
    on_event: &'a (dyn Fn(AotEvent<'_>) + Sync),
    summary: AotSummary,
    refused: Option<String>,
}

unsafe extern "C" fn host_callback(ctx: *mut c_void, event: *const AotEventV1) {
    // SAFETY: `ctx` is the `HostState` that `call_v1` passed, alive for the whole call, and the
    // plugin serializes callbacks, so this is the only reference to it right now.
    let state = unsafe { &mut *ctx.cast::<HostState<'_>>() };
    // SAFETY: the plugin passes a valid event whose strings live for this call.
    let Some(event) = (unsafe { event.as_ref() }) else {
        return;
    };
    // SAFETY: as above, each field is null or a NUL-terminated string alive for this call.
    let text = |p: *const c_char| unsafe { str_or_empty(p) };
    let (kernel, detail, path, message) = (
        text(event.kernel),
        text(event.detail),
        text(event.path),
        text(event.message),
    );
    let on_event = state.on_event;
    match event.kind {
        EVENT_LISTED => {
            state.summary.listed += 1;
            on_event(AotEvent::Listed {
                kernel: &kernel,
                module: &detail,
                declared_at: &path,
            });
        }
        EVENT_SKIPPED => {
            state.summary.skipped += 1;
            on_event(AotEvent::Skipped {
                kernel: &kernel,
                reason: &message,
            });
        }
        EVENT_PLANNED => on_event(AotEvent::Planned {
            jobs: usize::try_from(event.count).unwrap_or(usize::MAX),
        }),
        EVENT_DONE => {
            state.summary.written += 1;
            on_event(AotEvent::Done {
                kernel: &kernel,
                target: &detail,
                path: Path::new(&*path),
            });
        }
        EVENT_FAILED => {
            state.summary.failed += 1;
            on_event(AotEvent::Failed {
                kernel: &kernel,
                target: &detail,
                message: &message,
            });
        }
        EVENT_ERROR => state.refused = Some(message.into_owned()),
        // A newer plugin's event this host does not know: nothing to draw.
        _ => {}
    }
}

/// Encodes `event` with C strings that live until `emit` returns; fields the event's kind does
/// not use stay null.
fn send(emit: &(dyn Fn(&AotEventV1) + Sync), event: AotEvent<'_>) {
    let path_text;
    // (kind, count, kernel, detail, path, message), as the field docs of AotEventV1 assign them.
    let (kind, count, kernel, detail, path, message) = match event {
        AotEvent::Listed {
            kernel,
            module,
            declared_at,
        } => (
            EVENT_LISTED,
            0,
            Some(kernel),
            Some(module),
            Some(declared_at),
            None,
        ),
        AotEvent::Skipped { kernel, reason } => {
            (EVENT_SKIPPED, 0, Some(kernel), None, None, Some(reason))
        }
        AotEvent::Planned { jobs } => (EVENT_PLANNED, jobs as u64, None, None, None, None),
        AotEvent::Done {
            kernel,
            target,
            path,
        } => {
            path_text = path.to_string_lossy();
            (
                EVENT_DONE,
                0,
                Some(kernel),
                Some(target),
                Some(&*path_text),
                None,
            )
        }
        AotEvent::Failed {
            kernel,
            target,
            message,
        } => (
            EVENT_FAILED,
            0,
            Some(kernel),
            Some(target),
            None,
            Some(message),
        ),
    };
    let [kernel, detail, path, message] = [kernel, detail, path, message].map(|s| s.map(c_string));
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    emit(&AotEventV1 {
        kind,
        count,
        kernel: ptr(&kernel),
        detail: ptr(&detail),
        path: ptr(&path),
        message: ptr(&message),
    });
}

/// # Safety
/// As [`serve_v1`]'s.
unsafe fn decode_request(request: *const AotRequestV1) -> Result<AotRequest> {
    let bad = |what: &str| Error::InvalidArgument(format!("aot plugin request: {what}"));
    // SAFETY: the caller passes a valid request or null.
    let Some(raw) = (unsafe { request.as_ref() }) else {
        return Err(bad("null request"));
    };
    if raw.size < std::mem::size_of::<AotRequestV1>() {
        return Err(bad("older than version 1 (struct too small)"));
    }
    // SAFETY: per the contract, `ptr` points to `count` valid string pointers.
    let strings = |ptr: *const *const c_char, count: usize| -> Result<Vec<String>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        if ptr.is_null() {
            return Err(bad("null string array"));
        }
        // SAFETY: non-null, `count` elements, per the contract.
        let items = unsafe { std::slice::from_raw_parts(ptr, count) };
        items
            .iter()
            // SAFETY: each is a NUL-terminated string, per the contract.
            .map(|&p| unsafe { utf8(p) }.ok_or_else(|| bad("a string is null or not UTF-8")))
            .collect()
    };
    let devices = if raw.device_count == 0 {
        Vec::new()
    } else if raw.devices.is_null() {
        return Err(bad("null device array"));
    } else {
        // SAFETY: non-null, `device_count` elements, per the contract.
        unsafe { std::slice::from_raw_parts(raw.devices, raw.device_count) }
            .iter()
            .map(|&d| d as usize)
            .collect()
    };
    // Decoded in the struct's order, so the first bad field is the one reported.
    let arches = strings(raw.arches, raw.arch_count)?;
    let kernels = strings(raw.kernels, raw.kernel_count)?;
    // SAFETY: a NUL-terminated string, per the contract.
    let out_dir = PathBuf::from(unsafe { utf8(raw.out_dir) }.ok_or_else(|| bad("out_dir"))?);
    Ok(AotRequest {
        targets: AotTargets {
            arches,
            devices,
            out_dir,
        },
        kernels,
        jobs: raw.jobs as usize,
        list_only: raw.list_only != 0,
    })
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn utf8(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, per this function's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .ok()
        .map(str::to_owned)
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn str_or_empty<'a>(p: *const c_char) -> std::borrow::Cow<'a, str> {
    if p.is_null() {
        return "".into();
    }
    // SAFETY: non-null and NUL-terminated, per this function's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy()
}

/// Interior NULs cannot cross a C string; they become U+FFFD rather than truncating.
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\u{fffd}")).unwrap_or_default()
}

fn empty_event() -> AotEventV1 {
    AotEventV1 {
        kind: 0,
        count: 0,
        kernel: std::ptr::null(),
        detail: std::ptr::null(),
        path: std::ptr::null(),
        message: std::ptr::null(),
    }
}

/// The caller's `ctx`, which the contract lets any thread pass back.
#[derive(Clone, Copy)]
struct SendPtr(*mut c_void);

impl SendPtr {
    fn get(self) -> *mut c_void {
        self.0
    }
}

// SAFETY: the pointer is only handed back to the caller's callback, which the contract
// requires to accept it from any thread.
unsafe impl Send for SendPtr {}
// SAFETY: as for Send; the callback calls are serialized.
unsafe impl Sync for SendPtr {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    unsafe extern "C" fn local_entry(
        request: *const AotRequestV1,
        callback: AotEventCallbackV1,
        ctx: *mut c_void,
    ) -> i32 {
        // SAFETY: forwarded from call_v1, which keeps the contract.
        unsafe { serve_v1(request, callback, ctx) }
    }

    #[test]
    fn a_round_trip_through_the_c_abi_lists_and_refuses_like_the_session() {
        let seen = Mutex::new(Vec::new());
        let record = |e: AotEvent<'_>| {
            seen.lock().unwrap().push(format!("{e:?}"));
        };
        let listing = AotRequest {
            list_only: true,
            ..AotRequest::default()
        };
        // SAFETY: `local_entry` is serve_v1 itself.
        let summary = unsafe { call_v1(local_entry, &listing, &record) }.unwrap();
        let direct = run_request(&listing, &|_| {}).unwrap();
        assert_eq!(summary.listed, direct.listed);
        assert_eq!(seen.lock().unwrap().len(), direct.listed);

        // An unknown kernel is refused, and the plugin's message comes back as the error.
        let unknown = AotRequest {
            kernels: vec!["no_such_kernel".into()],
            targets: AotTargets {
                arches: vec!["sm_90".into()],
                ..AotTargets::default()
            },
            ..AotRequest::default()
        };
        // SAFETY: as above.
        let err = unsafe { call_v1(local_entry, &unknown, &record) }.unwrap_err();
        assert!(
            err.to_string()
                .contains("no extern kernel named 'no_such_kernel'"),
            "{err}"
        );
    }

    #[test]
    fn a_malformed_request_is_refused_not_trusted() {
        let codes = Mutex::new(Vec::new());
        unsafe extern "C" fn record(ctx: *mut c_void, event: *const AotEventV1) {
            // SAFETY: ctx is the Mutex below; event is valid for the call.
            let (codes, event) = unsafe { (&*ctx.cast::<Mutex<Vec<String>>>(), &*event) };
            // SAFETY: the message is a NUL-terminated string for the call.
            let message = unsafe { str_or_empty(event.message) }.into_owned();
            codes
                .lock()
                .unwrap()
                .push(format!("{}: {message}", event.kind));
        }
        let mut raw = AotRequestV1 {
            size: 8,
            arches: std::ptr::null(),
            arch_count: 0,
            devices: std::ptr::null(),
            device_count: 0,
            kernels: std::ptr::null(),
            kernel_count: 3,
            out_dir: std::ptr::null(),
            jobs: 0,
            list_only: 0,
        };
        let ctx = (&codes as *const Mutex<Vec<String>>).cast_mut().cast();
        // SAFETY: the pointers are null or valid; serve_v1 must refuse what is inconsistent.
        assert_eq!(unsafe { serve_v1(&raw, record, ctx) }, 2);
        raw.size = std::mem::size_of::<AotRequestV1>();
        // SAFETY: as above.
        assert_eq!(unsafe { serve_v1(&raw, record, ctx) }, 2);
        // SAFETY: null is allowed and refused.
        assert_eq!(unsafe { serve_v1(std::ptr::null(), record, ctx) }, 2);
        let codes = codes.into_inner().unwrap();
        assert_eq!(
            codes,
            [
                "6: aot plugin request: older than version 1 (struct too small)",
                "6: aot plugin request: null string array",
                "6: aot plugin request: null request",
            ]
        );
    }
}
