//! Resolving ops by name, and calling them.

use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema::{BaseType, DefaultValue, Schema, TENSOR_MASK_BITS};

use super::boxed_op::BoxedOp;
use super::call::{FromStack, IntoStack};
use super::fixed_list;
use super::foreign;
use super::kernel::{self, panic_error, take_last_error, STATUS_OK};
use super::key::DispatchKey;
use super::registry::{check, OpEntry};
use super::shared_shim::{BoxedKernel, Fused, Probe};
use super::suggest::closest;
use super::typed::{restore, type_id, ErasedFn, TypedFn};
use crate::value::{Devices, List, StableValue, Stack};
use crate::{DType, Device, Error, Result};

/// Collects and checks every registration now, returning the first problem found (all of
/// them, if several). Optional: the first [`op`] does the same.
pub fn init() -> Result<()> {
    check().map(|_| ())
}

/// Resolves `ns::name` or `ns::name.overload` once; call the handle as often as you like.
pub fn op(name: &str) -> Result<OpHandle> {
    let registry = check()?;
    if let Some(entry) = registry.get(name) {
        return Ok(OpHandle { entry });
    }
    resolve_elsewhere(name)
}

/// An op no linked-in library defines: a plugin's, or (inside a plugin) the host's.
#[cold]
#[inline(never)]
fn resolve_elsewhere(name: &str) -> Result<OpHandle> {
    if let Some(entry) = foreign::get(name) {
        return Ok(OpHandle { entry });
    }
    if let Some(entry) = crate::plugin::guest::host_op(name)? {
        return Ok(OpHandle { entry });
    }
    let registry = check()?;
    let foreign = foreign::names();
    let names = || {
        registry
            .ops()
            .iter()
            .map(|e| e.name())
            .chain(foreign.iter().copied())
    };
    let unlinked_namespace = name.split_once("::").and_then(|(ns, _)| {
        let linked = names().any(|n| n.split_once("::").is_some_and(|(other, _)| other == ns));
        (!linked).then(|| ns.to_string())
    });
    Err(Error::UnknownOp {
        name: name.to_string(),
        suggestion: closest(name, names()).map(str::to_string),
        unlinked_namespace,
    })
}

/// A resolved op. `Copy`, `Send` and `Sync`: share it freely between threads.
#[derive(Clone, Copy, Debug)]
pub struct OpHandle {
    entry: &'static OpEntry,
}

