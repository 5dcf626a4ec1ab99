//! Unit tests of the boxed values: every tag's round trip, ownership (no leak, no double free),
//! bad raw values, conversions and the stack. Small enough to run under miri
//! (`cargo +nightly miri test -p opbox-runtime value::`).

use super::live::live_boxes_on_this_thread;
use super::{FromStable, IntoStable, List, Mismatch, StableValue, Stack, Tag, INLINE_SLOTS};
use crate::tensor::live_tensors_on_this_thread;
use crate::{DType, Device, Scalar, Tensor};

/// Boxes and tensors made minus those freed on this thread, so tests running in parallel
/// cannot disturb the count.
fn live() -> isize {
    live_boxes_on_this_thread() + live_tensors_on_this_thread()
}

/// Remembers the count; `assert_balanced` checks nothing leaked or was freed twice since.
/// Other modules' ownership tests (the plugin ABI's) use it too.
pub(crate) struct Balance {
    start: isize,
}

pub(crate) fn balance() -> Balance {
    Balance { start: live() }
}

impl Balance {
    fn delta(&self) -> isize {
        live() - self.start
    }

    #[track_caller]
    pub(crate) fn assert_balanced(&self) {
        assert_eq!(
            self.delta(),
            0,
            "live handles changed: a leak (> 0) or a double free (< 0)"
        );
    }
}

fn tensor(values: &[f32]) -> Tensor {
    Tensor::from_slice(values, &[values.len()]).unwrap()
}

/// A value's tag must match, and every accessor for another tag must refuse it.
#[track_caller]
fn assert_only(v: &StableValue, tag: Tag) {
    assert_eq!(v.tag(), Some(tag));
    assert_eq!(v.raw_tag(), tag as u32);
    assert_eq!(v.is_none(), tag == Tag::None);
    assert_eq!(v.as_bool().is_some(), tag == Tag::Bool);
    assert_eq!(v.as_int().is_some(), tag == Tag::Int);
    assert_eq!(v.as_float().is_some(), tag == Tag::Float);
    assert_eq!(v.as_str().is_some(), tag == Tag::Str);
    assert_eq!(v.as_tensor().is_some(), tag == Tag::Tensor);
    assert_eq!(v.as_list().is_some(), tag == Tag::List);
    assert_eq!(v.as_dtype().is_some(), tag == Tag::DType);
    assert_eq!(v.as_device().is_some(), tag == Tag::Device);
    assert_eq!(v.as_scalar().is_some(), tag == Tag::Scalar);
}

#[test]
fn layout_is_16_bytes() {
    assert_eq!(std::mem::size_of::<StableValue>(), 16);
    assert_eq!(std::mem::align_of::<StableValue>(), 8);
    assert_eq!(std::mem::size_of::<Tag>(), 4);
}

#[test]
fn tag_numbers_round_trip() {
    let all = [
        Tag::None,
        Tag::Bool,
        Tag::Int,
        Tag::Float,
        Tag::Str,
        Tag::Tensor,
        Tag::List,
        Tag::DType,
        Tag::Device,
        Tag::Scalar,
        Tag::Generator,
        Tag::Stream,
    ];
    for (n, tag) in all.into_iter().enumerate() {
        assert_eq!(tag as u32, n as u32, "tag numbers are ABI");
        assert_eq!(Tag::from_u32(n as u32), Some(tag));
    }
    assert_eq!(Tag::from_u32(12), None);
    assert_eq!(Tag::from_u32(u32::MAX), None);
    assert_eq!(Tag::Tensor.to_string(), "Tensor");
    assert_eq!(Tag::DType.to_string(), "ScalarType");
}

#[test]
fn plain_tags_round_trip() {
    let v = StableValue::none();
    assert_only(&v, Tag::None);
    assert_eq!(v.aux(), 0);
    assert!(StableValue::default().is_none());

    for b in [false, true] {
        let v = StableValue::bool(b);
        assert_only(&v, Tag::Bool);
        assert_eq!(v.as_bool(), Some(b));
    }
    for i in [0, 1, -1, i64::MIN, i64::MAX] {
        let v = StableValue::int(i);
        assert_only(&v, Tag::Int);
        assert_eq!(v.as_int(), Some(i));
    }
    for f in [
        0.0,
        -0.0,
        1.5,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let v = StableValue::float(f);
        assert_only(&v, Tag::Float);
        assert_eq!(v.as_float().map(f64::to_bits), Some(f.to_bits()));
    }
    let nan = StableValue::float(f64::NAN);
    assert!(nan.as_float().is_some_and(f64::is_nan));

    for d in DType::ALL {
        let v = StableValue::dtype(d);
        assert_only(&v, Tag::DType);
        assert_eq!(v.as_dtype(), Some(d));
    }
    for d in [Device::Cpu, Device::Cuda(0), Device::Cuda(7), Device::Meta] {
        let v = StableValue::device(d);
        assert_only(&v, Tag::Device);
        assert_eq!(v.as_device(), Some(d));
    }
    for s in [
        Scalar::Int(-3),
        Scalar::Int(i64::MAX),
        Scalar::Float(2.5),
        Scalar::Bool(true),
        Scalar::Bool(false),
    ] {
        let v = StableValue::scalar(s);
        assert_only(&v, Tag::Scalar);
        assert_eq!(v.as_scalar(), Some(s));
    }
}

