//! Panics caught at an edge (the boxed kernel ABI, an AOT job, a plugin's entry) become messages.
//!
//! Dropping a payload runs its `Drop`, which is the panicking code's and may panic again. Outside
//! a `catch_unwind` that second panic would unwind through the `extern "C"` edge, which aborts the
//! process. So a payload is dropped under `catch_unwind` as well, and one whose drop panics is
//! leaked on purpose (its drop already failed once) and counted.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

static LEAKED: AtomicU64 = AtomicU64::new(0);

/// Runs `f`; a panic becomes its message.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(dispose)
}

/// The payload's message; the payload is dropped where a panic of its own cannot escape.
pub(crate) fn dispose(payload: Box<dyn Any + Send>) -> String {
    let message = message_of(payload.as_ref());
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        // Dropping this one could panic as well: keep it.
        std::mem::forget(second);
        LEAKED.fetch_add(1, Ordering::Relaxed);
    }
    message
}

/// How many panic payloads were leaked because dropping them panicked (see the module docs).
pub fn leaked_panic_payloads() -> u64 {
    LEAKED.load(Ordering::Relaxed)
}

fn message_of(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panics too");
        }
    }

    #[test]
    fn messages_and_a_payload_whose_drop_panics() {
        assert_eq!(
            catch(|| panic!("plain {}", 1)),
            Err::<(), _>("plain 1".into())
        );
        assert_eq!(catch(|| 7), Ok(7));
        let before = leaked_panic_payloads();
        let r: Result<(), String> = catch(|| std::panic::panic_any(Bomb));
        assert_eq!(r, Err("a non-string panic payload".into()));
        assert_eq!(leaked_panic_payloads(), before + 1);
    }
}