impl OpHandle {
    /// `ns::name[.overload]`.
    pub fn name(&self) -> &'static str {
        self.entry.name()
    }

    /// The op's parsed schema.
    pub fn schema(&self) -> &'static Schema {
        self.entry.schema()
    }

    /// The tags its definition gave it (`m.def_with_tags`), in the order written.
    pub fn tags(&self) -> &'static [OpTag] {
        self.entry.tags()
    }

    /// Whether the op carries `tag`.
    pub fn has_tag(&self, tag: OpTag) -> bool {
        self.entry.tags().contains(&tag)
    }

    /// The Python module its library (or fragment) named with `m.set_python_module`.
    pub fn python_module(&self) -> Option<&'static str> {
        self.entry.python_module()
    }

    /// The plugin file that registered this op; None for an op linked into this binary.
    pub fn image(&self) -> Option<&'static str> {
        self.entry.image()
    }

    /// Where the op was defined (`file:line`, as the defining library gave it).
    pub fn site(&self) -> crate::Site {
        self.entry.site()
    }

    /// The keys this op has kernels for, by name.
    pub fn backends(&self) -> Vec<String> {
        self.entry.available_keys()
    }

    /// Typed call: `args` (a tuple) in, the result as `R` out — a single value, a tuple, or
    /// `()`. Trailing arguments with defaults may be left out.
    ///
    /// When `args` and `R` are exactly the dispatched kernel's parameter and return types (up
    /// to lifetimes), the kernel is called directly, with nothing boxed; otherwise the
    /// arguments are boxed and converted as [`call_boxed`](Self::call_boxed) does. Both give
    /// the same results and errors.
    #[inline]
    pub fn call<A: IntoStack, R: FromStack>(&self, args: A) -> Result<R> {
        let mut devices = Devices::default();
        args.note_devices(&mut devices);
        // An op with fixed-size lists takes the boxed path, where their lengths are checked:
        // its kernels have no typed entry.
        if let Some(device) = devices.single() {
            let key = device.map_or(DispatchKey::CPU, DispatchKey::for_device);
            if let Some((_, slot)) = self.entry.slot_for(key) {
                if let Some((typed, kernel)) = slot.typed() {
                    if typed.key() == type_id::<(A::Key, R)>() {
                        // SAFETY: the entry's key is `(A's key, R)`, which TypedEntry ties to
                        // exactly this entry type, up to lifetimes.
                        let entry = unsafe { restore::<A, R>(typed.entry()) };
                        return self.run_typed(entry, kernel, args);
                    }
                }
            }
        }
        self.call_via_stack(args)
    }

    /// Runs a typed entry under catch_unwind, with its errors and panics named as the boxed
    /// path names them. The kernel's (error-sized) Result stays inside the closure, which hands
    /// back only the value: wrapping the Result in catch_unwind's would copy it on every call.
    #[inline]
    fn run_typed<A, R>(&self, entry: TypedFn<A, R>, kernel: ErasedFn, args: A) -> Result<R> {
        let mut failure = None;
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match entry(kernel, args) {
                Ok(value) => Some(value),
                Err(error) => {
                    failure = Some(error);
                    None
                }
            }));
        match (caught, failure) {
            (Ok(Some(value)), _) => Ok(value),
            (Ok(None), Some(error)) => Err(kernel::kernel_error(self.name(), error)),
            (Ok(None), None) => Err(kernel::kernel_error(
                self.name(),
                Error::msg("the typed entry returned neither a value nor an error"),
            )),
            (Err(payload), _) => Err(panic_error(self.name(), crate::panic::dispose(payload))),
        }
    }

    /// The typed call through the boxed path: box, call, unbox.
    fn call_via_stack<A: IntoStack, R: FromStack>(&self, args: A) -> Result<R> {
        let mut stack = Stack::new();
        // SAFETY: `stack` is local and dropped before this function returns, while `args`'
        // borrows last at least as long as the call.
        unsafe { args.push_for_call(&mut stack) };
        match self.call_boxed(&mut stack) {
            Ok(()) => R::from_stack(self.entry.op(), &mut stack),
            Err(e) => Err(e),
        }
    }

    /// Boxed call. On entry the stack holds the arguments; on success it holds the results.
    /// On error it is empty: the arguments have been released.
    ///
    /// The usual call (every argument given, kernels of one shape) runs its shape's fused entry
    /// from here, inlined into the caller, so that it passes through no frame of the general
    /// path's size (callgrind: the tensor op's boxed call 398 -> 360 instructions, the int
    /// op's 249 -> 211).
    #[inline]
    pub fn call_boxed(&self, stack: &mut Stack) -> Result<()> {
        self.call_boxed_keyed(None, stack)
    }

    /// Boxed call of an op that may take no tensors, on the given key (without tensors the key
    /// is CPU).
    #[inline]
    pub fn call_boxed_on(&self, key: DispatchKey, stack: &mut Stack) -> Result<()> {
        self.call_boxed_keyed(Some(key), stack)
    }

    #[inline(always)]
    fn call_boxed_keyed(&self, key: Option<DispatchKey>, stack: &mut Stack) -> Result<()> {
        match self.try_fused(key, stack) {
            Fused::Done => Ok(()),
            Fused::Failed(error) => Err(*error),
            Fused::General => self.call_boxed_with(key, stack),
        }
    }

    fn call_boxed_with(&self, key: Option<DispatchKey>, stack: &mut Stack) -> Result<()> {
        // Matched rather than kept in a local: the success path then writes only the
        // discriminant instead of copying the whole (error-sized) Result.
        match self.try_call(key, stack) {
            Ok(()) => Ok(()),
            Err(e) => {
                stack.clear();
                Err(e)
            }
        }
    }

    /// The usual call (every argument given, no fixed-size list to check, kernels of one
    /// shape) in its shape's fused entry, which unboxes once for both dispatch and the kernel;
    /// `General` when the call is not one, with the stack as it was. Another image's op, which
    /// has no fused entry, goes straight to its kernel when its arguments are complete.
    #[inline(always)]
    fn try_fused(&self, key: Option<DispatchKey>, stack: &mut Stack) -> Fused {
        let entry = self.entry;
        if stack.len() == entry.num_args() && entry.fixed_lists.is_empty() {
            if entry.foreign.is_some() {
                return foreign_complete(entry, key, stack);
            }
            if let Some((probe, fused)) = Probe::of(entry) {
                return fused(entry, probe, key, stack);
            }
        }
        Fused::General
    }

    /// The general path: every call the fused entry leaves to it.
    fn try_call(&self, key: Option<DispatchKey>, stack: &mut Stack) -> Result<()> {
        let entry = self.entry;
        let num_args = entry.num_args();
        // Every argument given and no fixed-size list to check: nothing to complete.
        let complete = stack.len() == num_args && entry.fixed_lists.is_empty();
        if !complete {
            complete_arguments(entry, stack)?;
        }
        if entry.foreign.is_some() {
            return call_foreign(entry, key, stack);
        }
        let (_, slot) = dispatch(entry, key, stack)?;
        let num_outputs = entry.num_outputs();
        let kernel = *slot;
        let base = stack.reserve_outputs(num_outputs);
        // SAFETY: `base` points at the stack's `num_args + num_outputs` initialised values (the
        // outputs were just set to None), which nothing else touches during the call, and the
        // slot's kernel was registered for this entry's op.
        let status = unsafe { kernel.call(entry.op(), base, num_args as u64, num_outputs as u64) };
        if status != STATUS_OK {
            return Err(kernel_error(entry, status));
        }
        stack.release_front(num_args);
        Ok(())
    }
}