#[test]
fn owned_tags_round_trip() {
    let b = balance();
    {
        let v = StableValue::str("héllo");
        assert_only(&v, Tag::Str);
        assert_eq!(v.as_str(), Some("héllo"));
        assert_eq!(StableValue::str("").as_str(), Some(""));

        let t = tensor(&[1.0, 2.0]);
        let v = StableValue::tensor(t.clone());
        assert_only(&v, Tag::Tensor);
        assert!(v.as_tensor().is_some_and(|x| x.ptr_eq(&t)));

        let v = StableValue::list(List::Int(vec![1, 2, 3]));
        assert_only(&v, Tag::List);
        assert_eq!(v.aux(), Tag::Int as u32, "a list's aux is its element tag");
        assert!(matches!(v.as_list(), Some(List::Int(items)) if items == &[1, 2, 3]));
        let v = StableValue::list(List::Values(vec![StableValue::int(1), StableValue::none()]));
        assert_eq!(v.aux(), Tag::None as u32);
        assert_eq!(v.as_list().map(List::len), Some(2));
    }
    b.assert_balanced();
}

#[test]
fn clone_and_drop_of_str_keep_the_count() {
    let b = balance();
    let v = StableValue::str("abc");
    assert_eq!(b.delta(), 1);
    let w = v.clone();
    assert_eq!(b.delta(), 2, "a cloned str owns its own box");
    assert_eq!(w.as_str(), Some("abc"));
    assert_ne!(v.as_str().map(str::as_ptr), w.as_str().map(str::as_ptr));
    drop(v);
    assert_eq!(w.as_str(), Some("abc"));
    drop(w);
    b.assert_balanced();
}

#[test]
fn clone_and_drop_of_tensor_keep_the_count() {
    let b = balance();
    let t = tensor(&[1.0]);
    assert_eq!(b.delta(), 1);
    let v = StableValue::tensor(t.clone());
    assert_eq!(t.ref_count(), 2);
    let w = v.clone();
    assert_eq!(
        t.ref_count(),
        3,
        "cloning a tensor value takes one more reference"
    );
    assert_eq!(b.delta(), 1, "... but makes no new tensor");
    assert!(w.as_tensor().is_some_and(|x| x.ptr_eq(&t)));
    drop(v);
    drop(w);
    assert_eq!(t.ref_count(), 1);
    drop(t);
    b.assert_balanced();

    // The value as the last owner frees the tensor.
    let v = StableValue::tensor(tensor(&[2.0]));
    assert_eq!(b.delta(), 1);
    drop(v);
    b.assert_balanced();
}

#[test]
fn clone_and_drop_of_lists_keep_the_count() {
    let b = balance();
    let t = tensor(&[1.0]);
    let lists = [
        List::Bool(vec![true]),
        List::Int(vec![1, 2]),
        List::Float(vec![0.5]),
        List::Str(vec!["a".to_string()]),
        List::Tensor(vec![t.clone(), t.clone()]),
        List::Values(vec![
            StableValue::str("inner"),
            StableValue::tensor(t.clone()),
            StableValue::list(List::Int(vec![3])),
        ]),
    ];
    let before = b.delta();
    for list in lists {
        let refs = t.ref_count();
        let v = StableValue::list(list);
        let w = v.clone();
        assert!(b.delta() > before, "a list value owns a box");
        assert_eq!(w.as_list().map(List::len), v.as_list().map(List::len));
        assert!(t.ref_count() >= refs);
        drop(v);
        drop(w);
    }
    assert_eq!(
        t.ref_count(),
        1,
        "every tensor reference the lists held was released"
    );
    drop(t);
    b.assert_balanced();
}

