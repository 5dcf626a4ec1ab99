//! The schema grammar: a recursive-descent parser over [`Lexer`] tokens.
//!
//! ```text
//! schema    := name '(' [ params ] ')' '->' returns
//! name      := [ IDENT '::' ] IDENT [ '.' IDENT ]
//! params    := param { ',' param }
//! param     := '*' | type IDENT [ '=' default ]
//! type      := ( BASE | CLASS ) [ alias ] [ '[' INT ']' ] { '[' ']' | '?' }   (alias only on Tensor)
//! alias     := '(' sets [ '!' ] [ '->' ( '*' | sets ) ] ')'
//! sets      := IDENT { '|' IDENT }
//! returns   := '(' [ ret { ',' ret } ] ')' | ret
//! ret       := type [ IDENT ]
//! CLASS     := '__torch__' '.' 'torch' '.' 'classes' '.' IDENT '.' IDENT
//! ```
//!
//! As in torchgen's `model.py`: a fixed size (`int[2]`) goes on the innermost list, a written
//! alias (`a!`) names one set, and an annotation has more than one set on at most one side of
//! `->`.
//!
//! The parser never panics: every byte access is checked, and every failure is a
//! [`SchemaError`] with the byte range of the offending token. It runs in time linear in the
//! schema's length: names are checked for duplicates by a scan while few, then a hash set.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::borrow::Cow;
use std::ops::Range;
use std::str::FromStr;

use super::class_name;
use super::default::{check, parse_default};
use super::lex::{Lexer, Tok, Token};
use super::names::Names;
use super::type_hint::unknown_type_message;
use super::{
    Alias, Argument, BaseType, OperatorName, Return, Schema, SchemaError, Type, MAX_TYPE_DEPTH,
};

/// Parses a PyTorch function schema such as `ns::name.overload(Tensor x, *, int dim=0) -> Tensor`.
pub fn parse(s: &str) -> Result<Schema, SchemaError> {
    Parser { lx: Lexer::new(s) }.schema()
}

/// Parses an operator name alone, `ns::name.overload` as a schema begins: what a caller that
/// already holds the rest of a schema (its `(args) -> returns`, parsed once) needs.
pub fn parse_operator_name(s: &str) -> Result<OperatorName, SchemaError> {
    let mut parser = Parser { lx: Lexer::new(s) };
    let (name, _) = parser.operator_name()?;
    let end = parser.lx.peek()?;
    if end.kind != Tok::End {
        return Err(parser.expected(end, "the end of the operator name"));
    }
    Ok(name)
}

impl FromStr for Schema {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Schema, SchemaError> {
        parse(s)
    }
}

struct Parser<'a> {
    lx: Lexer<'a>,
}

/// Where a type is parsed, for the messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Argument,
    Return,
}

fn owned(s: &str) -> Cow<'static, str> {
    Cow::Owned(s.to_string())
}

impl<'a> Parser<'a> {
    fn expected(&self, tok: Token, what: &str) -> SchemaError {
        SchemaError::new(
            tok.range(),
            format!("expected {what}, found {}", self.lx.describe(tok)),
        )
    }

    /// The next token, which must be an identifier.
    fn ident(&mut self, what: &str) -> Result<Token, SchemaError> {
        let tok = self.lx.peek()?;
        if tok.kind != Tok::Ident {
            return Err(self.expected(tok, what));
        }
        self.lx.bump(tok);
        Ok(tok)
    }

    fn schema(mut self) -> Result<Schema, SchemaError> {
        let (name, name_range) = self.operator_name()?;
        let open = self.lx.peek()?;
        match open.kind {
            Tok::LParen => self.lx.bump(open),
            Tok::End => {
                return Err(SchemaError::new(
                    name_range,
                    format!(
                        "Tried to parse a function schema but only the operator name was given; \
                         expected the arguments in parentheses, `->` and the return type(s), \
                         e.g. `{name}(Tensor x) -> Tensor`"
                    ),
                ))
            }
            _ => return Err(self.expected(open, "`(` and the arguments after the operator name")),
        }
        let mut arguments = self.arguments()?;
        let arrow = self.lx.peek()?;
        if arrow.kind != Tok::Arrow {
            return Err(SchemaError::new(
                arrow.range(),
                format!(
                    "expected `->` followed by the return type(s), found {}",
                    self.lx.describe(arrow)
                ),
            ));
        }
        self.lx.bump(arrow);
        let mut returns = self.returns()?;
        let end = self.lx.peek()?;
        if end.kind != Tok::End {
            return Err(self.expected(end, "the end of the schema after the return type(s)"));
        }
        // A schema is often kept for the process (a plugin's 10,000 are): without this a
        // one-argument op keeps room for four (about 1 KB more each).
        arguments.shrink_to_fit();
        returns.shrink_to_fit();
        Ok(Schema {
            name,
            arguments: Cow::Owned(arguments),
            returns: Cow::Owned(returns),
        })
    }

