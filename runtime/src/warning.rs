//! Warnings from kernels: [`warn!`](crate::warn), PyTorch's `TORCH_WARN_ONCE` / `warn_always`.
//!
//! A kernel calls `opbox::warn!("...", args)`. The warning goes to the handler in force: the one
//! [`with_warning_handler`] installed on this thread for the duration of a closure, else the
//! process-wide one from [`set_warning_handler`], else the `log` crate (`log::warn!`, target
//! `opbox`). Each call site warns once per process, as `TORCH_WARN_ONCE` does, unless
//! [`set_warn_always`]`(true)` is on (PyTorch's `torch.set_warn_always`), when every call warns.
//!
//! Nothing here is on the call path: an op that never warns pays nothing.

use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// One warning, as a handler receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The warning's text.
    pub message: String,
    /// Where the `warn!` is: `file!()`, `line!()` and `module_path!()` of the call site.
    pub file: &'static str,
    /// The line of the `warn!`.
    pub line: u32,
    /// The module of the `warn!`.
    pub module: &'static str,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{})", self.message, self.file, self.line)
    }
}

/// What receives warnings.
pub type WarningHandler = Arc<dyn Fn(&Warning) + Send + Sync>;

static HANDLER: RwLock<Option<WarningHandler>> = RwLock::new(None);
static WARN_ALWAYS: AtomicBool = AtomicBool::new(false);

thread_local! {
    static SCOPED: RefCell<Option<WarningHandler>> = const { RefCell::new(None) };
}

/// Installs the process-wide handler and returns the one it replaces (`None`: the `log`
/// default was in force).
pub fn set_warning_handler(
    handler: impl Fn(&Warning) + Send + Sync + 'static,
) -> Option<WarningHandler> {
    let mut slot = HANDLER.write().unwrap_or_else(|p| p.into_inner());
    slot.replace(Arc::new(handler))
}

/// Puts the `log` default back as the process-wide handler; returns the one removed.
pub fn reset_warning_handler() -> Option<WarningHandler> {
    HANDLER.write().unwrap_or_else(|p| p.into_inner()).take()
}

/// Runs `f` with `handler` receiving this thread's warnings (nested calls stack; the previous
/// handler is back when `f` returns or unwinds). Tests use it to capture warnings without
/// touching other threads.
pub fn with_warning_handler<R>(
    handler: impl Fn(&Warning) + Send + Sync + 'static,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore(Option<WarningHandler>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            let _ = SCOPED.try_with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SCOPED.with(|s| s.borrow_mut().replace(Arc::new(handler)));
    let _restore = Restore(previous);
    f()
}

/// Whether every `warn!` call warns (`true`), or each call site only once (`false`, the
/// default). PyTorch's `torch.set_warn_always`.
pub fn set_warn_always(always: bool) {
    WARN_ALWAYS.store(always, Ordering::Relaxed);
}

/// Whether every `warn!` call warns, not only the first of each call site.
pub fn warn_always() -> bool {
    WARN_ALWAYS.load(Ordering::Relaxed)
}

/// One `warn!` call site. Not a public API: the macro makes one per call.
#[doc(hidden)]
pub struct CallSite {
    pub file: &'static str,
    pub line: u32,
    pub module: &'static str,
    pub warned: AtomicBool,
}

impl CallSite {
    pub const fn new(file: &'static str, line: u32, module: &'static str) -> CallSite {
        CallSite {
            file,
            line,
            module,
            warned: AtomicBool::new(false),
        }
    }
}

/// What `warn!` calls. Not a public API.
#[doc(hidden)]
#[cold]
#[inline(never)]
pub fn __warn(site: &'static CallSite, args: fmt::Arguments<'_>) {
    if site.warned.swap(true, Ordering::Relaxed) && !warn_always() {
        return;
    }
    let warning = Warning {
        message: args.to_string(),
        file: site.file,
        line: site.line,
        module: site.module,
    };
    deliver(&warning);
}

/// Hands `warning` to the handler in force (a plugin's warnings arrive here too).
pub(crate) fn deliver(warning: &Warning) {
    // The handler is cloned out so it runs with no lock held: it may warn again, or install
    // another handler.
    let handler = SCOPED
        .try_with(|s| s.borrow().clone())
        .ok()
        .flatten()
        .or_else(|| HANDLER.read().unwrap_or_else(|p| p.into_inner()).clone());
    match handler {
        Some(h) => h(warning),
        None => log::warn!(target: "opbox", "{warning}"),
    }
}

/// Warns from a kernel (or anywhere): `opbox::warn!("clamped {} values", n)`. The warning goes
/// to the handler in force (see `opbox::warnings`); each call site warns once per process unless
/// `opbox::warnings::set_warn_always(true)`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => {{
        static SITE: $crate::warning::CallSite =
            $crate::warning::CallSite::new(file!(), line!(), module_path!());
        $crate::warning::__warn(&SITE, format_args!($($arg)+))
    }};
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn capture() -> (
        Arc<Mutex<Vec<Warning>>>,
        impl Fn(&Warning) + Send + Sync + 'static,
    ) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        (seen, move |w: &Warning| {
            sink.lock().unwrap().push(w.clone())
        })
    }

    fn warn_from_one_site(i: i32) {
        crate::warn!("value {i} was clamped");
    }

    #[test]
    fn once_per_call_site_unless_warn_always() {
        let (seen, handler) = capture();
        with_warning_handler(handler, || {
            for i in 0..3 {
                warn_from_one_site(i);
            }
            crate::warn!("another site");
        });
        let seen = seen.lock().unwrap();
        let messages: Vec<&str> = seen.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(messages, ["value 0 was clamped", "another site"]);
        assert!(seen[0].file.ends_with("warning.rs"));
        assert!(seen[0].module.ends_with("warning::tests"));
    }

    #[test]
    fn warn_always_warns_every_time() {
        let (seen, handler) = capture();
        // Other tests in this binary never warn from this site, so flipping the switch here
        // only changes what this test sees.
        fn site() {
            crate::warn!("every time");
        }
        with_warning_handler(handler, || {
            site();
            set_warn_always(true);
            site();
            site();
            set_warn_always(false);
            site();
        });
        assert_eq!(
            seen.lock().unwrap().len(),
            3,
            "first call, then two under warn_always"
        );
    }

    #[test]
    fn scoped_handlers_nest_and_restore() {
        let (outer, outer_h) = capture();
        let (inner, inner_h) = capture();
        with_warning_handler(outer_h, || {
            with_warning_handler(inner_h, || crate::warn!("inner"));
            crate::warn!("outer");
        });
        assert_eq!(inner.lock().unwrap()[0].message, "inner");
        assert_eq!(outer.lock().unwrap()[0].message, "outer");
        assert_eq!(outer.lock().unwrap().len(), 1);
    }
}
