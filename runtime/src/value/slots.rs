//! The stack's storage: [`INLINE_SLOTS`] values inline, then one heap buffer, with the length
//! and the capacity in fields of their own.
//!
//! `SmallVec` keeps its length in the capacity field while inline and in the heap header once
//! spilled, so every `len`, `push` and `set_len` first asks where the values live: about 100
//! of the 540 instructions of a boxed tensor call (callgrind, `bench::axpby` pushed and called).
//! Here only the base pointer depends on it.

use std::mem::MaybeUninit;

use super::stable_value::StableValue;

/// Values held inline, before the stack spills to the heap: 8 arguments plus 8 outputs.
pub const INLINE_SLOTS: usize = 16;

pub(crate) struct Slots {
    len: usize,
    /// `INLINE_SLOTS` while inline, the heap buffer's capacity (always more) once spilled.
    cap: usize,
    /// The spilled buffer: its length stays 0 (the values in it are counted by `len`, and
    /// dropped here), so dropping it only frees the memory. Empty, unallocated, while inline.
    heap: Vec<StableValue>,
    inline: [MaybeUninit<StableValue>; INLINE_SLOTS],
}

impl Slots {
    #[inline]
    pub(crate) const fn new() -> Slots {
        Slots {
            len: 0,
            cap: INLINE_SLOTS,
            heap: Vec::new(),
            inline: [const { MaybeUninit::uninit() }; INLINE_SLOTS],
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    #[inline]
    pub(crate) fn spilled(&self) -> bool {
        self.cap > INLINE_SLOTS
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *const StableValue {
        if self.spilled() {
            self.heap.as_ptr()
        } else {
            self.inline.as_ptr().cast()
        }
    }

    /// The base of the buffer, valid for writes of `capacity()` values.
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut StableValue {
        if self.spilled() {
            self.heap.as_mut_ptr()
        } else {
            self.inline.as_mut_ptr().cast()
        }
    }

    /// # Safety
    /// `len <= capacity()`, and slots `0..len` hold initialised values the stack owns.
    #[inline]
    pub(crate) unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap);
        self.len = len;
    }

    /// Room for at least `additional` more values. Like `Vec::reserve`, it panics only if the
    /// capacity would overflow `usize`, and aborts when out of memory.
    #[inline]
    pub(crate) fn reserve(&mut self, additional: usize) {
        if self.cap - self.len < additional {
            self.grow(additional);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let needed = self
            .len
            .checked_add(additional)
            .unwrap_or_else(|| capacity_overflow());
        let mut heap = Vec::with_capacity(needed.max(self.cap.saturating_mul(2)));
        // SAFETY: the new buffer holds at least `needed >= len` values and is a separate
        // allocation; the values move bitwise, and the old buffer is not read again (its Vec has
        // length 0, so dropping it below only frees its memory).
        unsafe { std::ptr::copy_nonoverlapping(self.as_ptr(), heap.as_mut_ptr(), self.len) };
        self.cap = heap.capacity();
        self.heap = heap;
    }

    #[inline]
    pub(crate) fn push(&mut self, value: StableValue) {
        if self.len == self.cap {
            self.grow(1);
        }
        // SAFETY: `len < cap`, so slot `len` is within the buffer and past the values.
        unsafe { self.as_mut_ptr().add(self.len).write(value) };
        self.len += 1;
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<StableValue> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: slot `len` held the top value, which is no longer counted: moved out once.
        Some(unsafe { self.as_ptr().add(self.len).read() })
    }

    /// Drops the values past the first `len`, uncounted before any of them drops, so that a
    /// panicking drop never leads to one being dropped twice.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        let old = self.len;
        if old <= len {
            return;
        }
        // No longer counted before they are dropped, so a drop that panics drops none twice
        // (the slice's drop glue goes on with the others); the length is written once, not once
        // a value.
        self.len = len;
        let base = self.as_mut_ptr();
        // SAFETY: slots `len..old` held initialised values, now past the length: each is
        // dropped once here.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(base.add(len), old - len))
        };
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }
}

