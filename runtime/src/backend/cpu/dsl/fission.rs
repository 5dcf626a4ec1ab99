//! Barriers without coroutines: the macro splits a kernel body at its `sync_threads()` and warp
//! exchanges (MCUDA's loop fission), and runs each piece for every thread of the block before
//! the next piece starts. A local that lives across a split is kept per thread ([`store`] and an
//! index by thread); a loop or `if` that holds a split runs once for the block, its condition
//! evaluated by every thread and required to agree ([`ThreadCtx::uniform`]). So a block costs
//! one pass over its threads per piece, where coroutines cost two stack switches per thread per
//! barrier. Bodies the split does not cover (a warp exchange inside an expression, a `break` out
//! of a loop that holds a barrier) keep the coroutines of [`super::coop`].

use std::marker::PhantomData;

use smallvec::SmallVec;

use super::coop::DivergentBarrier;
use super::grid::{Published, ThreadCtx};
use super::ops::{Arith, Num};
use super::warp::{Combine, WarpExchange, WarpOp, WarpValue, WARP_SIZE};

/// Threads a block's per-thread storage holds inline: the CPU build's blocks are often one warp,
/// and many short blocks on many workers would otherwise contend in the allocator.
const INLINE_THREADS: usize = 32;

/// A local kept across a split, one slot a thread of the block.
pub type Slots<T> = SmallVec<[T; INLINE_THREADS]>;

/// Which threads of the block have returned.
pub fn done_flags(threads: usize) -> Slots<bool> {
    smallvec::smallvec![false; threads]
}

/// Writes thread `t`'s value of a local kept across a split (the slots are made at the first
/// write).
#[inline(always)]
pub fn store<T: Clone>(slots: &mut Slots<T>, threads: usize, t: usize, v: T) {
    if slots.is_empty() {
        slots.resize(threads, v.clone());
    }
    slots[t] = v;
}

/// A warp exchange's deposits and results, one slot a thread of the block.
pub struct WarpLanes<R> {
    deposits: Slots<Option<(WarpOp, u64)>>,
    results: Slots<u64>,
    _result: PhantomData<R>,
}

/// One thread's side of a warp exchange, before the exchange: what it asks for and its value.
pub struct Deferred<R> {
    op: WarpOp,
    bits: u64,
    _result: PhantomData<R>,
}

/// What a warp exchange gives a lane back.
pub trait LaneResult: Copy {
    #[doc(hidden)]
    fn from_lane_bits(bits: u64) -> Self;
}

impl<T: WarpValue> LaneResult for T {
    fn from_lane_bits(bits: u64) -> T {
        T::from_bits64(bits)
    }
}

/// A vote's answer.
#[derive(Clone, Copy)]
pub struct Vote(bool);

impl LaneResult for Vote {
    fn from_lane_bits(bits: u64) -> Vote {
        Vote(bits != 0)
    }
}

impl<R: LaneResult> WarpLanes<R> {
    /// Slots for a block of `threads`.
    pub fn new(threads: usize) -> WarpLanes<R> {
        WarpLanes {
            deposits: smallvec::smallvec![None; threads],
            results: smallvec::smallvec![0; threads],
            _result: PhantomData,
        }
    }

    /// Thread `t`'s deposit.
    #[inline(always)]
    pub fn put(&mut self, t: usize, d: Deferred<R>) {
        self.deposits[t] = Some((d.op, d.bits));
    }

    /// Thread `t`'s result, after [`ThreadCtx::exchange_warps`].
    #[inline(always)]
    pub fn get(&self, t: usize) -> R {
        R::from_lane_bits(self.results[t])
    }
}

impl WarpLanes<Vote> {
    /// Thread `t`'s vote, as the `bool` that `any`/`all` return.
    #[inline(always)]
    pub fn vote(&self, t: usize) -> bool {
        self.get(t).0
    }
}

fn deferred<R>(op: WarpOp, bits: u64) -> Deferred<R> {
    Deferred {
        op,
        bits,
        _result: PhantomData,
    }
}

/// Each thread's half of the warp fns (`defer_<name>`, the DSL's warp table): the exchange
/// itself runs for the whole block between two pieces of the body.
impl ThreadCtx {
    /// This lane's half of `shfl_down(v, delta)`.
    #[inline(always)]
    pub fn defer_shfl_down<T: WarpValue>(&self, v: T, delta: u32) -> Deferred<T> {
        deferred(WarpOp::Down(delta), v.to_bits64())
    }

    /// This lane's half of `shfl_xor(v, mask)`.
    #[inline(always)]
    pub fn defer_shfl_xor<T: WarpValue>(&self, v: T, mask: u32) -> Deferred<T> {
        deferred(WarpOp::Xor(mask), v.to_bits64())
    }

