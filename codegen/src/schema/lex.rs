//! The schema tokenizer: one token at a time, by byte offset, with no allocation.
//!
//! Every token but `Other` and `End` is ASCII, so token boundaries are always `char` boundaries.
//! Non-ASCII input becomes an `Other` token spanning one whole `char`.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ops::Range;

use super::SchemaError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_]*`
    Ident,
    /// `-?[0-9]+`
    Int,
    /// `-?[0-9]+ ('.' [0-9]*)? ([eE] [+-]? [0-9]+)?` with a `.` or an exponent.
    Float,
    /// A single- or double-quoted string literal, quotes included. Escapes are checked later.
    Str,
    Arrow,
    ColonColon,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Question,
    Bang,
    Star,
    Eq,
    Dot,
    /// `|`, between the alias sets of `Tensor(a|b)`.
    Pipe,
    /// Any other character (one whole `char`).
    Other,
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    pub fn range(self) -> Range<usize> {
        self.start..self.end
    }
}

/// The longest token text quoted in an error message.
const MAX_QUOTED: usize = 40;

pub(super) struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// The token `peek` last scanned: the parser peeks at most tokens twice (to decide, then to
    /// consume), and the second look is free.
    peeked: Option<Token>,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            peeked: None,
        }
    }

    /// The source text of `tok` (empty if the range were ever off a char boundary).
    pub fn text(&self, tok: Token) -> &'a str {
        self.src.get(tok.start..tok.end).unwrap_or("")
    }

    /// The source text of a byte range (empty if the range is not on char boundaries).
    pub fn slice(&self, range: Range<usize>) -> &'a str {
        self.src.get(range).unwrap_or("")
    }

    /// How an error message names `tok`: "`foo`" or "end of input", shortened when long.
    pub fn describe(&self, tok: Token) -> String {
        if tok.kind == Tok::End {
            return "end of input".to_string();
        }
        let text = self.text(tok);
        match text.char_indices().nth(MAX_QUOTED) {
            Some((cut, _)) => format!("`{}...`", text.get(..cut).unwrap_or("")),
            None => format!("`{text}`"),
        }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    fn skip_whitespace(&mut self) {
        while self.byte(self.pos).is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    /// The next token, without consuming it.
    pub fn peek(&mut self) -> Result<Token, SchemaError> {
        self.skip_whitespace();
        let start = self.pos;
        if let Some(tok) = self.peeked.filter(|t| t.start == start) {
            return Ok(tok);
        }
        let (kind, end) = self.scan(start)?;
        let tok = Token { kind, start, end };
        self.peeked = Some(tok);
        Ok(tok)
    }

    /// Consumes `tok`, which must be the token `peek` just returned.
    pub fn bump(&mut self, tok: Token) {
        self.pos = tok.end;
    }

    /// The next token, consumed.
    pub fn next(&mut self) -> Result<Token, SchemaError> {
        let tok = self.peek()?;
        self.bump(tok);
        Ok(tok)
    }

    fn digits(&self, mut at: usize) -> usize {
        while self.byte(at).is_some_and(|b| b.is_ascii_digit()) {
            at += 1;
        }
        at
    }

    fn scan(&self, start: usize) -> Result<(Tok, usize), SchemaError> {
        let Some(b) = self.byte(start) else {
            return Ok((Tok::End, start));
        };
        let single = |kind| Ok((kind, start + 1));
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                let mut at = start + 1;
                while self
                    .byte(at)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    at += 1;
                }
                Ok((Tok::Ident, at))
            }
            b'0'..=b'9' => Ok(self.number(start)),
            b'-' => match self.byte(start + 1) {
                Some(b'>') => Ok((Tok::Arrow, start + 2)),
                Some(c) if c.is_ascii_digit() => Ok(self.number(start + 1)),
                _ => single(Tok::Other),
            },
            b':' if self.byte(start + 1) == Some(b':') => Ok((Tok::ColonColon, start + 2)),
            b'"' | b'\'' => self.string(start, b),
            b'(' => single(Tok::LParen),
            b')' => single(Tok::RParen),
            b'[' => single(Tok::LBracket),
            b']' => single(Tok::RBracket),
            b',' => single(Tok::Comma),
            b'?' => single(Tok::Question),
            b'!' => single(Tok::Bang),
            b'*' => single(Tok::Star),
            b'=' => single(Tok::Eq),
            b'.' => single(Tok::Dot),
            b'|' => single(Tok::Pipe),
            _ => Ok((Tok::Other, start + self.char_len(start))),
        }
    }

    /// The byte length of the `char` starting at `at` (1 if `at` is somehow not a boundary).
    pub fn char_len(&self, at: usize) -> usize {
        self.src
            .get(at..)
            .and_then(|rest| rest.chars().next())
            .map_or(1, char::len_utf8)
    }

    /// A number whose digits start at `at` (after any `-`).
    fn number(&self, at: usize) -> (Tok, usize) {
        let mut end = self.digits(at);
        let mut kind = Tok::Int;
        if self.byte(end) == Some(b'.') {
            end = self.digits(end + 1);
            kind = Tok::Float;
        }
        if matches!(self.byte(end), Some(b'e' | b'E')) {
            let mut exp = end + 1;
            if matches!(self.byte(exp), Some(b'+' | b'-')) {
                exp += 1;
            }
            if self.byte(exp).is_some_and(|b| b.is_ascii_digit()) {
                end = self.digits(exp);
                kind = Tok::Float;
            }
        }
        (kind, end)
    }

    /// A string literal opened by `quote` at `start`; the token ends after the closing quote.
    fn string(&self, start: usize, quote: u8) -> Result<(Tok, usize), SchemaError> {
        let mut at = start + 1;
        loop {
            match self.byte(at) {
                None => {
                    return Err(SchemaError::new(
                        start..self.bytes.len(),
                        "unterminated string literal: expected a closing quote",
                    ))
                }
                // Skipping one byte after `\` is enough: a multi-byte char's other bytes are
                // never a quote or a backslash.
                Some(b'\\') => at += 2,
                Some(c) if c == quote => return Ok((Tok::Str, at + 1)),
                Some(_) => at += 1,
            }
        }
    }

    /// The value of the string literal `tok`, with its escapes resolved.
    pub fn string_value(&self, tok: Token) -> Result<String, SchemaError> {
        let body_start = tok.start + 1;
        let body = self.slice(body_start..tok.end.saturating_sub(1));
        let mut out = String::with_capacity(body.len());
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let escaped = chars.next();
            let value = match escaped {
                Some((_, '\\')) => '\\',
                Some((_, '\'')) => '\'',
                Some((_, '"')) => '"',
                Some((_, 'n')) => '\n',
                Some((_, 't')) => '\t',
                Some((_, 'r')) => '\r',
                _ => {
                    let len = 1 + escaped.map_or(0, |(_, e)| e.len_utf8());
                    let at = body_start + i;
                    return Err(SchemaError::new(
                        at..at + len,
                        format!(
                            "unknown escape `{}` in string literal; expected one of \
                             `\\\\`, `\\'`, `\\\"`, `\\n`, `\\t`, `\\r`",
                            self.slice(at..at + len)
                        ),
                    ));
                }
            };
            out.push(value);
        }
        Ok(out)
    }
}
