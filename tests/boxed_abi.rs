//! Bad input through the boxed ABI: every wrong count, wrong tag, null handle, device mix-up,
//! kernel error and kernel panic comes back as a typed `opbox::Error` with a message a user can
//! act on, and leaves the stack empty.

use opbox::prelude::*;
use opbox::value::IntoStable;
use opbox::Tag;

#[stable_library(abi)]
fn abi(m: &mut Library) {
    m.def("axpy(float a, Tensor x, Tensor y) -> Tensor");
    m.def("add(int a, int b) -> int");
    m.def("defaults(int a, int b=2, float c=0.5, bool d=True, str s=\"hi\", int[] l=[1, 2], Tensor? t=None) -> str");
    m.def("count(int n=3) -> int");
    m.def("comp(int n) -> int");
    m.def("first(Tensor[] xs) -> Tensor");
    m.def("fails(int code) -> int");
    m.def("panics(Tensor x) -> Tensor");
    m.def("panics_any(int n) -> int");
    m.def("kwonly(int a, int c=4, *, int b) -> int");
    m.def("numel_of(Tensor x, int plus) -> int");
    // Tensors at 3 and 66: the second is past the 64 arguments an op's tensor mask covers.
    m.def(
        "wide(int a0, int a1, int a2, Tensor a3, int a4, int a5, int a6, int a7, int a8, \
         int a9, int a10, int a11, int a12, int a13, int a14, int a15, int a16, int a17, \
         int a18, int a19, int a20, int a21, int a22, int a23, int a24, int a25, int a26, \
         int a27, int a28, int a29, int a30, int a31, int a32, int a33, int a34, int a35, \
         int a36, int a37, int a38, int a39, int a40, int a41, int a42, int a43, int a44, \
         int a45, int a46, int a47, int a48, int a49, int a50, int a51, int a52, int a53, \
         int a54, int a55, int a56, int a57, int a58, int a59, int a60, int a61, int a62, \
         int a63, int a64, int a65, Tensor a66, int a67, int a68, int a69) -> ()",
    );
}

#[stable_impl(abi, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn axpy(a: f64, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let xs = x.to_vec::<f32>()?;
        let ys = y.to_vec::<f32>()?;
        let out: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| a as f32 * x + y).collect();
        Tensor::from_vec(out, x.shape())
    }
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
    pub fn defaults(
        a: i64,
        b: i64,
        c: f64,
        d: bool,
        s: &str,
        l: &[i64],
        t: Option<&Tensor>,
    ) -> String {
        format!(
            "a={a} b={b} c={c} d={d} s={s} l={l:?} t={}",
            t.map_or("None".to_string(), |t| format!("{:?}", t.shape()))
        )
    }
    pub fn count(n: i64) -> i64 {
        n
    }
    pub fn comp(n: i64) -> i64 {
        n
    }
    pub fn first(xs: &[Tensor]) -> Result<Tensor> {
        xs.first()
            .cloned()
            .ok_or_else(|| Error::msg("first of an empty list"))
    }
    pub fn fails(code: i64) -> Result<i64> {
        Err(Error::msg(format!("bad code {code}")))
    }
    pub fn panics(x: &Tensor) -> Tensor {
        if x.numel() > 0 {
            panic!("kernel exploded on {} elements", x.numel());
        }
        x.clone()
    }
    pub fn panics_any(n: i64) -> i64 {
        std::panic::panic_any(n)
    }
    pub fn kwonly(a: i64, c: i64, b: i64) -> i64 {
        a + 10 * c + 100 * b
    }
}

#[stable_impl(abi::count, Meta)]
fn count_meta(n: i64) -> i64 {
    -n
}

// Two kernels of one op with different Rust signatures (one borrows its tensor, the other takes
// it owned): a boxed call runs each one with its own unboxing.
#[stable_impl(abi::numel_of, CPU)]
fn numel_of_cpu(x: &Tensor, plus: i64) -> i64 {
    x.numel() as i64 + plus
}

#[stable_impl(abi::numel_of, Meta)]
fn numel_of_meta(x: Tensor, plus: i64) -> i64 {
    -(x.numel() as i64) - plus
}

