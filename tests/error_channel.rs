//! The error and warning channel (issue 16, item 5): a kernel's error keeps the op's name
//! whatever its type, nested op calls chain, `opbox::warn!` reaches the host's handler, and a
//! mixed-device `Tensor[]` names the element.

use std::sync::{Arc, Mutex};

use opbox::prelude::*;
use opbox::warnings::{with_warning_handler, Warning};

#[stable_library(chain)]
fn chain(m: &mut Library) {
    m.def("inner(int x) -> int");
    m.def("outer(int x) -> int");
    m.def("outermost(int x) -> int");
    m.def("shaped(Tensor x) -> Tensor");
    m.def("warns(int x) -> int");
    m.def("count(Tensor[] xs) -> int");
}

#[stable_impl(chain, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn inner(x: i64) -> Result<i64> {
        if x < 0 {
            return Err(Error::msg(format!("{x} is negative")));
        }
        Ok(x * 2)
    }
    pub fn outer(x: i64) -> Result<i64> {
        let inner = opbox::op("chain::inner")?;
        let y: i64 = inner.call((x,))?;
        Ok(y + 1)
    }
    pub fn outermost(x: i64) -> Result<i64> {
        opbox::op("chain::outer")?.call((x,))
    }
    pub fn shaped(x: &Tensor) -> Result<Tensor> {
        // A shape error through `?`, not a message.
        x.reshape(&[7])
    }
    pub fn warns(x: i64) -> i64 {
        opbox::warn!("warns got {x}; clamping to 10");
        x.min(10)
    }
    pub fn count(xs: &[Tensor]) -> i64 {
        xs.len() as i64
    }
}

#[test]
fn any_error_type_keeps_the_op_name() {
    let x = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let op = opbox::op("chain::shaped").unwrap();
    let typed = op.call::<_, Tensor>((&x,)).unwrap_err();
    let mut stack = Stack::new();
    stack.push(x.clone());
    let boxed = op.call_boxed(&mut stack).unwrap_err();
    for err in [typed, boxed] {
        assert!(
            matches!(&err, Error::InOp { op, source } if op == "chain::shaped" && matches!(**source, Error::Shape(_))),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with("chain::shaped: shape error: "),
            "{err}"
        );
        assert_eq!(err.op(), Some("chain::shaped"));
        assert!(matches!(err.root(), Error::Shape(_)));
    }
}

#[test]
fn nested_calls_give_a_chain() {
    let outer = opbox::op("chain::outer").unwrap();
    assert_eq!(outer.call::<_, i64>((4i64,)).unwrap(), 9);
    let err = outer.call::<_, i64>((-1i64,)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chain::outer -> chain::inner: -1 is negative"
    );
    assert_eq!(err.op_chain(), ["chain::outer", "chain::inner"]);
    assert!(
        matches!(err.root(), Error::Kernel { op, message } if op == "chain::inner" && message == "-1 is negative")
    );
    // std's source chain sees it too.
    let source = std::error::Error::source(&err).expect("a source");
    assert_eq!(source.to_string(), "chain::inner: -1 is negative");

    let three = opbox::op("chain::outermost").unwrap();
    let err = three.call::<_, i64>((-5i64,)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chain::outermost -> chain::outer -> chain::inner: -5 is negative"
    );
    assert_eq!(
        err.op_chain(),
        ["chain::outermost", "chain::outer", "chain::inner"]
    );
}

#[test]
fn a_kernels_warning_reaches_the_handler() {
    let seen: Arc<Mutex<Vec<Warning>>> = Arc::default();
    let sink = seen.clone();
    let op = opbox::op("chain::warns").unwrap();
    let results: Vec<i64> = with_warning_handler(
        move |w| sink.lock().unwrap().push(w.clone()),
        || {
            (0..3)
                .map(|i| op.call::<_, i64>((20 + i,)).unwrap())
                .collect()
        },
    );
    assert_eq!(results, [10, 10, 10]);
    let seen = seen.lock().unwrap();
    // Once per call site (TORCH_WARN_ONCE); warn_always is tested in the runtime's unit tests.
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].message, "warns got 20; clamping to 10");
    assert!(
        seen[0].file.ends_with("error_channel.rs"),
        "{}",
        seen[0].file
    );
}

#[test]
fn mixed_devices_in_a_list_name_the_elements() {
    let cpu = Tensor::zeros(&[1], DType::F32, Device::Cpu).unwrap();
    let meta = Tensor::empty(&[1], DType::F32, Device::Meta).unwrap();
    let op = opbox::op("chain::count").unwrap();
    let err = op
        .call::<_, i64>((vec![cpu.clone(), cpu, meta],))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "chain::count got tensors on different devices: argument #0 (xs[0]) is on cpu, \
         argument #0 (xs[2]) is on meta; move them to one device first"
    );
}
