//! C++ names: identifiers, qualified names and keywords. The macros check names users write
//! (`#[native(name = ..)]`, `#[cpp = ..]`, field names) with these, and the emitter relies on them.

/// `[A-Za-z_][A-Za-z0-9_]*`, ASCII only.
pub fn is_identifier(name: &str) -> bool {
    // Bytes, not chars: every byte of a non-ASCII char is >= 0x80, which no arm accepts.
    match name.as_bytes() {
        [first, rest @ ..] => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        }
        [] => false,
    }
}

fn starts_an_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Warp's rule for native names, `^(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*$` (ASCII): identifiers
/// joined by `::`, with an optional leading `::`.
pub fn is_qualified_name(name: &str) -> bool {
    let rest = name.strip_prefix("::").unwrap_or(name);
    !rest.is_empty() && rest.split("::").all(is_identifier)
}

/// A C++ type as a `#[cpp = ".."]` attribute may spell it: `::`-separated parts, each starting
/// like an identifier, with template arguments allowed (`my_ns::Scale<2, float>`). Looser than
/// the compiler's grammar on purpose: NVRTC reports what this lets through.
pub fn is_type_spelling(name: &str) -> bool {
    !name.is_empty()
        && name.split("::").all(|part| {
            starts_an_identifier(part)
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '<' | '>' | ',' | ' '))
        })
}

/// The C++ keywords that a Rust identifier can spell. Rust's own keywords are left out: a Rust
/// name cannot be one without `r#`.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "double",
    "dynamic_cast",
    "explicit",
    "export",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "short",
    "signed",
    "sizeof",
    "static_assert",
    "static_cast",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// Whether `name`, a Rust identifier, is a C++ keyword, so C++ cannot use it as a name.
pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_ascii_letters_digits_and_underscores_not_led_by_a_digit() {
        for ok in ["a", "_", "op_12", "_9", "Z_z"] {
            assert!(is_identifier(ok), "{ok}");
        }
        // Non-ASCII letters and digits are refused whole, wherever they stand.
        for bad in [
            "", "9op", "op-1", "op 1", "é", "opé", "op٣", "_\u{300}", "a::b",
        ] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names_are_identifiers_joined_by_double_colons() {
        for ok in ["Color", "my_addon::Color", "::scale", "_a::b2"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "::", "a::", "a:::b", "2a", "a-b", "a::<b>", "été"] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn type_spellings_may_carry_template_arguments_but_not_a_leading_colon() {
        assert!(is_type_spelling("my_ns::Scale<2, float>"));
        assert!(!is_type_spelling("::my_ns::Relu"));
        assert!(!is_type_spelling("my-ns::Relu"));
    }

    #[test]
    fn keywords_are_cpp_only() {
        assert!(is_keyword("class") && is_keyword("xor_eq"));
        assert!(!is_keyword("color") && !is_keyword("fn"));
    }
}