/// The kernel slot a complete call dispatches to: its tensors' one device's key, else `key`,
/// else CPU.
#[inline(always)]
fn dispatch<'e>(
    entry: &'e OpEntry,
    key: Option<DispatchKey>,
    stack: &Stack,
) -> Result<(usize, &'e BoxedKernel)> {
    let key = match dispatch_device(entry, stack)? {
        Some(device) => DispatchKey::for_device(device),
        None => key.unwrap_or(DispatchKey::CPU),
    };
    entry
        .slot_for(key)
        .ok_or_else(|| no_kernel_error(entry, key))
}

/// A complete call of another image's op: dispatched and its kernel called here, as the
/// general path would (the stack emptied on failure), without its frame.
#[inline(never)]
fn foreign_complete(entry: &'static OpEntry, key: Option<DispatchKey>, stack: &mut Stack) -> Fused {
    match dispatch_foreign(entry, key, stack) {
        Ok(()) => Fused::Done,
        Err(error) => fused_failure(error, stack),
    }
}

/// Another image's op, its arguments complete: dispatched, and the kernel of its key called.
/// The kernel lays out its outputs itself: a plain plugin kernel runs on the stack's spare
/// slots, with nothing pushed or truncated here.
#[inline(always)]
fn dispatch_foreign(
    entry: &'static OpEntry,
    key: Option<DispatchKey>,
    stack: &mut Stack,
) -> Result<()> {
    let (index, _) = dispatch(entry, key, stack)?;
    // An entry of another image has a foreign kernel in every slot it fills.
    match entry.foreign.and_then(|foreign| foreign[index]) {
        Some(kernel) => kernel.call(entry, stack),
        None => Err(missing_foreign(entry)),
    }
}

/// A call that failed with `error`, as the general path ends one: the stack emptied.
#[cold]
#[inline(never)]
fn fused_failure(error: Error, stack: &mut Stack) -> Fused {
    stack.clear();
    Fused::Failed(Box::new(error))
}

