//! The split thread loop of a barrier-free body (the macro's `kernel/ranged.rs`): for the threads
//! of a block whose every buffer index the macro could write as `i + k` (`i` the global x id,
//! `k` made of params and literals), the range in which all of them are inside their buffers and
//! the body's `i < n`-style guards hold, computed once per block. Those threads run the body
//! built with its indices unchecked and its guards dropped, a loop the optimizer vectorizes; the
//! block's other threads run the ordinary checked body. The threads still run in order, so a
//! launch's results and its first out-of-bounds error are the same as without the split.

use std::ops::Range;

use super::grid::{Published, ThreadCtx};
pub use crate::kernel::view::Proven;

/// The exact value of a `u32` a guard or an index offset is made of (the macro admits only
/// `u32` params, literals and buffer lengths), as an `i128`, in which their sums and
/// differences cannot wrap.
#[inline(always)]
pub fn exact(v: u32) -> i128 {
    i128::from(v)
}

/// Threads `lo..hi` of a block (x index) narrowed by each constraint; `base + t` is the global x
/// id of thread `t`, exactly (the DSL's `global_id_x()` wraps past `u32::MAX`; no thread whose id
/// wraps is admitted, so in the range the id is `base + t`).
#[derive(Clone, Copy, Debug)]
pub struct FastThreads {
    base: i128,
    lo: i128,
    hi: i128,
}

impl FastThreads {
    /// The block's threads whose global x id does not wrap.
    #[inline(always)]
    pub fn of(block: &ThreadCtx) -> FastThreads {
        FastThreads::new(block.block_ids()[0], block.block_dim[0])
    }

    /// Block `block_x` of `dim` threads (x).
    #[inline(always)]
    fn new(block_x: u32, dim: u32) -> FastThreads {
        let dim = i128::from(dim);
        let base = i128::from(block_x) * dim;
        FastThreads {
            base,
            lo: 0,
            hi: dim.min((1i128 << 32) - base),
        }
    }

    /// Keeps the threads for which `id + offset` indexes a buffer of `len` elements.
    #[inline(always)]
    pub fn index(self, offset: i128, len: u32) -> FastThreads {
        FastThreads {
            lo: self.lo.max(-self.base - offset),
            hi: self.hi.min(i128::from(len) - self.base - offset),
            ..self
        }
    }

    /// Keeps the threads whose id is below `bound`.
    #[inline(always)]
    pub fn below(self, bound: i128) -> FastThreads {
        FastThreads {
            hi: self.hi.min(bound - self.base),
            ..self
        }
    }

    /// Keeps the threads whose id is at least `bound`.
    #[inline(always)]
    pub fn at_least(self, bound: i128) -> FastThreads {
        FastThreads {
            lo: self.lo.max(bound - self.base),
            ..self
        }
    }

    /// The admitted threads, empty when none is.
    #[inline(always)]
    fn threads(self) -> Range<u32> {
        if self.lo >= self.hi {
            return 0..0;
        }
        // `0 <= lo < hi <= block_dim.x`: both fit.
        (self.lo as u32)..(self.hi as u32)
    }
}

impl ThreadCtx {
    /// [`ThreadCtx::each_thread`], with the threads of `fast` (x index, in every row of the
    /// block) run by `fast_body` and the others by `body`, all in the usual order.
    ///
    /// # Safety
    /// `fast_body` is sound for every thread `fast` admits (the macro's proof: each index it
    /// leaves unchecked is inside its buffer there).
    #[inline(always)]
    pub unsafe fn each_thread_split(
        &self,
        publish: bool,
        fast: FastThreads,
        mut fast_body: impl FnMut(&ThreadCtx),
        mut body: impl FnMut(&ThreadCtx),
    ) {
        let _reset = publish.then_some(Published);
        // A macro, not a closure, as in `each_thread`: LLVM kept a closure out of line.
        macro_rules! run {
            ($body:ident, $thread:expr) => {{
                let ctx = self.with_thread($thread);
                if publish {
                    ctx.publish();
                }
                $body(&ctx);
            }};
        }
        let fast = fast.threads();
        let [bx, by, bz] = self.block_dim;
        for tz in 0..bz {
            for ty in 0..by {
                for tx in 0..fast.start {
                    run!(body, [tx, ty, tz]);
                }
                for tx in fast.clone() {
                    run!(fast_body, [tx, ty, tz]);
                }
                for tx in fast.end..bx {
                    run!(body, [tx, ty, tz]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FastThreads;

    #[test]
    fn narrowing() {
        // Block 2 of 100 threads: ids 200..300.
        let t = FastThreads::new(2, 100);
        assert_eq!(t.threads(), 0..100);
        assert_eq!(t.index(0, 250).threads(), 0..50);
        assert_eq!(t.index(-201, 1000).threads(), 1..100);
        assert_eq!(t.index(5, 300).threads(), 0..95);
        assert_eq!(t.below(260).at_least(210).threads(), 10..60);
        // Nothing admitted: an empty range, never an inverted one.
        assert_eq!(t.index(0, 150).threads(), 0..0);
        assert_eq!(t.below(300).at_least(400).threads(), 0..0);
        assert_eq!(t.index(-1000, 10).threads(), 0..0);
    }

    #[test]
    fn ids_that_wrap_are_not_admitted() {
        // Ids from 2^32 - 512 on: the last 256 of the block's 768 wrap.
        let t = FastThreads::new(((1u64 << 32) / 768) as u32, 768);
        let base = ((1u64 << 32) / 768) * 768;
        let wrap = ((1u64 << 32) - base) as u32;
        assert_eq!(t.threads(), 0..wrap);
        assert_eq!(t.index(0, u32::MAX).threads(), 0..wrap - 1);
        // A block entirely past 2^32.
        assert_eq!(FastThreads::new(u32::MAX, 2).threads(), 0..0);
    }
}
