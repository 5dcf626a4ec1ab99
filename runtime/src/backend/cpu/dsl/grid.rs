//! The CPU build's grid: blocks in parallel across cores (`std::thread::scope`, each worker
//! taking the next run of blocks from a shared counter), the threads of a block in order on one worker,
//! `x` fastest. Each thread's indices are in a [`ThreadCtx`], which a kernel's body reads (the
//! DSL's `global_id_x()`, `thread_id_y()`, ...); `#[device]` fns read it through a thread-local.
//!
//! A body that indexes outside a buffer unwinds with a private payload (no panic message: see
//! [`crate::kernel::view`]); the worker catches it, the others stop at their next block, and the
//! launch returns [`Error::IndexOutOfBounds`]. Any other panic inside the body (a builtin's CPU
//! body, say) is caught the same way and returned as [`Error::KernelPanic`].

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::coop::{Coop, DivergentBarrier};
use super::local::LocalOutOfBounds;
use super::shared::{BlockMemory, SharedTooLarge, DYNAMIC_SHARED_ARG, SHARED_ARG};
use crate::error::{Error, Result};
use crate::kernel::view::{InOut, OutOfBounds};
use crate::kernel::{LaunchConfig, PreparedLaunch};

/// Where the running thread of the grid is: thread and block indices, block and grid dims. A
/// kernel's CPU body reads it directly (the macro passes it in: `__opbox_ctx.global_id_x()`).
/// Each thread gets its own copy, a plain local with no interior mutability, so the optimizer
/// keeps it in registers and hoists the block's part of `global_id_*` out of the thread loop;
/// `#[device]` fns read it through a thread-local that the loop writes only for kernels that
/// call one.
#[derive(Clone, Copy)]
pub struct ThreadCtx {
    thread: [u32; 3],
    block: [u32; 3],
    pub(super) block_dim: [u32; 3],
    grid_dim: [u32; 3],
    /// The block's shared memory (`shared::<T, N>()`), alive for the block's run.
    memory: *const BlockMemory,
    /// The thread's coroutine when the kernel has barriers ([`Coop`]); null otherwise.
    coop: *const Coop,
}

impl ThreadCtx {
    /// Outside any launch: every index and dim 0.
    const NONE: ThreadCtx = ThreadCtx {
        thread: [0; 3],
        block: [0; 3],
        block_dim: [0; 3],
        grid_dim: [0; 3],
        memory: std::ptr::null(),
        coop: std::ptr::null(),
    };

    /// This block's context for thread `thread`, run without a coroutine.
    #[inline(always)]
    pub(super) fn with_thread(&self, thread: [u32; 3]) -> ThreadCtx {
        ThreadCtx { thread, ..*self }
    }

    /// This block's context for thread `thread`, running as the coroutine `coop`.
    pub(super) fn for_thread(&self, thread: [u32; 3], coop: &Coop) -> ThreadCtx {
        ThreadCtx {
            thread,
            coop,
            ..*self
        }
    }

    pub(super) fn coop(&self) -> Option<&Coop> {
        // SAFETY: non-null only inside `each_thread_coop`, whose coroutine owns the `Coop` for
        // as long as this context is used.
        unsafe { self.coop.as_ref() }
    }

    /// Makes this the context `#[device]` fns read.
    pub(super) fn publish(&self) {
        CURRENT.set(*self);
    }

    pub(super) fn block_ids(&self) -> [u32; 3] {
        self.block
    }

    /// The thread's index in its block, `x` fastest (what CUDA numbers lanes by).
    pub(super) fn linear_thread(&self) -> u32 {
        let [x, y, z] = self.thread;
        let [bx, by, _] = self.block_dim;
        x + bx * (y + by * z)
    }

    /// Shared array `site` of the block: `len` elements of `T`, zeroed when the block's first
    /// thread reaches it. The macro writes each `shared::<T, N>()` of a body as one of these.
    #[inline]
    pub fn shared<T: Copy>(&self, site: usize, len: usize) -> InOut<[T]> {
        // SAFETY: `memory` is the running block's (`run_grid` sets it for the block's run).
        let memory = unsafe { &*self.memory };
        let raw = memory.region(site, len, std::mem::size_of::<T>());
        // SAFETY: the region holds `len` zero-initialized `T`s (every DSL element type is valid
        // as zero bytes), 16-aligned, for the block's run; only views of the block touch it.
        unsafe { InOut::__from_raw(raw) }
    }

