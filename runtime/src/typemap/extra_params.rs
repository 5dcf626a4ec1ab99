//! The check traits of kernel parameters past an op's schema.
//!
//! Each op's marker module (`#[stable_library]`) defines `Arg0`, `Arg1`, … for its own
//! arguments, with messages that name the op and the types that fit, and glob-imports this
//! module under them. A glob import gives way to the module's own items, so `Arg{i}` is the op's
//! trait where the schema has an argument `i`, and one of these, implemented by nothing, where it
//! has not. One glob an op, instead of an alias an extra position: at 1,000 ops the aliases were
//! an eighth of a rebuild.

/// Traits `Arg0` … `Arg31` that no type implements, each with the one message for a parameter
/// the schema lacks. The arity check, at the kernel's name, names the op and its schema.
macro_rules! extra_params {
    ($($position:ident)*) => {$(
        #[diagnostic::on_unimplemented(
            message = "this kernel takes more parameters than its op has arguments: remove this parameter",
            label = "not in the schema",
            note = "the error at the kernel's name gives the op's schema"
        )]
        /// A kernel parameter at this position, where the op's schema has no argument.
        pub trait $position<S> {}
    )*};
}

extra_params!(
    Arg0 Arg1 Arg2 Arg3 Arg4 Arg5 Arg6 Arg7 Arg8 Arg9 Arg10 Arg11 Arg12 Arg13 Arg14 Arg15
    Arg16 Arg17 Arg18 Arg19 Arg20 Arg21 Arg22 Arg23 Arg24 Arg25 Arg26 Arg27 Arg28 Arg29 Arg30
    Arg31
);
