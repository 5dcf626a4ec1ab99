//! The signature check: one `static_assert` per parameter of a kernel's C++ entry against what
//! its Rust declaration implies, and the reading of NVRTC's log back into one line per mismatch.
//!
//! Each check sits in a class template over the entry's actual parameter type, so when it fails
//! NVRTC's note names that type ("[with Actual=const long *]"); [`explain_check_failures`]
//! turns the assertion and its note into "parameter #2 (info) of affine_f32 is `const long *` in
//! C++ but the Rust declaration `In<[u64]>` needs `const unsigned long long*`". A count check
//! comes first, and when the counts differ the per-parameter checks stand down, so the first
//! error is the one to fix.

use std::fmt::Write as _;

use super::cstr::escape;
use super::decl::{KernelDecl, Param, LEN_C_TYPE, LEN_SUFFIX};

/// The file name the checks of `decl` report under: `<opbox-check:axpby_f32>`.
pub fn check_file(decl: &KernelDecl) -> String {
    format!("<opbox-check:{}>", escape(&decl.rust_name))
}

/// The templates the checks instantiate; part of the prelude.
pub(crate) const CHECK_TEMPLATES: &str = r#"namespace opbox_detail {
template <int I, class F> struct param { typedef void type; };
template <int I, class R, class A0, class... A> struct param<I, R (*)(A0, A...)> : param<I - 1, R (*)(A...)> {};
template <class R, class A0, class... A> struct param<0, R (*)(A0, A...)> { typedef A0 type; };
template <class F> struct arity { enum : int { value = -1 }; };
template <class R, class... A> struct arity<R (*)(A...)> { enum : int { value = sizeof...(A) }; };
template <class A, class B> struct same_abi { enum : bool { value = is_same<typename abi<A>::type, typename abi<B>::type>::value }; };
}  // namespace opbox_detail
"#;

/// Writes the checks of `decl`, the `index`-th kernel of its unit, whose entry is `entry_expr`
/// (`axpby`, `axpby<256u>`).
pub(crate) fn push_checks(out: &mut String, index: usize, decl: &KernelDecl, entry_expr: &str) {
    let expected = expected_params(decl);
    let n = expected.len();
    let f = format!("decltype(&{entry_expr})");
    let ident: String = decl
        .rust_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let tag = format!("opbox_check_{index}_{ident}");
    let _ = writeln!(out, "#line 1 \"{}\"", check_file(decl));
    let _ = writeln!(
        out,
        "template <int Actual> struct {tag}_count {{ static_assert(Actual == {n}, \"{}\"); enum : bool {{ ok = true }}; }};",
        escape(&count_message(decl, n)),
    );
    let _ = writeln!(
        out,
        "static_assert({tag}_count<opbox_detail::arity<{f}>::value>::ok, \"\");"
    );
    for (i, (name, rust, c)) in expected.iter().enumerate() {
        let message = format!(
            "opbox: parameter #{i} ({name}) of {}: the Rust declaration '{rust}' needs '{c}'",
            decl.rust_name
        );
        let _ = writeln!(
            out,
            "template <class Actual, bool Counted> struct {tag}_{i} {{ static_assert(!Counted || opbox_detail::same_abi<Actual, {c}>::value, \"{}\"); enum : bool {{ ok = true }}; }};",
            escape(&message),
        );
        let _ = writeln!(
            out,
            "static_assert({tag}_{i}<opbox_detail::param<{i}, {f}>::type, opbox_detail::arity<{f}>::value == {n}>::ok, \"\");"
        );
    }
}

/// `(name, Rust type, C++ type)` of every entry parameter, in order, the element counts of a
/// DSL kernel included.
fn expected_params(decl: &KernelDecl) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    if decl.abi == super::decl::EntryAbi::ConstantParams {
        return out;
    }
    let typed = |p: &Param| {
        p.kind
            .c_type()
            .map(|c| (p.name.to_string(), p.rust_type(), c))
    };
    out.extend(decl.params.iter().filter_map(typed));
    out.extend(decl.slice_lens().map(|p| {
        (
            format!("{}{LEN_SUFFIX}", p.name),
            format!("the length of {}", p.name),
            LEN_C_TYPE.to_string(),
        )
    }));
    out
}