#[stable_impl(abi::comp, CompositeExplicit)]
fn comp_any(n: i64) -> i64 {
    n * 100
}

fn t(values: &[f32]) -> Tensor {
    Tensor::from_slice(values, &[values.len()]).unwrap()
}

fn meta() -> Tensor {
    Tensor::empty(&[2], DType::F32, Device::Meta).unwrap()
}

fn op(name: &str) -> OpHandle {
    opbox::op(name).unwrap()
}

/// Calls `op` on `stack`, expects an error, checks the stack was emptied, and returns the error.
#[track_caller]
fn fail(op: &OpHandle, mut stack: Stack) -> Error {
    let err = op.call_boxed(&mut stack).expect_err("the call should fail");
    assert!(
        stack.is_empty(),
        "the stack must be empty after an error, but holds {stack:?}"
    );
    err
}

#[track_caller]
fn fail_on(op: &OpHandle, key: DispatchKey, mut stack: Stack) -> Error {
    let err = op
        .call_boxed_on(key, &mut stack)
        .expect_err("the call should fail");
    assert!(
        stack.is_empty(),
        "the stack must be empty after an error, but holds {stack:?}"
    );
    err
}

fn stack(values: impl IntoIterator<Item = StableValue>) -> Stack<'static> {
    values.into_iter().collect()
}

const ADD_SCHEMA: &str = "abi::add(int a, int b) -> int";

#[test]
fn too_many_arguments() {
    let add = op("abi::add");
    let err = fail(
        &add,
        stack([
            StableValue::int(1),
            StableValue::int(2),
            StableValue::str("extra"),
        ]),
    );
    assert_eq!(
        err,
        Error::ArgCount {
            op: "abi::add".into(),
            min: 2,
            expected: 2,
            got: 3,
            schema: ADD_SCHEMA.into(),
            defaulted: vec![],
        }
    );
    assert_eq!(
        err.to_string(),
        "abi::add takes 2 arguments (schema: abi::add(int a, int b) -> int), but 3 were given"
    );
}

