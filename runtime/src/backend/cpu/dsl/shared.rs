//! A block's shared memory in the CPU build: `shared::<T, N>()` in a kernel body is one region
//! per call site, made (zeroed) the first time a thread of the block reaches it, and the same
//! region for every other thread of the block, as CUDA's `__shared__` arrays are. A block's
//! threads run on one OS thread (in order, or as coroutines switching at barriers), so the
//! regions need no locking.

use std::cell::RefCell;

use crate::kernel::view::RawSlice;

/// Launch-argument indices from here up name shared arrays, not buffers, in out-of-bounds
/// reports: `SHARED_ARG + site`.
pub(crate) const SHARED_ARG: u32 = u32::MAX / 2;

/// One call site's array: 16-byte aligned storage (any DSL element fits) and its length.
type Region = (Box<[u128]>, usize);

/// The regions of one block, by call site, and its dynamic shared memory.
#[derive(Default)]
pub struct BlockMemory {
    regions: RefCell<Vec<Option<Region>>>,
    /// The launch's `shared_mem_bytes`, made (zeroed) when the block first asks for it.
    dynamic_bytes: u32,
    dynamic: RefCell<Option<Box<[u128]>>>,
}

/// Launch-argument index of the dynamic shared memory in out-of-bounds reports.
pub(crate) const DYNAMIC_SHARED_ARG: u32 = u32::MAX - 1;

/// Why a shared array could not be made: its size overflows the address space.
#[derive(Debug)]
pub(crate) struct SharedTooLarge {
    pub site: usize,
    pub bytes: u128,
}

impl BlockMemory {
    /// A block's memory for a launch with `dynamic_bytes` of dynamic shared memory.
    pub(crate) fn with_dynamic(dynamic_bytes: u32) -> BlockMemory {
        BlockMemory {
            dynamic_bytes,
            ..BlockMemory::default()
        }
    }

    /// The dynamic region as `elem_size`-byte elements: one region that every
    /// `shared_dyn::<T>()` of the block views, as CUDA's `extern __shared__` arrays alias.
    pub(crate) fn dynamic(&self, elem_size: usize) -> RawSlice {
        let mut region = self.dynamic.borrow_mut();
        let bytes = self.dynamic_bytes as usize;
        let storage =
            region.get_or_insert_with(|| vec![0u128; bytes.div_ceil(16)].into_boxed_slice());
        RawSlice {
            addr: storage.as_ptr() as usize,
            len: (bytes / elem_size.max(1)) as u32,
            arg: DYNAMIC_SHARED_ARG,
        }
    }

    /// Site `site`'s region of `len` elements of `elem_size` bytes, made on first use.
    pub(crate) fn region(&self, site: usize, len: usize, elem_size: usize) -> RawSlice {
        let mut regions = self.regions.borrow_mut();
        if regions.len() <= site {
            regions.resize_with(site + 1, || None);
        }
        let slot = &mut regions[site];
        let (storage, n) = slot.get_or_insert_with(|| {
            let bytes = len
                .checked_mul(elem_size)
                .filter(|b| *b <= u32::MAX as usize);
            let Some(bytes) = bytes else {
                std::panic::resume_unwind(Box::new(SharedTooLarge {
                    site,
                    bytes: len as u128 * elem_size as u128,
                }))
            };
            (vec![0u128; bytes.div_ceil(16)].into_boxed_slice(), len)
        });
        RawSlice {
            addr: storage.as_ptr() as usize,
            // At most u32::MAX bytes, so the element count fits too.
            len: *n as u32,
            arg: SHARED_ARG + site as u32,
        }
    }
}
