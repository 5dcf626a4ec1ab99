//! Typed pops and peeks: every returnable type, the errors, and ownership.

use crate::value::tests::balance;
use crate::value::{List, StableValue, Stack};
use crate::{DType, Device, Error, Scalar, Tensor};

fn tensor(values: &[f32]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).expect("a cpu tensor")
}

#[test]
fn pops_read_each_returnable_type() {
    let b = balance();
    let t = tensor(&[1.0, 2.0]);
    let mut stack = Stack::new();
    stack
        .push(&t)
        .push(3i64)
        .push(2.5)
        .push(true)
        .push("name")
        .push(DType::F16)
        .push(Device::Cpu)
        .push(Scalar::Int(7))
        .push(vec![1i64, 2])
        .push(Option::<i64>::None)
        .push(4i64);
    assert_eq!(stack.pop_float().unwrap(), 4.0, "an int reads as a float");
    assert_eq!(stack.pop_as::<Option<i64>>().unwrap(), None);
    assert_eq!(stack.pop_as::<Vec<i64>>().unwrap(), vec![1, 2]);
    assert_eq!(stack.pop_as::<Scalar>().unwrap(), Scalar::Int(7));
    assert_eq!(stack.pop_as::<Device>().unwrap(), Device::Cpu);
    assert_eq!(stack.pop_as::<DType>().unwrap(), DType::F16);
    assert_eq!(stack.pop_str().unwrap(), "name");
    assert!(stack.pop_bool().unwrap());
    assert_eq!(stack.pop_float().unwrap(), 2.5);
    assert_eq!(stack.pop_int().unwrap(), 3);
    let popped = stack.pop_tensor().unwrap();
    assert!(popped.ptr_eq(&t));
    assert_eq!(t.ref_count(), 2, "a popped tensor owns its reference");
    assert!(stack.is_empty());
    drop((popped, t));
    b.assert_balanced();
}

#[test]
fn a_wrong_tag_is_an_error_naming_both_and_the_value_stays() {
    let b = balance();
    let mut stack = Stack::new();
    stack.push(3i64);
    let err = stack.pop_tensor().unwrap_err();
    assert_eq!(
        err,
        Error::StackValue {
            expected: "Tensor".to_string(),
            got: Some("int".to_string())
        }
    );
    assert_eq!(
        err.to_string(),
        "the stack's top value is int, which cannot be read as `Tensor`"
    );
    assert_eq!(
        stack.len(),
        1,
        "a refused pop leaves the value on the stack"
    );
    assert_eq!(stack.pop_int().unwrap(), 3);

    stack.push(vec![1i64, 2]);
    assert_eq!(
        stack.pop_as::<Vec<bool>>().unwrap_err().to_string(),
        "the stack's top value is int[], which cannot be read as `Vec<bool>`"
    );
    assert_eq!(
        stack.peek_as::<&str>().unwrap_err().to_string(),
        "the stack's top value is int[], which cannot be read as `&str`"
    );
    drop(stack);
    b.assert_balanced();
}

#[test]
fn an_empty_stack_is_an_error() {
    let mut stack = Stack::new();
    let err = stack.pop_as::<Option<Tensor>>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the stack is empty: there is no value to read as `Option<Tensor>`"
    );
    assert_eq!(
        stack.peek_tensor().unwrap_err().to_string(),
        "the stack is empty: there is no value to read as `&Tensor`"
    );
}

#[test]
fn peeks_borrow_and_leave_the_stack_alone() {
    let b = balance();
    let t = tensor(&[5.0]);
    let mut stack = Stack::new();
    stack.push(&t);
    assert!(stack.peek_tensor().unwrap().ptr_eq(&t));
    assert_eq!(t.ref_count(), 1, "a peek takes no reference");
    stack.clear();
    stack.push_value(StableValue::list(List::Int(vec![4, 5])));
    assert_eq!(stack.peek_as::<&[i64]>().unwrap(), &[4, 5]);
    assert_eq!(stack.peek_as::<Vec<f64>>().unwrap(), vec![4.0, 5.0]);
    assert_eq!(stack.len(), 1);
    drop(stack);
    drop(t);
    b.assert_balanced();
}
