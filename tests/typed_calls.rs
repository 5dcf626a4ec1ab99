//! Typed calls of exactly a kernel's types go to the kernel directly; every other typed call
//! goes through the boxed path. Both must give the same results, errors and panics.
//!
//! Which path ran is observed, not assumed: the kernels record the address of the `&str` they
//! were given. The direct entry passes the caller's own string; the boxed path passes a copy
//! held by the stack.

use std::cell::Cell;

use opbox::prelude::*;

#[stable_library(typed)]
fn typed(m: &mut Library) {
    m.def("tag(Tensor x, str name, int n) -> Tensor");
    m.def("pair(Tensor x, Tensor y) -> (Tensor, Tensor)");
    m.def("fail(str why) -> int");
    m.def("boom(str why) -> int");
    m.def("loud(str why) -> int");
    m.def("with_default(str name, int n=7) -> int");
    m.def("composite(str name) -> int");
}

thread_local! {
    /// The address of the last `&str` a kernel of this file received.
    static SEEN: Cell<usize> = const { Cell::new(0) };
}

fn saw(name: &str) {
    SEEN.with(|s| s.set(name.as_ptr() as usize));
}

/// Whether the last kernel got `name` itself, not a copy: the typed entry ran.
fn got_the_callers_str(name: &str) -> bool {
    SEEN.with(|s| s.get()) == name.as_ptr() as usize
}

/// A panic payload whose own Drop panics: it must not abort the process at the C edge.
struct LoudPayload;
impl Drop for LoudPayload {
    fn drop(&mut self) {
        panic!("the payload's drop panics too");
    }
}

#[stable_impl(typed, CPU)]
mod cpu {
    use super::saw;
    use opbox::prelude::*;

    pub fn tag(x: &Tensor, name: &str, n: i64) -> Result<Tensor> {
        saw(name);
        let v: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| v + n as f32).collect();
        Tensor::from_vec(v, x.shape())
    }
    pub fn pair(x: &Tensor, y: &Tensor) -> (Tensor, Tensor) {
        (y.clone(), x.clone())
    }
    pub fn fail(why: &str) -> Result<i64> {
        saw(why);
        Err(Error::msg(format!("refused: {why}")))
    }
    pub fn boom(why: &str) -> i64 {
        saw(why);
        panic!("boom: {why}")
    }
    pub fn loud(why: &str) -> i64 {
        saw(why);
        std::panic::panic_any(super::LoudPayload)
    }
    pub fn with_default(name: &str, n: i64) -> i64 {
        saw(name);
        n
    }
}

#[stable_impl(typed, CompositeExplicit)]
mod composite {
    use super::saw;

    pub fn composite(name: &str) -> i64 {
        saw(name);
        name.len() as i64
    }
}

fn cpu_tensor() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()
}

#[test]
fn exact_types_call_the_kernel_directly_and_return_what_the_boxed_path_returns() {
    let op = opbox::op("typed::tag").unwrap();
    let x = cpu_tensor();
    let name = String::from("direct");
    let typed: Tensor = op.call((&x, name.as_str(), 3i64)).unwrap();
    assert!(
        got_the_callers_str(&name),
        "exact types take the typed entry"
    );

    let mut stack = Stack::new();
    stack.push(&x).push(name.as_str()).push(3i64);
    op.call_boxed(&mut stack).unwrap();
    assert!(
        !got_the_callers_str(&name),
        "the boxed path passes the stack's copy"
    );
    let boxed = stack.pop_tensor().unwrap();
    assert_eq!(typed.to_vec::<f32>().unwrap(), vec![4.0, 5.0]);
    assert_eq!(
        typed.to_vec::<f32>().unwrap(),
        boxed.to_vec::<f32>().unwrap()
    );
    assert_eq!(x.ref_count(), 1, "neither path keeps a reference");
}

