//! `str[]` and `Dimname[]` arguments in every Rust form a kernel can take them: `&[&str]` (lent
//! by the shim, borrowing the stack's strings), `Option<&[&str]>`, `Vec<&str>`, `Vec<String>` and
//! `&[String]`; typed and boxed calls, and the error for a list of something else.

use std::cell::Cell;

use opbox::prelude::*;
use opbox::value::List;

#[stable_library(names)]
fn names(m: &mut Library) {
    m.def("align(Tensor(a) self, Dimname[] names) -> str");
    m.def("join(str[] parts, str sep=\",\") -> str");
    m.def("maybe(str[]? parts=None) -> int");
    m.def("owned(str[] a, str[] b, Dimname[] c) -> int");
}

thread_local! {
    /// The address of the first name the last kernel of this file received.
    static SEEN: Cell<usize> = const { Cell::new(0) };
}

fn saw(names: &[&str]) {
    SEEN.with(|s| s.set(names.first().map_or(0, |n| n.as_ptr() as usize)));
}

#[stable_impl(names, CPU)]
mod cpu {
    use super::saw;
    use opbox::prelude::*;

    pub fn align(_x: &Tensor, names: &[&str]) -> String {
        saw(names);
        names.concat()
    }
    pub fn join(parts: &[&str], sep: &str) -> String {
        saw(parts);
        parts.join(sep)
    }
    pub fn maybe(parts: Option<&[&str]>) -> i64 {
        parts.map_or(-1, |p| p.len() as i64)
    }
    pub fn owned(a: Vec<&str>, b: Vec<String>, c: &[String]) -> i64 {
        (a.len() * 100 + b.len() * 10 + c.len()) as i64
    }
}

/// The one output a call left on the stack, as a string.
fn popped(stack: &mut Stack) -> String {
    let value = stack.pop().expect("one output");
    value.as_str().expect("a str output").to_string()
}

fn tensor() -> Tensor {
    Tensor::from_vec(vec![1.0f32], &[1]).expect("a tensor")
}

#[test]
fn a_typed_call_of_a_str_slice_reaches_the_kernel_directly() -> Result<()> {
    let x = tensor();
    let names: [&str; 3] = ["N", "C", "H"];
    let got: String = opbox::op("names::align")?.call((&x, names.as_slice()))?;
    assert_eq!(got, "NCH");
    let first = SEEN.with(|s| s.get());
    assert_eq!(first, names[0].as_ptr() as usize, "the caller's own &str");
    // Another form of the same list goes through the boxed path: the kernel sees the stack's
    // copies, lent as a slice.
    let got: String = opbox::op("names::align")?.call((&x, vec!["W".to_string()]))?;
    assert_eq!(got, "W");
    Ok(())
}

#[test]
fn boxed_calls_lend_the_stacks_strings() -> Result<()> {
    let join = opbox::op("names::join")?;
    let mut stack = Stack::new();
    stack.push(vec!["a", "b", "c"]);
    join.call_boxed(&mut stack)?;
    assert_eq!(popped(&mut stack), "a,b,c", "with the default separator");
    // Boxed string values, not a typed list, and more names than the scratch holds inline.
    let parts: Vec<StableValue> = (0..12).map(|i| StableValue::str(i.to_string())).collect();
    let mut stack = Stack::new();
    stack.push(StableValue::list(List::Values(parts))).push("");
    join.call_boxed(&mut stack)?;
    assert_eq!(popped(&mut stack), "01234567891011");
    // An empty list and the `str[]?` forms.
    let empty: String = join.call((Vec::<String>::new(), "-"))?;
    assert_eq!(empty, "");
    let maybe = opbox::op("names::maybe")?;
    assert_eq!(maybe.call::<_, i64>(())?, -1);
    assert_eq!(maybe.call::<_, i64>((Some(vec!["x", "y"]),))?, 2);
    Ok(())
}

#[test]
fn the_owned_forms_still_work() -> Result<()> {
    let n: i64 =
        opbox::op("names::owned")?.call((vec!["a"], vec!["b", "c"], vec!["d", "e", "f"]))?;
    assert_eq!(n, 123);
    Ok(())
}

#[test]
fn a_list_of_something_else_names_the_argument() -> Result<()> {
    let x = tensor();
    let mut stack = Stack::new();
    stack.push(&x).push(vec![1i64, 2]);
    let err = opbox::op("names::align")?
        .call_boxed(&mut stack)
        .expect_err("an int list is no Dimname[]");
    assert_eq!(
        err.to_string(),
        "names::align expects argument #1 (names) to be Dimname[], but got int[]"
    );
    let mixed = List::Values(vec![StableValue::str("a"), StableValue::int(1)]);
    let mut stack = Stack::new();
    stack.push(StableValue::list(mixed));
    let err = opbox::op("names::join")?
        .call_boxed(&mut stack)
        .expect_err("an int among the strings");
    assert_eq!(
        err.to_string(),
        "names::join expects argument #0 (parts) to be str[], but got list"
    );
    Ok(())
}