#[test]
fn take_tensor_moves_ownership_out_once() {
    let b = balance();
    let t = tensor(&[4.0]);
    let mut v = StableValue::tensor(t.clone());
    let taken = v.take_tensor().unwrap();
    assert!(taken.ptr_eq(&t));
    assert!(v.is_none(), "take_tensor leaves None behind");
    assert!(v.take_tensor().is_none());
    assert_eq!(t.ref_count(), 2);
    drop(v);
    assert_eq!(
        t.ref_count(),
        2,
        "dropping the emptied value released nothing"
    );
    drop(taken);
    drop(t);
    b.assert_balanced();

    let mut i = StableValue::int(5);
    assert!(i.take_tensor().is_none());
    assert_eq!(
        i.as_int(),
        Some(5),
        "take_tensor of another tag leaves it alone"
    );
}

#[test]
fn describe_names_each_kind() {
    let _b = balance();
    let t = tensor(&[1.0]);
    let cases = [
        (StableValue::none(), "None"),
        (StableValue::bool(true), "bool"),
        (StableValue::int(1), "int"),
        (StableValue::float(1.0), "float"),
        (StableValue::str("s"), "str"),
        (StableValue::tensor(t.clone()), "Tensor"),
        (StableValue::dtype(DType::F32), "ScalarType"),
        (StableValue::device(Device::Cpu), "Device"),
        (StableValue::scalar(Scalar::Int(1)), "Scalar"),
        (StableValue::list(List::Bool(vec![])), "bool[]"),
        (StableValue::list(List::Int(vec![1])), "int[]"),
        (StableValue::list(List::Float(vec![])), "float[]"),
        (StableValue::list(List::Str(vec![])), "str[]"),
        (StableValue::list(List::Tensor(vec![t])), "Tensor[]"),
        (StableValue::list(List::Values(vec![])), "list"),
    ];
    for (v, text) in &cases {
        assert_eq!(v.describe(), *text);
    }
    // SAFETY: null handles for Tensor, Str and List, and plain bits for an invalid tag; none of
    // them owns anything.
    let raw = unsafe {
        [
            (
                StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0),
                "a null Tensor handle",
            ),
            (
                StableValue::from_raw_parts(Tag::Str as u32, 0, 0),
                "a null str handle",
            ),
            (
                StableValue::from_raw_parts(Tag::List as u32, 0, 0),
                "a null list handle",
            ),
            (StableValue::from_raw_parts(42, 0, 0), "an invalid tag 42"),
            (
                StableValue::from_raw_parts(u32::MAX, 0, 0),
                "an invalid tag 4294967295",
            ),
        ]
    };
    for (v, text) in &raw {
        assert_eq!(v.describe(), *text);
    }
}

#[test]
fn null_tensor_handle_is_refused_not_dereferenced() {
    let b = balance();
    // SAFETY: a null Tensor payload is allowed by from_raw_parts' contract.
    let mut v = unsafe { StableValue::from_raw_parts(Tag::Tensor as u32, 0, 0) };
    assert_eq!(v.tag(), Some(Tag::Tensor));
    assert!(v.as_tensor().is_none());
    assert!(<&Tensor>::from_stable(&v).is_err());
    assert!(Tensor::from_stable(&v).is_err());
    assert!(
        Option::<&Tensor>::from_stable(&v).is_err(),
        "null is not None"
    );
    assert_eq!(format!("{v:?}"), "Tensor(null)");
    let c = v.clone();
    assert!(
        c.as_tensor().is_none(),
        "a clone of a null handle holds no tensor"
    );
    assert!(v.take_tensor().is_none());
    drop(c);
    drop(v);
    b.assert_balanced();

    // Null Str and List handles are refused the same way, and dropping them is fine.
    // SAFETY: null payloads own nothing.
    let (s, l) = unsafe {
        (
            StableValue::from_raw_parts(Tag::Str as u32, 0, 0),
            StableValue::from_raw_parts(Tag::List as u32, 4, 0),
        )
    };
    assert!(s.as_str().is_none() && <&str>::from_stable(&s).is_err());
    assert!(l.as_list().is_none() && Vec::<i64>::from_stable(&l).is_err());
    drop((s.clone(), l.clone()));
    drop((s, l));
    b.assert_balanced();
}