/// The arguments' rare work, out of line so that the usual call (every argument given, no
/// fixed-size list) tests two numbers and keeps a small frame: pushes the defaults of missing
/// trailing arguments, refuses a wrong count, and checks fixed-size lists.
#[cold]
#[inline(never)]
fn complete_arguments(entry: &OpEntry, stack: &mut Stack) -> Result<()> {
    let num_args = entry.num_args();
    if stack.len() < num_args {
        fill_defaults(entry, stack)?;
    }
    if stack.len() != num_args {
        return Err(arg_count_error(entry, stack.len()));
    }
    if !entry.fixed_lists.is_empty() {
        fixed_list::check(entry.op(), entry.fixed_lists, stack.as_mut_slice())?;
    }
    Ok(())
}

/// A plugin's kernel (or, in a plugin, the host's) on the general path, after its arguments
/// were completed: out of line, so the in-process path is one predictable branch longer and no
/// larger (inlined, it cost the in-process boxed call of the tensor op about 20 ns on the
/// H200).
#[cold]
#[inline(never)]
fn call_foreign(
    entry: &'static OpEntry,
    key: Option<DispatchKey>,
    stack: &mut Stack,
) -> Result<()> {
    dispatch_foreign(entry, key, stack)
}

#[cold]
#[inline(never)]
fn missing_foreign(entry: &OpEntry) -> Error {
    Error::Unsupported(format!(
        "'{}' is another image's op, but its kernel for this key is missing",
        entry.name()
    ))
}

/// Where a tensor came from: its argument's index, and its element's when the argument is a
/// `Tensor[]`.
type At = (usize, Option<u32>);

/// The one device all tensor arguments are on, or None when the call has no tensors.
#[inline(always)]
fn dispatch_device(entry: &OpEntry, stack: &Stack) -> Result<Option<Device>> {
    let mut first: Option<(At, Device)> = None;
    let mut bits = entry.tensor_args;
    while bits != 0 {
        let index = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        note_device(entry, stack, index, &mut first)?;
    }
    if entry.num_args() > TENSOR_MASK_BITS {
        for &index in entry.def.more_tensor_args() {
            note_device(entry, stack, index, &mut first)?;
        }
    }
    Ok(first.map(|(_, d)| d))
}

/// Records the devices of argument `index`'s tensors (see [`agree`]). Inlined into both of
/// [`dispatch_device`]'s loops: out of line, it cost the boxed tensor call about 70
/// instructions (callgrind).
#[inline(always)]
fn note_device(
    entry: &OpEntry,
    stack: &Stack,
    index: usize,
    first: &mut Option<(At, Device)>,
) -> Result<()> {
    let Some(value) = stack.get(index) else {
        return Ok(());
    };
    // Plain tensors are the common case: no iterator chain for them.
    if let Some(tensor) = value.as_tensor() {
        agree(entry, first, (index, None), tensor.device())?;
    } else if let Some(list) = value.as_list() {
        for (element, tensor) in (0u32..).zip(list.tensors()) {
            agree(entry, first, (index, Some(element)), tensor.device())?;
        }
    }
    Ok(())
}

/// Records the first tensor's device, or fails if `device` differs from it.
#[inline]
fn agree(entry: &OpEntry, first: &mut Option<(At, Device)>, at: At, device: Device) -> Result<()> {
    match *first {
        None => *first = Some((at, device)),
        Some((_, d)) if d == device => {}
        Some((first_at, first_device)) => {
            return Err(mixed_devices_error(
                entry,
                first_at,
                first_device,
                at,
                device,
            ))
        }
    }
    Ok(())
}

// The error builders are cold and out of line, so the call path stays small.

#[cold]
#[inline(never)]
fn mixed_devices_error(
    entry: &OpEntry,
    (first_index, first_element): At,
    first_device: Device,
    (index, element): At,
    device: Device,
) -> Error {
    // `xs` for a tensor argument, `xs[2]` for an element of a list argument.
    let name = |i: usize, element: Option<u32>| {
        let arg = entry
            .schema()
            .arguments
            .get(i)
            .map(|a| a.name.to_string())
            .unwrap_or_default();
        match element {
            Some(e) => format!("{arg}[{e}]"),
            None => arg,
        }
    };
    Error::MixedDevices {
        op: entry.name().to_string(),
        first_index,
        first_name: name(first_index, first_element),
        first_device,
        index,
        name: name(index, element),
        device,
    }
}

