//! `opbox::value::live_handles()` comes back to its baseline after every kind of call: typed and
//! boxed, successful and failed, with tensors, strings and lists. The counter is global, so every
//! test here takes one lock. The last test leaks on purpose, to prove the counter would see it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use opbox::dispatch::{BoxedKernel, KernelGroup, KernelRegistration, STATUS_ERROR};
use opbox::prelude::*;
use opbox::value::{live_handles, IntoStable, List};
use opbox::Tag;

#[stable_library(leaks)]
fn leaks(m: &mut Library) {
    m.def("axpby(Tensor x, Tensor y, float a=1.0) -> Tensor");
    m.def("label(Tensor x, str name) -> str");
    m.def("sum_ints(int[] xs) -> int");
    m.def("pick(Tensor[] xs, int i) -> Tensor");
    m.def("split(Tensor x) -> Tensor[]");
    m.def("minmax(Tensor x) -> (Tensor, Tensor)");
    m.def("maybe(Tensor? x) -> Tensor?");
    m.def("fails(Tensor x, str s, int[] l, Tensor[] ts) -> Tensor");
    m.def("panics(Tensor x, str s, int[] l, Tensor[] ts) -> Tensor");
    m.def("manual(Tensor x) -> Tensor");
}

#[stable_impl(leaks, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpby(x: &Tensor, y: &Tensor, a: f64) -> Result<Tensor> {
        let xs = x.to_vec::<f32>()?;
        let ys = y.to_vec::<f32>()?;
        let out: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| a as f32 * x + y).collect();
        Tensor::from_vec(out, x.shape())
    }
    pub fn label(x: &Tensor, name: &str) -> String {
        format!("{name}{:?}", x.shape())
    }
    pub fn sum_ints(xs: &[i64]) -> i64 {
        xs.iter().sum()
    }
    pub fn pick(xs: Vec<&Tensor>, i: i64) -> Result<Tensor> {
        usize::try_from(i)
            .ok()
            .and_then(|i| xs.get(i))
            .map(|&x| x.clone())
            .ok_or_else(|| Error::msg("index out of range"))
    }
    pub fn split(x: &Tensor) -> Result<Vec<Tensor>> {
        (0..x.shape()[0]).map(|i| x.narrow(0, i, 1)).collect()
    }
    pub fn minmax(x: &Tensor) -> Result<(Tensor, Tensor)> {
        let v = x.to_vec::<f32>()?;
        let lo = v.iter().cloned().fold(f32::INFINITY, f32::min);
        let hi = v.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        Ok((
            Tensor::from_vec(vec![lo], &[1])?,
            Tensor::from_vec(vec![hi], &[1])?,
        ))
    }
    pub fn maybe(x: Option<&Tensor>) -> Option<Tensor> {
        x.cloned()
    }
    // `Vec` parameters accept boxed-value lists (`List::Values`) as well as typed ones; borrowed
    // slices accept typed lists only.
    pub fn fails(x: &Tensor, s: &str, l: Vec<i64>, ts: Vec<&Tensor>) -> Result<Tensor> {
        // Make a new tensor first, so the error path has something of the kernel's own to drop.
        let _scratch = x.contiguous()?;
        Err(Error::msg(format!(
            "refused {s} {l:?} with {} tensors",
            ts.len()
        )))
    }
    pub fn panics(x: &Tensor, s: &str, l: Vec<i64>, ts: Vec<&Tensor>) -> Tensor {
        let _scratch = Tensor::from_vec(vec![1.0f32; 4], &[4]).unwrap();
        let _kept = x.clone();
        panic!("panicked with {s} {l:?} and {} tensors", ts.len())
    }
}

