//! What an op's schema asks of a kernel's signature, as constants that `#[stable_impl]` checks
//! at compile time.
//!
//! `#[stable_library]` writes one [`Signature`] per op (the `SIGNATURE` const in the op's
//! module): per argument, the form codes of the Rust types that fit and the message for one that
//! does not. Each kernel then gets one `const` that calls `check_arity`, `check_param` per
//! parameter and `check_returns`, each spanned at what it checks; the first that fails panics
//! with its message, and rustc reports the panic as a compile error at that span. One constant
//! an op, instead of a trait per argument with an impl per fitting type, keeps the checks cheap
//! for rustc: at 1,000 ops the traits were half of a dev rebuild.

/// An op's signature as a kernel must match it. Only `#[stable_library]` builds one.
#[derive(Debug)]
pub struct Signature {
    /// One entry per schema argument, in order.
    pub params: &'static [ParamSignature],
    /// The message for a kernel with another number of parameters.
    pub arity_error: &'static str,
    /// Per return, the form codes that fit it.
    pub returns: &'static [&'static [u64]],
    /// The message for a kernel whose return does not fit.
    pub returns_error: &'static str,
}

/// One schema argument: the form codes that fit it, and the message for a parameter that
/// does not.
#[derive(Debug)]
pub struct ParamSignature {
    /// The form codes of the Rust types that fit the argument.
    pub fits: &'static [u64],
    /// The message for a parameter that does not, naming the op, the argument and what fits.
    pub error: &'static str,
}

impl Signature {
    /// Fails the build with the arity message, when evaluated in a `const` for a kernel taking
    /// `count` parameters and the schema has another number of arguments. `#[track_caller]`
    /// puts the error at the check's span (the kernel's name), not here.
    #[track_caller]
    pub const fn check_arity(&self, count: usize) {
        if let Some(why) = self.arity_mismatch(count) {
            panic!("{}", why)
        }
    }

    /// Fails the build with the argument's message (see [`check_arity`](Self::check_arity)),
    /// at the parameter's span.
    #[track_caller]
    pub const fn check_param(&self, index: usize, form: u64) {
        if let Some(why) = self.param_mismatch(index, form) {
            panic!("{}", why)
        }
    }

    /// Fails the build with the returns message (see [`check_arity`](Self::check_arity)), at
    /// the return type's span.
    #[track_caller]
    pub const fn check_returns(&self, forms: &[u64]) {
        if let Some(why) = self.returns_mismatch(forms) {
            panic!("{}", why)
        }
    }

    /// The message for a kernel taking `count` parameters, unless the schema has as many
    /// arguments.
    pub const fn arity_mismatch(&self, count: usize) -> Option<&'static str> {
        if self.params.len() == count {
            None
        } else {
            Some(self.arity_error)
        }
    }

    /// The message for parameter `index` of the form `form`, unless it fits the schema's
    /// argument `index`.
    pub const fn param_mismatch(&self, index: usize, form: u64) -> Option<&'static str> {
        // A parameter past the schema's arguments: the arity check, which runs first, says so.
        if index >= self.params.len() {
            return Some(self.arity_error);
        }
        let param = &self.params[index];
        if contains(param.fits, form) {
            None
        } else {
            Some(param.error)
        }
    }

    /// The message for a kernel returning values of the forms `forms`, unless they fit the
    /// schema's returns one for one.
    pub const fn returns_mismatch(&self, forms: &[u64]) -> Option<&'static str> {
        if forms.len() != self.returns.len() {
            return Some(self.returns_error);
        }
        let mut i = 0;
        while i < forms.len() {
            if !contains(self.returns[i], forms[i]) {
                return Some(self.returns_error);
            }
            i += 1;
        }
        None
    }
}

const fn contains(codes: &[u64], code: u64) -> bool {
    let mut i = 0;
    while i < codes.len() {
        if codes[i] == code {
            return true;
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typemap::{KernelReturn, RustParam};
    use crate::{Result, Tensor};

    /// `f(Tensor x, float a) -> Tensor`, as `#[stable_library]` writes it.
    const F: Signature = Signature {
        params: &[
            ParamSignature {
                fits: &[<&Tensor as RustParam>::FORM, <Tensor as RustParam>::FORM],
                error: "x",
            },
            ParamSignature {
                fits: &[<f64 as RustParam>::FORM],
                error: "a",
            },
        ],
        arity_error: "arity",
        returns: &[&[<Tensor as KernelReturn>::FORMS[0]]],
        returns_error: "returns",
    };

    #[test]
    fn a_fitting_kernel_passes_every_check() {
        assert_eq!(F.arity_mismatch(2), None);
        assert_eq!(F.param_mismatch(0, <&Tensor as RustParam>::FORM), None);
        assert_eq!(F.param_mismatch(0, <Tensor as RustParam>::FORM), None);
        assert_eq!(F.param_mismatch(1, <f64 as RustParam>::FORM), None);
        assert_eq!(
            F.returns_mismatch(<Result<Tensor> as KernelReturn>::FORMS),
            None
        );
    }

    #[test]
    fn each_mismatch_gets_its_own_message() {
        assert_eq!(F.arity_mismatch(3), Some("arity"));
        assert_eq!(F.param_mismatch(1, <f32 as RustParam>::FORM), Some("a"));
        assert_eq!(F.param_mismatch(1, <i64 as RustParam>::FORM), Some("a"));
        assert_eq!(
            F.param_mismatch(0, <Option<&Tensor> as RustParam>::FORM),
            Some("x")
        );
        assert_eq!(F.param_mismatch(2, <f64 as RustParam>::FORM), Some("arity"));
        assert_eq!(
            F.returns_mismatch(<() as KernelReturn>::FORMS),
            Some("returns")
        );
        assert_eq!(
            F.returns_mismatch(<(Tensor, Tensor) as KernelReturn>::FORMS),
            Some("returns")
        );
        assert_eq!(
            F.returns_mismatch(<i64 as KernelReturn>::FORMS),
            Some("returns")
        );
    }

    #[test]
    fn wrapped_forms_differ_from_their_elements_and_from_each_other() {
        let forms = [
            <i64 as RustParam>::FORM,
            <Vec<i64> as RustParam>::FORM,
            <&[i64] as RustParam>::FORM,
            <Option<i64> as RustParam>::FORM,
            <Option<Vec<i64>> as RustParam>::FORM,
            <Vec<Option<i64>> as RustParam>::FORM,
            <Vec<f32> as RustParam>::FORM,
        ];
        // A slice and a Vec are the same schema form: a list.
        assert_eq!(forms[1], forms[2]);
        let distinct: std::collections::HashSet<u64> = forms.iter().copied().collect();
        assert_eq!(distinct.len(), forms.len() - 1, "{forms:?}");
        // A Rust type with no schema type fits nothing, wrapped or not.
        assert_eq!(
            <f32 as RustParam>::FORM,
            opbox_codegen::rust_forms::NO_SCHEMA_FORM
        );
    }
}
