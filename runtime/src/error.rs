//! The one error type of opbox. Every message names what went wrong and, where there is one,
//! the fix.

use std::fmt;

/// `std::result::Result` with [`Error`] as the default error: what every fallible opbox call
/// and every kernel returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a registration was written: `src/lib.rs:12`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    /// The source file, as `file!()` gives it.
    pub file: &'static str,
    /// The line in that file.
    pub line: u32,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Every error opbox returns, from a call, a kernel, a registration or a compile. Its `Display`
/// is the message to show a user: it names what went wrong and, where there is one, the fix.
/// Errors about one op name it ([`Error::op`]); an error a kernel returns comes back under its
/// op's name ([`Error::InOp`]). `Debug` prints the same message, so `fn main() ->
/// opbox::Result<()>` ends with it instead of the variant's fields.
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A boxed call (or a stack launch) got an argument of another type than the schema's, or a
    /// null handle: `got` describes the value. Push the schema's type (`int` is `i64`, `float`
    /// is `f64`; a typed call converts `i32` and `f32` literals itself).
    #[error("{op} expects argument #{index} ({name}) to be {expected}, but got {got}")]
    ArgType {
        /// The op (or kernel) called.
        op: String,
        /// The argument's position, from 0.
        index: usize,
        /// The argument's name in the schema (`xs[2]` for a list element).
        name: String,
        /// The schema type.
        expected: String,
        /// What was passed, as [`StableValue::describe`](crate::StableValue::describe) says.
        got: String,
    },

    /// A boxed call with the wrong number of arguments: more than the schema lists, or fewer
    /// than those before its trailing defaults (which a call may leave out). Pass the
    /// arguments in the schema's order.
    #[error("{op} takes {} (schema: {schema}), but {got} {} given", arg_range(*min, *expected, defaulted), if *got == 1 { "was" } else { "were" })]
    ArgCount {
        /// The op called.
        op: String,
        /// The fewest a call may pass: the arguments before the trailing defaulted ones.
        min: usize,
        /// The most a call may pass: every argument of the schema.
        expected: usize,
        /// How many were passed.
        got: usize,
        /// The op's schema.
        schema: String,
        /// The trailing arguments a call may leave out.
        defaulted: Vec<String>,
    },

    /// A typed call asked for a Rust type the op's return cannot be read as. Ask for the
    /// schema's return type (`int` is `i64`, `str` is `String`, `Tensor[]` is `Vec<Tensor>`), or
    /// for `StableValue` to look at it.
    #[error("{op} returns {expected} as return #{index}, which cannot be read as `{got}`")]
    ReturnType {
        /// The op called.
        op: String,
        /// The return's position, from 0.
        index: usize,
        /// The schema's return type.
        expected: String,
        /// The Rust type asked for.
        got: String,
    },

    /// A typed pop or peek ([`Stack::pop_as`](crate::Stack::pop_as), `pop_tensor`, ...) found
    /// a value of another type on top of the stack (`got` describes it; a pop leaves it there),
    /// or found the stack empty (`got` is `None`). Read the value as the type the op's schema
    /// returns (`int` is `i64`, `str` is `String`), or look at it first with `stack[i]`.
    #[error("{}", stack_value(expected, got.as_deref()))]
    StackValue {
        /// The Rust type asked for.
        expected: String,
        /// The value found, as [`StableValue::describe`](crate::StableValue::describe) gives it.
        got: Option<String>,
    },

    /// A typed call asked for a different number of results than the schema returns: ask for
    /// a tuple of that many (`()` for none).
    #[error("{op} returns {expected} values (schema: {schema}), but the call expects {got}")]
    ReturnCount {
        /// The op called.
        op: String,
        /// How many values the schema returns.
        expected: usize,
        /// How many the call asked for.
        got: usize,
        /// The op's schema.
        schema: String,
    },

    /// The op has no kernel for the dispatch key its tensors' device gives, and no
    /// CompositeExplicit kernel: add a `#[stable_impl(lib, KEY)]` for that key, or move the
    /// tensors to a device that has one (`available` lists them).
    #[error("could not run '{op}' with arguments from the '{key}' backend: '{op}' is only available for these backends: [{}]", available.join(", "))]
    NoKernel {
        /// The op called.
        op: String,
        /// The dispatch key the call needed.
        key: String,
        /// The keys that have a kernel.
        available: Vec<String>,
    },

    /// Tensors on two devices. For an element of a `Tensor[]` argument the name says which
    /// (`xs[2]`), so two elements of one list read as two places. Move them to one device
    /// first (`t.to(device)`).
    #[error("{op} got tensors on different devices: argument #{first_index} ({first_name}) is on {first_device}, argument #{index} ({name}) is on {device}; move them to one device first")]
    MixedDevices {
        /// The op called.
        op: String,
        /// The position of the first tensor argument's.
        first_index: usize,
        /// Its name in the schema.
        first_name: String,
        /// Its device.
        first_device: crate::Device,
        /// The position of the argument on another device.
        index: usize,
        /// Its name in the schema.
        name: String,
        /// Its device.
        device: crate::Device,
    },

    /// [`op`](crate::op) (or a plugin's lookup) found no op of that name: check the spelling
    /// (`namespace::name`, `namespace::name.overload`), and that the library defining it is
    /// linked into this binary or loaded as a plugin. A crate that nothing in a binary names
    /// is not linked into it, registrations and all: an integration test (`tests/*.rs`) of a
    /// crate that defines ops says `use that_crate as _;`.
    #[error("unknown operator '{name}'{}{}", suggestion.as_ref().map(|s| format!("; did you mean '{s}'?")).unwrap_or_default(), unlinked_namespace.as_ref().map(|ns| format!(". No op of namespace '{ns}' is linked into this binary or loaded from a plugin: a test or binary that never names the crate defining them does not link it (add `use that_crate as _;`)")).unwrap_or_default())]
    UnknownOp {
        /// The name asked for.
        name: String,
        /// The closest registered name, when one is close.
        suggestion: Option<String>,
        /// The name's namespace, when no op of it is registered at all.
        unlinked_namespace: Option<String>,
    },

    /// Two `#[stable_library]`s define one namespace (found at [`init`](crate::init)): keep one,
    /// and make the others `#[stable_fragment]`s.
    #[error("only one #[stable_library] may define the namespace '{namespace}': first at {first}, again at {second}. Put all definitions in one #[stable_library({namespace})], or use #[stable_fragment({namespace})] for the others")]
    DuplicateLibrary {
        /// The namespace.
        namespace: String,
        /// Where the first library is.
        first: Site,
        /// Where the second is.
        second: Site,
    },

    /// One op name is defined twice (found at [`init`](crate::init)): give one an overload name,
    /// or remove it.
    #[error("operator '{op}' is defined twice: first at {first}, again at {second}. Give one of them an overload name (`{op}.name(...)`) or remove it")]
    DuplicateOp {
        /// The op.
        op: String,
        /// Where the first definition is.
        first: Site,
        /// Where the second is.
        second: Site,
    },

    /// Two impls register a kernel for one op and one dispatch key (found at
    /// [`init`](crate::init)): keep one.
    #[error("operator '{op}' has two different {key} kernels: first at {first}, again at {second}. Keep one of them")]
    DuplicateImpl {
        /// The op.
        op: String,
        /// The dispatch key.
        key: String,
        /// Where the first kernel is registered.
        first: Site,
        /// Where the second is.
        second: Site,
    },

    /// A kernel is registered for an op that nothing defines (found at [`init`](crate::init)):
    /// add the op's `m.def(..)` to its library, or link the crate that defines it.
    #[error("a {key} kernel for '{op}' is registered at {site}, but no #[stable_library] or #[stable_fragment] defines '{op}'")]
    ImplWithoutDef {
        /// The op the kernel is for.
        op: String,
        /// Its dispatch key.
        key: String,
        /// Where it is registered.
        site: Site,
    },

    /// A `#[stable_fragment]` adds to a namespace that no `#[stable_library]` defines (found at
    /// [`init`](crate::init)): define the library, or make this fragment the library.
    #[error("a #[stable_fragment({namespace})] at {site} adds to namespace '{namespace}', but no #[stable_library({namespace})] defines it")]
    FragmentWithoutLibrary {
        /// The namespace.
        namespace: String,
        /// Where the fragment is.
        site: Site,
    },

    /// Several registration problems found in one collection pass ([`init`](crate::init)); each
    /// says what to fix.
    #[error("{} registration error{}:\n{}", .0.len(), if .0.len() == 1 { "" } else { "s" }, .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Registration(Vec<Error>),

    /// A kernel returned an error of its own: a bare message (a `String`, `&str` or
    /// [`Error::Message`]) returned through `?`, under the op's name. What to do is the
    /// kernel's message to say.
    #[error("{op}: {message}")]
    Kernel {
        /// The op whose kernel failed.
        op: String,
        /// The kernel's message.
        message: String,
    },

    /// A kernel returned an error of another kind (a shape error, an inner op's failure, ...):
    /// kept whole, under the name of the op whose kernel returned it. Nested op calls chain, and
    /// print as `outer -> inner: message`; [`Error::op_chain`] lists the ops, [`Error::root`]
    /// gives the innermost error.
    #[error("{op}{}{source}", if source.op().is_some() { " -> " } else { ": " })]
    InOp {
        /// The op whose kernel returned the error.
        op: String,
        /// The error, whole.
        #[source]
        source: Box<Error>,
    },

    /// A kernel panicked; the panic was caught at the C ABI edge and the call's arguments were
    /// released. The message is the panic's: fix the kernel, or return an error instead.
    #[error("{op} panicked: {message}")]
    KernelPanic {
        /// The op whose kernel panicked.
        op: String,
        /// The panic's payload, when it was a string.
        message: String,
    },

    /// The CPU build of a `#[kernel]` indexed a buffer outside its elements; the launch stopped
    /// there. Guard the index (`if i < n`) or launch fewer threads.
    #[error("kernel {kernel} indexed {param}[{index}], but {param} has {len} elements (CPU build; the launch stopped there)")]
    IndexOutOfBounds {
        /// The kernel.
        kernel: String,
        /// The buffer parameter.
        param: String,
        /// The index used.
        index: i128,
        /// The buffer's length.
        len: u32,
    },

    /// Shapes that do not fit: a tensor built from data of another length, a view out of
    /// range, a launch whose slice is shorter than the kernel needs, or a kernel's own check
    /// (`Error::Shape(..)` from user code). The message gives the shapes.
    #[error("shape error: {0}")]
    Shape(String),

    /// A tensor of another dtype than asked for: `to_vec::<f32>()` of an `f16` tensor, or a
    /// launch whose slice element type differs. Ask for the tensor's own dtype (`t.dtype()`),
    /// or make the tensor in the dtype the kernel takes.
    #[error("dtype mismatch: expected {expected}, got {got}")]
    DType {
        /// The dtype asked for.
        expected: String,
        /// The tensor's.
        got: String,
    },

    /// An argument no call can take: an empty target list, a NUL byte in a kernel name, an
    /// unknown kernel or arch, a bad path. The message says which and what is accepted.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// An operation this tensor, device or build cannot do (element access on a meta tensor,
    /// host access to device memory, a DSL kernel with no CPU build): the message says which.
    /// Move the tensor (`t.to(Device::Cpu)`), or use another route.
    #[error("{0}")]
    Unsupported(String),

    /// A thread asked for a tensor's elements while it holds them already (a `with_slice_mut`
    /// closure reading its own tensor or a view of it): opbox refuses at once instead of
    /// deadlocking. Copy what the closure needs before it, or use one access.
    #[error("tensor storage is borrowed elsewhere: {0}")]
    StorageBusy(String),

    /// A free-form error from user code ([`Error::msg`], or a `String`/`&str` through `?`);
    /// returned from a kernel it becomes [`Error::Kernel`].
    #[error("{0}")]
    Message(String),

    /// CUDA (the driver or NVRTC) cannot be used on this machine, or the build has no `cuda`
    /// feature; CPU paths still work. The reason says what is missing and how to install it
    /// (NVRTC: `pip install nvidia-cuda-nvrtc==13.0.*`; the driver: an NVIDIA GPU's).
    #[error("CUDA is not available: {reason}")]
    NoCuda {
        /// What is missing, where opbox looked, and what to install.
        reason: String,
    },

    /// A CUDA driver call failed for a kernel (or, where `kernel` names no kernel, for the
    /// device or context named there). A fault in a launch surfaces at the next
    /// synchronization (`opbox::cuda::synchronize(ordinal)`) under the last kernel launched;
    /// synchronize after each launch to find the one that faulted.
    #[error("CUDA error in {kernel}: {message}")]
    Cuda {
        /// The kernel, or the device or context, the call was for.
        kernel: String,
        /// The driver's error.
        message: String,
    },

    /// NVRTC rejected a kernel: a C++ error, or a signature check that failed (the `.cu`
    /// entry's parameters against the Rust declaration). `log` is NVRTC's log, with the user's
    /// file(line) kept; fix the source or the declaration as it says.
    #[error("kernel '{kernel}' failed to compile:\n{log}")]
    Compile {
        /// The kernel (its Rust name).
        kernel: String,
        /// NVRTC's log, and opbox's note on a missing header where there is one.
        log: String,
    },

    /// `opbox::testing::check_all_kernels` (or `opbox check`) found kernels that do not compile:
    /// one entry per (arch, kernel), with NVRTC's log; a `.cu` entry whose parameters differ
    /// from its Rust declaration reads "parameter #2 (info) of affine_f32 is `const long *` in
    /// C++ but the Rust declaration `In<[u64]>` needs ...". The other kernels compiled. Fix the
    /// source or the declaration as each entry says.
    #[error("{} of {checked} kernel compiles failed:\n{}", failures.len(), failures.join("\n"))]
    KernelCheck {
        /// The (arch, kernel) compiles that ran.
        checked: usize,
        /// `[sm_90] kernel 'name' failed to compile: ...`, one per failure.
        failures: Vec<String>,
    },

    /// Two native types share a C++ name but not a layout; `first` and `second` name each Rust
    /// type, its registration site and its type code.
    #[error("native C++ type name '{native_name}' is already registered with a different definition: first {first}, again {second}. Give one of them another native name, or make the two layouts equal")]
    NativeTypeConflict {
        /// The C++ name.
        native_name: String,
        /// The first registration: Rust type, site and type code.
        first: String,
        /// The second.
        second: String,
    },

    /// Two `#[builtin]`s with one name and the same inputs disagree on the return type or the
    /// native function; `first` and `second` name each declaration and its site.
    #[error("cannot register conflicting builtin overload '{name}' with input types {inputs}: first {first}, again {second}. The same inputs must return the same type from the same native function")]
    BuiltinConflict {
        /// The builtin's name.
        name: String,
        /// The input types both overloads take.
        inputs: String,
        /// The first declaration and its site.
        first: String,
        /// The second.
        second: String,
    },

    /// A kernel graph refused a launch, a binding or a replay: a launch recorded on another
    /// device than the graph's, a binding whose shape, dtype or storage differs from what was
    /// recorded (the message names the node, its kernel and the parameter), or a replay that
    /// faulted on the device (the graph is unusable then, as its context is). Record on one
    /// device, and bind tensors like the recorded ones.
    #[error("kernel graph '{graph}': {message}")]
    Graph {
        /// The graph's name.
        graph: String,
        /// What was refused, naming the node, kernel and parameter where there is one.
        message: String,
    },

    /// Build options whose paths do not exist or are not absolute; each offender is listed with
    /// the reason. Give absolute paths that exist (`concat!(env!("CARGO_MANIFEST_DIR"), ..)`).
    #[error("invalid build options: {0}")]
    BuildInputs(String),

    /// `opbox::plugin::load` refused a plugin: the file is not a library or lacks the entry,
    /// it speaks a plugin ABI this host does not (a newer major, or a newer minor it requires),
    /// its descriptor is malformed, or what it registers clashes with what is already
    /// registered (the source names both sites). Nothing of the plugin was registered; the host
    /// is unchanged. Rebuild the plugin against this opbox, or fix what the source says.
    #[error("plugin '{path}': {source}")]
    Plugin {
        /// The plugin's file.
        path: String,
        /// Why it was refused.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// An error from user code, with a message.
    pub fn msg(message: impl Into<String>) -> Error {
        Error::Message(message.into())
    }

    /// The op this error is about: the op whose kernel failed ([`Error::Kernel`],
    /// [`Error::KernelPanic`], [`Error::InOp`]) or whose call was refused (argument, return and
    /// device errors, [`Error::NoKernel`]); `None` for errors that name no op.
    pub fn op(&self) -> Option<&str> {
        match self {
            Error::Kernel { op, .. }
            | Error::KernelPanic { op, .. }
            | Error::InOp { op, .. }
            | Error::ArgType { op, .. }
            | Error::ArgCount { op, .. }
            | Error::ReturnType { op, .. }
            | Error::ReturnCount { op, .. }
            | Error::NoKernel { op, .. }
            | Error::MixedDevices { op, .. } => Some(op),
            _ => None,
        }
    }

    /// The ops a failure came through, outermost first: `["mylib::outer", "mylib::inner"]` for
    /// an inner op's error returned through an outer op's kernel.
    pub fn op_chain(&self) -> Vec<&str> {
        let mut chain = Vec::new();
        let mut e = self;
        loop {
            if let Some(op) = e.op() {
                chain.push(op);
            }
            match e {
                Error::InOp { source, .. } => e = source,
                _ => return chain,
            }
        }
    }

    /// The innermost error of an op chain (the error itself when it is no chain).
    pub fn root(&self) -> &Error {
        match self {
            Error::InOp { source, .. } => source.root(),
            other => other,
        }
    }
}