/// A hand-written boxed kernel that writes its output and then reports failure: the dispatcher
/// must release the output it wrote as well as the arguments.
unsafe extern "C" fn manual_kernel(
    stack: *mut StableValue,
    num_args: u64,
    num_outputs: u64,
) -> i32 {
    if stack.is_null() || num_args != 1 || num_outputs != 1 {
        return STATUS_ERROR;
    }
    // SAFETY: the dispatcher hands over `num_args + num_outputs` (checked: 2) initialised values.
    let (input, output) = unsafe { (&*stack, &mut *stack.add(1)) };
    let Some(x) = input.as_tensor() else {
        return STATUS_ERROR;
    };
    let Ok(copy) = x.contiguous() else {
        return STATUS_ERROR;
    };
    let fail = x.numel() > 1;
    *output = StableValue::tensor(copy);
    if fail {
        STATUS_ERROR
    } else {
        opbox::dispatch::STATUS_OK
    }
}

opbox::__private::inventory::submit! {
    KernelGroup {
        file: file!(),
        origin: concat!(module_path!(), "::manual_kernel"),
        kernels: &[KernelRegistration {
            op: leaks::manual::BOXED,
            key: DispatchKey::CPU,
            line: line!(),
            kernel: BoxedKernel::raw(manual_kernel),
        }],
    }
}

static LOCK: Mutex<()> = Mutex::new(());

/// The lock, plus the count when it was taken.
struct Baseline {
    _guard: MutexGuard<'static, ()>,
    start: isize,
}

fn baseline() -> Baseline {
    let guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    Baseline {
        _guard: guard,
        start: live_handles(),
    }
}

impl Baseline {
    fn delta(&self) -> isize {
        live_handles() - self.start
    }

    #[track_caller]
    fn check(&self, what: &str) {
        assert_eq!(
            self.delta(),
            0,
            "{what}: live handles moved from the baseline (leak if > 0, double free if < 0)"
        );
    }
}

fn t(values: &[f32]) -> Tensor {
    Tensor::from_slice(values, &[values.len()]).unwrap()
}

fn op(name: &str) -> OpHandle {
    opbox::op(name).unwrap()
}

#[test]
fn successful_calls_with_tensors() {
    let b = baseline();
    {
        let x = t(&[1.0, 2.0]);
        let y = t(&[3.0, 4.0]);
        let axpby = op("leaks::axpby");
        for _ in 0..3 {
            let z: Tensor = axpby.call((&x, &y, 2.0)).unwrap();
            assert_eq!(z.to_vec::<f32>().unwrap(), vec![5.0, 8.0]);
            let z: Tensor = axpby.call((&x, &y)).unwrap();
            assert_eq!(z.to_vec::<f32>().unwrap(), vec![4.0, 6.0]);

            let mut s = Stack::new();
            s.push(&x).push(&y).push(1.0);
            axpby.call_boxed(&mut s).unwrap();
            assert_eq!(s.len(), 1);
            drop(s);

            let (lo, hi): (Tensor, Tensor) = op("leaks::minmax").call((&x,)).unwrap();
            assert_eq!(
                (lo.item::<f32>().unwrap(), hi.item::<f32>().unwrap()),
                (1.0, 2.0)
            );
            let same: Option<Tensor> = op("leaks::maybe").call((Some(&x),)).unwrap();
            assert!(same.is_some_and(|s| s.ptr_eq(&x)));
            let none: Option<Tensor> = op("leaks::maybe").call((None::<&Tensor>,)).unwrap();
            assert!(none.is_none());
        }
        assert_eq!((x.ref_count(), y.ref_count()), (1, 1));
    }
    b.check("successful tensor calls");
}

