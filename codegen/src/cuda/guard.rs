//! Include guards, as the preprocessor honours them: a header that holds `#pragma once`, or whose
//! whole text sits inside one `#ifndef X` / `#define X` ... `#endif`, expands to nothing when it
//! is included again (for a macro guard: while `X` is still defined). The scanner accepts a cycle
//! through such a header, and the emitter writes it once.

use super::directive::{classify, directives, DirectiveKind, Line};

/// How a header keeps a second inclusion empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    PragmaOnce,
    /// The classic guard, with its macro's name.
    Macro(String),
}

/// The header's guard, or `None` when any of its text would be seen twice: a conditional that
/// is not the first directive, an `#else` of the guard itself, or code after its `#endif`.
pub(crate) fn include_guard(content: &str) -> Option<Guard> {
    if directives(content)
        .iter()
        .any(|d| d.kind == DirectiveKind::PragmaOnce)
    {
        return Some(Guard::PragmaOnce);
    }
    let mut significant = classify(content).into_iter().filter(|l| *l != Line::Blank);
    let Some(Line::Directive(test)) = significant.next() else {
        return None;
    };
    let name = guard_test(test)?;
    match significant.next() {
        Some(Line::Directive(d)) if word(d) == "define" && first_ident(after_word(d)) == name => {}
        _ => return None,
    }
    let mut depth = 1usize;
    for line in significant.by_ref() {
        let Line::Directive(d) = line else { continue };
        match word(d) {
            "if" | "ifdef" | "ifndef" => depth += 1,
            "else" | "elif" | "elifdef" | "elifndef" if depth == 1 => return None,
            "endif" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    (depth == 0 && significant.next().is_none()).then(|| Guard::Macro(name.to_string()))
}

/// Whether `content` has an `#undef name`, which would let a guarded header expand again.
pub(crate) fn undefines(content: &str, name: &str) -> bool {
    classify(content).into_iter().any(|l| {
        matches!(l, Line::Directive(d) if word(d) == "undef" && first_ident(after_word(d)) == name)
    })
}

/// `X` of `ifndef X` or `if !defined(X)` / `if !defined X`, with nothing else in the condition.
fn guard_test(directive: &str) -> Option<&str> {
    let rest = strip_comment(after_word(directive));
    let name = match word(directive) {
        "ifndef" => rest,
        "if" => {
            let rest = rest.strip_prefix('!')?.trim_start();
            let rest = rest.strip_prefix("defined")?.trim_start();
            match rest.strip_prefix('(') {
                Some(inner) => inner.strip_suffix(')')?.trim(),
                None => rest,
            }
        }
        _ => return None,
    };
    (!name.is_empty() && first_ident(name) == name).then_some(name)
}

/// The directive's name: `ifndef` of `ifndef X_H`.
fn word(directive: &str) -> &str {
    first_ident(directive)
}

fn after_word(directive: &str) -> &str {
    directive[word(directive).len()..].trim_start()
}

/// The leading identifier of `s` (empty when it starts with anything else).
fn first_ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// `s` without a trailing comment, trimmed.
fn strip_comment(s: &str) -> &str {
    let end = [s.find("//"), s.find("/*")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(s.len());
    s[..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(content: &str) -> Option<Guard> {
        include_guard(content)
    }

    fn named(name: &str) -> Option<Guard> {
        Some(Guard::Macro(name.into()))
    }

    #[test]
    fn recognised_guards() {
        assert_eq!(guard("#pragma once\nint x;\n"), Some(Guard::PragmaOnce));
        assert_eq!(
            guard("// c\n\n#ifndef X_H\n#define X_H\n#endif\n"),
            named("X_H")
        );
        assert_eq!(guard("#if !defined(X)\n#define X 1\n#endif\n"), named("X"));
        assert_eq!(
            guard("#if ! defined X // g\n#define X\n#endif\n"),
            named("X")
        );
        assert_eq!(
            guard("/* a\n#if 0\n*/\n#ifndef G\n#define G\n#if A\nint a;\n#else\nint b;\n#endif\n#endif // G\n\n"),
            named("G")
        );
    }

    #[test]
    fn not_guards() {
        assert_eq!(guard("#ifndef X\n#define Y\n#endif\n"), None);
        assert_eq!(guard("int x;\n"), None);
        assert_eq!(guard(""), None);
        // Code after the guard's #endif would be seen on every inclusion.
        assert_eq!(guard("#ifndef X\n#define X\n#endif\nint tail;\n"), None);
        assert_eq!(guard("int head;\n#ifndef X\n#define X\n#endif\n"), None);
        // The guard's own #else part is seen on the second inclusion.
        assert_eq!(
            guard("#ifndef X\n#define X\n#else\nint again;\n#endif\n"),
            None
        );
        // Never closed: not a guard this check can vouch for.
        assert_eq!(guard("#ifndef X\n#define X\nint x;\n"), None);
        assert_eq!(guard("#if !defined(X) || FORCE\n#define X\n#endif\n"), None);
    }

    #[test]
    fn undef_is_found() {
        assert!(undefines("int a;\n#  undef X_H\n", "X_H"));
        assert!(!undefines("#undef X_H2\n// #undef X_H\n", "X_H"));
    }
}