#[cold]
fn capacity_overflow() -> ! {
    panic!("the stack's capacity overflows usize")
}

impl std::ops::Deref for Slots {
    type Target = [StableValue];
    #[inline]
    fn deref(&self) -> &[StableValue] {
        // SAFETY: slots `0..len` hold initialised values.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for Slots {
    #[inline]
    fn deref_mut(&mut self) -> &mut [StableValue] {
        let len = self.len;
        // SAFETY: slots `0..len` hold initialised values, borrowed uniquely through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), len) }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Default for Slots {
    fn default() -> Slots {
        Slots::new()
    }
}

impl Clone for Slots {
    fn clone(&self) -> Slots {
        let mut out = Slots::new();
        out.reserve(self.len);
        for value in self.iter() {
            out.push(value.clone());
        }
        out
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<StableValue> for Slots {
    fn from_iter<I: IntoIterator<Item = StableValue>>(iter: I) -> Slots {
        let iter = iter.into_iter();
        let mut out = Slots::new();
        out.reserve(iter.size_hint().0);
        for value in iter {
            out.push(value);
        }
        out
    }
}

/// The values of a consumed [`Stack`](super::Stack), bottom first, each owned (a borrowed
/// tensor becomes a counted reference as it leaves).
pub struct IntoIter {
    /// Counts no value (its length is 0), so dropping it only frees the buffer: the values
    /// `next..end` are this iterator's.
    slots: Slots,
    next: usize,
    end: usize,
}

impl IntoIter {
    pub(crate) fn new(mut slots: Slots) -> IntoIter {
        let end = slots.len;
        slots.len = 0;
        IntoIter {
            slots,
            next: 0,
            end,
        }
    }
}

impl Iterator for IntoIter {
    type Item = StableValue;

    #[inline]
    fn next(&mut self) -> Option<StableValue> {
        if self.next == self.end {
            return None;
        }
        // SAFETY: slot `next` holds a value this iterator owns and has not handed out; it is
        // moved out once, as `next` moves past it.
        let value = unsafe { self.slots.as_ptr().add(self.next).read() };
        self.next += 1;
        Some(value.into_owned())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for IntoIter {}

impl Drop for IntoIter {
    fn drop(&mut self) {
        let base = self.slots.as_mut_ptr();
        while self.next < self.end {
            let at = self.next;
            self.next += 1;
            // SAFETY: slot `at` holds a value not handed out, dropped once.
            unsafe { std::ptr::drop_in_place(base.add(at)) };
        }
    }
}

impl std::fmt::Debug for IntoIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntoIter")
            .field("left", &(self.end - self.next))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::tests::balance;
    use crate::value::IntoStable;
    use crate::Tensor;

    /// Runs `check` with a tensor, then checks that every reference it took was given back
    /// and no handle leaked or was freed twice.
    fn counted(check: impl FnOnce(&Tensor)) {
        let b = balance();
        let t = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
        check(&t);
        assert_eq!(t.ref_count(), 1, "every reference given back");
        drop(t);
        b.assert_balanced();
    }

    fn owned(t: &Tensor) -> StableValue {
        t.clone().into_stable()
    }

    fn filled(t: &Tensor, n: usize) -> Slots {
        let mut slots = Slots::new();
        for i in 0..n {
            if i % 2 == 0 {
                slots.push(owned(t));
            } else {
                slots.push((i as i64).into_stable());
            }
        }
        slots
    }

    #[test]
    fn values_keep_their_order_across_the_spill_and_pop_top_first() {
        counted(|t| {
            let mut slots = filled(t, INLINE_SLOTS);
            assert!(!slots.spilled());
            assert_eq!(slots.capacity(), INLINE_SLOTS);
            slots.push(99i64.into_stable());
            assert!(slots.spilled(), "the 17th value spills");
            assert!(slots.capacity() > INLINE_SLOTS);
            assert_eq!(slots.len(), INLINE_SLOTS + 1);
            assert_eq!(t.ref_count(), 1 + INLINE_SLOTS / 2, "moved, not copied");
            for (i, v) in slots.iter().enumerate().take(INLINE_SLOTS) {
                if i % 2 == 0 {
                    assert!(v.as_tensor().is_some_and(|x| x.ptr_eq(t)));
                } else {
                    assert_eq!(v.as_int(), Some(i as i64));
                }
            }
            assert_eq!(slots.pop().and_then(|v| v.as_int()), Some(99));
            let top = slots.pop().unwrap();
            assert_eq!(top.as_int(), Some(INLINE_SLOTS as i64 - 1));
            drop(slots);
            assert_eq!(t.ref_count(), 1);
        });
    }

    #[test]
    fn truncate_and_clear_drop_each_value_once() {
        counted(|t| {
            let mut slots = filled(t, 40);
            assert_eq!(t.ref_count(), 21);
            slots.truncate(10);
            assert_eq!((slots.len(), t.ref_count()), (10, 6));
            slots.truncate(20);
            assert_eq!(slots.len(), 10, "truncating to more does nothing");
            slots.clear();
            assert_eq!((slots.len(), t.ref_count()), (0, 1));
            slots.push(owned(t));
            assert_eq!(slots.len(), 1, "a cleared buffer takes values again");
            drop(slots);
        });
    }

    #[test]
    fn reserve_grows_once_to_what_is_asked() {
        let mut slots = Slots::new();
        slots.reserve(INLINE_SLOTS);
        assert!(!slots.spilled(), "16 fit inline");
        slots.push(1i64.into_stable());
        slots.reserve(100);
        assert!(slots.capacity() >= 101);
        let cap = slots.capacity();
        for i in 0..100 {
            slots.push((i as i64).into_stable());
        }
        assert_eq!(slots.capacity(), cap, "no second growth");
        assert_eq!(slots[0].as_int(), Some(1));
        assert_eq!(slots[100].as_int(), Some(99));
    }

    #[test]
    fn a_clone_counts_its_own_references_inline_and_spilled() {
        counted(|t| {
            for n in [3, INLINE_SLOTS + 5] {
                let slots = filled(t, n);
                let before = t.ref_count();
                let copy = slots.clone();
                assert_eq!(copy.len(), n);
                assert_eq!(t.ref_count(), 2 * before - 1);
                assert_eq!(copy[1].as_int(), Some(1));
                drop(slots);
                drop(copy);
                assert_eq!(t.ref_count(), 1);
            }
        });
    }

    #[test]
    fn iterating_hands_out_owned_values_and_drops_the_rest_once() {
        counted(|t| {
            for n in [6, INLINE_SLOTS + 6] {
                let mut slots = filled(t, n);
                // SAFETY: a borrowed tensor pushed last, while `t` outlives the slots.
                slots.push(unsafe { t.into_stable_for_call() });
                let mut iter = IntoIter::new(slots);
                assert_eq!(iter.len(), n + 1);
                let first = iter.next().unwrap();
                assert!(first.as_tensor().is_some_and(|x| x.ptr_eq(t)));
                assert_eq!(iter.next().and_then(|v| v.as_int()), Some(1));
                drop(iter);
                assert_eq!(t.ref_count(), 2, "only the value handed out is left");
                drop(first);
                let last = IntoIter::new({
                    let mut s = Slots::new();
                    // SAFETY: as above.
                    s.push(unsafe { t.into_stable_for_call() });
                    s
                })
                .last()
                .unwrap();
                assert_eq!(t.ref_count(), 2, "a borrowed tensor leaves as an owned one");
                drop(last);
            }
        });
    }

    #[test]
    fn collecting_spills_as_needed() {
        let slots: Slots = (0..50i64).map(IntoStable::into_stable).collect();
        assert!(slots.spilled());
        assert_eq!(slots.len(), 50);
        assert!(slots.iter().zip(0..).all(|(v, i)| v.as_int() == Some(i)));
        assert_eq!(format!("{:?}", Slots::new()), "[]");
    }
}