    /// This lane's half of `shfl_idx(v, lane)`.
    #[inline(always)]
    pub fn defer_shfl_idx<T: WarpValue>(&self, v: T, lane: u32) -> Deferred<T> {
        deferred(WarpOp::Idx(lane), v.to_bits64())
    }

    /// This lane's half of `ballot(p)`.
    #[inline(always)]
    pub fn defer_ballot(&self, p: bool) -> Deferred<u32> {
        deferred(WarpOp::Ballot, u64::from(p))
    }

    /// This lane's half of `any(p)`.
    #[inline(always)]
    pub fn defer_any(&self, p: bool) -> Deferred<Vote> {
        deferred(WarpOp::Any, u64::from(p))
    }

    /// This lane's half of `all(p)`.
    #[inline(always)]
    pub fn defer_all(&self, p: bool) -> Deferred<Vote> {
        deferred(WarpOp::All, u64::from(p))
    }

    /// This lane's half of `warp_reduce_sum(v)`.
    #[inline(always)]
    pub fn defer_warp_reduce_sum<T: WarpValue + Arith>(&self, v: T) -> Deferred<T> {
        deferred(WarpOp::Butterfly(Combine::sum::<T>()), v.to_bits64())
    }

    /// This lane's half of `warp_reduce_max(v)`.
    #[inline(always)]
    pub fn defer_warp_reduce_max<T: WarpValue + Num>(&self, v: T) -> Deferred<T> {
        deferred(WarpOp::Butterfly(Combine::max::<T>()), v.to_bits64())
    }
}

/// The block's side: its threads, each thread's context, the checks at a split.
impl ThreadCtx {
    /// Threads in the block.
    #[inline(always)]
    pub fn block_threads(&self) -> usize {
        let [x, y, z] = self.block_dim;
        x as usize * y as usize * z as usize
    }

    /// Thread `t`'s (linear index, `x` fastest) context; `publish` also makes it the one
    /// `#[device]` fns read.
    #[inline(always)]
    pub fn thread_at(&self, t: usize, publish: bool) -> ThreadCtx {
        let [bx, by, bz] = self.block_dim;
        let t = t as u32;
        // 1-D blocks, the common case, skip the divisions: each piece of the body asks for every
        // thread's context, and a division per thread per piece showed in the profile.
        let thread = if by == 1 && bz == 1 {
            [t, 0, 0]
        } else {
            [t % bx, (t / bx) % by, t / (bx * by)]
        };
        let ctx = self.with_thread(thread);
        if publish {
            ctx.publish();
        }
        ctx
    }

    /// Resets the thread-local context when the block ends, if the body published it.
    pub fn publishing(&self, publish: bool) -> Option<impl Drop> {
        publish.then_some(Published)
    }

    /// Barrier `site`: every thread must reach it, or none (all returned); otherwise the
    /// launch ends, as the coroutines' check does.
    pub fn barrier(&self, site: u32, done: &[bool]) {
        let (Some(waiting), Some(left)) =
            (done.iter().position(|d| !d), done.iter().position(|d| *d))
        else {
            return;
        };
        let count = done.iter().filter(|d| !**d).count();
        self.stop(format!("thread {waiting} waits at sync_threads() #{site}, but thread {left} returned without reaching it ({count} of {} threads wait)", done.len()));
    }

    /// Folds thread `t`'s value of a condition that decides whether the block runs a barrier
    /// into `agreed`: every thread must see the same value.
    #[inline(always)]
    pub fn uniform(&self, agreed: &mut Option<(usize, bool)>, t: usize, value: bool, site: u32) {
        match *agreed {
            None => *agreed = Some((t, value)),
            Some((first, v)) if v != value => self.stop(format!("thread {first} and thread {t} disagree on a condition that decides whether they reach sync_threads() #{site}")),
            Some(_) => {}
        }
    }

    /// Runs a warp exchange for every warp of the block: each lane that deposited gets its
    /// result; a lane that returned gives its readers their own value, as in the coroutines.
    pub fn exchange_warps<R>(&self, lanes: &mut WarpLanes<R>) {
        let threads = lanes.deposits.len();
        let mut warp = WarpExchange::default();
        for start in (0..threads).step_by(WARP_SIZE as usize) {
            let end = (start + WARP_SIZE as usize).min(threads);
            for t in start..end {
                if let Some((op, bits)) = lanes.deposits[t].take() {
                    warp.deposit(t - start, op, bits);
                }
            }
            if let Err(e) = warp.complete() {
                self.stop(format!("in warp {}, {e}", start / WARP_SIZE as usize));
            }
            for t in start..end {
                lanes.results[t] = warp.result(t - start);
            }
        }
    }

    fn stop(&self, message: String) -> ! {
        std::panic::resume_unwind(Box::new(DivergentBarrier {
            block: self.block_ids(),
            message,
        }))
    }
}