#[cold]
#[inline(never)]
fn arg_count_error(entry: &OpEntry, got: usize) -> Error {
    arg_count(entry.op(), got)
}

/// [`Error::ArgCount`] for a call of `op` with `got` arguments: the range it takes runs from
/// its last argument without a default (those after it are filled in).
#[cold]
pub(crate) fn arg_count(op: &BoxedOp, got: usize) -> Error {
    let schema = op.schema();
    let args = &schema.arguments;
    let min = args
        .iter()
        .rposition(|a| a.default.is_none())
        .map_or(0, |i| i + 1);
    Error::ArgCount {
        op: op.name().to_string(),
        min,
        expected: args.len(),
        got,
        schema: schema.to_string(),
        defaulted: args[min..].iter().map(|a| a.name.to_string()).collect(),
    }
}

#[cold]
#[inline(never)]
fn no_kernel_error(entry: &OpEntry, key: DispatchKey) -> Error {
    Error::NoKernel {
        op: entry.name().to_string(),
        key: key.to_string(),
        available: entry.available_keys(),
    }
}

#[cold]
#[inline(never)]
fn kernel_error(entry: &OpEntry, status: i32) -> Error {
    take_last_error().unwrap_or_else(|| Error::Kernel {
        op: entry.name().to_string(),
        message: format!("kernel failed with status {status} and left no error"),
    })
}

/// Appends the defaults of the arguments the caller left out, or fails naming the first one
/// that has no default.
#[inline(never)]
fn fill_defaults(entry: &OpEntry, stack: &mut Stack) -> Result<()> {
    let schema = entry.schema();
    // The count the caller gave, before any default is pushed.
    let given = stack.len();
    for arg in &schema.arguments[given..] {
        let Some(default) = &arg.default else {
            return Err(arg_count_error(entry, given));
        };
        stack.push(default_value(default, arg.ty.base_type()));
    }
    Ok(())
}

fn default_value(default: &DefaultValue, base: BaseType) -> StableValue {
    match default {
        DefaultValue::None => StableValue::none(),
        DefaultValue::Bool(b) => StableValue::bool(*b),
        DefaultValue::Int(i) => StableValue::int(*i),
        DefaultValue::Float(f) => StableValue::float(*f),
        DefaultValue::Str(s) => match base {
            BaseType::Device => s
                .parse::<Device>()
                .map(StableValue::device)
                .unwrap_or_else(|_| StableValue::str(s.as_ref())),
            BaseType::ScalarType => dtype_named(s)
                .map(StableValue::dtype)
                .unwrap_or_else(|| StableValue::str(s.as_ref())),
            _ => StableValue::str(s.as_ref()),
        },
        DefaultValue::IntList(v) => StableValue::list(List::Int(v.to_vec())),
        DefaultValue::FloatList(v) => StableValue::list(List::Float(v.to_vec())),
        DefaultValue::BoolList(v) => StableValue::list(List::Bool(v.to_vec())),
        // Boxed as PyTorch boxes them: the enum's code, an int.
        DefaultValue::Layout(l) => StableValue::int(l.code()),
        DefaultValue::MemoryFormat(m) => StableValue::int(m.code()),
    }
}