/// What `fn main() -> opbox::Result<()>` and `unwrap` print: the message a user can act on, not
/// the fields with their newlines escaped.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::Message(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Error {
        Error::Message(s.to_string())
    }
}

/// `T`'s name without module paths, as a user writes it: `Tensor`, `Vec<Option<i64>>`.
pub(crate) fn rust_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, c) in full.char_indices() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            continue;
        }
        out.push_str(last_segment(&full[segment_start..i]));
        out.push(c);
        segment_start = i + c.len_utf8();
    }
    out.push_str(last_segment(&full[segment_start..]));
    out
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

fn stack_value(expected: &str, got: Option<&str>) -> String {
    match got {
        Some(got) => {
            format!("the stack's top value is {got}, which cannot be read as `{expected}`")
        }
        None => format!("the stack is empty: there is no value to read as `{expected}`"),
    }
}

/// "3 arguments", "2 to 3 arguments (alpha has a default)" or "at most 1 argument (n has a
/// default)".
fn arg_range(min: usize, max: usize, defaulted: &[String]) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if min >= max || defaulted.is_empty() {
        return format!("{max} argument{}", plural(max));
    }
    let names = match defaulted {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    };
    let verb = if defaulted.len() == 1 { "has" } else { "have" };
    let count = if min == 0 {
        format!("at most {max} argument{}", plural(max))
    } else {
        format!("{min} to {max} arguments")
    };
    format!("{count} ({names} {verb} a default)")
}