    /// The launch's dynamic shared memory as `T`s (`shared_dyn::<T>()`): as many as its
    /// `shared_mem_bytes` hold, zeroed when the block's first thread asks.
    #[inline]
    pub fn shared_dyn<T: Copy>(&self) -> InOut<[T]> {
        // SAFETY: as in `shared`.
        let memory = unsafe { &*self.memory };
        let raw = memory.dynamic(std::mem::size_of::<T>());
        // SAFETY: the region holds `len` zero-initialized `T`s, 16-aligned, for the block's run;
        // only views of the block touch it.
        unsafe { InOut::__from_raw(raw) }
    }
}

thread_local! {
    static CURRENT: Cell<ThreadCtx> = const { Cell::new(ThreadCtx::NONE) };
}

macro_rules! index_fns {
    ($($(#[$doc:meta])* $name:ident => |$p:ident| $e:expr;)*) => {
        impl ThreadCtx {
            $(
                $(#[$doc])*
                #[inline(always)]
                pub fn $name(&self) -> u32 {
                    let $p = self;
                    $e
                }
            )*
        }
        $(
            $(#[$doc])*
            ///
            /// Outside a launch's grid it is 0.
            #[inline]
            pub fn $name() -> u32 {
                CURRENT.get().$name()
            }
        )*
    };
}

index_fns! {
    /// `threadIdx.x`.
    thread_id_x => |p| p.thread[0];
    /// `threadIdx.y`.
    thread_id_y => |p| p.thread[1];
    /// `threadIdx.z`.
    thread_id_z => |p| p.thread[2];
    /// `blockIdx.x`.
    block_id_x => |p| p.block[0];
    /// `blockIdx.y`.
    block_id_y => |p| p.block[1];
    /// `blockIdx.z`.
    block_id_z => |p| p.block[2];
    /// `blockDim.x`.
    block_dim_x => |p| p.block_dim[0];
    /// `blockDim.y`.
    block_dim_y => |p| p.block_dim[1];
    /// `blockDim.z`.
    block_dim_z => |p| p.block_dim[2];
    /// `gridDim.x`.
    grid_dim_x => |p| p.grid_dim[0];
    /// `gridDim.y`.
    grid_dim_y => |p| p.grid_dim[1];
    /// `gridDim.z`.
    grid_dim_z => |p| p.grid_dim[2];
    /// `blockIdx.x * blockDim.x + threadIdx.x`, wrapping as the `u32` arithmetic on the GPU.
    global_id_x => |p| p.block[0].wrapping_mul(p.block_dim[0]).wrapping_add(p.thread[0]);
    /// `blockIdx.y * blockDim.y + threadIdx.y`.
    global_id_y => |p| p.block[1].wrapping_mul(p.block_dim[1]).wrapping_add(p.thread[1]);
    /// `blockIdx.z * blockDim.z + threadIdx.z`.
    global_id_z => |p| p.block[2].wrapping_mul(p.block_dim[2]).wrapping_add(p.thread[2]);
}

/// Resets the thread-local context when a block that published it ends, unwinding included.
pub(super) struct Published;

impl Drop for Published {
    fn drop(&mut self) {
        CURRENT.set(ThreadCtx::NONE);
    }
}

/// Workers for a grid of `blocks` blocks: one per core (or `OPBOX_CPU_THREADS`, read at each
/// launch, for scaling measurements and shared machines), at most one per block.
fn workers(blocks: u64) -> usize {
    let cores = std::env::var("OPBOX_CPU_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    (cores as u64).min(blocks).max(1) as usize
}

impl ThreadCtx {
    /// Runs `body` for each thread of the block, `x` fastest: the generated code calls it with
    /// the buffers' views as its own locals, so that nothing the body writes through them can
    /// alias them and they stay in registers. `publish` (the kernel calls a `#[device]` fn)
    /// also writes each thread's context to the thread-local those fns read.
    #[inline(always)]
    pub fn each_thread(&self, publish: bool, mut body: impl FnMut(&ThreadCtx)) {
        let _reset = publish.then_some(Published);
        // A macro, not a closure: LLVM kept a closure out of line, one call per thread.
        macro_rules! run {
            ($thread:expr) => {{
                let ctx = ThreadCtx {
                    thread: $thread,
                    ..*self
                };
                if publish {
                    CURRENT.set(ctx);
                }
                body(&ctx);
            }};
        }
        let [bx, by, bz] = self.block_dim;
        // 1-D blocks, the common case, get a loop of their own: one counter, nothing else live.
        if by == 1 && bz == 1 {
            for tx in 0..bx {
                run!([tx, 0, 0]);
            }
            return;
        }
        for tz in 0..bz {
            for ty in 0..by {
                for tx in 0..bx {
                    run!([tx, ty, tz]);
                }
            }
        }
    }
}

/// Runs `run` once per block of `prepared`'s grid (it runs the block's threads with
/// [`ThreadCtx::each_thread`]). The first out-of-bounds index or panic ends the launch with an
/// error naming the kernel.
pub fn run_grid<F: Fn(&ThreadCtx) + Sync>(prepared: &PreparedLaunch<'_>, run: F) -> Result<()> {
    let cfg: &LaunchConfig = prepared.config();
    let kernel = prepared.decl().rust_name.as_ref();
    let (gx, gy, gz) = cfg.grid;
    let (bx, by, bz) = cfg.block;
    let blocks = u64::from(gx) * u64::from(gy) * u64::from(gz);
    if blocks == 0 || bx == 0 || by == 0 || bz == 0 {
        return Err(Error::InvalidArgument(format!(
            "kernel {kernel}: grid {:?} and block {:?} must be at least 1 in every dimension",
            cfg.grid, cfg.block
        )));
    }
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let run_block = |b: u64| {
        let block = [
            (b % u64::from(gx)) as u32,
            ((b / u64::from(gx)) % u64::from(gy)) as u32,
            (b / (u64::from(gx) * u64::from(gy))) as u32,
        ];
        let memory = BlockMemory::with_dynamic(cfg.shared_mem_bytes);
        run(&ThreadCtx {
            thread: [0; 3],
            block,
            block_dim: [bx, by, bz],
            grid_dim: [gx, gy, gz],
            memory: &memory,
            coop: std::ptr::null(),
        });
    };
    let n = workers(blocks);
    // Blocks are claimed a run at a time: the counter's locked add waits for the worker's
    // pending stores, which took longer than a short block's work (a third of axpy's time at
    // 256 threads a block). A run of 1/64 of a worker's share still balances the workers.
    let run = (blocks / (n as u64 * 64)).max(1);
    let worker = || loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let first = next.fetch_add(run, Ordering::Relaxed);
        if first >= blocks {
            break;
        }
        let last = blocks.min(first + run);
        let claimed = || {
            for b in first..last {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                run_block(b);
            }
        };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(claimed)) {
            stop.store(true, Ordering::Relaxed);
            let err = unwind_error(prepared, payload);
            let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(err);
            break;
        }
    };
    if n == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 1..n {
                s.spawn(worker);
            }
            worker();
        });
    }
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn unwind_error(prepared: &PreparedLaunch<'_>, payload: Box<dyn std::any::Any + Send>) -> Error {
    let decl = prepared.decl();
    let kernel = decl.rust_name.as_ref();
    let payload = match payload.downcast::<OutOfBounds>() {
        Ok(oob) => {
            let param = match oob.arg.checked_sub(SHARED_ARG) {
                _ if oob.arg == DYNAMIC_SHARED_ARG => {
                    "the dynamic shared memory (shared_dyn, sized by the launch's shared_mem)"
                        .to_string()
                }
                Some(site) => format!("shared array #{site}"),
                None => decl
                    .params
                    .iter()
                    .filter(|p| p.kind.in_launch_abi())
                    .nth(oob.arg as usize)
                    .map_or_else(|| "a buffer".to_string(), |p| p.name.to_string()),
            };
            return Error::IndexOutOfBounds {
                kernel: kernel.to_string(),
                param,
                index: oob.index,
                len: oob.len,
            };
        }
        Err(other) => other,
    };
    let payload = match payload.downcast::<LocalOutOfBounds>() {
        Ok(oob) => {
            return Error::IndexOutOfBounds {
                kernel: kernel.to_string(),
                param: format!("local array {}", oob.name),
                index: oob.index,
                len: oob.len,
            };
        }
        Err(other) => other,
    };
    let payload = match payload.downcast::<DivergentBarrier>() {
        Ok(d) => {
            return Error::KernelPanic {
                op: format!("kernel {kernel} (CPU build)"),
                message: format!("the threads of block {:?} do not reach the same barrier: {}; every thread of a block must reach each sync_threads() (CUDA leaves this undefined)", d.block, d.message),
            };
        }
        Err(other) => other,
    };
    let payload = match payload.downcast::<SharedTooLarge>() {
        Ok(t) => {
            return Error::KernelPanic {
                op: format!("kernel {kernel} (CPU build)"),
                message: format!(
                    "shared array #{} would take {} bytes, more than a block can have",
                    t.site, t.bytes
                ),
            };
        }
        Err(other) => other,
    };
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    Error::KernelPanic {
        op: format!("kernel {kernel} (CPU build)"),
        message,
    }
}
