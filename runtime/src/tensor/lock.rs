//! [`StorageLock`]: the one lock in front of a storage's bytes, cpu and cuda alike.
//!
//! # What users get
//!
//! It behaves like an `RwLock`: any number of readers at once, or one writer, and a thread that
//! wants what another thread holds **waits** for it (issue 16, item 6: a reader racing an in-place
//! writer used to get [`Error::StorageBusy`] on 438 calls of 1000). Nothing fails because another
//! thread happens to be using the tensor.
//!
//! The one thing that cannot wait is a thread waiting for itself: a `with_slice_mut` closure that
//! reads its own tensor (or a view of it), or a `with_slice` closure that writes it. Blocking
//! would hang forever, so that is still [`Error::StorageBusy`], at once and deterministically.
//! Each thread keeps the set of storages it holds in a thread-local, which is how it knows.
//!
//! Reads nest on one thread even while another thread waits to write (`read_recursive`):
//! otherwise a nested read behind a queued writer would deadlock with its own outer read.
//!
//! Internal code that holds several storages at once (`copy_from`, device copies, a `#[kernel]`'s
//! CPU build locking its buffers) takes them in one order, the locks' addresses, so two threads
//! copying `a -> b` and `b -> a` wait for each other instead of deadlocking. User closures that nest accesses to two
//! tensors on two threads in opposite orders can, as with any pair of `RwLock`s; that is
//! documented on `with_slice_mut`.
//!
//! # Cost
//!
//! An uncontended acquire is parking_lot's one compare-and-swap plus a thread-local push; none of
//! it is on the dispatch path (a call never touches the bytes of its tensors).

use std::cell::RefCell;
use std::fmt::Display;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{Error, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
}

thread_local! {
    /// The storages this thread holds, by lock address, innermost last (its capacity is kept,
    /// so only a thread's first acquire allocates).
    static HELD: RefCell<Vec<(usize, Mode)>> = const { RefCell::new(Vec::new()) };
}

/// What this thread already holds of the lock at `addr`, if anything.
fn held_here(addr: usize) -> Option<Mode> {
    HELD.try_with(|h| {
        h.borrow()
            .iter()
            .rev()
            .find(|(a, _)| *a == addr)
            .map(|(_, m)| *m)
    })
    .ok()
    .flatten()
}

fn note(addr: usize, mode: Mode) {
    // At thread exit the set is gone; the acquire still works, it just is not tracked.
    let _ = HELD.try_with(|h| h.borrow_mut().push((addr, mode)));
}

fn forget(addr: usize, mode: Mode) {
    let _ = HELD.try_with(|h| {
        let mut h = h.borrow_mut();
        if let Some(i) = h.iter().rposition(|e| *e == (addr, mode)) {
            h.remove(i);
        }
    });
}

/// A blocking reader-writer lock that refuses, instead of deadlocking, a thread that would wait
/// for itself.
pub(crate) struct StorageLock {
    lock: RwLock<()>,
}

/// Shared access; released (and untracked) on drop.
pub(crate) struct ReadGuard<'a> {
    _guard: RwLockReadGuard<'a, ()>,
    addr: usize,
}

/// Exclusive access; released (and untracked) on drop.
pub(crate) struct WriteGuard<'a> {
    _guard: RwLockWriteGuard<'a, ()>,
    addr: usize,
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        forget(self.addr, Mode::Read);
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        forget(self.addr, Mode::Write);
    }
}

impl StorageLock {
    pub(crate) const fn new() -> StorageLock {
        StorageLock {
            lock: RwLock::new(()),
        }
    }

    fn addr(&self) -> usize {
        self as *const StorageLock as usize
    }

    /// Shared access, waiting for another thread's writer to finish. `op` and `what` (the memory,
    /// "the tensor's elements", say) name the caller in the error a same-thread writer gives.
    pub(crate) fn read(&self, op: &str, what: &dyn Display) -> Result<ReadGuard<'_>> {
        let addr = self.addr();
        let guard = match held_here(addr) {
            Some(Mode::Write) => return Err(self_deadlock(op, what, "read", "being written")),
            // Already reading here: do not queue behind a waiting writer, who waits for us.
            Some(Mode::Read) => self.lock.read_recursive(),
            None => self.lock.read(),
        };
        note(addr, Mode::Read);
        Ok(ReadGuard {
            _guard: guard,
            addr,
        })
    }

    /// Exclusive access, waiting for other threads' readers and writers to finish.
    pub(crate) fn write(&self, op: &str, what: &dyn Display) -> Result<WriteGuard<'_>> {
        let addr = self.addr();
        match held_here(addr) {
            Some(Mode::Write) => return Err(self_deadlock(op, what, "write", "being written")),
            Some(Mode::Read) => return Err(self_deadlock(op, what, "write", "being read")),
            None => {}
        }
        let guard = self.lock.write();
        note(addr, Mode::Write);
        Ok(WriteGuard {
            _guard: guard,
            addr,
        })
    }

    /// This lock's place in the one order that code holding several locks acquires them in
    /// (its address): `copy_from`, device copies and the CPU build's buffers all use it.
    pub(crate) fn order(&self) -> usize {
        self.addr()
    }
}

#[cold]
#[inline(never)]
fn self_deadlock(op: &str, what: &dyn Display, want: &str, state: &str) -> Error {
    Error::StorageBusy(format!(
        "{op} needs to {want} {what}, but they are {state} by this same thread: a with_slice, \
         with_slice_mut or with_cuda_slice closure on this tensor, a view of it, or a tensor \
         sharing its storage is still running further up this thread's stack (waiting would \
         deadlock; other threads are waited for)"
    ))
}
