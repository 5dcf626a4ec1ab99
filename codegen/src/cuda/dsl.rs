//! The `#[kernel]` DSL's C++ code as the macros emit it and the runtime completes it.
//!
//! The macro writes each kernel and `#[device]` fn as C++ with placeholders for what only the
//! compiled program knows: the C++ name of each native type it names (from the type's
//! `NativeField` impl) and, for each fn it calls, whether that is a `#[builtin]` or a `#[device]`
//! fn (from the callee's `mark_<name>_with_device_or_builtin` const). [`dsl_build_options`] fills them in and
//! assembles the preamble: the semantics helpers, the group's own preamble, every callee's
//! definition (callees before callers), then the kernel.

use crate::build_options::BuildOptions;
use crate::builtin::BuiltinDecl;
use crate::native::FieldType;

use super::dsl_prelude::{dsl_sections, DSL_PRELUDE};

/// Marks a placeholder; never in the text the macro writes otherwise.
const MARK: char = '\u{1}';

/// The placeholder of callee slot `i`.
pub fn callee_placeholder(i: usize) -> String {
    format!("{MARK}C{i}{MARK}")
}

/// The placeholder of named-type slot `i`.
pub fn named_placeholder(i: usize) -> String {
    format!("{MARK}N{i}{MARK}")
}

/// The C++ macro a kernel's own code names callee slot `i` with: a kernel's code is its
/// translation unit's source (after the `#[derive(KernelArg)]` twins it may name), and the
/// preamble defines these macros.
pub fn callee_macro(i: usize) -> String {
    format!("OPBOX_DSL_C{i}")
}

/// The C++ macro a kernel's own code names named-type slot `i` with.
pub fn named_macro(i: usize) -> String {
    format!("OPBOX_DSL_N{i}")
}

/// A fn DSL code may call.
#[derive(Debug)]
pub struct DslFn {
    /// The C++ name calls use: `opbox_builtin_gelu`, `opbox_dev_helper`.
    pub cpp_name: &'static str,
    pub body: DslBody,
}

#[derive(Debug)]
pub enum DslBody {
    /// A `#[builtin]`: its wrapper forwards to the native function.
    Builtin(&'static BuiltinDecl),
    /// A `#[device]` fn, written by the macro.
    Code(DslCode),
}

/// C++ written by the macro, with its placeholders' values.
#[derive(Debug)]
pub struct DslCode {
    pub template: &'static str,
    /// Callee slot `i` is `callees[i]`.
    pub callees: &'static [&'static DslFn],
    /// Named-type slot `i` is `named[i]`'s C++ type.
    pub named: &'static [FieldType],
    /// The optional helpers the code calls ([`needed_sections`]), so its kernels' preambles
    /// take their sections.
    pub needs: &'static [&'static str],
}

/// Which of the [`dsl_sections`]' helpers `cpp` calls: what a [`DslCode`]'s `needs` holds.
pub fn needed_sections(cpp: &str) -> Vec<String> {
    dsl_sections()
        .into_iter()
        .flat_map(|(calls, _)| calls)
        .filter(|c| cpp.contains(c.as_str()))
        .collect()
}

impl DslCode {
    /// The code with every placeholder replaced; an unknown slot becomes an `#error` naming
    /// it, so a mismatch fails at compile time rather than miscompiling.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.template.len());
        let mut parts = self.template.split(MARK);
        if let Some(first) = parts.next() {
            out.push_str(first);
        }
        while let (Some(slot), Some(rest)) = (parts.next(), parts.next()) {
            let index = slot.get(1..).and_then(|n| n.parse::<usize>().ok());
            let value = match (slot.as_bytes().first(), index) {
                (Some(b'C'), Some(i)) => self.callees.get(i).map(|f| f.cpp_name.to_string()),
                (Some(b'N'), Some(i)) => self.named.get(i).map(FieldType::c_type),
                _ => None,
            };
            match value {
                Some(v) => out.push_str(&v),
                None => {
                    out.push_str("\n#error \"opbox: a #[kernel] placeholder has no value\"\n");
                }
            }
            out.push_str(rest);
        }
        out
    }
}

impl DslFn {
    fn definition(&self) -> String {
        match &self.body {
            DslBody::Builtin(decl) => decl.cpp_wrapper(),
            DslBody::Code(code) => code.text(),
        }
    }

    fn callees(&self) -> &'static [&'static DslFn] {
        match &self.body {
            DslBody::Builtin(_) => &[],
            DslBody::Code(code) => code.callees,
        }
    }
}