#[test]
fn successful_calls_with_str_and_lists() {
    let b = baseline();
    {
        let x = t(&[1.0, 2.0, 3.0]);
        let label: String = op("leaks::label").call((&x, "x")).unwrap();
        assert_eq!(label, "x[3]");
        let mut s = Stack::new();
        s.push(&x).push(String::from("y"));
        op("leaks::label").call_boxed(&mut s).unwrap();
        assert_eq!(s[0].as_str(), Some("y[3]"));
        drop(s);

        let sum: i64 = op("leaks::sum_ints").call((vec![1i64, 2, 3],)).unwrap();
        assert_eq!(sum, 6);
        let mut s = Stack::new();
        s.push(StableValue::list(List::Int(vec![4, 5])));
        op("leaks::sum_ints").call_boxed(&mut s).unwrap();
        assert_eq!(s[0].as_int(), Some(9));
        drop(s);

        let y = t(&[9.0]);
        let picked: Tensor = op("leaks::pick").call((vec![&x, &y], 1i64)).unwrap();
        assert!(picked.ptr_eq(&y));
        drop(picked);
        let mut s = Stack::new();
        s.push(StableValue::list(List::Values(vec![
            StableValue::tensor(x.clone()),
            StableValue::tensor(y.clone()),
        ])))
        .push(0i64);
        op("leaks::pick").call_boxed(&mut s).unwrap();
        assert!(s[0].as_tensor().is_some_and(|p| p.ptr_eq(&x)));
        drop(s);

        let parts: Vec<Tensor> = op("leaks::split").call((&x,)).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].to_vec::<f32>().unwrap(), vec![3.0]);
        drop(parts);
        let mut s = Stack::new();
        s.push(&x);
        op("leaks::split").call_boxed(&mut s).unwrap();
        assert_eq!(s[0].as_list().map(List::len), Some(3));
        drop(s);
        assert_eq!((x.ref_count(), y.ref_count()), (1, 1));
    }
    b.check("successful str and list calls");
}

#[test]
fn failed_calls_with_wrong_tags() {
    let b = baseline();
    {
        let x = t(&[1.0]);
        let axpby = op("leaks::axpby");
        // Typed: a str where a Tensor goes, a list where a float goes.
        assert!(axpby.call::<_, Tensor>((&x, "y")).is_err());
        assert!(axpby.call::<_, Tensor>((&x, &x, vec![&x, &x])).is_err());
        // Boxed: an int[] where a Tensor[] goes, a Tensor[] where an int[] goes.
        let mut s = Stack::new();
        s.push(vec![1i64, 2]).push(0i64);
        assert!(matches!(
            op("leaks::pick").call_boxed(&mut s),
            Err(Error::ArgType { .. })
        ));
        assert!(s.is_empty());
        let mut s = Stack::new();
        s.push(vec![&x, &x]);
        assert!(matches!(
            op("leaks::sum_ints").call_boxed(&mut s),
            Err(Error::ArgType { .. })
        ));
        // A str and a list of strings where a Tensor and an int[] go.
        let mut s = Stack::new();
        s.push("x")
            .push(vec!["a", "b"])
            .push(StableValue::list(List::Values(vec![StableValue::str("c")])));
        s.push(vec![&x]);
        assert!(op("leaks::fails").call_boxed(&mut s).is_err());
        // A null handle and an invalid tag among owned values.
        let mut s = Stack::new();
        // SAFETY: a null Tensor payload and an out-of-range tag own nothing.
        unsafe {
            s.push(StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0));
            s.push(StableValue::from_raw_parts(99, 0, 0xabc));
        }
        assert!(op("leaks::label").call_boxed(&mut s).is_err());
        // Wrong counts, with owned values on the stack.
        let mut s = Stack::new();
        s.push(&x).push("a").push("extra").push(vec![&x]);
        assert!(matches!(
            op("leaks::label").call_boxed(&mut s),
            Err(Error::ArgCount { .. })
        ));
        // Mixed devices and a missing backend, with tensors on the stack.
        let meta = Tensor::empty(&[1], DType::F32, Device::Meta).unwrap();
        assert!(matches!(
            axpby.call::<_, Tensor>((&x, &meta)),
            Err(Error::MixedDevices { .. })
        ));
        assert!(matches!(
            axpby.call::<_, Tensor>((&meta, &meta)),
            Err(Error::NoKernel { .. })
        ));
        // A typed call that asks for the wrong result type: the output is released.
        assert!(matches!(
            op("leaks::label").call::<_, Tensor>((&x, "x")),
            Err(Error::ReturnType { .. })
        ));
        assert!(matches!(
            op("leaks::minmax").call::<_, Tensor>((&x,)),
            Err(Error::ReturnCount { .. })
        ));
        assert!(matches!(
            op("leaks::split").call::<_, Vec<i64>>((&x,)),
            Err(Error::ReturnType { .. })
        ));
        assert_eq!(x.ref_count(), 1);
    }
    b.check("calls with wrong tags");
}

