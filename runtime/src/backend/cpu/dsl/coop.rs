//! Barriers in the CPU build, for the bodies the split at barriers ([`super::fission`]) does not
//! cover (a warp exchange inside an expression, a `loop` around a barrier): each block's threads
//! run as stackful coroutines (`corosensei`) on its worker. A thread that reaches a barrier
//! suspends; when every thread of the block waits at the same barrier, all resume. So a kernel
//! that is correct on CUDA is correct here, and kernels without barriers keep the plain loop
//! ([`ThreadCtx::each_thread`]).
//!
//! A block whose threads do not all reach the same barrier (some returned, or wait at another
//! one) is CUDA's undefined behaviour; here it ends the launch with an error naming the barrier.

use std::cell::RefCell;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::grid::{Published, ThreadCtx};
use super::ops::{Arith, Num};
use super::warp::{Combine, WarpExchange, WarpOp, WarpValue, WARP_SIZE};

/// What a thread's context points at while it runs as a coroutine.
pub(crate) struct Coop {
    yielder: *const Yielder<(), u32>,
    /// Whether the kernel's `#[device]` fns read the thread-local context, which another
    /// thread's turn overwrites: written again after each barrier.
    publish: bool,
    /// The block's warps' exchanges, by warp.
    warps: *const RefCell<Vec<WarpExchange>>,
}

/// What a suspended thread yields: a barrier's number, or this for a warp operation.
const AT_WARP_OP: u32 = u32::MAX;

/// Where a thread of a cooperative block is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Runnable,
    Barrier(u32),
    WarpOp,
    Done,
}

/// Why a block stopped: its threads disagreed at a barrier.
#[derive(Debug)]
pub(crate) struct DivergentBarrier {
    pub block: [u32; 3],
    pub message: String,
}

/// Stack size of a thread's coroutine: DSL bodies are small and never recurse; debug builds
/// need the most.
const STACK_BYTES: usize = 32 << 10;