#[test]
fn invalid_raw_values_are_refused() {
    let b = balance();
    // SAFETY: an out-of-range tag owns nothing, whatever its payload: drop must not free it.
    let v = unsafe { StableValue::from_raw_parts(12, 7, 0xdead_beef) };
    assert_eq!(v.tag(), None);
    assert_eq!(v.raw_tag(), 12);
    assert_eq!(v.aux(), 7);
    assert!(!v.is_none());
    assert!(
        v.as_int().is_none()
            && v.as_tensor().is_none()
            && v.as_str().is_none()
            && v.as_list().is_none()
    );
    assert_eq!(format!("{v:?}"), "Invalid(tag=12, aux=7, bits=0xdeadbeef)");
    assert_eq!(i64::from_stable(&v), Err(Mismatch));
    assert_eq!(Option::<i64>::from_stable(&v), Err(Mismatch));
    let c = v.clone();
    assert_eq!((c.raw_tag(), c.aux()), (12, 7));
    drop(c);
    drop(v);
    b.assert_balanced();

    // SAFETY: plain-bit tags with bit patterns no value of theirs has; none owns anything.
    let (dtype, device, scalar) = unsafe {
        (
            // Code 8 is PyTorch's complex32, which opbox has no dtype for.
            StableValue::from_raw_parts(Tag::DType as u32, 0, 8),
            StableValue::from_raw_parts(Tag::Device as u32, 0, 5 << 32),
            StableValue::from_raw_parts(Tag::Scalar as u32, 3, 1),
        )
    };
    assert_eq!(dtype.as_dtype(), None);
    assert_eq!(device.as_device(), None);
    assert_eq!(scalar.as_scalar(), None);
    assert_eq!(Scalar::from_stable(&scalar), Err(Mismatch));
    // SAFETY: as above.
    let cpu_with_index = unsafe { StableValue::from_raw_parts(Tag::Device as u32, 0, 1) };
    assert_eq!(cpu_with_index.as_device(), None);
}

#[test]
fn from_stable_checks_tags_and_converts() {
    let b = balance();
    {
        assert_eq!(i64::from_stable(&StableValue::int(3)), Ok(3));
        assert_eq!(i64::from_stable(&StableValue::float(3.0)), Err(Mismatch));
        assert_eq!(i64::from_stable(&StableValue::str("3")), Err(Mismatch));
        assert_eq!(
            f64::from_stable(&StableValue::int(3)),
            Ok(3.0),
            "float accepts an int"
        );
        assert_eq!(f64::from_stable(&StableValue::bool(true)), Err(Mismatch));
        assert_eq!(bool::from_stable(&StableValue::int(1)), Err(Mismatch));
        assert_eq!(<&str>::from_stable(&StableValue::str("x")), Ok("x"));
        assert_eq!(
            String::from_stable(&StableValue::str("x")),
            Ok("x".to_string())
        );
        assert_eq!(
            DType::from_stable(&StableValue::dtype(DType::BF16)),
            Ok(DType::BF16)
        );
        assert_eq!(
            Device::from_stable(&StableValue::device(Device::Meta)),
            Ok(Device::Meta)
        );
        assert_eq!(
            Scalar::from_stable(&StableValue::int(2)),
            Ok(Scalar::Int(2))
        );
        assert_eq!(
            Scalar::from_stable(&StableValue::float(0.5)),
            Ok(Scalar::Float(0.5))
        );
        assert_eq!(
            Scalar::from_stable(&StableValue::bool(true)),
            Ok(Scalar::Bool(true))
        );
        assert_eq!(Scalar::from_stable(&StableValue::str("1")), Err(Mismatch));

        let t = tensor(&[1.0]);
        let tv = StableValue::tensor(t.clone());
        assert!(<&Tensor>::from_stable(&tv).is_ok_and(|x| x.ptr_eq(&t)));
        assert!(Tensor::from_stable(&tv).is_ok_and(|x| x.ptr_eq(&t)));
        assert!(<&Tensor>::from_stable(&StableValue::int(0)).is_err());

        // Option: None is None, anything else must be the inner type.
        assert_eq!(Option::<i64>::from_stable(&StableValue::none()), Ok(None));
        assert_eq!(
            Option::<i64>::from_stable(&StableValue::int(4)),
            Ok(Some(4))
        );
        assert_eq!(
            Option::<i64>::from_stable(&StableValue::str("4")),
            Err(Mismatch)
        );
        assert!(Option::<&Tensor>::from_stable(&tv).is_ok_and(|x| x.is_some()));
        assert!(Option::<&Tensor>::from_stable(&StableValue::none()).is_ok_and(|x| x.is_none()));
    }
    b.assert_balanced();
}

