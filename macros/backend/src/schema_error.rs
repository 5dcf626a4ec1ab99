use opbox_codegen::schema::SchemaError;
use proc_macro2::Span;
use syn::LitStr;

/// A schema error as a compile error pointing inside the string literal where the compiler
/// allows it, and always with the offending part underlined in the message.
pub fn to_syn_error(lit: &LitStr, error: &SchemaError) -> syn::Error {
    let source = lit.value();
    let start = error.range.start.min(source.len());
    let end = error.range.end.clamp(start, source.len());
    let prefix_width = source.get(..start).map_or(start, |p| p.chars().count());
    let width = source
        .get(start..end)
        .map_or(1, |p| p.chars().count())
        .max(1);
    let message = format!(
        "{}\n  | {}\n  | {}{}",
        error.message,
        source,
        " ".repeat(prefix_width),
        "^".repeat(width)
    );
    syn::Error::new(
        inner_span(lit, start, end).unwrap_or_else(|| lit.span()),
        message,
    )
}

/// The span of bytes `start..end` of the literal's value, when the literal has no escapes and
/// the compiler supports sub-spans (nightly); otherwise None.
fn inner_span(lit: &LitStr, start: usize, end: usize) -> Option<Span> {
    let token = lit.token();
    let repr = token.to_string();
    if !repr.starts_with('"') || repr.contains('\\') {
        return None;
    }
    token.subspan(start + 1..end + 1)
}