    fn operator_name(&mut self) -> Result<(OperatorName, Range<usize>), SchemaError> {
        let first = self.ident("an operator name such as `my_op(Tensor x) -> Tensor`")?;
        let mut namespace = None;
        let mut name = first;
        let sep = self.lx.peek()?;
        if sep.kind == Tok::ColonColon {
            self.lx.bump(sep);
            name = self.ident("an operator name after `::`")?;
            namespace = Some(owned(self.lx.text(first)));
            let again = self.lx.peek()?;
            if again.kind == Tok::ColonColon {
                return Err(SchemaError::new(
                    again.range(),
                    "nested namespaces are not supported; expected `ns::name`",
                ));
            }
        }
        let mut last = name;
        let mut overload = Cow::Borrowed("");
        let dot = self.lx.peek()?;
        if dot.kind == Tok::Dot {
            self.lx.bump(dot);
            last = self.ident("an overload name after `.`")?;
            overload = owned(self.lx.text(last));
        }
        let name = OperatorName {
            namespace,
            name: owned(self.lx.text(name)),
            overload,
        };
        Ok((name, first.start..last.end))
    }

    fn arguments(&mut self) -> Result<Vec<Argument>, SchemaError> {
        let mut args: Vec<Argument> = Vec::new();
        let mut names: Names<'a> = Names::new();
        let close = self.lx.peek()?;
        if close.kind == Tok::RParen {
            self.lx.bump(close);
            return Ok(args);
        }
        let mut kw_only = false;
        loop {
            let star = self.lx.peek()?;
            if star.kind == Tok::Star {
                if kw_only {
                    return Err(SchemaError::new(
                        star.range(),
                        "`*` may appear only once in the argument list",
                    ));
                }
                self.lx.bump(star);
                kw_only = true;
                let sep = self.lx.next()?;
                match sep.kind {
                    Tok::Comma => continue,
                    Tok::RParen => {
                        return Err(SchemaError::new(
                            star.range(),
                            "`*` must be followed by at least one keyword-only argument",
                        ))
                    }
                    _ => return Err(self.expected(sep, "`,` after `*`")),
                }
            }
            let arg = self.argument(kw_only, &mut names)?;
            let sep = self.lx.next()?;
            match sep.kind {
                Tok::Comma => args.push(arg),
                Tok::RParen => {
                    args.push(arg);
                    return Ok(args);
                }
                _ => {
                    let what = format!("`,` or `)` after argument `{}`", arg.name);
                    return Err(self.expected(sep, &what));
                }
            }
        }
    }

    fn argument(&mut self, kw_only: bool, names: &mut Names<'a>) -> Result<Argument, SchemaError> {
        let (ty, alias) = self.ty(Position::Argument)?;
        // The message is built only on the error path: this runs once per argument.
        let name_tok = self.lx.peek()?;
        if name_tok.kind != Tok::Ident {
            let what = format!("an argument name after the type `{ty}`");
            return Err(self.expected(name_tok, &what));
        }
        self.lx.bump(name_tok);
        let name = self.lx.text(name_tok);
        if !names.insert(name) {
            return Err(SchemaError::new(
                name_tok.range(),
                format!("duplicate argument name `{name}`"),
            ));
        }
        let mut default = None;
        let eq = self.lx.peek()?;
        if eq.kind == Tok::Eq {
            self.lx.bump(eq);
            let syntax = parse_default(&mut self.lx)?;
            default = Some(check(&self.lx, &syntax, ty, name)?);
        }
        Ok(Argument {
            name: owned(name),
            ty,
            alias,
            default,
            kw_only,
        })
    }