#[test]
fn kernel_errors_release_everything() {
    let b = baseline();
    {
        let x = t(&[1.0, 2.0]);
        let fails = op("leaks::fails");
        for _ in 0..3 {
            let err = fails
                .call::<_, Tensor>((&x, "s", vec![1i64, 2], vec![&x, &x]))
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "leaks::fails: refused s [1, 2] with 2 tensors"
            );
            let mut s = Stack::new();
            s.push(&x)
                .push("s")
                .push(vec![3i64])
                .push(StableValue::list(List::Values(vec![StableValue::tensor(
                    x.clone(),
                )])));
            assert!(matches!(
                fails.call_boxed(&mut s),
                Err(Error::Kernel { .. })
            ));
            assert!(s.is_empty());
        }
        // A hand-written kernel that wrote its output before failing: that output is released.
        let manual = op("leaks::manual");
        let err = manual.call::<_, Tensor>((&x,)).unwrap_err();
        assert!(
            matches!(&err, Error::Kernel { op, .. } if op == "leaks::manual"),
            "{err:?}"
        );
        let ok: Tensor = manual.call((&t(&[5.0]),)).unwrap();
        assert_eq!(ok.to_vec::<f32>().unwrap(), vec![5.0]);
        drop(ok);
        assert_eq!(x.ref_count(), 1);
    }
    b.check("kernel errors");
}

#[test]
fn kernel_panics_release_everything() {
    let b = baseline();
    {
        let x = t(&[1.0, 2.0]);
        let panics = op("leaks::panics");
        for _ in 0..2 {
            let err = panics
                .call::<_, Tensor>((&x, "s", vec![1i64], vec![&x]))
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "leaks::panics panicked: panicked with s [1] and 1 tensors"
            );
            let mut s = Stack::new();
            s.push(&x)
                .push("t")
                .push(StableValue::list(List::Values(vec![StableValue::int(2)])))
                .push(vec![&x, &x]);
            assert!(matches!(
                panics.call_boxed(&mut s),
                Err(Error::KernelPanic { .. })
            ));
            assert!(s.is_empty());
        }
        assert_eq!(x.ref_count(), 1);
    }
    b.check("kernel panics");
}

#[test]
fn the_counter_catches_a_deliberate_leak() {
    let b = baseline();
    // A tensor whose only owner is a boxed value that is never dropped.
    std::mem::forget(StableValue::tensor(t(&[1.0])));
    assert_eq!(
        b.delta(),
        1,
        "a forgotten tensor value shows as one live handle"
    );
    // A forgotten clone keeps its tensor alive after every other handle is gone.
    let x = t(&[2.0]);
    std::mem::forget((&x).into_stable());
    drop(x);
    assert_eq!(b.delta(), 2);
    // A forgotten string box and a forgotten list box.
    std::mem::forget(StableValue::str("leaked"));
    std::mem::forget(vec![1i64].into_stable());
    assert_eq!(b.delta(), 4);
    // And a stack whose outputs are forgotten after a successful call.
    let mut s = Stack::new();
    s.push(t(&[3.0]).into_stable())
        .push(t(&[4.0]).into_stable());
    op("leaks::axpby").call_boxed(&mut s).unwrap();
    std::mem::forget(s);
    assert_eq!(b.delta(), 5, "the forgotten result tensor shows up");
}
