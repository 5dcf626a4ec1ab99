//! Finds the preprocessor directives opbox cares about (`#include` and `#pragma once`) line by
//! line, skipping text inside block comments. No macro is expanded and no `#if` is evaluated, so a
//! conditional include is over-approximated (followed whether or not it is active), which only
//! makes the closure, and so the cache key, larger than needed, never wrong.

/// One directive and its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub line: u32,
    pub kind: DirectiveKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    /// `#include "spelling"` (`angled == false`) or `#include <spelling>`.
    Include { spelling: String, angled: bool },
    /// `#pragma once`.
    PragmaOnce,
}

/// The lines of `text`, without their terminators (`\n` or `\r\n`).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// All `#include` and `#pragma once` directives of `text`, in order.
pub fn directives(text: &str) -> Vec<Directive> {
    classify(text)
        .into_iter()
        .enumerate()
        .filter_map(|(i, line)| match line {
            Line::Directive(rest) => parse_directive(rest).map(|kind| Directive {
                line: (i + 1) as u32,
                kind,
            }),
            Line::Blank | Line::Text => None,
        })
        .collect()
}

/// What one line is to the preprocessor, comments removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// Nothing but blanks and comments.
    Blank,
    /// A directive: the text after its `#`, leading blanks trimmed (`ifndef X_H`).
    Directive(&'a str),
    /// Anything else: code the compiler sees.
    Text,
}

/// Every line of `text`, classified, in order (one entry per line, so index + 1 is the line).
pub(crate) fn classify(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut in_block_comment = false;
    for line in lines(text) {
        // A comment ending on this line counts as blank space before a possible `#`.
        let code_start = skip_comment_prefix(line, &mut in_block_comment);
        let kind = match code_start.map(skip_blanks_and_inline_comments) {
            None => Line::Blank,
            Some(rest) => match rest.strip_prefix('#') {
                Some(directive) => Line::Directive(directive.trim_start_matches([' ', '\t'])),
                // A block comment left open runs to the end of the line.
                None if rest.is_empty() || rest.starts_with("//") || rest.starts_with("/*") => {
                    Line::Blank
                }
                None => Line::Text,
            },
        };
        out.push(kind);
        track_comments(code_start.unwrap_or(""), &mut in_block_comment);
    }
    out
}

/// If the line starts inside a block comment, the text after its `*/` (or `None` if the comment
/// goes on); otherwise the whole line.
fn skip_comment_prefix<'a>(line: &'a str, in_block_comment: &mut bool) -> Option<&'a str> {
    if !*in_block_comment {
        return Some(line);
    }
    let end = line.find("*/")?;
    *in_block_comment = false;
    Some(&line[end + 2..])
}

/// Updates `in_block_comment` for the code part of a line, ignoring comment openers inside string
/// and character literals.
fn track_comments(code: &str, in_block_comment: &mut bool) {
    let bytes = code.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if *in_block_comment {
            if c == b'*' && bytes.get(i + 1) == Some(&b'/') {
                *in_block_comment = false;
                i += 2;
                continue;
            }
        } else if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
        } else if c == b'"' || c == b'\'' {
            quote = Some(c);
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            return;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            *in_block_comment = true;
            i += 2;
            continue;
        }
        i += 1;
    }
}

/// Parses the text after the `#` of `include "x"`, `include <x>` and `pragma once`, with any
/// blanks around the tokens.
fn parse_directive(rest: &str) -> Option<DirectiveKind> {
    if let Some(arg) = rest.strip_prefix("include") {
        // `#include_next` and `#includefoo` are other words.
        if arg.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let arg = arg.trim_start_matches([' ', '\t']);
        let (close, angled) = match arg.as_bytes().first() {
            Some(b'"') => ('"', false),
            Some(b'<') => ('>', true),
            // `#include MACRO`: not followed; NVRTC resolves it or reports it.
            _ => return None,
        };
        let body = &arg[1..];
        let end = body.find(close)?;
        return Some(DirectiveKind::Include {
            spelling: body[..end].to_string(),
            angled,
        });
    }
    if let Some(arg) = rest.strip_prefix("pragma") {
        let mut words = arg.split_whitespace();
        if words.next() == Some("once") {
            return Some(DirectiveKind::PragmaOnce);
        }
    }
    None
}

fn skip_blanks_and_inline_comments(mut s: &str) -> &str {
    loop {
        s = s.trim_start_matches([' ', '\t']);
        match s
            .strip_prefix("/*")
            .and_then(|r| r.find("*/").map(|e| &r[e + 2..]))
        {
            Some(after) => s = after,
            None => return s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn includes(text: &str) -> Vec<(u32, String, bool)> {
        directives(text)
            .into_iter()
            .filter_map(|d| match d.kind {
                DirectiveKind::Include { spelling, angled } => Some((d.line, spelling, angled)),
                DirectiveKind::PragmaOnce => None,
            })
            .collect()
    }

    #[test]
    fn finds_both_include_forms_with_blanks() {
        let text = "#include \"a.cuh\"\n  #  include <b/c.h> // why\r\n#include\t\"d.h\"\nint x;\n";
        assert_eq!(
            includes(text),
            vec![
                (1, "a.cuh".to_string(), false),
                (2, "b/c.h".to_string(), true),
                (3, "d.h".to_string(), false)
            ]
        );
    }

    #[test]
    fn skips_comments_macros_and_other_words() {
        let text = "/* start\n#include \"in_comment.h\"\n*/ #include \"after.h\"\n// #include \"line.h\"\n\
                    #include_next <n.h>\n#include FOO\nconst char* s = \"/*\";\n#include \"real.h\"\n\
                    /* one-line */ #include \"x.h\"\n";
        assert_eq!(
            includes(text),
            vec![
                (3, "after.h".to_string(), false),
                (8, "real.h".to_string(), false),
                (9, "x.h".to_string(), false)
            ]
        );
    }

    #[test]
    fn finds_pragma_once() {
        let d = directives("// header\n#pragma once\n#pragma unroll\n");
        assert_eq!(
            d,
            vec![Directive {
                line: 2,
                kind: DirectiveKind::PragmaOnce
            }]
        );
    }
}