thread_local! {
    /// Stacks of finished coroutines, reused by the next block on this worker.
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// `count` stacks: the pool's, then new ones.
fn take_stacks(count: usize) -> Vec<DefaultStack> {
    let mut stacks = STACKS.with(|s| {
        let mut pool = s.borrow_mut();
        let keep = pool.len().saturating_sub(count);
        pool.split_off(keep)
    });
    while stacks.len() < count {
        match DefaultStack::new(STACK_BYTES) {
            Ok(stack) => stacks.push(stack),
            Err(e) => std::panic::resume_unwind(Box::new(format!(
                "a coroutine stack for a block thread could not be allocated: {e}"
            ))),
        }
    }
    stacks
}

type Thread = Coroutine<(), u32, (), DefaultStack>;

impl ThreadCtx {
    /// Suspends this thread at barrier `site` until every thread of its block is there.
    /// Outside a cooperative block (never in generated code) it returns at once.
    #[inline]
    pub fn sync_threads(&self, site: u32) {
        let Some(coop) = self.coop() else {
            return;
        };
        // SAFETY: `coop` and its yielder live for the coroutine's whole run, which this call is
        // part of (`each_thread_coop` makes both before resuming it).
        unsafe { &*coop.yielder }.suspend(site);
        if coop.publish {
            self.publish();
        }
    }

    /// Runs the block's threads as coroutines (see the module docs), `x` fastest in each round.
    pub fn each_thread_coop(&self, publish: bool, body: impl Fn(&ThreadCtx)) {
        let [bx, by, bz] = self.block_dim;
        let count = bx as usize * by as usize * bz as usize;
        let _reset = publish.then_some(Published);
        // Raw pointers, so each thread's closure is 'static (as corosensei requires) and
        // allocates nothing: what they point at outlives every coroutine, each of which is
        // finished or dropped (unwinding its stack) before this function returns or unwinds.
        let body: *const (dyn Fn(&ThreadCtx) + '_) = &body;
        // SAFETY: only the lifetime changes (the layout of a fat pointer does not depend on it);
        // the pointee outlives the coroutines, as above.
        let body: *const (dyn Fn(&ThreadCtx) + 'static) = unsafe { std::mem::transmute(body) };
        let warps = RefCell::new(vec![
            WarpExchange::default();
            count.div_ceil(WARP_SIZE as usize)
        ]);
        let warps_ptr: *const RefCell<Vec<WarpExchange>> = &warps;
        let mut threads: Vec<Thread> = Vec::with_capacity(count);
        let mut stacks = take_stacks(count);
        for t in 0..count as u32 {
            let thread = [t % bx, (t / bx) % by, t / (bx * by)];
            let base = *self;
            let run = move |yielder: &Yielder<(), u32>, ()| {
                let coop = Coop {
                    yielder: yielder as *const _,
                    publish,
                    warps: warps_ptr,
                };
                let ctx = base.for_thread(thread, &coop);
                if publish {
                    ctx.publish();
                }
                // SAFETY: `body` outlives this coroutine (see above).
                unsafe { (*body)(&ctx) };
            };
            let Some(stack) = stacks.pop() else {
                break;
            };
            threads.push(Coroutine::with_stack(stack, run));
        }
        let mut state = vec![State::Runnable; count];
        loop {
            for (i, thread) in threads.iter_mut().enumerate() {
                if state[i] != State::Runnable {
                    continue;
                }
                state[i] = match thread.resume(()) {
                    CoroutineResult::Yield(AT_WARP_OP) => State::WarpOp,
                    CoroutineResult::Yield(site) => State::Barrier(site),
                    CoroutineResult::Return(()) => State::Done,
                };
            }
            if let Some(problem) = self.release(&mut state, &warps) {
                drop(threads);
                self.diverged(problem);
            }
            if state.iter().all(|s| *s == State::Done) {
                break;
            }
        }
        STACKS.with(|s| {
            let mut pool = s.borrow_mut();
            for thread in threads {
                pool.push(thread.into_stack());
            }
        });
    }

    /// Lets the threads that can go on go on: a warp whose live lanes all wait at a warp
    /// operation gets its results; else a barrier that every thread waits at opens. Returns
    /// why the block cannot go on, if it cannot.
    fn release(&self, state: &mut [State], warps: &RefCell<Vec<WarpExchange>>) -> Option<String> {
        let mut progressed = false;
        for (w, exchange) in warps.borrow_mut().iter_mut().enumerate() {
            let lanes = w * WARP_SIZE as usize..((w + 1) * WARP_SIZE as usize).min(state.len());
            let waiting = state[lanes.clone()]
                .iter()
                .filter(|s| **s == State::WarpOp)
                .count();
            let live = state[lanes.clone()]
                .iter()
                .filter(|s| **s != State::Done)
                .count();
            if waiting == 0 || waiting != live {
                continue;
            }
            if let Err(e) = exchange.complete() {
                return Some(format!("in warp {w}, {e}"));
            }
            for s in &mut state[lanes] {
                if *s == State::WarpOp {
                    *s = State::Runnable;
                }
            }
            progressed = true;
        }
        if progressed {
            return None;
        }
        let first = state.iter().position(|s| *s != State::Done)?;
        match state[first] {
            State::Barrier(site) => {
                if let Some(other) = state.iter().position(|s| *s != State::Barrier(site)) {
                    let what = match state[other] {
                        State::Done => "returned without reaching it".to_string(),
                        State::Barrier(o) => format!("waits at sync_threads() #{o}"),
                        _ => "waits at a warp operation".to_string(),
                    };
                    let waiting = state.iter().filter(|s| **s == State::Barrier(site)).count();
                    return Some(format!("thread {first} waits at sync_threads() #{site}, but thread {other} {what} ({waiting} of {} threads wait)", state.len()));
                }
                for s in state.iter_mut() {
                    *s = State::Runnable;
                }
                None
            }
            State::WarpOp | State::Runnable | State::Done => {
                let stuck = state
                    .iter()
                    .position(|s| *s == State::WarpOp)
                    .unwrap_or(first);
                Some(format!("thread {stuck} waits at a warp operation that lanes of its warp do not reach (they wait at a barrier)"))
            }
        }
    }

    /// Deposits this lane's part of a warp operation, waits for its warp, and returns its
    /// result. Outside a cooperative block (never in generated code) the lane is alone.
    fn exchange(&self, op: WarpOp, bits: u64) -> u64 {
        let Some(coop) = self.coop() else {
            return bits;
        };
        let linear = self.linear_thread() as usize;
        let (warp, lane) = (linear / WARP_SIZE as usize, linear % WARP_SIZE as usize);
        // SAFETY: the exchanges live for the block's run (`each_thread_coop`), as this
        // coroutine does; borrows of them never span a suspension.
        let warps = unsafe { &*coop.warps };
        warps.borrow_mut()[warp].deposit(lane, op, bits);
        // SAFETY: as in `sync_threads`.
        unsafe { &*coop.yielder }.suspend(AT_WARP_OP);
        if coop.publish {
            self.publish();
        }
        let result = warps.borrow()[warp].result(lane);
        result
    }

    /// `__shfl_down_sync(full, v, delta)`.
    #[inline]
    pub fn shfl_down<T: WarpValue>(&self, v: T, delta: u32) -> T {
        T::from_bits64(self.exchange(WarpOp::Down(delta), v.to_bits64()))
    }

    /// `__shfl_xor_sync(full, v, mask)`.
    #[inline]
    pub fn shfl_xor<T: WarpValue>(&self, v: T, mask: u32) -> T {
        T::from_bits64(self.exchange(WarpOp::Xor(mask), v.to_bits64()))
    }

    /// `__shfl_sync(full, v, lane)`.
    #[inline]
    pub fn shfl_idx<T: WarpValue>(&self, v: T, lane: u32) -> T {
        T::from_bits64(self.exchange(WarpOp::Idx(lane), v.to_bits64()))
    }

    /// `__ballot_sync(full, p)`: bit `l` is lane `l`'s predicate.
    #[inline]
    pub fn ballot(&self, p: bool) -> u32 {
        self.exchange(WarpOp::Ballot, u64::from(p)) as u32
    }

    /// `__any_sync(full, p)`.
    #[inline]
    pub fn any(&self, p: bool) -> bool {
        self.exchange(WarpOp::Any, u64::from(p)) != 0
    }

    /// `__all_sync(full, p)`.
    #[inline]
    pub fn all(&self, p: bool) -> bool {
        self.exchange(WarpOp::All, u64::from(p)) != 0
    }

    /// This thread's lane in its warp.
    #[inline]
    pub fn lane_id(&self) -> u32 {
        self.linear_thread() % WARP_SIZE
    }

    /// The warp's sum, in every lane: five rounds of `shfl_xor` with the DSL's `+`, in one
    /// exchange.
    pub fn warp_reduce_sum<T: WarpValue + Arith>(&self, v: T) -> T {
        let op = WarpOp::Butterfly(Combine::sum::<T>());
        T::from_bits64(self.exchange(op, v.to_bits64()))
    }

    /// The warp's maximum (the DSL's `max`), in every lane, likewise.
    pub fn warp_reduce_max<T: WarpValue + Num>(&self, v: T) -> T {
        let op = WarpOp::Butterfly(Combine::max::<T>());
        T::from_bits64(self.exchange(op, v.to_bits64()))
    }

    fn diverged(&self, what: String) -> ! {
        std::panic::resume_unwind(Box::new(DivergentBarrier {
            block: self.block_ids(),
            message: what,
        }))
    }
}
