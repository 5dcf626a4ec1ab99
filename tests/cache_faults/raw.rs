//! The raw kernel entry (a registration's `BoxedKernel`, as the dispatcher calls it) and raw
//! values:
//! 5. a kernel panics with a payload whose drop panics too: the payload is leaked on purpose
//!    and counted, and the process lives (a child process, so that the old abort would show as
//!    its exit status, not end this binary);
//! 14. a null stack for a call with no values runs it, and is refused with a message naming the
//!    null pointer otherwise; a Tensor value with a stray aux owns its reference; a DType,
//!    Device or Scalar payload that does not decode is named as invalid.

use std::process::ExitCode;

use opbox::dispatch::{
    leaked_panic_payloads, take_last_error, KernelGroup, KernelRegistration, STATUS_ERROR,
    STATUS_OK,
};
use opbox::prelude::*;
use opbox::tensor::live_tensors_on_this_thread;
use opbox::Tag;

use crate::harness::{ensure, s, Outcome, TestResult};

const CHILD: &str = "--child-bomb";

pub fn bomb() -> TestResult {
    let (status, stdout, shown) = crate::run_child(|c| c.arg(CHILD))?;
    ensure(
        status.success()
            && stdout.contains("cache_faults::bomb panicked: a non-string panic payload")
            && stdout.contains("leaked 1"),
        || shown,
    )?;
    Ok(Outcome::Pass)
}

/// The child: calls the bomb and says what came back and how many payloads were leaked.
pub fn child(args: &[String]) -> Option<ExitCode> {
    args.iter().find(|a| *a == CHILD)?;
    let before = leaked_panic_payloads();
    let result = opbox::op("cache_faults::bomb").and_then(|op| op.call::<_, ()>(()));
    match result {
        Err(e @ Error::KernelPanic { .. }) => println!("{e}"),
        other => {
            println!("expected a caught panic, got {other:?}");
            return Some(ExitCode::FAILURE);
        }
    }
    println!("leaked {}", leaked_panic_payloads() - before);
    Some(ExitCode::SUCCESS)
}

/// The op's registered kernel, which the dispatcher calls with the op's static data.
fn kernel_of(op: &str) -> Result<&'static KernelRegistration, String> {
    // Each #[stable_impl] registers its kernels as one group.
    inventory::iter::<KernelGroup>
        .into_iter()
        .flat_map(|group| group.kernels)
        .find(|r| r.op.name() == op)
        .ok_or_else(|| format!("no kernel registered for {op}"))
}

pub fn null_stack() -> TestResult {
    let nothing = kernel_of("cache_faults::nothing")?;
    // SAFETY: a call with no arguments and no outputs reads no stack, null or not.
    let status = unsafe { nothing.kernel.call(nothing.op, std::ptr::null_mut(), 0, 0) };
    ensure(status == STATUS_OK, || {
        format!("status {status}: {:?}", take_last_error())
    })?;
    let one = kernel_of("cache_faults::one")?;
    // SAFETY: the entry must refuse a null stack before reading it.
    let status = unsafe { one.kernel.call(one.op, std::ptr::null_mut(), 1, 1) };
    let message = take_last_error().map(|e| e.to_string()).unwrap_or_default();
    ensure(
        status == STATUS_ERROR
            && message == "invalid argument: cache_faults::one: the stack pointer is null, but the call passes 2 values",
        || format!("status {status}: {message}"),
    )?;
    Ok(Outcome::Pass)
}

pub fn stray_aux() -> TestResult {
    for aux in [1, 2, 0x8000_0000, u32::MAX] {
        let before = live_tensors_on_this_thread();
        let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).map_err(s)?;
        let raw = t.into_raw() as u64;
        // SAFETY: `raw` is one owned Tensor reference, handed over to the value.
        let v = unsafe { StableValue::from_raw_parts(Tag::Tensor as u32, aux, raw) };
        ensure(v.as_tensor().is_some_and(|t| t.numel() == 2), || {
            format!("aux {aux:#x}: the value holds the tensor")
        })?;
        drop(v);
        ensure(live_tensors_on_this_thread() == before, || {
            format!("aux {aux:#x}: dropping the value leaked its tensor")
        })?;
    }
    Ok(Outcome::Pass)
}

pub fn invalid_payloads() -> TestResult {
    let cases = [
        (
            "cache_faults::dtype_code",
            Tag::DType,
            0,
            999,
            "expects argument #0 (d) to be ScalarType, but got an invalid ScalarType (code 999)",
        ),
        (
            "cache_faults::device_kind",
            Tag::Device,
            0,
            5 << 32,
            "expects argument #0 (d) to be Device, but got an invalid Device (bits 0x500000000)",
        ),
        (
            "cache_faults::scalar_kind",
            Tag::Scalar,
            3,
            1,
            "expects argument #0 (s) to be Scalar, but got an invalid Scalar (kind 3)",
        ),
    ];
    for (name, tag, aux, bits, expected) in cases {
        let op = opbox::op(name).map_err(s)?;
        // SAFETY: plain-bit tags own nothing, whatever their payload.
        let value = unsafe { StableValue::from_raw_parts(tag as u32, aux, bits) };
        let mut stack: Stack = [value].into_iter().collect();
        let message = match op.call_boxed(&mut stack) {
            Ok(()) => return Err(format!("{name} accepted an invalid payload")),
            Err(e) => e.to_string(),
        };
        ensure(message == format!("{name} {expected}"), || message.clone())?;
    }
    Ok(Outcome::Pass)
}
