//! Barriers in the CPU build: a kernel whose body calls `sync_threads()` runs each block's
//! threads as stackful coroutines (`corosensei`) on its worker. A thread that reaches a barrier
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

/// What a thread's context points at while it runs as a coroutine.
pub(crate) struct Coop {
    yielder: *const Yielder<(), u32>,
    /// Whether the kernel's `#[device]` fns read the thread-local context, which another
    /// thread's turn overwrites: written again after each barrier.
    publish: bool,
}

/// Why a block stopped: its threads disagreed at a barrier.
#[derive(Debug)]
pub(crate) struct DivergentBarrier {
    pub block: [u32; 3],
    pub message: String,
}

/// Stack size of a thread's coroutine: DSL bodies are small and never recurse; debug builds
/// need the most.
const STACK_BYTES: usize = 256 << 10;

thread_local! {
    /// Stacks of finished coroutines, reused by the next block on this worker.
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

fn take_stack() -> DefaultStack {
    STACKS
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| match DefaultStack::new(STACK_BYTES) {
            Ok(stack) => stack,
            Err(e) => std::panic::resume_unwind(Box::new(format!(
                "a coroutine stack for a block thread could not be allocated: {e}"
            ))),
        })
}

type Thread = Coroutine<(), u32, (), DefaultStack>;

/// A thread's run: what its coroutine executes, the barrier numbers it yields.
type ThreadRun<'a> = Box<dyn FnOnce(&Yielder<(), u32>, ()) + 'a>;

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
        let body = &body;
        let mut threads: Vec<Thread> = Vec::with_capacity(count);
        for t in 0..count as u32 {
            let thread = [t % bx, (t / bx) % by, t / (bx * by)];
            let base = *self;
            let run = move |yielder: &Yielder<(), u32>, ()| {
                let coop = Coop {
                    yielder: yielder as *const _,
                    publish,
                };
                let ctx = base.for_thread(thread, &coop);
                if publish {
                    ctx.publish();
                }
                body(&ctx);
            };
            let run: ThreadRun<'_> = Box::new(run);
            // SAFETY: corosensei asks for 'static because a coroutine may outlive its maker;
            // these do not: every one is finished or dropped (which unwinds its stack) before
            // this function returns or unwinds, while `body` and `self` are still borrowed.
            let run: ThreadRun<'static> = unsafe { std::mem::transmute(run) };
            threads.push(Coroutine::with_stack(take_stack(), run));
        }
        let mut done = vec![false; count];
        let mut finished = 0usize;
        loop {
            // (barrier, first thread there) of this round.
            let mut waiting: Option<(u32, usize)> = None;
            let mut at_barrier = 0usize;
            for (i, thread) in threads.iter_mut().enumerate() {
                if done[i] {
                    continue;
                }
                match thread.resume(()) {
                    CoroutineResult::Yield(site) => {
                        at_barrier += 1;
                        match waiting {
                            None => waiting = Some((site, i)),
                            Some((other, first)) if other != site => {
                                drop(threads);
                                self.diverged(format!("thread {} waits at sync_threads() #{other} and thread {i} at #{site}", first));
                            }
                            Some(_) => {}
                        }
                    }
                    CoroutineResult::Return(()) => {
                        done[i] = true;
                        finished += 1;
                    }
                }
            }
            let Some((site, first)) = waiting else {
                break;
            };
            if finished > 0 {
                let gone = done.iter().position(|d| *d).unwrap_or(0);
                drop(threads);
                self.diverged(format!("thread {first} waits at sync_threads() #{site}, but thread {gone} returned without reaching it ({at_barrier} of {count} threads wait)"));
            }
        }
        STACKS.with(|s| {
            let mut pool = s.borrow_mut();
            for thread in threads {
                pool.push(thread.into_stack());
            }
        });
    }

    fn diverged(&self, what: String) -> ! {
        std::panic::resume_unwind(Box::new(DivergentBarrier {
            block: self.block_ids(),
            message: what,
        }))
    }
}
