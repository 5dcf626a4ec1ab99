//! Messages for an identifier in type position that is not a schema type: the C++ spellings
//! people reach for first, and a "did you mean" for near misses.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::BaseType;

pub(super) const DOUBLE_MESSAGE: &str = "Use `float` instead of `double` in an operator's schema \
     string. `float` in schema corresponds to the double type in C++ (f64 in Rust)";

/// The list of types every unknown-type message carries, from the one list of base types.
fn type_list() -> String {
    let names: Vec<&str> = BaseType::ALL.iter().map(|b| b.written()).collect();
    format!(
        "schema types are {}, with `[]` (or `[N]`) for lists and `?` for optionals",
        names.join(", ")
    )
}

/// Spellings from other languages that edit distance would not catch, lower-cased.
const SYNONYMS: &[(&str, BaseType)] = &[
    ("string", BaseType::Str),
    ("boolean", BaseType::Bool),
    ("integer", BaseType::Int),
    ("i64", BaseType::Int),
    ("i32", BaseType::Int),
    ("int32", BaseType::Int),
    ("int64", BaseType::Int),
    ("f64", BaseType::Float),
    ("f32", BaseType::Float),
    ("float32", BaseType::Float),
    ("float64", BaseType::Float),
    ("dtype", BaseType::ScalarType),
    ("number", BaseType::Scalar),
];

/// The message for `name` used as a type. `looks_like_name` is true when the identifier is
/// followed by `,`, `)` or `=`, that is, when the type itself was probably left out.
pub(super) fn unknown_type_message(name: &str, looks_like_name: bool) -> String {
    match name {
        "double" => return DOUBLE_MESSAGE.to_string(),
        "int64_t" | "long" | "int32_t" | "size_t" => {
            return format!(
                "Use `int` instead of `{name}` in an operator's schema string. `int` in schema \
                 corresponds to the int64_t type in C++ (`int` is i64 in Rust)"
            )
        }
        _ => {}
    }
    let mut message = format!("unknown type `{name}`; {}", type_list());
    let suggestion = suggest(name);
    // A lone identifier is more likely a name without its type than a typo, unless it only
    // differs from a type in case or is a well-known synonym.
    let suggestion = suggestion.filter(|s| !looks_like_name || s.certain);
    if let Some(close) = suggestion {
        message.push_str(&format!("; did you mean `{}`?", close.base.schema_name()));
    } else if looks_like_name {
        message.push_str(&format!(
            "; an argument is written `type name`, e.g. `Tensor {name}`"
        ));
    }
    message
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Suggestion {
    base: BaseType,
    /// A synonym or a difference in case only, as opposed to a few edits away.
    certain: bool,
}

/// The schema type `name` most likely meant, if any is close enough.
fn suggest(name: &str) -> Option<Suggestion> {
    let lower = name.to_ascii_lowercase();
    if let Some((_, base)) = SYNONYMS.iter().find(|(s, _)| *s == lower) {
        return Some(Suggestion {
            base: *base,
            certain: true,
        });
    }
    let len = lower.chars().count();
    BaseType::ALL
        .into_iter()
        .map(|b| {
            (
                edit_distance(&lower, &b.schema_name().to_ascii_lowercase()),
                b,
            )
        })
        // A distance as long as the name itself means nothing of it survived.
        .filter(|&(d, _)| d <= 2 && d < len)
        .min_by_key(|&(d, _)| d)
        .map(|(d, base)| Suggestion {
            base,
            certain: d == 0,
        })
}

/// Levenshtein distance over chars, one row at a time.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let diag = prev.get(j).copied().unwrap_or(0) + usize::from(ca != cb);
            let up = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let left = cur.last().copied().unwrap_or(0) + 1;
            cur.push(diag.min(up).min(left));
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("tensor", "tensor"), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("in", "int"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    #[test]
    fn suggestions() {
        let base = |name| suggest(name).map(|s| s.base);
        assert_eq!(base("tensor"), Some(BaseType::Tensor));
        assert_eq!(base("Float"), Some(BaseType::Float));
        assert_eq!(base("string"), Some(BaseType::Str));
        assert_eq!(base("boolean"), Some(BaseType::Bool));
        assert_eq!(base("Tensr"), Some(BaseType::Tensor));
        assert_eq!(base("scalartype"), Some(BaseType::ScalarType));
        assert_eq!(base("x"), None);
        assert_eq!(base("t"), None);
        assert_eq!(base("Widget"), None);
        assert!(suggest("TENSOR").is_some_and(|s| s.certain));
        assert!(suggest("Tensr").is_some_and(|s| !s.certain));
    }

    #[test]
    fn lone_names_get_the_type_name_hint() {
        let m = unknown_type_message("out", true);
        assert!(
            m.ends_with("an argument is written `type name`, e.g. `Tensor out`"),
            "{m}"
        );
        let m = unknown_type_message("out", false);
        assert!(m.ends_with("did you mean `int`?"), "{m}");
        let m = unknown_type_message("tensor", true);
        assert!(m.ends_with("did you mean `Tensor`?"), "{m}");
    }
}
