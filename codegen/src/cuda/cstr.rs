//! C++ string-literal escaping, for `#line` file names and `static_assert` messages built from
//! user-controlled text (paths, Rust names).

/// `s` as the body of a C++ narrow string literal (without the quotes). Non-ASCII bytes become
/// octal escapes, always three digits so a following digit cannot extend them.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for &b in s.as_bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            // `?` starts trigraphs in pre-C++17 modes; escaping it is harmless in all of them.
            b'?' => out.push_str("\\?"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_quotes_backslashes_and_non_ascii() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("x\ny"), "x\\ny");
        assert_eq!(escape("é1"), "\\303\\2511");
        assert_eq!(escape("what?"), "what\\?");
    }
}