#[test]
fn list_conversions() {
    let b = balance();
    {
        let ints = StableValue::list(List::Int(vec![1, 2]));
        let boxed_ints =
            StableValue::list(List::Values(vec![StableValue::int(1), StableValue::int(2)]));
        let mixed = StableValue::list(List::Values(vec![
            StableValue::int(1),
            StableValue::str("2"),
        ]));
        assert_eq!(Vec::<i64>::from_stable(&ints), Ok(vec![1, 2]));
        assert_eq!(Vec::<i64>::from_stable(&boxed_ints), Ok(vec![1, 2]));
        assert_eq!(Vec::<i64>::from_stable(&mixed), Err(Mismatch));
        assert_eq!(
            Vec::<i64>::from_stable(&StableValue::int(1)),
            Err(Mismatch),
            "an int is not an int[]"
        );
        assert_eq!(
            Vec::<f64>::from_stable(&ints),
            Ok(vec![1.0, 2.0]),
            "float[] accepts int[]"
        );
        assert_eq!(Vec::<bool>::from_stable(&ints), Err(Mismatch));
        assert_eq!(
            Vec::<Option<i64>>::from_stable(&boxed_ints),
            Ok(vec![Some(1), Some(2)])
        );

        // Slices borrow typed lists only.
        assert_eq!(<&[i64]>::from_stable(&ints), Ok(&[1i64, 2][..]));
        assert_eq!(<&[i64]>::from_stable(&boxed_ints), Err(Mismatch));
        assert_eq!(<&[f64]>::from_stable(&ints), Err(Mismatch));
        let strs = StableValue::list(List::Str(vec!["a".into(), "b".into()]));
        assert_eq!(<&[String]>::from_stable(&strs).map(<[String]>::len), Ok(2));
        assert_eq!(Vec::<&str>::from_stable(&strs), Ok(vec!["a", "b"]));
        assert_eq!(
            Vec::<String>::from_stable(&strs),
            Ok(vec!["a".to_string(), "b".to_string()])
        );

        let t = tensor(&[1.0]);
        let tensors = StableValue::list(List::Tensor(vec![t.clone(), t.clone()]));
        assert!(<&[Tensor]>::from_stable(&tensors).is_ok_and(|s| s.len() == 2 && s[1].ptr_eq(&t)));
        assert!(Vec::<&Tensor>::from_stable(&tensors).is_ok_and(|v| v.len() == 2));
        let boxed_tensors = StableValue::list(List::Values(vec![StableValue::tensor(t.clone())]));
        assert!(Vec::<&Tensor>::from_stable(&boxed_tensors).is_ok_and(|v| v[0].ptr_eq(&t)));
        assert_eq!(Vec::<&Tensor>::from_stable(&ints).err(), Some(Mismatch));
        assert_eq!(tensors.as_list().map(|l| l.tensors().count()), Some(2));
        assert_eq!(
            boxed_tensors.as_list().map(|l| l.tensors().count()),
            Some(1)
        );
        assert_eq!(ints.as_list().map(|l| l.tensors().count()), Some(0));
    }
    b.assert_balanced();
}

#[test]
fn into_stable_for_rust_types() {
    let b = balance();
    {
        let v = 7i32.into_stable();
        assert_eq!(v.as_int(), Some(7));
        assert_eq!((-1i32).into_stable().as_int(), Some(-1));
        let v = 1.5f32.into_stable();
        assert_eq!(v.as_float(), Some(1.5));
        assert_eq!(true.into_stable().as_bool(), Some(true));
        assert_eq!(3i64.into_stable().as_int(), Some(3));
        assert_eq!(0.25f64.into_stable().as_float(), Some(0.25));
        assert_eq!("s".into_stable().as_str(), Some("s"));
        assert_eq!(String::from("t").into_stable().as_str(), Some("t"));
        assert_eq!(
            Scalar::Float(1.0).into_stable().as_scalar(),
            Some(Scalar::Float(1.0))
        );
        assert_eq!(DType::I64.into_stable().as_dtype(), Some(DType::I64));
        assert_eq!(
            Device::Cuda(1).into_stable().as_device(),
            Some(Device::Cuda(1))
        );
        assert!(None::<i64>.into_stable().is_none());
        assert_eq!(Some(9i64).into_stable().as_int(), Some(9));
        assert_eq!(StableValue::int(2).into_stable().as_int(), Some(2));

        // Plain element types make typed lists; i32 and f32 widen.
        let typed = |v: StableValue| v.as_list().map(List::describe);
        assert_eq!(typed(vec![1i32, 2].into_stable()), Some("int[]".into()));
        assert!(
            matches!(vec![1i32, -2].into_stable().as_list(), Some(List::Int(v)) if v == &[1, -2])
        );
        assert!(
            matches!(vec![0.5f32].into_stable().as_list(), Some(List::Float(v)) if v == &[0.5])
        );
        assert!(
            matches!((&[1i64, 2][..]).into_stable().as_list(), Some(List::Int(v)) if v == &[1, 2])
        );
        assert!(
            matches!([true, false].into_stable().as_list(), Some(List::Bool(v)) if v == &[true, false])
        );
        assert!(
            matches!(vec!["a", "b"].into_stable().as_list(), Some(List::Str(v)) if v.len() == 2)
        );
        assert_eq!(typed(vec![1.0f64].into_stable()), Some("float[]".into()));
        assert_eq!(typed(Vec::<i64>::new().into_stable()), Some("int[]".into()));

        // Optional elements are boxed values.
        let opts = vec![Some(1i64), None].into_stable();
        assert_eq!(typed(opts.clone()), Some("list".into()));
        assert_eq!(
            Vec::<Option<i64>>::from_stable(&opts),
            Ok(vec![Some(1), None])
        );

        let t = tensor(&[1.0]);
        let ts = vec![&t, &t].into_stable();
        assert!(matches!(ts.as_list(), Some(List::Tensor(v)) if v.len() == 2 && v[0].ptr_eq(&t)));
        assert_eq!(t.ref_count(), 3);
        let one = (&t).into_stable();
        assert_eq!(t.ref_count(), 4);
        drop((ts, one));
        assert_eq!(t.ref_count(), 1);
    }
    b.assert_balanced();
}

