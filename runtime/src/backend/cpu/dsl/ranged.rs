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

/// The exact value of an integer a guard or an index offset is made of.
pub trait Exact: Copy {
    /// The value as an `i128`, which holds every one.
    fn exact(self) -> i128;
}

macro_rules! exact {
    ($($t:ty),*) => {$(
        impl Exact for $t {
            #[inline(always)]
            fn exact(self) -> i128 {
                self as i128
            }
        }
    )*};
}
exact!(u32, i32, u64, i64, usize);

/// `v`'s exact value.
#[inline(always)]
pub fn exact<T: Exact>(v: T) -> i128 {
    v.exact()
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
        let dim = i128::from(block.block_dim[0]);
        let base = i128::from(block.block_ids()[0]) * dim;
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
