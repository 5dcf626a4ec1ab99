//! [`Generator`]: what a schema's `Generator` argument holds.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::PhiloxState;

/// A random-number generator handle, as PyTorch's `at::Generator` is for Philox: a seed and an
/// offset into the Philox counter space. Clones share the state, so a kernel that draws numbers
/// advances the caller's generator, and two calls never reuse counters.
///
/// A kernel reserves the counters it will use with [`philox`](Self::philox), then draws from
/// the [`PhiloxState`] it gets back: on the CPU by calling it, on CUDA by passing it to the
/// kernel by value (it is `#[repr(C)]`: two `u64`s).
#[derive(Clone)]
pub struct Generator {
    state: Arc<State>,
}

struct State {
    seed: u64,
    /// The next unused counter, in units of one Philox block (4 × u32).
    offset: AtomicU64,
}

impl Generator {
    /// A generator at offset 0.
    pub fn new(seed: u64) -> Generator {
        Generator::with_offset(seed, 0)
    }

    /// A generator resumed at `offset` (as saved by [`offset`](Self::offset)).
    pub fn with_offset(seed: u64, offset: u64) -> Generator {
        Generator {
            state: Arc::new(State {
                seed,
                offset: AtomicU64::new(offset),
            }),
        }
    }

    /// The generator's seed.
    pub fn seed(&self) -> u64 {
        self.state.seed
    }

    /// The next counter a [`philox`](Self::philox) call would hand out.
    pub fn offset(&self) -> u64 {
        self.state.offset.load(Ordering::Relaxed)
    }

    /// Reserves `blocks` Philox blocks (4 random `u32`s each) and returns the state that
    /// produces them: blocks `0..blocks` of the returned state are this call's alone, also when
    /// other threads draw from the same generator.
    pub fn philox(&self, blocks: u64) -> PhiloxState {
        let offset = self.state.offset.fetch_add(blocks, Ordering::Relaxed);
        PhiloxState {
            seed: self.state.seed,
            offset,
        }
    }

    /// Whether two handles share one state.
    pub fn same_state(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    /// The shared state as a raw pointer holding one reference, for a `StableValue`.
    pub(crate) fn into_raw(self) -> *const () {
        Arc::into_raw(self.state).cast()
    }

    /// A new handle to the state behind `ptr`, leaving `ptr`'s own reference in place.
    ///
    /// # Safety
    /// `ptr` came from [`into_raw`](Self::into_raw) and its reference has not been released.
    pub(crate) unsafe fn clone_raw(ptr: *const ()) -> Generator {
        let ptr = ptr.cast::<State>();
        // SAFETY: per the contract, `ptr` holds a live reference, so adding one is sound; the
        // handle returned owns the added one.
        unsafe {
            Arc::increment_strong_count(ptr);
            Generator {
                state: Arc::from_raw(ptr),
            }
        }
    }

    /// Releases the reference `ptr` holds.
    ///
    /// # Safety
    /// `ptr` came from [`into_raw`](Self::into_raw), and this is its one release.
    pub(crate) unsafe fn release_raw(ptr: *const ()) {
        // SAFETY: per the contract, this takes back exactly the reference into_raw gave away.
        drop(unsafe { Arc::from_raw(ptr.cast::<State>()) });
    }
}

impl PartialEq for Generator {
    /// Equal when the seeds and current offsets are (a snapshot: another holder may advance
    /// the offset at any time).
    fn eq(&self, other: &Generator) -> bool {
        self.seed() == other.seed() && self.offset() == other.offset()
    }
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("seed", &self.seed())
            .field("offset", &self.offset())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_offset() {
        let g = Generator::new(7);
        let h = g.clone();
        let a = g.philox(3);
        let b = h.philox(2);
        assert_eq!((a.seed, a.offset), (7, 0));
        assert_eq!((b.seed, b.offset), (7, 3));
        assert_eq!(g.offset(), 5);
        assert!(g.same_state(&h));
        assert!(!g.same_state(&Generator::new(7)));
    }

    #[test]
    fn raw_round_trip_keeps_one_reference_each() {
        let g = Generator::with_offset(1, 10);
        let raw = g.clone().into_raw();
        // SAFETY: `raw` came from into_raw and is released once, below.
        let back = unsafe { Generator::clone_raw(raw) };
        assert!(back.same_state(&g));
        assert_eq!(Arc::strong_count(&g.state), 3);
        // SAFETY: the one release of `raw`.
        unsafe { Generator::release_raw(raw) };
        assert_eq!(Arc::strong_count(&g.state), 2);
    }
}