#[test]
fn stack_stays_inline_up_to_16_then_spills() {
    let b = balance();
    let mut stack = Stack::new();
    for i in 0..INLINE_SLOTS as i64 {
        stack.push(i);
    }
    assert_eq!(stack.len(), 16);
    assert!(!stack.spilled(), "16 values fit inline");
    stack.push("spill");
    let t = tensor(&[1.0]);
    for _ in 0..3 {
        stack.push(&t);
    }
    assert!(stack.spilled());
    assert_eq!(stack.len(), 20);
    assert_eq!(stack[5].as_int(), Some(5));
    assert_eq!(stack.get(16).and_then(StableValue::as_str), Some("spill"));
    assert!(stack
        .get(19)
        .and_then(StableValue::as_tensor)
        .is_some_and(|x| x.ptr_eq(&t)));
    assert!(stack.get(20).is_none());
    assert_eq!(
        t.ref_count(),
        1,
        "`push(&t)` borrows the handle for the stack's lifetime"
    );

    let copy = stack.clone();
    assert_eq!(copy.len(), 20);
    assert_eq!(t.ref_count(), 4, "a cloned stack owns its references");
    drop(copy);
    assert_eq!(t.ref_count(), 1);

    let popped = stack.pop().expect("a value");
    assert!(popped.as_tensor().is_some_and(|x| x.ptr_eq(&t)));
    assert_eq!(t.ref_count(), 2, "a popped value owns its reference");
    drop(popped);
    assert_eq!(t.ref_count(), 1);
    stack.clear();
    assert!(stack.is_empty());
    assert_eq!(t.ref_count(), 1);
    drop(t);
    b.assert_balanced();
}

#[test]
fn stack_outputs_and_release_front() {
    let b = balance();
    let t = tensor(&[1.0]);
    let mut stack: Stack = [StableValue::str("arg"), StableValue::tensor(t.clone())]
        .into_iter()
        .collect();
    let base = stack.reserve_outputs(2);
    assert_eq!(stack.len(), 4);
    assert!(stack[2].is_none() && stack[3].is_none());
    // SAFETY: `base` points at the stack's 4 initialised values; slot 2 is None, so overwriting
    // it drops nothing, and no other reference to the stack is live.
    unsafe { *base.add(2) = StableValue::int(42) };
    stack.release_front(2);
    assert_eq!(stack.len(), 2);
    assert_eq!(stack[0].as_int(), Some(42));
    assert!(stack[1].is_none());
    assert_eq!(
        t.ref_count(),
        1,
        "the released arguments dropped their handles"
    );
    stack.release_front(10);
    assert!(stack.is_empty());

    let values: Vec<StableValue> = Stack::from_iter([StableValue::str("x"), StableValue::int(1)])
        .into_iter()
        .collect();
    assert_eq!(values[0].as_str(), Some("x"));
    drop(values);
    drop(t);
    b.assert_balanced();
}