fn count_message(decl: &KernelDecl, n: usize) -> String {
    format!(
        "opbox: the C++ entry '{entry}' in {file} must take {n} parameter{s}, as the Rust declaration of {name} implies: {c}",
        entry = decl.entry,
        file = decl.entry_file(),
        s = if n == 1 { "" } else { "s" },
        name = decl.rust_name,
        c = decl.c_signature(),
    )
}

/// One line per failed check in `log` (NVRTC's), in log order, or `None` when no check failed.
pub fn explain_check_failures(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(message) = assertion_message(line) else {
            continue;
        };
        let actual = lines[i + 1..]
            .iter()
            .take(4)
            .find_map(|l| instantiated_with(l));
        // An arity of -1: the entry is not a function (undefined, or a template without its
        // arguments); NVRTC's own error says which, and no count is worth comparing.
        if actual == Some("-1") {
            continue;
        }
        out.push(explain(message, actual));
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

/// The text of `static assertion failed with "opbox: ..."`.
fn assertion_message(line: &str) -> Option<&str> {
    let start = line.find("static assertion failed with \"opbox: ")?;
    let rest = &line[start + "static assertion failed with \"".len()..];
    rest.strip_suffix('"')
}

/// The `X` of NVRTC's "detected during instantiation of class ... [with Actual=X, ...]".
fn instantiated_with(line: &str) -> Option<&str> {
    let start = line.find("[with Actual=")? + "[with Actual=".len();
    let rest = &line[start..];
    let end = rest.find(", Counted=").or_else(|| rest.find(']'))?;
    Some(rest[..end].trim())
}

fn explain(message: &str, actual: Option<&str>) -> String {
    let message = message.strip_prefix("opbox: ").unwrap_or(message);
    if let Some((head, tail)) = message.split_once(": the Rust declaration '") {
        if let (Some((rust, c)), Some(actual)) = (tail.split_once("' needs '"), actual) {
            let c = c.strip_suffix('\'').unwrap_or(c);
            return format!(
                "{head} is `{actual}` in C++ but the Rust declaration `{rust}` needs `{c}`"
            );
        }
    }
    match actual {
        Some(count) if message.contains("must take") => {
            format!("{message} (it takes {count})")
        }
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NVRTC 13.0 prints for a failed check (captured from a real compile).
    const LOG: &str = r#"<opbox-check:affine_f32>(5): error: static assertion failed with "opbox: parameter #2 (info) of affine_f32: the Rust declaration 'In<[u64]>' needs 'const unsigned long long*'"
  template <class Actual, bool Counted> struct opbox_check_0_affine_f32_2 { static_assert(...); };
                                                            ^
          detected during instantiation of class "opbox_check_0_affine_f32_2<Actual, Counted> [with Actual=const long *, Counted=true]" at line 6

1 error detected in the compilation of "opbox/affine_f32.cu"."#;

    #[test]
    fn a_failed_parameter_check_reads_as_one_line() {
        assert_eq!(
            explain_check_failures(LOG).as_deref(),
            Some("parameter #2 (info) of affine_f32 is `const long *` in C++ but the Rust declaration `In<[u64]>` needs `const unsigned long long*`")
        );
    }

    #[test]
    fn a_failed_count_check_says_both_counts() {
        let log = r#"<opbox-check:k>(1): error: static assertion failed with "opbox: the C++ entry 'k' in k.cu must take 2 parameters, as the Rust declaration of k implies: __global__ void k(const float* x, int n)"
  ...
          detected during instantiation of class "opbox_check_0_k_count<Actual> [with Actual=3]" at line 2"#;
        assert_eq!(
            explain_check_failures(log).as_deref(),
            Some("the C++ entry 'k' in k.cu must take 2 parameters, as the Rust declaration of k implies: __global__ void k(const float* x, int n) (it takes 3)")
        );
    }

    #[test]
    fn a_log_without_checks_is_left_alone() {
        assert_eq!(
            explain_check_failures("k.cu(3): error: expected a \";\""),
            None
        );
    }
}
