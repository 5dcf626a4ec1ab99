//! Every error a kernel can return, as the caller reads it: under the op's name (issue 18 §6).
//! `covered` matches every variant, so a new one fails to compile here until its message under
//! an op is checked too.

use super::kernel::kernel_error;
use crate::error::{Error, Site};
use crate::Device;

const OP: &str = "mylib::outer";

fn site() -> Site {
    Site {
        file: "src/lib.rs",
        line: 3,
    }
}

fn s(text: &str) -> String {
    text.to_string()
}

/// The variant's name: an exhaustive match, so that every variant has a sample below.
fn covered(e: &Error) -> &'static str {
    match e {
        Error::ArgType { .. } => "ArgType",
        Error::ArgCount { .. } => "ArgCount",
        Error::ReturnType { .. } => "ReturnType",
        Error::StackValue { .. } => "StackValue",
        Error::ReturnCount { .. } => "ReturnCount",
        Error::NoKernel { .. } => "NoKernel",
        Error::MixedDevices { .. } => "MixedDevices",
        Error::UnknownOp { .. } => "UnknownOp",
        Error::DuplicateLibrary { .. } => "DuplicateLibrary",
        Error::DuplicateOp { .. } => "DuplicateOp",
        Error::DuplicateImpl { .. } => "DuplicateImpl",
        Error::ImplWithoutDef { .. } => "ImplWithoutDef",
        Error::FragmentWithoutLibrary { .. } => "FragmentWithoutLibrary",
        Error::Registration(_) => "Registration",
        Error::Kernel { .. } => "Kernel",
        Error::InOp { .. } => "InOp",
        Error::KernelPanic { .. } => "KernelPanic",
        Error::IndexOutOfBounds { .. } => "IndexOutOfBounds",
        Error::Shape(_) => "Shape",
        Error::DType { .. } => "DType",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::Unsupported(_) => "Unsupported",
        Error::StorageBusy(_) => "StorageBusy",
        Error::Message(_) => "Message",
        Error::NoCuda { .. } => "NoCuda",
        Error::Cuda { .. } => "Cuda",
        Error::Compile { .. } => "Compile",
        Error::KernelCheck { .. } => "KernelCheck",
        Error::NativeTypeConflict { .. } => "NativeTypeConflict",
        Error::BuiltinConflict { .. } => "BuiltinConflict",
        Error::Graph { .. } => "Graph",
        Error::BuildInputs(_) => "BuildInputs",
        Error::Plugin { .. } => "Plugin",
    }
}

