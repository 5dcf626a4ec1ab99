//! The one error type of opbox. Every message names what went wrong and, where there is one,
//! the fix.

use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a registration was written: `src/lib.rs:12`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    pub file: &'static str,
    pub line: u32,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A boxed argument with the wrong tag, or a null handle.
    #[error("{op} expects argument #{index} ({name}) to be {expected}, but got {got}")]
    ArgType {
        op: String,
        index: usize,
        name: String,
        expected: String,
        got: String,
    },

    /// A boxed call with the wrong number of arguments: more than the schema lists, or fewer
    /// than those before its trailing defaults (which a call may leave out). Pass the
    /// arguments in the schema's order.
    #[error("{op} takes {} (schema: {schema}), but {got} {} given", arg_range(*min, *expected, defaulted), if *got == 1 { "was" } else { "were" })]
    ArgCount {
        op: String,
        /// The fewest a call may pass: the arguments before the trailing defaulted ones.
        min: usize,
        expected: usize,
        got: usize,
        schema: String,
        /// The trailing arguments a call may leave out.
        defaulted: Vec<String>,
    },

    /// A typed call asked for a Rust type the op's return cannot be read as.
    #[error("{op} returns {expected} as return #{index}, which cannot be read as `{got}`")]
    ReturnType {
        op: String,
        index: usize,
        expected: String,
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

    /// A typed call asked for a different number of results than the schema returns.
    #[error("{op} returns {expected} values (schema: {schema}), but the call expects {got}")]
    ReturnCount {
        op: String,
        expected: usize,
        got: usize,
        schema: String,
    },

    #[error("could not run '{op}' with arguments from the '{key}' backend: '{op}' is only available for these backends: [{}]", available.join(", "))]
    NoKernel {
        op: String,
        key: String,
        available: Vec<String>,
    },

    /// Tensors on two devices. For an element of a `Tensor[]` argument the name says which
    /// (`xs[2]`), so two elements of one list read as two places.
    #[error("{op} got tensors on different devices: argument #{first_index} ({first_name}) is on {first_device}, argument #{index} ({name}) is on {device}; move them to one device first")]
    MixedDevices {
        op: String,
        first_index: usize,
        first_name: String,
        first_device: crate::Device,
        index: usize,
        name: String,
        device: crate::Device,
    },

    #[error("unknown operator '{name}'{}", suggestion.as_ref().map(|s| format!("; did you mean '{s}'?")).unwrap_or_default())]
    UnknownOp {
        name: String,
        suggestion: Option<String>,
    },

    #[error("only one #[stable_library] may define the namespace '{namespace}': first at {first}, again at {second}. Put all definitions in one #[stable_library({namespace})], or use #[stable_fragment({namespace})] for the others")]
    DuplicateLibrary {
        namespace: String,
        first: Site,
        second: Site,
    },

    #[error("operator '{op}' is defined twice: first at {first}, again at {second}. Give one of them an overload name (`{op}.name(...)`) or remove it")]
    DuplicateOp {
        op: String,
        first: Site,
        second: Site,
    },

    #[error("operator '{op}' has two different {key} kernels: first at {first}, again at {second}. Keep one of them")]
    DuplicateImpl {
        op: String,
        key: String,
        first: Site,
        second: Site,
    },

    #[error("a {key} kernel for '{op}' is registered at {site}, but no #[stable_library] or #[stable_fragment] defines '{op}'")]
    ImplWithoutDef { op: String, key: String, site: Site },

    #[error("a #[stable_fragment({namespace})] at {site} adds to namespace '{namespace}', but no #[stable_library({namespace})] defines it")]
    FragmentWithoutLibrary { namespace: String, site: Site },

    /// Several registration problems found in one collection pass.
    #[error("{} registration errors:\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Registration(Vec<Error>),

    /// A kernel returned an error of its own.
    #[error("{op}: {message}")]
    Kernel { op: String, message: String },

    /// A kernel returned an error of another kind (a shape error, an inner op's failure, ...):
    /// kept whole, under the name of the op whose kernel returned it. Nested op calls chain, and
    /// print as `outer -> inner: message`; [`Error::op_chain`] lists the ops, [`Error::root`]
    /// gives the innermost error.
    #[error("{op}{}{source}", if source.op().is_some() { " -> " } else { ": " })]
    InOp {
        op: String,
        #[source]
        source: Box<Error>,
    },

    /// A kernel panicked; the panic was caught at the C ABI edge.
    #[error("{op} panicked: {message}")]
    KernelPanic { op: String, message: String },

    /// The CPU build of a `#[kernel]` indexed a buffer outside its elements; the launch stopped.
    #[error("kernel {kernel} indexed {param}[{index}], but {param} has {len} elements (CPU build; the launch stopped there)")]
    IndexOutOfBounds {
        kernel: String,
        param: String,
        index: i128,
        len: u32,
    },

    #[error("shape error: {0}")]
    Shape(String),

    #[error("dtype mismatch: expected {expected}, got {got}")]
    DType { expected: String, got: String },

    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    #[error("{0}")]
    Unsupported(String),

    #[error("tensor storage is borrowed elsewhere: {0}")]
    StorageBusy(String),

    /// A free-form error from user code.
    #[error("{0}")]
    Message(String),

    /// CUDA (the driver or NVRTC) cannot be used on this machine; CPU paths still work.
    #[error("CUDA is not available: {reason}")]
    NoCuda { reason: String },

    /// A CUDA driver call failed for a kernel (or, where `kernel` names no kernel, for the
    /// device or context named there).
    #[error("CUDA error in {kernel}: {message}")]
    Cuda { kernel: String, message: String },

    /// NVRTC rejected a kernel; `log` is its log, with the user's file(line) kept.
    #[error("kernel '{kernel}' failed to compile:\n{log}")]
    Compile { kernel: String, log: String },

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
        native_name: String,
        first: String,
        second: String,
    },

    /// Two `#[builtin]`s with one name and the same inputs disagree on the return type or the
    /// native function; `first` and `second` name each declaration and its site.
    #[error("cannot register conflicting builtin overload '{name}' with input types {inputs}: first {first}, again {second}. The same inputs must return the same type from the same native function")]
    BuiltinConflict {
        name: String,
        inputs: String,
        first: String,
        second: String,
    },

    /// A kernel graph refused a launch, a binding or a replay: a launch recorded on another
    /// device than the graph's, a binding whose shape, dtype or storage differs from what was
    /// recorded (the message names the node, its kernel and the parameter), or a replay that
    /// faulted on the device (the graph is unusable then, as its context is). Record on one
    /// device, and bind tensors like the recorded ones.
    #[error("kernel graph '{graph}': {message}")]
    Graph { graph: String, message: String },

    /// Build options whose paths do not exist or are not absolute; each offender is listed with
    /// the reason.
    #[error("invalid build options: {0}")]
    BuildInputs(String),

    /// `opbox::plugin::load` refused a plugin: the file is not a library or lacks the entry,
    /// it speaks a plugin ABI this host does not (a newer major, or a newer minor it requires),
    /// its descriptor is malformed, or what it registers clashes with what is already
    /// registered (the source names both sites). Nothing of the plugin was registered; the host
    /// is unchanged. Rebuild the plugin against this opbox, or fix what the source says.
    #[error("plugin '{path}': {source}")]
    Plugin {
        path: String,
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