#[test]
fn values_move_between_threads() {
    let b = balance();
    let t = tensor(&[3.0]);
    let mut stack = Stack::new();
    // An owned handle: a stack that borrows `&t` could not be sent to another thread.
    stack.push(t.clone()).push("s").push(vec![1i64, 2]);
    let (back, freed_there) = std::thread::spawn(move || {
        let n = stack.len();
        let before = live_boxes_on_this_thread();
        drop(stack);
        (n, live_boxes_on_this_thread() - before)
    })
    .join()
    .unwrap();
    assert_eq!(back, 3);
    assert_eq!(t.ref_count(), 1);
    drop(t);
    // The tensor was made and dropped here; the two boxes were made here and freed on the
    // other thread: the two threads' counts together balance.
    assert_eq!(freed_there, -2, "the other thread frees both boxes");
    assert_eq!(
        b.delta() + freed_there,
        0,
        "live handles changed: a leak (> 0) or a double free (< 0)"
    );
}

#[test]
fn borrowed_tensor_values_never_touch_the_reference_count() {
    let b = balance();
    let t = tensor(&[1.0, 2.0]);
    {
        // SAFETY: the value is dropped at the end of this block, before `t`.
        let mut v = unsafe { StableValue::tensor_borrowed(&t) };
        assert_eq!(t.ref_count(), 1);
        assert!(v.as_tensor().is_some_and(|seen| seen.ptr_eq(&t)));
        let owned = v.clone();
        assert_eq!(
            t.ref_count(),
            2,
            "a clone of a borrowed value owns a reference"
        );
        drop(owned);
        let taken = v
            .take_tensor()
            .expect("a borrowed tensor can be taken as a new handle");
        assert_eq!(t.ref_count(), 2);
        assert!(v.is_none());
        drop(taken);
    }
    assert_eq!(t.ref_count(), 1);
    drop(t);
    b.assert_balanced();
}

#[test]
fn release_front_drops_the_arguments_and_keeps_the_outputs() {
    let b = balance();
    let t = tensor(&[3.0]);
    let mut stack = Stack::new();
    stack.push(&t).push("arg").push(vec![1i64, 2]);
    let base = stack.reserve_outputs(2);
    // SAFETY: the two output slots reserved above are in bounds and hold None.
    unsafe {
        *base.add(3) = StableValue::int(7);
        *base.add(4) = StableValue::str("out");
    }
    stack.release_front(3);
    assert_eq!(stack.len(), 2);
    assert_eq!(stack[0].as_int(), Some(7));
    assert_eq!(stack[1].as_str(), Some("out"));
    assert_eq!(t.ref_count(), 1, "the tensor argument was released");
    drop(stack);
    drop(t);
    b.assert_balanced();
}

#[test]
fn generators_are_owned_handles_and_streams_plain_values() {
    use crate::{Generator, Stream};
    let balance = balance();
    let g = Generator::with_offset(9, 4);
    let v = StableValue::generator(g.clone());
    assert_eq!(v.tag(), Some(Tag::Generator));
    let copy = v.clone();
    assert_eq!(
        balance.delta(),
        2,
        "each Generator value owns one reference"
    );
    let back = copy.as_generator().map(|b| b.same_state(&g));
    assert_eq!(back, Some(true));
    drop(v);
    drop(copy);
    balance.assert_balanced();
    assert_eq!(StableValue::int(1).as_generator().map(|g| g.seed()), None);

    let s = StableValue::stream(Stream::new(-1, 0xdead_beef));
    assert_eq!(s.as_stream(), Some(Stream::new(-1, 0xdead_beef)));
    assert_eq!(s.clone().as_stream(), Some(Stream::new(-1, 0xdead_beef)));
    assert_eq!(s.describe(), "Stream");
    assert_eq!(StableValue::int(3).as_stream(), None);
}

#[test]
fn overwrite_plain_releases_the_old_value_and_writes_the_new_one() {
    let b = balance();
    let t = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let mut values = [
        StableValue::str("owned"),
        StableValue::tensor(t.clone()),
        StableValue::list(List::Int(vec![1, 2])),
        StableValue::none(),
    ];
    let (tag, aux, payload) = {
        let v = StableValue::scalar(Scalar::Float(2.5));
        (v.raw_tag(), v.aux(), v.raw_bits())
    };
    for v in &mut values {
        // SAFETY: Scalar is a plain tag.
        unsafe { v.overwrite_plain(tag, aux, payload) };
        assert_eq!(v.as_scalar(), Some(Scalar::Float(2.5)));
    }
    // SAFETY: Int is a plain tag.
    unsafe { values[0].overwrite_plain(Tag::Int as u32, 0, 7u64) };
    assert_eq!(values[0].as_int(), Some(7));
    drop(values);
    drop(t);
    b.assert_balanced();
}

