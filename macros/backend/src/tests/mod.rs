//! Expansion tests, in process: the macros' output pretty-printed and checked for the pieces the
//! runtime and the signature checks rely on. User-facing messages live in the ui-tests.

mod extern_kernel;
mod kernel;
mod kernel_group;
mod library;
mod native;
mod ranged;

use proc_macro2::TokenStream;

/// Whitespace and trailing commas do not matter to these checks: macro bodies
/// (`inventory::submit!`) print as token streams, and prettyplease adds a comma to every
/// argument list it breaks over lines.
fn squash(s: &str) -> String {
    let compact: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    compact
        .iter()
        .enumerate()
        .filter(|&(i, c)| !(*c == ',' && matches!(compact.get(i + 1), Some(')' | ']' | '}'))))
        .map(|(_, c)| c)
        .collect()
}

fn has(out: &str, expected: &str) -> bool {
    squash(out).contains(&squash(expected))
}

fn assert_has(out: &str, expected: &str) {
    assert!(has(out, expected), "missing `{expected}` in:\n{out}");
}

fn assert_has_all(out: &str, expected: &[&str]) {
    for e in expected {
        assert_has(out, e);
    }
}

/// The expansion as Rust source, checked on the way: it parses, and every opbox path it names
/// is a private re-export (`::opbox::__private::…`), the facade's contract with the macros.
fn pretty(tokens: TokenStream) -> String {
    let out = match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("expansion is not valid Rust ({e}):\n{tokens}"),
    };
    let compact = squash(&out);
    let public = compact
        .match_indices("::opbox::")
        .any(|(i, m)| !compact[i + m.len()..].starts_with("__private::"));
    assert!(!public, "a public opbox path in:\n{out}");
    out
}

/// The messages of the `compile_error!`s in an expansion, in order.
fn compile_errors(tokens: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        let proc_macro2::TokenTree::Ident(ident) = &token else {
            continue;
        };
        if ident != "compile_error" {
            continue;
        }
        // `compile_error` `!` `{ "message" }`
        tokens.next();
        if let Some(proc_macro2::TokenTree::Group(g)) = tokens.next() {
            if let Ok(lit) = syn::parse2::<syn::LitStr>(g.stream()) {
                out.push(lit.value());
            }
        }
    }
    out
}