/// One error of each variant, as a kernel might return it through `?`, and what the caller of
/// `mylib::outer` reads.
fn samples() -> Vec<(Error, &'static str)> {
    vec![
        (
            Error::ArgType { op: s("mylib::inner"), index: 0, name: s("x"), expected: s("Tensor"), got: s("int") },
            "mylib::outer -> mylib::inner expects argument #0 (x) to be Tensor, but got int",
        ),
        (
            Error::ArgCount { op: s("mylib::inner"), min: 1, expected: 2, got: 3, schema: s("mylib::inner(Tensor x, float a=1.0) -> Tensor"), defaulted: vec![s("a")] },
            "mylib::outer -> mylib::inner takes 1 to 2 arguments (a has a default) (schema: mylib::inner(Tensor x, float a=1.0) -> Tensor), but 3 were given",
        ),
        (
            Error::ReturnType { op: s("mylib::inner"), index: 0, expected: s("int"), got: s("Tensor") },
            "mylib::outer -> mylib::inner returns int as return #0, which cannot be read as `Tensor`",
        ),
        (
            Error::StackValue { expected: s("Tensor"), got: Some(s("int")) },
            "mylib::outer: the stack's top value is int, which cannot be read as `Tensor`",
        ),
        (
            Error::ReturnCount { op: s("mylib::inner"), expected: 1, got: 2, schema: s("mylib::inner(int a) -> int") },
            "mylib::outer -> mylib::inner returns 1 values (schema: mylib::inner(int a) -> int), but the call expects 2",
        ),
        (
            Error::NoKernel { op: s("mylib::inner"), key: s("CUDA"), available: vec![s("CPU")] },
            "mylib::outer -> could not run 'mylib::inner' with arguments from the 'CUDA' backend: 'mylib::inner' is only available for these backends: [CPU]",
        ),
        (
            Error::MixedDevices { op: s("mylib::inner"), first_index: 0, first_name: s("x"), first_device: Device::Cpu, index: 1, name: s("y"), device: Device::Meta },
            "mylib::outer -> mylib::inner got tensors on different devices: argument #0 (x) is on cpu, argument #1 (y) is on meta; move them to one device first",
        ),
        (
            Error::UnknownOp { name: s("mylib::iner"), suggestion: Some(s("mylib::inner")), unlinked_namespace: None },
            "mylib::outer: unknown operator 'mylib::iner'; did you mean 'mylib::inner'?",
        ),
        (
            Error::DuplicateLibrary { namespace: s("mylib"), first: site(), second: site() },
            "mylib::outer: only one #[stable_library] may define the namespace 'mylib': first at src/lib.rs:3, again at src/lib.rs:3. Put all definitions in one #[stable_library(mylib)], or use #[stable_fragment(mylib)] for the others",
        ),
        (
            Error::DuplicateOp { op: s("mylib::inner"), first: site(), second: site() },
            "mylib::outer: operator 'mylib::inner' is defined twice: first at src/lib.rs:3, again at src/lib.rs:3. Give one of them an overload name (`mylib::inner.name(...)`) or remove it",
        ),
        (
            Error::DuplicateImpl { op: s("mylib::inner"), key: s("CPU"), first: site(), second: site() },
            "mylib::outer: operator 'mylib::inner' has two different CPU kernels: first at src/lib.rs:3, again at src/lib.rs:3. Keep one of them",
        ),
        (
            Error::ImplWithoutDef { op: s("mylib::gone"), key: s("CPU"), site: site() },
            "mylib::outer: a CPU kernel for 'mylib::gone' is registered at src/lib.rs:3, but no #[stable_library] or #[stable_fragment] defines 'mylib::gone'",
        ),
        (
            Error::FragmentWithoutLibrary { namespace: s("other"), site: site() },
            "mylib::outer: a #[stable_fragment(other)] at src/lib.rs:3 adds to namespace 'other', but no #[stable_library(other)] defines it",
        ),
        (
            Error::Registration(vec![Error::UnknownOp { name: s("a::b"), suggestion: None, unlinked_namespace: None }]),
            "mylib::outer: 1 registration error:\n  - unknown operator 'a::b'",
        ),
        (
            Error::Kernel { op: s("mylib::inner"), message: s("-1 is negative") },
            "mylib::outer -> mylib::inner: -1 is negative",
        ),
        (
            Error::InOp { op: s("mylib::inner"), source: Box::new(Error::Shape(s("[2] and [3] differ"))) },
            "mylib::outer -> mylib::inner: shape error: [2] and [3] differ",
        ),
        (
            Error::KernelPanic { op: s("mylib::inner"), message: s("boom") },
            "mylib::outer -> mylib::inner panicked: boom",
        ),
        (
            Error::IndexOutOfBounds { kernel: s("axpy"), param: s("y"), index: 9, len: 4 },
            "mylib::outer: kernel axpy indexed y[9], but y has 4 elements (CPU build; the launch stopped there)",
        ),
        (
            Error::Shape(s("shapes [2] and [3] differ")),
            "mylib::outer: shape error: shapes [2] and [3] differ",
        ),
        (
            Error::DType { expected: s("f32"), got: s("f16") },
            "mylib::outer: dtype mismatch: expected f32, got f16",
        ),
        (
            Error::InvalidArgument(s("dims [2] out of range")),
            "mylib::outer: invalid argument: dims [2] out of range",
        ),
        (
            Error::Unsupported(s("to_vec: a meta tensor has no elements")),
            "mylib::outer: to_vec: a meta tensor has no elements",
        ),
        (
            Error::StorageBusy(s("with_slice_mut while reading it")),
            "mylib::outer: tensor storage is borrowed elsewhere: with_slice_mut while reading it",
        ),
        (
            Error::Message(s("bad input")),
            "mylib::outer: bad input",
        ),
        (
            Error::NoCuda { reason: s("no driver") },
            "mylib::outer: CUDA is not available: no driver",
        ),
        (
            Error::Cuda { kernel: s("axpy"), message: s("an illegal memory access") },
            "mylib::outer: CUDA error in axpy: an illegal memory access",
        ),
        (
            Error::Compile { kernel: s("axpy"), log: s("axpy.cu(3): error") },
            "mylib::outer: kernel 'axpy' failed to compile:\naxpy.cu(3): error",
        ),
        (
            Error::KernelCheck { checked: 2, failures: vec![s("[sm_90] kernel 'axpy' failed to compile: ...")] },
            "mylib::outer: 1 of 2 kernel compiles failed:\n[sm_90] kernel 'axpy' failed to compile: ...",
        ),
        (
            Error::NativeTypeConflict { native_name: s("ns::Color"), first: s("A"), second: s("B") },
            "mylib::outer: native C++ type name 'ns::Color' is already registered with a different definition: first A, again B. Give one of them another native name, or make the two layouts equal",
        ),
        (
            Error::BuiltinConflict { name: s("scale"), inputs: s("(Color, f32)"), first: s("A"), second: s("B") },
            "mylib::outer: cannot register conflicting builtin overload 'scale' with input types (Color, f32): first A, again B. The same inputs must return the same type from the same native function",
        ),
        (
            Error::Graph { graph: s("chain"), message: s("node 1 (bias): t has another shape") },
            "mylib::outer: kernel graph 'chain': node 1 (bias): t has another shape",
        ),
        (
            Error::BuildInputs(s("'inc' is not absolute")),
            "mylib::outer: invalid build options: 'inc' is not absolute",
        ),
        (
            Error::Plugin { path: s("libp.so"), source: Box::new(Error::msg("no entry")) },
            "mylib::outer: plugin 'libp.so': no entry",
        ),
    ]
}

#[test]
fn every_error_a_kernel_returns_reads_well_under_the_op() {
    let samples = samples();
    for (error, expected) in &samples {
        let under = kernel_error(OP, error.clone());
        assert_eq!(under.to_string(), *expected, "{}", covered(error));
        assert_eq!(
            under.op(),
            Some(OP),
            "{}: the op comes first",
            covered(error)
        );
    }
    let mut names: Vec<&str> = samples.iter().map(|(e, _)| covered(e)).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 33, "one sample per variant: {names:?}");
}

#[test]
fn an_error_already_under_the_op_is_kept() {
    let own = Error::Kernel {
        op: s(OP),
        message: s("already named"),
    };
    assert_eq!(kernel_error(OP, own.clone()), own);
}
