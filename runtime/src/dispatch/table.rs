//! The registry's table of ops: filled once, to a length known up front, then leaked as a
//! `&'static` slice so that handles are plain references.
//!
//! A library of thousands of ops makes a table of megabytes (200 bytes an op), every page
//! of it fresh. Taking those pages 4 KiB at a time was a third of building the registry at
//! 10,000 ops, so a large table is a huge-page mapping instead.

#[cfg(all(target_os = "linux", not(miri)))]
use std::ptr::NonNull;

#[cfg(all(target_os = "linux", not(miri)))]
use crate::huge_pages::{self, HUGE_PAGE};

/// Tables from this size up are mapped: one huge page then costs less to fault in than the
/// base pages it replaces, even half empty.
#[cfg(all(target_os = "linux", not(miri)))]
const MAP_FROM: usize = HUGE_PAGE / 2;

pub(crate) struct Table<T: 'static> {
    memory: Memory<T>,
}

enum Memory<T> {
    Heap(Vec<T>),
    /// `len` initialised values at `base`, room for `cap`, in a mapping of `bytes`.
    #[cfg(all(target_os = "linux", not(miri)))]
    Mapped {
        base: NonNull<T>,
        len: usize,
        cap: usize,
        bytes: usize,
    },
}

impl<T: 'static> Table<T> {
    pub(crate) fn with_capacity(cap: usize) -> Table<T> {
        #[cfg(all(target_os = "linux", not(miri)))]
        if let Some(bytes) = cap.checked_mul(std::mem::size_of::<T>()) {
            let align_fits = std::mem::align_of::<T>() <= HUGE_PAGE;
            if bytes >= MAP_FROM && align_fits {
                if let Some((base, bytes)) = huge_pages::map(bytes) {
                    return Table {
                        memory: Memory::Mapped {
                            base: base.cast(),
                            len: 0,
                            cap,
                            bytes,
                        },
                    };
                }
            }
        }
        Table {
            memory: Memory::Heap(Vec::with_capacity(cap)),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn push(&mut self, value: T) {
        match &mut self.memory {
            Memory::Heap(vec) => vec.push(value),
            #[cfg(all(target_os = "linux", not(miri)))]
            Memory::Mapped { base, len, cap, .. } => {
                if *len < *cap {
                    // SAFETY: slot `len` is inside the mapping (`len < cap`, and the mapping
                    // holds `cap` values), aligned (the mapping is page-aligned, and `T`'s
                    // alignment divides a huge page), and not initialised yet.
                    unsafe { base.as_ptr().add(*len).write(value) };
                    *len += 1;
                } else {
                    // More values than the capacity asked for: carry on in a Vec.
                    let mut vec = self.take_vec();
                    vec.push(value);
                    self.memory = Memory::Heap(vec);
                }
            }
        }
    }

    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.as_slice().get(index)
    }

    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.as_mut_slice().get_mut(index)
    }

    fn as_slice(&self) -> &[T] {
        match &self.memory {
            Memory::Heap(vec) => vec,
            // SAFETY: the first `len` values at `base` are initialised, and `&self` keeps them
            // from being written for the borrow.
            #[cfg(all(target_os = "linux", not(miri)))]
            Memory::Mapped { base, len, .. } => unsafe {
                std::slice::from_raw_parts(base.as_ptr(), *len)
            },
        }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.memory {
            Memory::Heap(vec) => vec,
            // SAFETY: as in `as_slice`, with `&mut self` making the borrow unique.
            #[cfg(all(target_os = "linux", not(miri)))]
            Memory::Mapped { base, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(base.as_ptr(), *len)
            },
        }
    }

    /// The values for the rest of the process.
    pub(crate) fn leak(mut self) -> &'static [T] {
        match std::mem::replace(&mut self.memory, Memory::Heap(Vec::new())) {
            Memory::Heap(vec) => vec.leak(),
            // SAFETY: the mapping is never unmapped (only `self`'s drop would, and `self` no
            // longer holds it), so the `len` initialised values at `base` live, unaliased by
            // any writer, for good.
            #[cfg(all(target_os = "linux", not(miri)))]
            Memory::Mapped { base, len, .. } => unsafe {
                std::slice::from_raw_parts(base.as_ptr(), len)
            },
        }
    }

    /// The values moved into a Vec, leaving the table empty; the mapping, if any, is unmapped.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn take_vec(&mut self) -> Vec<T> {
        match std::mem::replace(&mut self.memory, Memory::Heap(Vec::new())) {
            Memory::Heap(vec) => vec,
            #[cfg(all(target_os = "linux", not(miri)))]
            Memory::Mapped {
                base,
                len,
                cap,
                bytes,
            } => {
                let mut vec = Vec::with_capacity(cap.max(len) * 2);
                for i in 0..len {
                    // SAFETY: value `i` is initialised and read once: the mapping is unmapped
                    // below without dropping anything.
                    vec.push(unsafe { base.as_ptr().add(i).read() });
                }
                // SAFETY: `base..base + bytes` is the mapping `with_capacity` made; its values
                // were all moved out above, and nothing refers to it any more.
                unsafe { huge_pages::unmap(base.cast(), bytes) };
                vec
            }
        }
    }
}

impl<T: 'static> Drop for Table<T> {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(miri)))]
        if let Memory::Mapped { base, bytes, .. } = self.memory {
            // SAFETY: the values are initialised and dropped once, here, before their memory
            // goes; `base..base + bytes` is the mapping `with_capacity` made, used by nothing
            // after this.
            unsafe {
                std::ptr::drop_in_place(self.as_mut_slice());
                huge_pages::unmap(base.cast(), bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capacity on the heap, and (outside miri, which never maps) one large enough to be
    /// mapped.
    fn capacities(large: usize) -> Vec<usize> {
        if cfg!(miri) {
            vec![3]
        } else {
            vec![3, large]
        }
    }

    fn filled(n: usize, cap: usize) -> Table<String> {
        let mut table = Table::with_capacity(cap);
        for i in 0..n {
            table.push(i.to_string());
        }
        table
    }

    #[test]
    fn a_table_keeps_its_values_in_order_and_leaks_them() {
        for cap in capacities(200_000) {
            let mut table = filled(3, cap);
            assert_eq!(table.len(), 3);
            if let Some(v) = table.get_mut(1) {
                v.push('!');
            }
            assert_eq!(table.get(1).map(String::as_str), Some("1!"));
            assert_eq!(table.get(3), None);
            let leaked: &'static [String] = table.leak();
            assert_eq!(leaked, ["0", "1!", "2"]);
        }
    }

    #[test]
    fn pushing_past_the_capacity_keeps_every_value() {
        for cap in capacities(100_000) {
            let mut table = filled(cap + 2, cap);
            assert_eq!(table.len(), cap + 2);
            assert_eq!(
                table.get(cap + 1).map(String::as_str),
                Some((cap + 1).to_string().as_str())
            );
            assert_eq!(table.get_mut(0).map(|s| s.as_str()), Some("0"));
        }
    }

    #[test]
    fn a_dropped_table_drops_its_values() {
        use std::rc::Rc;
        let counted = Rc::new(());
        for cap in capacities(300_000) {
            let mut table = Table::with_capacity(cap);
            for _ in 0..4 {
                table.push(Rc::clone(&counted));
            }
            assert_eq!(Rc::strong_count(&counted), 5);
            drop(table);
            assert_eq!(Rc::strong_count(&counted), 1);
        }
    }
}