#[test]
fn lend_borrows_a_str_list_for_the_call() {
    use super::{ParamFamily, StrScratch, TypedKey};
    // Each parameter type's family is its typed key, as generated shims name it.
    type Names = <&'static [&'static str] as TypedKey>::Key;
    type MaybeNames = <Option<&'static [&'static str]> as TypedKey>::Key;
    let typed = StableValue::list(List::Str(vec!["N".into(), "C".into()]));
    let boxed = StableValue::list(List::Values(vec![
        StableValue::str("H"),
        StableValue::str("W"),
    ]));
    let mut scratch = StrScratch::default();
    let names = Names::lend(&typed, &mut scratch).unwrap();
    assert_eq!(names, ["N", "C"]);
    let mut scratch = StrScratch::default();
    let names = Names::lend(&boxed, &mut scratch).unwrap();
    assert_eq!(names, ["H", "W"]);
    let (none, int) = (StableValue::none(), StableValue::int(1));
    let mut scratch = StrScratch::default();
    assert_eq!(MaybeNames::lend(&none, &mut scratch), Ok(None));
    let mut scratch = StrScratch::default();
    assert_eq!(
        MaybeNames::lend(&typed, &mut scratch),
        Ok(Some(&["N", "C"][..]))
    );
    let mixed = StableValue::list(List::Values(vec![
        StableValue::str("a"),
        StableValue::int(1),
    ]));
    let mut scratch = StrScratch::default();
    assert_eq!(Names::lend(&mixed, &mut scratch), Err(Mismatch));
    let mut scratch = StrScratch::default();
    assert_eq!(Names::lend(&int, &mut scratch), Err(Mismatch));
    // Every other type lends straight from the value, as `FromStable` unboxes it.
    assert_eq!(
        <i64 as ParamFamily>::lend(&StableValue::int(4), &mut ()),
        Ok(4)
    );
    type MaybeInts = <Option<Vec<i64>> as TypedKey>::Key;
    let ints = StableValue::list(List::Int(vec![1, 2]));
    assert_eq!(MaybeInts::lend(&ints, &mut ()), Ok(Some(vec![1, 2])));
    assert_eq!(MaybeInts::lend(&none, &mut ()), Ok(None));
    assert_eq!(MaybeInts::lend(&typed, &mut ()), Err(Mismatch));
    type Text = <&'static str as TypedKey>::Key;
    assert_eq!(Text::lend(&StableValue::str("x"), &mut ()), Ok("x"));
}

/// `clear` releases every owned value, however it got in (a push, a boxed value, a write
/// through the mutable slice, a kernel's outputs, a clone, which counts what it borrows), and
/// no borrowed one. (A flag that let `clear` skip stacks owning nothing was tried and undone:
/// it cost the boxed tensor call 5 ns on an H100. An optimization like it must keep this.)
#[test]
fn clear_releases_every_owned_value_however_it_got_in() {
    let b = balance();
    let t = tensor(&[1.0]);
    let mut stack = Stack::new();

    stack.push(&t).push(2.0).push(3i64);
    stack.clear();
    assert_eq!(t.ref_count(), 1, "a borrowed tensor is not released");

    stack.push(2.0).push(t.clone());
    assert_eq!(t.ref_count(), 2);
    stack.clear();
    assert_eq!(t.ref_count(), 1, "a pushed owned tensor is released");

    let strings = balance();
    stack.push(1i64).push_value(StableValue::str("boxed"));
    stack.clear();
    strings.assert_balanced();

    stack.push(1i64).push(2i64);
    stack.as_mut_slice()[1] = StableValue::tensor(t.clone());
    stack.clear();
    assert_eq!(
        t.ref_count(),
        1,
        "a value written through the slice is released"
    );

    stack.push(1i64);
    let base = stack.reserve_outputs(1);
    // SAFETY: the output slot reserved above is in bounds and holds None.
    unsafe { *base.add(1) = StableValue::tensor(t.clone()) };
    stack.truncate(0);
    assert_eq!(t.ref_count(), 1, "a kernel's output is released");

    stack.push(&t);
    let mut copy = stack.clone();
    assert_eq!(t.ref_count(), 2, "the clone owns what the stack borrowed");
    stack.clear();
    copy.clear();
    assert_eq!(t.ref_count(), 1, "and releases it");

    drop(t);
    b.assert_balanced();
}
