use std::marker::PhantomData;

use super::convert::IntoStable;
use super::slots::{IntoIter, Slots};
use super::stable_value::StableValue;
use crate::Tensor;

/// The boxed argument stack every op is called through. It owns its values (see the module
/// docs); calls with up to 8 arguments and 8 results never touch the heap.
///
/// `'a` is how long the tensors pushed by reference live: `push(&x)` borrows `x`'s handle
/// instead of taking a reference count, so the stack may not outlive `x`. Values leave the stack
/// (`pop`, iteration) as owned values.
#[derive(Clone, Debug, Default)]
pub struct Stack<'a> {
    values: Slots,
    borrows: PhantomData<&'a Tensor>,
}

impl<'a> Stack<'a> {
    /// An empty stack (no allocation).
    #[inline]
    pub fn new() -> Stack<'a> {
        Stack {
            values: Slots::new(),
            borrows: PhantomData,
        }
    }

    /// Boxes and pushes one value; a `&Tensor` is borrowed for `'a`, not counted.
    #[inline]
    pub fn push<V: IntoStable + 'a>(&mut self, value: V) -> &mut Stack<'a> {
        self.make_room();
        // SAFETY: `V: 'a`, and the stack cannot outlive `'a`; borrowed values leave it only by
        // reference or converted to owned ones (`pop`, `take`, iteration).
        let value = unsafe { value.into_stable_for_call() };
        self.push_with_room(value);
        self
    }

    /// Pushes an already boxed value.
    #[inline]
    pub fn push_value(&mut self, value: StableValue) -> &mut Stack<'a> {
        self.make_room();
        self.push_with_room(value);
        self
    }

    /// Room for one more value. Growing first, before the value exists, lets it be built in its
    /// slot: `SmallVec::push` keeps it alive across the possible grow call, so it is stored to
    /// a temporary as two 8-byte halves and copied as one 16-byte load, which the CPU cannot
    /// forward from those stores (a stall of about 5 ns per push, measured on the dispatch
    /// bench).
    #[inline]
    fn make_room(&mut self) {
        if self.values.len() == self.values.capacity() {
            self.values.reserve(1);
        }
    }

    #[inline]
    fn push_with_room(&mut self, value: StableValue) {
        let len = self.values.len();
        debug_assert!(len < self.values.capacity());
        // SAFETY: `make_room` left capacity for slot `len`, which is past the initialised
        // values; writing it and then counting it keeps the vector's invariant.
        unsafe {
            self.values.as_mut_ptr().add(len).write(value);
            self.values.set_len(len + 1);
        }
    }

    /// Pops the top value, owned. [`pop_as`](Stack::pop_as) and `pop_tensor` read it as a Rust
    /// type.
    #[inline]
    pub fn pop(&mut self) -> Option<StableValue> {
        self.values.pop().map(StableValue::into_owned)
    }

    /// The number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the stack holds no value.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Value `index`, borrowed (from the bottom, 0); `None` past the end.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&StableValue> {
        self.values.get(index)
    }

    /// Every value, bottom first.
    pub fn as_slice(&self) -> &[StableValue] {
        &self.values
    }

    /// The values, for the dispatcher's in-place argument checks (`fixed_list`).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [StableValue] {
        &mut self.values
    }

    /// Releases every value.
    #[inline]
    pub fn clear(&mut self) {
        self.values.clear();
    }

    /// Releases the values past the first `len`.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
    }

    /// True once the stack has outgrown its inline slots and lives on the heap.
    pub fn spilled(&self) -> bool {
        self.values.spilled()
    }

    /// Appends `count` None slots for a kernel to write its outputs into, and returns the base
    /// pointer of the whole stack (arguments first).
    #[inline]
    pub(crate) fn reserve_outputs(&mut self, count: usize) -> *mut StableValue {
        let len = self.values.len();
        self.spare_nones(count);
        // SAFETY: `spare_nones` initialised the `count` slots past the top, within the capacity.
        unsafe { self.values.set_len(len + count) };
        // Taken after `set_len`, whose `&mut self` would invalidate a pointer taken before it.
        self.values.as_mut_ptr()
    }

    /// Sets the `count` slots past the top to None without counting them (the length is
    /// unchanged), growing first if they do not fit, and returns the base pointer of the whole
    /// buffer: room for a kernel's outputs that the stack does not own until
    /// [`replace_with_spare`](Self::replace_with_spare) says so.
    #[inline]
    pub(crate) fn spare_nones(&mut self, count: usize) -> *mut StableValue {
        let len = self.values.len();
        if self.values.capacity() - len < count {
            self.values.reserve(count);
        }
        let base = self.values.as_mut_ptr();
        // SAFETY: every slot written is below `len + count`, within the capacity just ensured,
        // and past the initialised values, so writing it overwrites nothing owned.
        unsafe {
            let top = base.add(len);
            // The usual one output and its guard as one store. A loop of unknown length becomes
            // a call to `memset`, and so do the short arms when the loop shares their function.
            match count {
                0 => {}
                1 => top.write(StableValue::none()),
                2 => top
                    .cast::<[StableValue; 2]>()
                    .write([StableValue::none(), StableValue::none()]),
                _ => write_nones(top, count),
            }
        }
        base
    }

    /// Forgets every value and keeps the `count` spare slots from `from` on (past the top, as
    /// [`spare_nones`](Self::spare_nones) lent them) as the stack's values instead.
    ///
    /// # Safety
    /// The stack's values must own nothing (plain values: dropping them is a no-op), and slots
    /// `from..from + count` must be spare slots, within the capacity and past the top, that hold
    /// initialised values the stack may own.
    #[inline]
    pub(crate) unsafe fn replace_with_spare(&mut self, from: usize, count: usize) {
        // SAFETY: per the contract, the slots read are initialised and within the capacity, and
        // the values overwritten own nothing; `from >= len >= i`, so moving slot by slot upward
        // never reads a slot already written. The length covers exactly the moved values.
        unsafe {
            let base = self.values.as_mut_ptr();
            // The usual single output without the loop's setup (as `spare_nones` writes it).
            if count == 1 {
                StableValue::move_by_halves(base.add(from), base);
            } else {
                for i in 0..count {
                    StableValue::move_by_halves(base.add(from + i), base.add(i));
                }
            }
            self.values.set_len(count);
        }
    }

    /// Releases every value and keeps the `count` spare slots past the top (as
    /// [`spare_nones`](Self::spare_nones) lent them) as the stack's values instead: a kernel's
    /// outputs, written past its arguments, taking the arguments' place.
    ///
    /// # Safety
    /// The `count` slots past the top must be spare slots, within the capacity, that hold
    /// initialised values the stack may own.
    #[inline]
    pub(crate) unsafe fn release_for_spare(&mut self, count: usize) {
        let len = self.values.len();
        // SAFETY: the `count` slots past the top are initialised and within the capacity (the
        // contract), so the stack may own them.
        unsafe { self.values.set_len(len + count) };
        self.release_front(len);
    }

    /// Moves value `index` out, leaving None (or None when out of range).
    #[inline]
    pub(crate) fn take(&mut self, index: usize) -> StableValue {
        self.values
            .get_mut(index)
            .map(std::mem::take)
            .unwrap_or_default()
            .into_owned()
    }

    /// Releases the first `count` values (the arguments), shifting the outputs down.
    #[inline]
    pub(crate) fn release_front(&mut self, count: usize) {
        let count = count.min(self.values.len());
        if count == 0 {
            return;
        }
        let len = self.values.len();
        // SAFETY: `count <= len`, so slots `0..count` are initialised values dropped once here,
        // and `count..len` are moved (not copied: the length is set to 0 first, so a panicking
        // drop leaks instead of dropping twice) to the front before the length covers them. The
        // pointer is taken after `set_len`, and nothing else touches the vector while it is used.
        unsafe {
            self.values.set_len(0);
            let base = self.values.as_mut_ptr();
            for i in 0..count {
                std::ptr::drop_in_place(base.add(i));
            }
            match len - count {
                0 => {}
                // The usual single output: one move, not a memmove call.
                1 => StableValue::move_by_halves(base.add(count), base),
                rest => std::ptr::copy(base.add(count), base, rest),
            }
            self.values.set_len(len - count);
        }
    }
}

impl std::ops::Index<usize> for Stack<'_> {
    type Output = StableValue;
    fn index(&self, index: usize) -> &StableValue {
        &self.values[index]
    }
}

impl FromIterator<StableValue> for Stack<'_> {
    fn from_iter<I: IntoIterator<Item = StableValue>>(iter: I) -> Self {
        Stack {
            values: iter.into_iter().collect(),
            borrows: PhantomData,
        }
    }
}

impl IntoIterator for Stack<'_> {
    type Item = StableValue;
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter::new(self.values)
    }
}

/// Writes `count` Nones from `top` (spare slots past a stack's values).
///
/// # Safety
/// `top..top + count` lies within one allocation's capacity and holds nothing owned.
#[inline(never)]
unsafe fn write_nones(top: *mut StableValue, count: usize) {
    for i in 0..count {
        // SAFETY: per the contract.
        unsafe { top.add(i).write(StableValue::none()) };
    }
}