    fn returns(&mut self) -> Result<Vec<Return>, SchemaError> {
        let mut rets: Vec<Return> = Vec::new();
        let mut names: Names<'a> = Names::new();
        let open = self.lx.peek()?;
        if open.kind != Tok::LParen {
            rets.push(self.ret(&mut names)?);
            return Ok(rets);
        }
        self.lx.bump(open);
        let close = self.lx.peek()?;
        if close.kind == Tok::RParen {
            self.lx.bump(close);
            return Ok(rets);
        }
        loop {
            let ret = self.ret(&mut names)?;
            rets.push(ret);
            let sep = self.lx.next()?;
            match sep.kind {
                Tok::Comma => continue,
                Tok::RParen => return Ok(rets),
                _ => return Err(self.expected(sep, "`,` or `)` in the list of return types")),
            }
        }
    }

    fn ret(&mut self, names: &mut Names<'a>) -> Result<Return, SchemaError> {
        let (ty, alias) = self.ty(Position::Return)?;
        let mut name = None;
        let tok = self.lx.peek()?;
        if tok.kind == Tok::Ident {
            self.lx.bump(tok);
            let text = self.lx.text(tok);
            if !names.insert(text) {
                return Err(SchemaError::new(
                    tok.range(),
                    format!("duplicate return name `{text}`"),
                ));
            }
            name = Some(owned(text));
        }
        Ok(Return { name, ty, alias })
    }

    /// A type with its optional alias annotation: `Tensor(a!)[]?`.
    fn ty(&mut self, position: Position) -> Result<(Type, Option<Alias>), SchemaError> {
        let what = match position {
            Position::Argument => "an argument type such as `Tensor` or `int`",
            Position::Return => {
                "a return type such as `Tensor`, or `(Tensor, Tensor)`, or `()` for none"
            }
        };
        let tok = self.lx.peek()?;
        if tok.kind != Tok::Ident {
            return Err(self.expected(tok, what));
        }
        self.lx.bump(tok);
        let text = self.lx.text(tok);
        let class = match text == class_name::PREFIX[0] {
            true => Some(class_name::parse_class(&mut self.lx, tok)?),
            false => None,
        };
        let Some(base) = class
            .map(Type::base_type)
            .or_else(|| BaseType::from_schema_name(text))
        else {
            let next = self.lx.peek().map(|t| t.kind).unwrap_or(Tok::Other);
            let looks_like_name = position == Position::Argument
                && matches!(next, Tok::Comma | Tok::RParen | Tok::Eq | Tok::End);
            return Err(SchemaError::new(
                tok.range(),
                unknown_type_message(text, looks_like_name),
            ));
        };
        let mut ty = class.unwrap_or(Type::base(base));
        let mut alias = None;
        let next = self.lx.peek()?;
        match next.kind {
            Tok::LParen => {
                let (parsed, range) = self.alias()?;
                if base != BaseType::Tensor {
                    return Err(SchemaError::new(
                        range,
                        format!(
                            "alias annotations such as `(a!)` are only allowed on `Tensor`, \
                             not on `{}`",
                            ty.base_name()
                        ),
                    ));
                }
                alias = Some(parsed);
            }
            Tok::Bang if base == BaseType::Tensor => {
                return Err(SchemaError::new(
                    next.range(),
                    "expected a named alias set: write `Tensor(a!)` instead of `Tensor!`",
                ))
            }
            _ => {}
        }
        loop {
            let tok = self.lx.peek()?;
            ty = match tok.kind {
                Tok::LBracket => {
                    self.lx.bump(tok);
                    let close = self.lx.next()?;
                    match close.kind {
                        Tok::RBracket => wrap(ty.list(), ty, tok.start..close.end)?,
                        Tok::Int => {
                            let bracket = self.lx.next()?;
                            if bracket.kind != Tok::RBracket {
                                return Err(self.expected(bracket, "`]` after the list's size"));
                            }
                            self.fixed_list(ty, self.lx.text(close), tok.start..bracket.end)?
                        }
                        _ => return Err(self.expected(close, "`]` after `[`")),
                    }
                }
                Tok::Question => {
                    self.lx.bump(tok);
                    wrap(ty.optional(), ty, tok.range())?
                }
                Tok::LParen => {
                    let (_, range) = self.alias()?;
                    let message = if base == BaseType::Tensor {
                        "an alias annotation goes once, directly after `Tensor`, as in \
                         `Tensor(a!)[]`"
                            .to_string()
                    } else {
                        format!(
                            "alias annotations such as `(a!)` are only allowed on `Tensor`, \
                             not on `{ty}`"
                        )
                    };
                    return Err(SchemaError::new(range, message));
                }
                _ => return Ok((ty, alias)),
            };
        }
    }