#[test]
fn other_argument_types_take_the_boxed_path_with_its_conversions() {
    let op = opbox::op("typed::tag").unwrap();
    let x = cpu_tensor();
    let name = String::from("converted");
    // An i32 literal for `int`: no kernel takes i32, so the boxed path converts it.
    let y: Tensor = op.call((&x, name.as_str(), 3)).unwrap();
    assert!(!got_the_callers_str(&name));
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![4.0, 5.0]);
    // A String for `&str`.
    let y: Tensor = op.call((&x, name.clone(), 1i64)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
    // A result type the kernel does not return: boxed, and unboxed as asked.
    let v: StableValue = op.call((&x, name.as_str(), 1i64)).unwrap();
    assert!(v.as_tensor().is_some());
}

#[test]
fn a_tuple_result_is_returned_directly() {
    let op = opbox::op("typed::pair").unwrap();
    let (x, y) = (cpu_tensor(), cpu_tensor());
    let (a, b): (Tensor, Tensor) = op.call((&x, &y)).unwrap();
    assert!(a.ptr_eq(&y) && b.ptr_eq(&x));
}

/// Calls `name(why)` typed (checking that the typed entry ran) and boxed; both must fail.
fn fail_both_ways(name: &str, why: &str) -> (Error, Error) {
    let op = opbox::op(name).unwrap();
    let typed = op.call::<_, i64>((why,)).unwrap_err();
    assert!(got_the_callers_str(why), "{name}: the typed entry ran");
    let mut stack = Stack::new();
    stack.push(why);
    (typed, op.call_boxed(&mut stack).unwrap_err())
}

#[test]
fn kernel_errors_read_the_same_on_both_paths() {
    let (typed, boxed) = fail_both_ways("typed::fail", "no");
    assert!(
        matches!(&typed, Error::Kernel { op, message } if op == "typed::fail" && message == "refused: no")
    );
    assert_eq!(typed.to_string(), boxed.to_string());
}

#[test]
fn kernel_panics_are_caught_and_read_the_same_on_both_paths() {
    let (typed, boxed) = fail_both_ways("typed::boom", "bang");
    assert!(
        matches!(&typed, Error::KernelPanic { op, message } if op == "typed::boom" && message == "boom: bang")
    );
    assert_eq!(typed.to_string(), boxed.to_string());
}

#[test]
fn a_panic_payload_whose_drop_panics_is_contained_on_both_paths() {
    let (typed, boxed) = fail_both_ways("typed::loud", "x");
    assert!(matches!(typed, Error::KernelPanic { .. }), "{typed}");
    assert!(matches!(boxed, Error::KernelPanic { .. }), "{boxed}");
}

#[test]
fn mixed_devices_are_refused_with_the_boxed_paths_message() {
    let op = opbox::op("typed::pair").unwrap();
    let x = cpu_tensor();
    let meta = Tensor::empty(&[2], DType::F32, Device::Meta).unwrap();
    let err = op.call::<_, (Tensor, Tensor)>((&x, &meta)).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::MixedDevices {
                first_index: 0,
                index: 1,
                first_device: Device::Cpu,
                device: Device::Meta,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_missing_kernel_is_the_boxed_paths_error() {
    let op = opbox::op("typed::pair").unwrap();
    let meta = Tensor::empty(&[2], DType::F32, Device::Meta).unwrap();
    let err = op.call::<_, (Tensor, Tensor)>((&meta, &meta)).unwrap_err();
    let mut stack = Stack::new();
    stack.push(&meta).push(&meta);
    let boxed = op.call_boxed(&mut stack).unwrap_err();
    assert!(matches!(err, Error::NoKernel { .. }), "{err}");
    assert_eq!(err.to_string(), boxed.to_string());
}

#[test]
fn left_out_defaults_are_filled_by_the_boxed_path() {
    let op = opbox::op("typed::with_default").unwrap();
    let name = String::from("d");
    let n: i64 = op.call((name.as_str(),)).unwrap();
    assert_eq!(n, 7);
    assert!(!got_the_callers_str(&name));
    let n: i64 = op.call((name.as_str(), 2i64)).unwrap();
    assert_eq!(n, 2);
    assert!(got_the_callers_str(&name));
}

#[test]
fn a_composite_kernel_is_called_directly_too() {
    let op = opbox::op("typed::composite").unwrap();
    let name = String::from("four");
    let n: i64 = op.call((name.as_str(),)).unwrap();
    assert_eq!(n, 4);
    assert!(got_the_callers_str(&name));
}