#[test]
fn too_few_arguments_without_defaults() {
    let add = op("abi::add");
    let err = fail(&add, stack([StableValue::int(1)]));
    assert_eq!(
        err,
        Error::ArgCount {
            op: "abi::add".into(),
            min: 2,
            expected: 2,
            got: 1,
            schema: ADD_SCHEMA.into(),
            defaulted: vec![],
        }
    );
    assert_eq!(
        err.to_string(),
        "abi::add takes 2 arguments (schema: abi::add(int a, int b) -> int), but 1 was given"
    );

    let err = fail(&add, Stack::new());
    assert!(
        matches!(
            err,
            Error::ArgCount {
                expected: 2,
                got: 0,
                ..
            }
        ),
        "{err:?}"
    );

    // Only trailing arguments with defaults may be left out: `y` has none.
    let axpy = op("abi::axpy");
    let err = fail(
        &axpy,
        stack([StableValue::float(2.0), StableValue::tensor(t(&[1.0]))]),
    );
    assert!(
        matches!(&err, Error::ArgCount { op, expected: 3, got: 2, .. } if op == "abi::axpy"),
        "{err:?}"
    );

    // A default before an argument without one: the count is what the caller gave, not what
    // the defaults made of it.
    let kwonly = op("abi::kwonly");
    let err = fail(&kwonly, stack([StableValue::int(1)]));
    assert_eq!(
        err.to_string(),
        "abi::kwonly takes 3 arguments (schema: abi::kwonly(int a, int c=4, *, int b) -> int), but 1 was given"
    );
    // Trailing defaults make a range, and the message names them.
    let defaults = op("abi::defaults");
    let err = fail(&defaults, Stack::new());
    assert_eq!(
        err.to_string(),
        format!("abi::defaults takes 1 to 7 arguments (b, c, d, s, l and t have a default) (schema: {}), but 0 were given", defaults.schema())
    );
    let count = op("abi::count");
    let err = fail(&count, stack([StableValue::int(1), StableValue::int(2)]));
    assert_eq!(
        err.to_string(),
        "abi::count takes at most 1 argument (n has a default) (schema: abi::count(int n=3) -> int), but 2 were given"
    );
    let mut s = stack([
        StableValue::int(1),
        StableValue::int(2),
        StableValue::int(3),
    ]);
    kwonly.call_boxed(&mut s).unwrap();
    assert_eq!(s[0].as_int(), Some(321));

    // The typed call reports the same.
    let err = add.call::<_, i64>((1i64,)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ArgCount {
                expected: 2,
                got: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let err = add.call::<_, i64>((1i64, 2i64, 3i64)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ArgCount {
                expected: 2,
                got: 3,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn int_for_tensor() {
    let axpy = op("abi::axpy");
    let err = fail(
        &axpy,
        stack([
            StableValue::float(2.0),
            StableValue::int(1),
            StableValue::tensor(t(&[1.0])),
        ]),
    );
    assert_eq!(
        err,
        Error::ArgType {
            op: "abi::axpy".into(),
            index: 1,
            name: "x".into(),
            expected: "Tensor".into(),
            got: "int".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "abi::axpy expects argument #1 (x) to be Tensor, but got int"
    );

    // Typed calls box the same way and fail the same way.
    let err = axpy.call::<_, Tensor>((2.0, 1i64, &t(&[1.0]))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "abi::axpy expects argument #1 (x) to be Tensor, but got int"
    );
}

#[test]
fn tensor_for_float() {
    let axpy = op("abi::axpy");
    let x = t(&[1.0]);
    let err = fail(
        &axpy,
        stack([
            StableValue::tensor(x.clone()),
            StableValue::tensor(x.clone()),
            StableValue::tensor(x.clone()),
        ]),
    );
    assert!(
        matches!(&err, Error::ArgType { index: 0, name, expected, got, .. } if name == "a" && expected == "float" && got == "Tensor"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::axpy expects argument #0 (a) to be float, but got Tensor"
    );
    assert_eq!(
        x.ref_count(),
        1,
        "the failed call released the stack's three references"
    );
}

#[test]
fn str_for_int() {
    let add = op("abi::add");
    let err = fail(&add, stack([StableValue::int(1), StableValue::str("2")]));
    assert!(
        matches!(&err, Error::ArgType { index: 1, name, expected, got, .. } if name == "b" && expected == "int" && got == "str"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::add expects argument #1 (b) to be int, but got str"
    );

    // And the other way round: an int where a list of tensors is expected, a list of ints too.
    let first = op("abi::first");
    let err = fail(&first, stack([StableValue::int(0)]));
    assert_eq!(
        err.to_string(),
        "abi::first expects argument #0 (xs) to be Tensor[], but got int"
    );
    let err = fail(&first, stack([vec![1i64, 2].into_stable()]));
    assert_eq!(
        err.to_string(),
        "abi::first expects argument #0 (xs) to be Tensor[], but got int[]"
    );
    let err = fail(&add, stack([StableValue::int(1), StableValue::float(2.0)]));
    assert_eq!(
        err.to_string(),
        "abi::add expects argument #1 (b) to be int, but got float"
    );
}

#[test]
fn null_tensor_handle() {
    let axpy = op("abi::axpy");
    // SAFETY: a null payload is allowed for the Tensor tag and owns nothing.
    let null = unsafe { StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0) };
    let err = fail(
        &axpy,
        stack([
            StableValue::float(2.0),
            null,
            StableValue::tensor(t(&[1.0])),
        ]),
    );
    assert!(
        matches!(&err, Error::ArgType { index: 1, got, .. } if got == "a null Tensor handle"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::axpy expects argument #1 (x) to be Tensor, but got a null Tensor handle"
    );

    // A null handle is not None either, even where the schema allows None.
    let defaults = op("abi::defaults");
    let mut s = stack([
        StableValue::int(1),
        StableValue::int(2),
        StableValue::float(0.5),
        StableValue::bool(true),
        StableValue::str("s"),
        vec![1i64].into_stable(),
    ]);
    // SAFETY: as above.
    s.push(unsafe { StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0) });
    let err = fail(&defaults, s);
    assert_eq!(
        err.to_string(),
        "abi::defaults expects argument #6 (t) to be Tensor?, but got a null Tensor handle"
    );

    // Null handles inside a list of tensors are refused too, without touching dispatch.
    let first = op("abi::first");
    // SAFETY: as above.
    let null = unsafe { StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0) };
    let list = opbox::value::List::Values(vec![null]);
    let err = fail(&first, stack([StableValue::list(list)]));
    assert_eq!(
        err.to_string(),
        "abi::first expects argument #0 (xs) to be Tensor[], but got list"
    );
}

#[test]
fn invalid_tag_number() {
    let add = op("abi::add");
    // SAFETY: an out-of-range tag owns nothing, whatever its payload.
    let bad = unsafe { StableValue::from_raw_parts(77, 0, 0x1234) };
    let err = fail(&add, stack([StableValue::int(1), bad]));
    assert!(
        matches!(&err, Error::ArgType { index: 1, got, .. } if got == "an invalid tag 77"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::add expects argument #1 (b) to be int, but got an invalid tag 77"
    );

    // An invalid tag in a tensor slot neither dispatches nor dereferences.
    let axpy = op("abi::axpy");
    // SAFETY: as above.
    let bad = unsafe { StableValue::from_raw_parts(1000, 0, 0x10) };
    let err = fail(
        &axpy,
        stack([StableValue::float(1.0), StableValue::tensor(t(&[1.0])), bad]),
    );
    assert_eq!(
        err.to_string(),
        "abi::axpy expects argument #2 (y) to be Tensor, but got an invalid tag 1000"
    );
}

#[test]
fn defaults_fill_trailing_arguments() {
    let defaults = op("abi::defaults");
    let mut s = stack([StableValue::int(1)]);
    defaults.call_boxed(&mut s).unwrap();
    assert_eq!(
        s.len(),
        1,
        "after a call the stack holds exactly the outputs"
    );
    assert_eq!(
        s[0].as_str(),
        Some("a=1 b=2 c=0.5 d=true s=hi l=[1, 2] t=None")
    );

    let mut s = stack([
        StableValue::int(1),
        StableValue::int(5),
        StableValue::float(1.5),
    ]);
    defaults.call_boxed(&mut s).unwrap();
    assert_eq!(
        s[0].as_str(),
        Some("a=1 b=5 c=1.5 d=true s=hi l=[1, 2] t=None")
    );

    let out: String = defaults
        .call((7i64, 8i64, 9.0, false, "yo", vec![3i64], &t(&[1.0, 2.0])))
        .unwrap();
    assert_eq!(out, "a=7 b=8 c=9 d=false s=yo l=[3] t=[2]");

    let count = op("abi::count");
    let mut s = Stack::new();
    count.call_boxed(&mut s).unwrap();
    assert_eq!(s[0].as_int(), Some(3));
}

#[test]
fn kernels_of_one_op_with_different_signatures_each_run_on_their_key() {
    let numel_of = op("abi::numel_of");
    let x = t(&[1.0, 2.0, 3.0]);
    for round in 0..3 {
        let mut s = Stack::new();
        s.push(&x).push(10i64);
        numel_of.call_boxed(&mut s).unwrap();
        assert_eq!(
            (s.len(), s[0].as_int()),
            (1, Some(13)),
            "CPU, round {round}"
        );

        let mut s = Stack::new();
        s.push(meta()).push(10i64);
        numel_of.call_boxed(&mut s).unwrap();
        assert_eq!(
            (s.len(), s[0].as_int()),
            (1, Some(-12)),
            "Meta, round {round}"
        );
    }
    // A wrong argument type is refused with the same message on either key.
    for x in [t(&[1.0]), meta()] {
        let mut s = Stack::new();
        s.push(x).push(1.5f64);
        let e = numel_of.call_boxed(&mut s).unwrap_err().to_string();
        assert_eq!(
            e,
            "abi::numel_of expects argument #1 (plus) to be int, but got float"
        );
        assert!(s.is_empty(), "the stack is empty after an error");
    }
}

#[test]
fn no_tensor_op_dispatches_on_the_given_key() {
    let count = op("abi::count");
    let mut s = stack([StableValue::int(4)]);
    count.call_boxed_on(DispatchKey::Meta, &mut s).unwrap();
    assert_eq!(s[0].as_int(), Some(-4), "the Meta kernel ran");

    let mut s = stack([StableValue::int(4)]);
    count.call_boxed_on(DispatchKey::CPU, &mut s).unwrap();
    assert_eq!(s[0].as_int(), Some(4));

    let mut s = stack([StableValue::int(4)]);
    count.call_boxed(&mut s).unwrap();
    assert_eq!(
        s[0].as_int(),
        Some(4),
        "without a key and without tensors, CPU"
    );

    let err = fail_on(&count, DispatchKey::CUDA, stack([StableValue::int(4)]));
    assert_eq!(
        err,
        Error::NoKernel {
            op: "abi::count".into(),
            key: "CUDA".into(),
            available: vec!["CPU".into(), "Meta".into()]
        }
    );
    assert_eq!(
        err.to_string(),
        "could not run 'abi::count' with arguments from the 'CUDA' backend: 'abi::count' is only available for these backends: [CPU, Meta]"
    );

    // Exact key first, then CompositeExplicit.
    let comp = op("abi::comp");
    let mut s = stack([StableValue::int(2)]);
    comp.call_boxed_on(DispatchKey::CPU, &mut s).unwrap();
    assert_eq!(s[0].as_int(), Some(2));
    let mut s = stack([StableValue::int(2)]);
    comp.call_boxed_on(DispatchKey::CUDA, &mut s).unwrap();
    assert_eq!(
        s[0].as_int(),
        Some(200),
        "no CUDA kernel: the CompositeExplicit one ran"
    );
}

#[test]
fn mixed_devices() {
    let axpy = op("abi::axpy");
    let err = fail(
        &axpy,
        stack([
            StableValue::float(1.0),
            StableValue::tensor(t(&[1.0, 2.0])),
            StableValue::tensor(meta()),
        ]),
    );
    assert_eq!(
        err,
        Error::MixedDevices {
            op: "abi::axpy".into(),
            first_index: 1,
            first_name: "x".into(),
            first_device: Device::Cpu,
            index: 2,
            name: "y".into(),
            device: Device::Meta,
        }
    );
    assert_eq!(
        err.to_string(),
        "abi::axpy got tensors on different devices: argument #1 (x) is on cpu, argument #2 (y) is on meta; move them to one device first"
    );

    // Inside one list argument too.
    let first = op("abi::first");
    let cpu = t(&[1.0]);
    let err = fail(&first, stack([vec![&cpu, &meta()].into_stable()]));
    assert!(
        matches!(&err, Error::MixedDevices { first_index: 0, index: 0, first_device, device, .. } if *first_device == Device::Cpu && *device == Device::Meta),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::first got tensors on different devices: argument #0 (xs[0]) is on cpu, argument #0 (xs[1]) is on meta; move them to one device first"
    );
    assert_eq!(cpu.ref_count(), 1);
}

#[test]
fn a_tensor_argument_past_the_64th_is_dispatched_on_too() {
    let mut values: Vec<StableValue> = (0..70).map(StableValue::int).collect();
    values[3] = StableValue::tensor(t(&[1.0]));
    values[66] = StableValue::tensor(meta());
    let err = fail(&op("abi::wide"), stack(values));
    assert_eq!(
        err,
        Error::MixedDevices {
            op: "abi::wide".into(),
            first_index: 3,
            first_name: "a3".into(),
            first_device: Device::Cpu,
            index: 66,
            name: "a66".into(),
            device: Device::Meta,
        }
    );
}

#[test]
fn no_kernel_for_the_backend() {
    let axpy = op("abi::axpy");
    let err = fail(
        &axpy,
        stack([
            StableValue::float(1.0),
            StableValue::tensor(meta()),
            StableValue::tensor(meta()),
        ]),
    );
    assert_eq!(
        err,
        Error::NoKernel {
            op: "abi::axpy".into(),
            key: "Meta".into(),
            available: vec!["CPU".into()]
        }
    );
    assert_eq!(
        err.to_string(),
        "could not run 'abi::axpy' with arguments from the 'Meta' backend: 'abi::axpy' is only available for these backends: [CPU]"
    );
    assert_eq!(axpy.backends(), vec!["CPU".to_string()]);
}

#[test]
fn kernel_error() {
    let fails = op("abi::fails");
    let err = fail(&fails, stack([StableValue::int(3)]));
    assert_eq!(
        err,
        Error::Kernel {
            op: "abi::fails".into(),
            message: "bad code 3".into()
        }
    );
    assert_eq!(err.to_string(), "abi::fails: bad code 3");
    assert!(
        opbox::dispatch::take_last_error().is_none(),
        "the dispatcher took the error"
    );

    let err = fails.call::<_, i64>((4i64,)).unwrap_err();
    assert_eq!(err.to_string(), "abi::fails: bad code 4");

    let first = op("abi::first");
    let err = fail(
        &first,
        stack([StableValue::list(opbox::value::List::Tensor(vec![]))]),
    );
    assert_eq!(err.to_string(), "abi::first: first of an empty list");
}

#[test]
fn kernel_panic_is_caught() {
    let panics = op("abi::panics");
    let x = t(&[1.0, 2.0, 3.0]);
    let err = fail(&panics, stack([StableValue::tensor(x.clone())]));
    assert_eq!(
        err,
        Error::KernelPanic {
            op: "abi::panics".into(),
            message: "kernel exploded on 3 elements".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "abi::panics panicked: kernel exploded on 3 elements"
    );
    assert_eq!(x.ref_count(), 1, "the panicking call released its argument");

    let err = op("abi::panics_any").call::<_, i64>((5i64,)).unwrap_err();
    assert_eq!(
        err,
        Error::KernelPanic {
            op: "abi::panics_any".into(),
            message: "a non-string panic payload".into()
        }
    );

    // The handle and the thread still work after a caught panic.
    let mut s = stack([StableValue::tensor(t(&[]))]);
    panics.call_boxed(&mut s).unwrap();
    assert_eq!(s[0].as_tensor().map(Tensor::numel), Some(0));
}

#[test]
fn success_leaves_exactly_the_outputs() {
    let axpy = op("abi::axpy");
    let x = t(&[1.0, 2.0]);
    let y = t(&[10.0, 20.0]);
    let mut s = Stack::new();
    s.push(2.0).push(&x).push(&y);
    axpy.call_boxed(&mut s).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(
        s.peek_tensor().unwrap().to_vec::<f32>().unwrap(),
        vec![12.0, 24.0]
    );
    assert_eq!(
        (x.ref_count(), y.ref_count()),
        (1, 1),
        "the arguments were released"
    );
    // A typed pop of the wrong type names both and leaves the result there.
    assert_eq!(
        s.pop_int().unwrap_err().to_string(),
        "the stack's top value is Tensor, which cannot be read as `i64`"
    );
    let z = s.pop_tensor().unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![12.0, 24.0]);
    assert_eq!(
        s.pop_tensor().unwrap_err().to_string(),
        "the stack is empty: there is no value to read as `Tensor`"
    );

    // The stack can be reused: push again.
    s.push(1i64).push(2i64);
    op("abi::add").call_boxed(&mut s).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s.pop_int().unwrap(), 3);

    // An int for a float is accepted, as PyTorch does.
    let z: Tensor = axpy.call((3i64, &x, &y)).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![13.0, 26.0]);
}

#[test]
fn typed_result_mismatch() {
    let add = op("abi::add");
    let err = add.call::<_, (i64, i64)>((1i64, 2i64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "abi::add returns 1 values (schema: abi::add(int a, int b) -> int), but the call expects 2"
    );
    let err = add.call::<_, Tensor>((1i64, 2i64)).unwrap_err();
    assert!(
        matches!(&err, Error::ReturnType { op, index: 0, .. } if op == "abi::add"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "abi::add returns int as return #0, which cannot be read as `Tensor`"
    );
}