    /// `T[N]`: a fixed-size list, on a base type only.
    fn fixed_list(&self, ty: Type, size: &str, range: Range<usize>) -> Result<Type, SchemaError> {
        if ty.depth() != 0 {
            return Err(SchemaError::new(
                range,
                format!(
                    "only the innermost list can have a fixed size: `{}[{size}]` is not \
                     supported; write `{ty}[]`",
                    ty
                ),
            ));
        }
        let len: u32 = size.parse().map_err(|_| {
            SchemaError::new(
                range.clone(),
                format!("`{size}` is not a list size: expected a count such as `{ty}[2]`"),
            )
        })?;
        ty.fixed_list(len).ok_or_else(|| {
            SchemaError::new(
                range,
                format!(
                    "a fixed-size list holds at least one element; write `{ty}[]` for any count"
                ),
            )
        })
    }

    /// `(a)`, `(a!)`, `(a|b)`, `(a -> *)`, `(a! -> a|b)`, with its byte range.
    fn alias(&mut self) -> Result<(Alias, Range<usize>), SchemaError> {
        let open = self.lx.next()?;
        let sets = self.alias_sets(false)?;
        let mut close = self.lx.next()?;
        let is_write = close.kind == Tok::Bang;
        if is_write {
            close = self.lx.next()?;
        }
        let mut after = Vec::new();
        if close.kind == Tok::Arrow {
            after = self.alias_sets(true)?;
            close = self.lx.next()?;
        }
        if close.kind != Tok::RParen {
            return Err(self.expected(
                close,
                "`)` to close the alias annotation (the forms are `Tensor(a)`, `Tensor(a!)`, \
                 `Tensor(a|b)` and `Tensor(a -> *)`)",
            ));
        }
        let range = open.start..close.end;
        if is_write && sets.len() > 1 {
            return Err(SchemaError::new(
                range,
                "an alias set larger than one cannot be written to: write `Tensor(a!)`",
            ));
        }
        if sets.len() > 1 && after.len() > 1 {
            return Err(SchemaError::new(
                range,
                "the alias sets before and after `->` cannot both be larger than one",
            ));
        }
        let alias = Alias {
            sets: Cow::Owned(sets),
            is_write,
            after: Cow::Owned(after),
        };
        Ok((alias, range))
    }

    /// `a` or `a|b|...`; after `->`, also `*`.
    fn alias_sets(&mut self, after_arrow: bool) -> Result<Vec<Cow<'static, str>>, SchemaError> {
        let mut sets = Vec::new();
        loop {
            let set = self.lx.peek()?;
            match set.kind {
                Tok::Ident => sets.push(owned(self.lx.text(set))),
                Tok::Star if after_arrow => sets.push(Cow::Borrowed(Alias::WILDCARD)),
                _ if after_arrow => {
                    return Err(self.expected(set, "an alias set name or `*` after `->`"))
                }
                _ => {
                    return Err(self.expected(set, "an alias set name such as `a` in `Tensor(a!)`"))
                }
            }
            self.lx.bump(set);
            let pipe = self.lx.peek()?;
            if pipe.kind != Tok::Pipe {
                return Ok(sets);
            }
            self.lx.bump(pipe);
        }
    }
}

/// `wrapped` (the result of `Type::list`/`Type::optional` on `ty`), or the depth error.
fn wrap(wrapped: Option<Type>, ty: Type, range: Range<usize>) -> Result<Type, SchemaError> {
    wrapped.ok_or_else(|| {
        SchemaError::new(
            range,
            format!(
                "type `{ty}` is nested too deeply: a type may carry at most {MAX_TYPE_DEPTH} \
                 `[]`/`?` suffixes"
            ),
        )
    })
}
