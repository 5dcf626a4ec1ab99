//! Zero heap allocations per call, proved with a counting global allocator (not with timing):
//! an `(int, int) -> int` op called boxed on a reused stack and typed, a
//! `(Tensor, Tensor, float) -> Tensor` op whose kernel returns a clone of an input, and an op
//! with 8 int arguments. Each test warms up once first: the registry is collected on first use.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use opbox::prelude::*;

/// Counts allocations made on the current thread (tests run on parallel threads, so a global
/// count would see the others).
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // try_with: the allocator may run while this thread's locals are being torn down.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` unchanged; counting touches only a const-initialised
// thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

#[stable_library(noalloc)]
fn noalloc(m: &mut Library) {
    m.def("add(int a, int b) -> int");
    m.def("pick(Tensor x, Tensor y, float a) -> Tensor");
    m.def("sum8(int a, int b, int c, int d, int e, int f, int g, int h) -> int");
}

#[stable_impl(noalloc, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
    pub fn pick(x: &Tensor, y: &Tensor, a: f64) -> Result<Tensor> {
        if a < 0.0 {
            return Err(Error::msg("a must be >= 0"));
        }
        Ok(if a == 0.0 { y.clone() } else { x.clone() })
    }
    #[allow(clippy::too_many_arguments)]
    pub fn sum8(a: i64, b: i64, c: i64, d: i64, e: i64, f: i64, g: i64, h: i64) -> i64 {
        a + b + c + d + e + f + g + h
    }
}

const CALLS: i64 = 100;

#[test]
fn the_counter_sees_allocations() {
    assert!(allocations(|| drop(black_box(Box::new(5u64)))) >= 1);
    assert!(allocations(|| drop(black_box(vec![1u8; 3]))) >= 1);
    // And an error path allocates (its message), so a zero below is not a blind counter.
    let add = opbox::op("noalloc::add").unwrap();
    let n = allocations(|| {
        let mut stack = Stack::new();
        stack.push("not an int").push(1i64);
        assert!(add.call_boxed(&mut stack).is_err());
    });
    assert!(
        n >= 2,
        "the str box and the error message allocate, but the counter saw {n}"
    );
}

#[test]
fn int_op_boxed_on_a_reused_stack_does_not_allocate() {
    let add = opbox::op("noalloc::add").unwrap();
    let mut stack = Stack::new();
    stack.push(1i64).push(1i64);
    add.call_boxed(&mut stack).unwrap();
    let n = allocations(|| {
        for i in 0..CALLS {
            stack.clear();
            stack.push(i).push(3i64);
            add.call_boxed(black_box(&mut stack)).unwrap();
            assert_eq!(stack.len(), 1);
            assert_eq!(stack[0].as_int(), Some(i + 3));
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} boxed calls");
}

#[test]
fn int_op_typed_call_does_not_allocate() {
    let add = opbox::op("noalloc::add").unwrap();
    let _: i64 = add.call((2i64, 3i64)).unwrap();
    let n = allocations(|| {
        for i in 0..CALLS {
            let r: i64 = add.call(black_box((2i64, i))).unwrap();
            assert_eq!(r, 2 + i);
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} typed calls");
}

#[test]
fn tensor_op_does_not_allocate() {
    let pick = opbox::op("noalloc::pick").unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let y = Tensor::from_vec(vec![3.0f32, 4.0], &[2]).unwrap();
    let _: Tensor = pick.call((&x, &y, 1.0)).unwrap();
    let mut stack = Stack::new();

    let n = allocations(|| {
        for i in 0..CALLS {
            stack.clear();
            let a = (i % 2) as f64;
            stack.push(&x).push(&y).push(a);
            pick.call_boxed(black_box(&mut stack)).unwrap();
            let out = stack[0].as_tensor().unwrap();
            assert!(out.ptr_eq(if a == 0.0 { &y } else { &x }));
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} boxed tensor calls");

    stack.clear();
    let n = allocations(|| {
        for _ in 0..CALLS {
            let z: Tensor = pick.call(black_box((&x, &y, 2.0))).unwrap();
            assert!(z.ptr_eq(&x));
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} typed tensor calls");
    assert_eq!((x.ref_count(), y.ref_count()), (1, 1));
}

#[test]
fn eight_int_arguments_do_not_allocate() {
    let sum8 = opbox::op("noalloc::sum8").unwrap();
    let _: i64 = sum8
        .call((1i64, 2i64, 3i64, 4i64, 5i64, 6i64, 7i64, 8i64))
        .unwrap();
    let mut stack = Stack::new();
    let n = allocations(|| {
        for i in 0..CALLS {
            stack.clear();
            for k in 1..=8 {
                stack.push(i * k);
            }
            sum8.call_boxed(black_box(&mut stack)).unwrap();
            assert_eq!(stack[0].as_int(), Some(36 * i));
            assert!(!stack.spilled());
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} boxed 8-argument calls");

    let n = allocations(|| {
        for i in 0..CALLS {
            let r: i64 = sum8
                .call(black_box((i, 1i64, 1i64, 1i64, 1i64, 1i64, 1i64, 1i64)))
                .unwrap();
            assert_eq!(r, i + 7);
        }
    });
    assert_eq!(n, 0, "{n} allocations in {CALLS} typed 8-argument calls");
}
