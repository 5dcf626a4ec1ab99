//! The boilerplate halves of `#[stable_library]`'s and `#[stable_impl]`'s expansions, as
//! declarative macros the proc macros invoke.
//!
//! Cargo builds proc macros unoptimised, so every token a proc macro builds costs a debug-mode
//! `quote!` and a trip across the compiler's proc-macro bridge: at 1,000 ops that was a quarter
//! of a dev rebuild. The proc macros now emit what must carry the user's spans (the signature
//! checks and the calls that unbox each argument, whose errors are the ones a user sees) and
//! short invocations of these macros, which rustc expands itself. Nothing here can fail once
//! those checks pass, so the spans of what these macros write do not matter. Every name the
//! runtime reads (the marker, `BOXED`, `SIGNATURE`, the op table) is passed in by the proc
//! macro, which owns the naming rules.

/// The registrations of one `#[stable_impl]`'s kernels, each a const with its checks:
/// `kernel_items!(BOXED; registration [op module path] {checks} {items} KEY (line) -> Return,
/// List, kernel;...)`. `BOXED` names each op's `&'static BoxedOp` in its module; the checks come
/// as the proc macro spanned them. `List` is the kernel's `ParamList` (its parameters' families)
/// and `kernel` what the entries shared by that list call: the kernel fn itself, or, for a list
/// too long to share them, a body among `items` (`UnboxedBody`, with no typed entry). One
/// invocation per `#[stable_impl]`, not per kernel: each expansion is hygiene data that rustc
/// hashes and stores on every incremental build.
#[doc(hidden)]
#[macro_export]
macro_rules! __opbox_kernel_items {
    (
        $boxed:ident;
        $(
            $reg:ident [$($op:tt)*] {$($checks:tt)*} {$($items:item)*} $key:ident ($line:expr)
            -> $ret:ty, $list:ty, $kernel:ident;
        )*
    ) => {$(
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const $reg: $crate::__private::KernelRegistration = {
            // Everything names the op through this one import: if the op does not exist, that
            // is a single unresolved-import error, and rustc stays quiet about the paths
            // through it.
            use $($op)* as __opbox_op;

            const _: () = { $($checks)* };

            $($items)*

            // No function of the op's own: the boxed and typed entries shared by the kernels of
            // its list and return, each with this kernel.
            $crate::__private::KernelRegistration::of::<$list, $ret>(
                __opbox_op::$boxed,
                $crate::__private::DispatchKey::$key,
                $line,
                $kernel,
            )
        };
    )*};
}

/// One marker module per op of a library: `op_markers!(Marker, BOXED, SIGNATURE, TABLE;
/// "doc" module [index] "ns::name" [([fit codes] "param error")...] "arity error"
/// [[return fit codes]...] "returns error"; ...)`. The marker is the op's type for typed calls
/// (`OpSpec`), `BOXED` its static data in the library's table, and `SIGNATURE` what
/// `#[stable_impl]` checks each kernel against. No doc comments inside: at 1,000 ops each one
/// is 1,000 attributes for rustc to lower on every build.
#[doc(hidden)]
#[macro_export]
macro_rules! __opbox_op_markers {
    (
        $marker:ident, $boxed:ident, $signature:ident, $table:ident;
        $(
            $doc:literal $module:ident [$index:literal] $full:literal
            [$(([$($fit:literal)*] $error:literal))*] $arity_error:literal
            [$([$($ret:literal)*])*] $returns_error:literal;
        )*
    ) => {
        $(
            #[doc = $doc]
            #[allow(non_snake_case)]
            pub mod $module {
                pub struct $marker;

                pub const $boxed: &'static $crate::__private::BoxedOp = &super::$table[$index].op;

                impl $crate::__private::OpSpec for $marker {
                    const NAME: &'static str = $full;
                    const BOXED: &'static $crate::__private::BoxedOp = $boxed;
                }

                pub const $signature: $crate::__private::Signature = $crate::__private::Signature {
                    params: &[$($crate::__private::ParamSignature {
                        fits: &[$($fit),*],
                        error: $error,
                    }),*],
                    arity_error: $arity_error,
                    returns: &[$(&[$($ret),*]),*],
                    returns_error: $returns_error,
                };
            }
        )*
    };
}

/// A library's table of ops and their schema cells: `op_table!(CELLS, TABLE, count; (index "text"
/// name_len name_hash num_args num_outputs tensor_args extras, line)...)`, with the statics'
/// visibility and names as `#[stable_library]` gives them.
#[doc(hidden)]
#[macro_export]
macro_rules! __opbox_op_table {
    (
        $cells:ident, $table:ident, $count:literal;
        $((
            $index:literal $text:literal $name_len:literal $name_hash:literal $num_args:literal
            $num_outputs:literal $tensor_args:literal $extras:expr, $line:expr
        ))*
    ) => {
        const __OPBOX_EMPTY: $crate::__private::SchemaCell = $crate::__private::SchemaCell::new();
        static $cells: [$crate::__private::SchemaCell; $count] =
            [__OPBOX_EMPTY; $count];

        /// The library's ops, as its registration lists them.
        #[doc(hidden)]
        pub static $table: [$crate::__private::OpDef; $count] = [$(
            $crate::__private::OpDef {
                op: $crate::__private::BoxedOp {
                    text: $text,
                    name_len: $name_len,
                    name_hash: $name_hash,
                    num_args: $num_args,
                    num_outputs: $num_outputs,
                    parsed: &$cells[$index],
                },
                tensor_args: $tensor_args,
                extras: $extras,
                line: $line,
            }
        ),*];
    };
}