/// Every fn `roots` reach, each once (by C++ name), callees before their callers.
fn reachable(roots: &'static [&'static DslFn], out: &mut Vec<&'static DslFn>, depth: usize) {
    // Recursion is refused by the macro (and by rustc, as a cycle between consts), so the depth
    // only guards against a malformed table.
    if depth > 64 {
        return;
    }
    for f in roots {
        if out.iter().any(|g| g.cpp_name == f.cpp_name) {
            continue;
        }
        reachable(f.callees(), out, depth + 1);
        if !out.iter().any(|g| g.cpp_name == f.cpp_name) {
            out.push(f);
        }
    }
}

/// A DSL kernel's build options: the group's `user` options (if it names some) with a preamble
/// of the semantics helpers, the user's preamble, the callees' definitions, then the macros that
/// name the kernel's slots (its code, the source, names them as [`callee_macro`] and
/// [`named_macro`]) and `kernel`'s own template, if any.
pub fn dsl_build_options(user: Option<&BuildOptions>, kernel: &DslCode) -> BuildOptions {
    let mut out = user.cloned().unwrap_or_default();
    let mut fns = Vec::new();
    reachable(kernel.callees, &mut fns, 0);
    let mut preamble = String::from(DSL_PRELUDE);
    // The optional helpers the kernel or any callee calls.
    let needs: Vec<&str> = std::iter::once(kernel.needs)
        .chain(fns.iter().filter_map(|f| match &f.body {
            DslBody::Code(code) => Some(code.needs),
            DslBody::Builtin(_) => None,
        }))
        .flatten()
        .copied()
        .collect();
    for (calls, section) in dsl_sections() {
        if calls.iter().any(|c| needs.contains(&c.as_str())) {
            preamble.push_str(section);
        }
    }
    // The unit's prelude leaves <stdint.h> out for generated code; C++ a user wrote (a group's
    // preamble, a #[builtin]'s native function) may need it.
    if !out.preamble.is_empty() || fns.iter().any(|f| matches!(f.body, DslBody::Builtin(_))) {
        preamble.push_str("#include <stdint.h>\n");
    }
    if !out.preamble.is_empty() {
        preamble.push_str(&out.preamble);
        if !out.preamble.ends_with('\n') {
            preamble.push('\n');
        }
    }
    // The fns may take #[derive(KernelArg)] structs, whose twins come after the user's preamble.
    preamble.push_str(super::emit::KERNEL_ARGS_SLOT);
    for f in fns {
        preamble.push_str(&f.definition());
        preamble.push('\n');
    }
    for (i, f) in kernel.callees.iter().enumerate() {
        preamble.push_str(&format!("#define {} {}\n", callee_macro(i), f.cpp_name));
    }
    for (i, t) in kernel.named.iter().enumerate() {
        preamble.push_str(&format!("#define {} {}\n", named_macro(i), t.c_type()));
    }
    preamble.push_str(&kernel.text());
    out.preamble = preamble;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::NativeScalar;

    static HELPER: DslFn = DslFn {
        cpp_name: "opbox_dev_helper",
        body: DslBody::Code(DslCode {
            template: "__device__ inline float opbox_dev_helper(float x) { return x; }\n",
            callees: &[],
            named: &[],
            needs: &[],
        }),
    };

    static ONE: [&DslFn; 1] = [&HELPER];
    static TWICE: [&DslFn; 2] = [&HELPER, &HELPER];
    static F32: [FieldType; 1] = [FieldType::Scalar(NativeScalar::F32)];

    #[test]
    fn placeholders_take_their_slots_values() {
        let code = DslCode {
            template: "\u{1}N0\u{1} v = \u{1}C0\u{1}(1.0f);",
            callees: &ONE,
            named: &F32,
            needs: &[],
        };
        assert_eq!(code.text(), "float v = opbox_dev_helper(1.0f);");
        let bad = DslCode {
            template: "x \u{1}C3\u{1} y",
            callees: &[],
            named: &[],
            needs: &[],
        };
        assert!(bad.text().contains("#error"));
    }

    #[test]
    fn the_preamble_defines_callees_before_the_kernel() {
        let kernel = DslCode {
            template: "KERNEL \u{1}C0\u{1}",
            callees: &TWICE,
            named: &[],
            needs: &[],
        };
        let opts = dsl_build_options(None, &kernel);
        assert!(opts
            .preamble
            .contains("#define OPBOX_DSL_C0 opbox_dev_helper\n"));
        let helper = opts
            .preamble
            .find("opbox_dev_helper(float")
            .unwrap_or(usize::MAX);
        let k = opts.preamble.find("KERNEL").unwrap_or(0);
        assert!(opts.preamble.starts_with(DSL_PRELUDE));
        assert!(helper < k);
        assert_eq!(
            opts.preamble
                .matches("inline float opbox_dev_helper")
                .count(),
            1
        );
    }
}