/// The dtype a schema default names (`ScalarType dtype=float32`), in PyTorch's spellings.
fn dtype_named(name: &str) -> Option<DType> {
    Some(match name {
        "float" | "float32" => DType::F32,
        "double" | "float64" => DType::F64,
        "half" | "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int" | "int32" => DType::I32,
        "long" | "int64" => DType::I64,
        "uint8" => DType::U8,
        "int8" => DType::I8,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "bool" => DType::Bool,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    //! The whole boxed path, shim included, on a hand-registered op: small enough for miri.

    use super::*;
    use crate::dispatch::boxed_op::SchemaCell;
    use crate::dispatch::kernel::{boxed_call, KernelArgs, KernelOutputs};
    use crate::dispatch::registration::{
        KernelRegistration, LibraryKind, LibraryRegistration, OpDef, OpSpec,
    };
    use crate::dispatch::registry::{collect, lone_kernel};
    use crate::dispatch::BoxedKernel;
    use crate::error::Site;
    use crate::value::StableValue;
    use crate::Tensor;

    struct Pick;
    static PICK_SCHEMA: SchemaCell = SchemaCell::new();
    static PICK: BoxedOp = BoxedOp {
        text: "t::pick(Tensor x, str tag, bool fail) -> (Tensor, str)",
        name_len: 7,
        name_hash: opbox_codegen::op_name_hash::op_name_hash("t::pick"),
        num_args: 3,
        num_outputs: 2,
        parsed: &PICK_SCHEMA,
    };
    impl OpSpec for Pick {
        const NAME: &'static str = "t::pick";
        const BOXED: &'static BoxedOp = &PICK;
    }

    fn body(args: &KernelArgs<'_>, outs: &mut KernelOutputs<'_>) -> Result<()> {
        let x: &Tensor = args.get(0)?;
        let tag: &str = args.get(1)?;
        if args.get::<bool>(2)? {
            return Err(Error::msg("asked to fail"));
        }
        outs.push(StableValue::tensor(x.clone()))?;
        outs.push(StableValue::str(format!("{tag}!")))
    }

    unsafe extern "C" fn pick(stack: *mut StableValue, num_args: u64, num_outputs: u64) -> i32 {
        // SAFETY: called by the dispatcher under the BoxedKernelFn contract.
        unsafe { boxed_call::<Pick>(stack, num_args, num_outputs, body) }
    }

    fn handle() -> OpHandle {
        let site = Site {
            file: "op.rs",
            line: 1,
        };
        let ops: &'static [OpDef] = Box::leak(Box::new([OpDef {
            op: BoxedOp { ..*Pick::BOXED },
            tensor_args: 1,
            extras: None,
            line: site.line,
        }]));
        let lib = Box::leak(Box::new(LibraryRegistration {
            namespace: "t",
            kind: LibraryKind::Def,
            python_module: None,
            site,
            ops,
        }));
        let kernel = lone_kernel(
            site.file,
            "pick",
            KernelRegistration {
                op: Pick::BOXED,
                key: DispatchKey::CPU,
                line: site.line,
                kernel: BoxedKernel::raw(pick),
            },
        );
        let registry = Box::leak(Box::new(collect(&[lib], &[kernel])));
        OpHandle {
            entry: registry.get("t::pick").expect("t::pick is registered"),
        }
    }

    #[test]
    fn typed_and_boxed_calls_own_and_release_exactly_what_they_should() {
        let op = handle();
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).expect("tensor");
        let (y, tag): (Tensor, String) = op.call((&x, "a", false)).expect("typed call");
        assert!(y.ptr_eq(&x));
        assert_eq!(tag, "a!");
        drop(y);
        assert_eq!(x.ref_count(), 1, "a typed call leaves no reference behind");

        let mut stack = Stack::new();
        stack.push(&x).push("b").push(false);
        op.call_boxed(&mut stack).expect("boxed call");
        assert_eq!(stack.len(), 2);
        assert_eq!(stack[1].as_str(), Some("b!"));
        assert_eq!(
            x.ref_count(),
            2,
            "the output on the stack owns one reference"
        );
        stack.clear();
        assert_eq!(x.ref_count(), 1);

        stack.push(&x).push("c").push(true);
        let error = op.call_boxed(&mut stack).expect_err("the kernel fails");
        assert_eq!(error.to_string(), "t::pick: asked to fail");
        assert!(stack.is_empty());
        assert_eq!(x.ref_count(), 1, "a failed call releases its arguments");

        stack.push(&x).push(3i64).push(false);
        let error = op.call_boxed(&mut stack).expect_err("wrong tag");
        assert_eq!(
            error.to_string(),
            "t::pick expects argument #1 (tag) to be str, but got int"
        );
        assert_eq!(x.ref_count(), 1);
    }
}
