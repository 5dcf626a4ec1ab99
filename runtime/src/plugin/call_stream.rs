//! The host's current CUDA stream, as a plugin asks for it (ABI 1.2), asked once per kernel
//! call rather than once per launch.
//!
//! The host's stream cannot change while one of this plugin's kernels runs on a thread: the
//! host makes a stream current only inside a `with_stream` closure, and any host code the kernel
//! reaches (a host op, an allocation) returns with its scopes closed. So the first launch of a
//! call asks the host, through the table, and the call's later launches reuse the answer. A
//! kernel that re-enters this plugin (through a host op that calls one of its ops) gets a scope
//! of its own for the inner call, and the outer call's answer back after it.

use std::cell::Cell;
use std::ffi::c_void;

/// What this thread knows of the host's current stream. (Without the "cuda" feature nothing
/// asks, and the scopes only keep `Unasked`.)
#[derive(Clone, Copy)]
#[cfg_attr(not(any(feature = "cuda", test)), allow(dead_code))]
enum Known {
    /// Outside this plugin's kernel calls: every question goes to the host.
    Outside,
    /// Inside a kernel call that has not asked yet.
    Unasked,
    /// Inside a kernel call: the host's answer for device `ordinal` (None: nothing scoped).
    Asked {
        ordinal: usize,
        stream: Option<*mut c_void>,
    },
}

thread_local! {
    static KNOWN: Cell<Known> = const { Cell::new(Known::Outside) };
}

/// One kernel call's scope: from its creation to its drop, the host's answer is kept.
pub(crate) struct CallScope {
    /// This thread's `KNOWN` ([`known`]), for the scope's entry and exit.
    known: &'static Cell<Known>,
    outer: Known,
}

/// This thread's `KNOWN`, found once for the several reads and writes of a caller: in a plugin
/// (a shared library) each lookup of a thread-local is a call into the dynamic loader.
#[inline]
fn known() -> &'static Cell<Known> {
    // SAFETY: `KNOWN` has no destructor, so it lives as long as its thread; the reference is
    // `!Send` (a `Cell` is not `Sync`), so it is only used on that thread.
    KNOWN.with(|k| unsafe { &*std::ptr::from_ref(k) })
}

impl CallScope {
    /// Opens the scope of a kernel call on this thread.
    #[inline]
    pub(crate) fn enter() -> CallScope {
        let known = known();
        CallScope {
            known,
            outer: known.replace(Known::Unasked),
        }
    }
}

impl Drop for CallScope {
    #[inline]
    fn drop(&mut self) {
        self.known.set(self.outer);
    }
}

/// In a loaded plugin on a host of ABI 1.2 or later, the CUDA stream (`CUstream`) the host has
/// made current for `device` on this thread; None in a host, on an older host, and when the host
/// has none scoped (its legacy default stream, which is this image's default too).
#[cfg(feature = "cuda")]
pub(crate) fn host_current_stream(device: usize) -> Option<*mut c_void> {
    answer(device, ask_host)
}

/// The answer for `device`: kept from earlier in this kernel call, else `ask`ed (and kept, in
/// a call).
#[cfg_attr(not(any(feature = "cuda", test)), allow(dead_code))]
fn answer(device: usize, ask: impl FnOnce(usize) -> Option<*mut c_void>) -> Option<*mut c_void> {
    let known = known();
    match known.get() {
        Known::Asked { ordinal, stream } if ordinal == device => stream,
        Known::Outside => ask(device),
        Known::Unasked | Known::Asked { .. } => {
            let stream = ask(device);
            known.set(Known::Asked {
                ordinal: device,
                stream,
            });
            stream
        }
    }
}

/// The host's answer, through its table.
#[cfg(feature = "cuda")]
fn ask_host(device: usize) -> Option<*mut c_void> {
    use super::guest::{host, host_has};
    use crate::abi::plugin_v1::{host_size_for, ABI_V1_2, STATUS_OK};

    let host = host()?;
    if !host_has(host_size_for(ABI_V1_2)) {
        return None;
    }
    let device = i32::try_from(device).ok()?;
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: a 1.2 table (its size covers `current_stream`), with room for one pointer.
    let status = unsafe { (host.current_stream)(device, &mut out) };
    (status == STATUS_OK && !out.is_null()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose current stream is `*current`, counting the questions it is asked.
    fn host_of<'a>(
        current: &'a Cell<usize>,
        asked: &'a Cell<u32>,
    ) -> impl Fn(usize) -> Option<*mut c_void> + 'a {
        move |device| {
            asked.set(asked.get() + 1);
            let s = current.get() + device;
            (s != 0).then(|| std::ptr::without_provenance_mut(s))
        }
    }

    #[test]
    fn a_kernel_call_asks_the_host_once_per_device_and_outside_calls_ask_every_time() {
        let (current, asked) = (Cell::new(0x1000), Cell::new(0));
        let ask = host_of(&current, &asked);
        let stream = |device| answer(device, &ask).map_or(0, |p| p.addr());

        assert_eq!((stream(0), stream(0)), (0x1000, 0x1000));
        assert_eq!(
            asked.get(),
            2,
            "outside a call, every question goes to the host"
        );

        let call = CallScope::enter();
        assert_eq!((stream(0), stream(0), stream(0)), (0x1000, 0x1000, 0x1000));
        assert_eq!(
            asked.get(),
            3,
            "one question for a call's launches on one device"
        );
        assert_eq!(stream(1), 0x1001, "another device is asked");
        assert_eq!(asked.get(), 4);
        drop(call);

        current.set(0x2000);
        let _call = CallScope::enter();
        assert_eq!(stream(0), 0x2000, "a new call asks again");
    }

    #[test]
    fn a_nested_call_asks_for_itself_and_leaves_the_outer_answer() {
        let (current, asked) = (Cell::new(0x1000), Cell::new(0));
        let ask = host_of(&current, &asked);
        let stream = |device| answer(device, &ask).map_or(0, |p| p.addr());

        let _outer = CallScope::enter();
        assert_eq!(stream(0), 0x1000);
        // A host op the kernel calls scopes another stream and re-enters the plugin.
        current.set(0x3000);
        {
            let _inner = CallScope::enter();
            assert_eq!(stream(0), 0x3000, "the inner call asks for its own");
        }
        current.set(0x1000);
        assert_eq!(stream(0), 0x1000, "the outer call keeps its answer");
        assert_eq!(asked.get(), 2);
        current.set(0);
        let _none = CallScope::enter();
        assert_eq!(stream(0), 0, "nothing scoped: None, kept as such");
        assert_eq!(stream(0), 0);
        assert_eq!(asked.get(), 3);
    }
}
