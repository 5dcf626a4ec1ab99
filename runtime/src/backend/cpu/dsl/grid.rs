//! The CPU build's grid: blocks in parallel across cores (`std::thread::scope`, each worker
//! taking the next block from a shared counter), the threads of a block in order on one worker,
//! `x` fastest. Each thread's indices are in a thread-local, which the DSL's index functions
//! (`global_id_x()`, `thread_id_y()`, ...) read; outside a launch they read 0.
//!
//! A body that indexes outside a buffer unwinds with a private payload (no panic message: see
//! [`crate::kernel::view`]); the worker catches it, the others stop at their next block, and the
//! launch returns [`Error::IndexOutOfBounds`]. Any other panic inside the body (a builtin's CPU
//! body, say) is caught the same way and returned as [`Error::KernelPanic`].

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::kernel::view::OutOfBounds;
use crate::kernel::{LaunchConfig, PreparedLaunch};

/// Where the running thread of the grid is: thread and block indices, block and grid dims.
#[derive(Clone, Copy)]
struct Place {
    thread: [u32; 3],
    block: [u32; 3],
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
}

const NOWHERE: Place = Place {
    thread: [0; 3],
    block: [0; 3],
    block_dim: [0; 3],
    grid_dim: [0; 3],
};

thread_local! {
    static PLACE: Cell<Place> = const { Cell::new(NOWHERE) };
}

macro_rules! index_fns {
    ($($(#[$doc:meta])* $name:ident => |$p:ident, $d:literal| $e:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            PLACE.with(|p| {
                let $p = p.get();
                $e
            })
        }
    )*};
}

index_fns! {
    /// `threadIdx.x`.
    thread_id_x => |p, 0| p.thread[0];
    /// `threadIdx.y`.
    thread_id_y => |p, 1| p.thread[1];
    /// `threadIdx.z`.
    thread_id_z => |p, 2| p.thread[2];
    /// `blockIdx.x`.
    block_id_x => |p, 0| p.block[0];
    /// `blockIdx.y`.
    block_id_y => |p, 1| p.block[1];
    /// `blockIdx.z`.
    block_id_z => |p, 2| p.block[2];
    /// `blockDim.x`.
    block_dim_x => |p, 0| p.block_dim[0];
    /// `blockDim.y`.
    block_dim_y => |p, 1| p.block_dim[1];
    /// `blockDim.z`.
    block_dim_z => |p, 2| p.block_dim[2];
    /// `gridDim.x`.
    grid_dim_x => |p, 0| p.grid_dim[0];
    /// `gridDim.y`.
    grid_dim_y => |p, 1| p.grid_dim[1];
    /// `gridDim.z`.
    grid_dim_z => |p, 2| p.grid_dim[2];
    /// `blockIdx.x * blockDim.x + threadIdx.x`, wrapping as the `u32` arithmetic on the GPU.
    global_id_x => |p, 0| p.block[0].wrapping_mul(p.block_dim[0]).wrapping_add(p.thread[0]);
    /// `blockIdx.y * blockDim.y + threadIdx.y`.
    global_id_y => |p, 1| p.block[1].wrapping_mul(p.block_dim[1]).wrapping_add(p.thread[1]);
    /// `blockIdx.z * blockDim.z + threadIdx.z`.
    global_id_z => |p, 2| p.block[2].wrapping_mul(p.block_dim[2]).wrapping_add(p.thread[2]);
}

/// Workers for a grid of `blocks` blocks: one per core, at most one per block.
fn workers(blocks: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores as u64).min(blocks).max(1) as usize
}

/// Runs `body` once per thread of `prepared`'s grid; the first out-of-bounds index or panic
/// ends the launch with an error naming the kernel.
pub fn run_grid<F: Fn() + Sync>(prepared: &PreparedLaunch<'_>, body: F) -> Result<()> {
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
        let mut place = Place {
            thread: [0; 3],
            block,
            block_dim: [bx, by, bz],
            grid_dim: [gx, gy, gz],
        };
        for tz in 0..bz {
            for ty in 0..by {
                for tx in 0..bx {
                    place.thread = [tx, ty, tz];
                    PLACE.with(|p| p.set(place));
                    body();
                }
            }
        }
    };
    let worker = || {
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| run_block(b))) {
                stop.store(true, Ordering::Relaxed);
                let err = unwind_error(kernel, payload);
                let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(err);
                break;
            }
        }
        PLACE.with(|p| p.set(NOWHERE));
    };
    let n = workers(blocks);
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

fn unwind_error(kernel: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
    match payload.downcast::<OutOfBounds>() {
        Ok(oob) => Error::IndexOutOfBounds {
            kernel: kernel.to_string(),
            param: oob.name.to_string(),
            index: oob.index,
            len: oob.len,
        },
        Err(other) => {
            let message = other
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| other.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Error::KernelPanic {
                op: format!("kernel {kernel} (CPU build)"),
                message,
            }
        }
    }
}
