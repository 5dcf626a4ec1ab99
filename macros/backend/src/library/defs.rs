//! The library body: its `m.def("schema")` calls, each schema parsed and checked.

use std::collections::HashMap;

use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema;
use syn::spanned::Spanned;
use syn::{Expr, ExprMethodCall, ItemFn, Lit, LitStr, Stmt};

use super::OpDef;
use crate::errors::Errors;
use crate::naming;
use crate::schema_error::to_syn_error;

const BODY_ONLY_DEFS: &str =
    "a library body holds only `m.def(\"schema\");` and `m.def_with_tags(\"schema\", &[OpTag::..]);` calls, so every schema is known at compile time";

/// One `m.def` or `m.def_with_tags` call, as written.
struct Def {
    lit: LitStr,
    tags: Vec<OpTag>,
}

/// What a library body's calls give besides the ops.
#[derive(Default)]
pub(super) struct Extras {
    /// `m.set_python_module("pkg.ops")`.
    pub(super) python_module: Option<LitStr>,
}

/// Every `m.def("...")` in the body, parsed, with every problem collected. `ns` is the library's
/// namespace, unless the attribute failed to name one.
pub(super) fn collect(
    func: &ItemFn,
    ns: Option<&str>,
    extras: &mut Extras,
    errors: &mut Errors,
) -> Vec<OpDef> {
    let mut literals = Vec::new();
    for stmt in &func.block.stmts {
        match stmt {
            Stmt::Expr(expr, _) => collect_calls(expr, &mut literals, extras, errors),
            other => errors.at(other.span(), BODY_ONLY_DEFS),
        }
    }
    let mut ops: Vec<OpDef> = Vec::new();
    let mut seen: HashMap<String, LitStr> = HashMap::new();
    for Def { lit, tags } in literals {
        let schema = match schema::parse(&lit.value()) {
            Ok(s) => s,
            Err(e) => {
                errors.push(to_syn_error(&lit, &e));
                continue;
            }
        };
        if let (Some(explicit), Some(ns)) = (&schema.name.namespace, ns) {
            if explicit != ns {
                errors.at(
                    lit.span(),
                    format!("this schema names namespace `{explicit}`, but it is inside #[stable_library({ns})]: drop the `{explicit}::` prefix or move it to the library for `{explicit}`"),
                );
                continue;
            }
        }
        let marker = naming::marker_name(&schema.name.name, &schema.name.overload);
        let full = ns.map_or_else(|| schema.display_name(), |ns| schema.qualified_name(ns));
        if let Some(first) = seen.get(&marker) {
            let line = first.span().start().line;
            let message = if line > 0 {
                format!("operator `{full}` is already defined in this library (line {line}); give this one an overload name, e.g. `{}.other(...)`", schema.name.name)
            } else {
                format!("operator `{full}` is already defined in this library; give this one an overload name, e.g. `{}.other(...)`", schema.name.name)
            };
            errors.at(lit.span(), message);
            continue;
        }
        let text = match ns.map(|ns| stored_text(&schema, ns)) {
            Some(Ok(text)) => text,
            Some(Err(message)) => {
                errors.at(lit.span(), message);
                continue;
            }
            None => String::new(),
        };
        seen.insert(marker.clone(), lit.clone());
        ops.push(OpDef {
            lit,
            schema,
            text,
            marker,
            tags,
        });
    }
    ops
}

/// The schema as the op's static data stores it, printed with its namespace: the runtime parses
/// it back when something first asks for the schema, so it must give exactly this one.
fn stored_text(schema: &schema::Schema, ns: &str) -> Result<String, String> {
    let mut qualified = schema.clone();
    qualified.name.namespace = Some(ns.to_string().into());
    let text = qualified.to_string();
    match schema::parse(&text) {
        Ok(back) if back == qualified => Ok(text),
        _ => Err(format!(
            "opbox stores this schema as `{text}`, which does not parse back to the same schema: \
             a bug in opbox's schema printer; please report it with this schema"
        )),
    }
}

fn collect_calls(expr: &Expr, out: &mut Vec<Def>, extras: &mut Extras, errors: &mut Errors) {
    let Expr::MethodCall(ExprMethodCall {
        receiver,
        method,
        args,
        ..
    }) = expr
    else {
        errors.at(expr.span(), BODY_ONLY_DEFS);
        return;
    };
    if let Expr::MethodCall(_) = receiver.as_ref() {
        collect_calls(receiver, out, extras, errors);
    }
    if method == "set_python_module" {
        python_module(method, args, extras, errors);
        return;
    }
    let with_tags = method == "def_with_tags";
    if method != "def" && !with_tags {
        errors.at(
            method.span(),
            format!("unknown library method `{method}`; use `m.def(\"schema\")`, `m.def_with_tags(\"schema\", &[OpTag::Core])` or `m.set_python_module(\"pkg.ops\")`"),
        );
        return;
    }
    let expected = if with_tags { 2 } else { 1 };
    let lit = match (args.len() == expected, args.first()) {
        (true, Some(Expr::Lit(lit))) => match &lit.lit {
            Lit::Str(s) => s.clone(),
            other => {
                errors.at(
                    other.span(),
                    format!("m.{method} takes the schema as a string literal"),
                );
                return;
            }
        },
        _ => {
            let message = if with_tags {
                "m.def_with_tags takes the schema as a string literal and the tags as an array, `m.def_with_tags(\"op(Tensor x) -> Tensor\", &[OpTag::Pt2Compliant])`, so both can be checked at compile time"
            } else {
                "m.def takes one string literal, the schema, so it can be checked at compile time"
            };
            let span = if args.is_empty() {
                method.span()
            } else {
                args.span()
            };
            errors.at(span, message);
            return;
        }
    };
    let tags = match args.iter().nth(1) {
        Some(list) => tag_list(list, errors),
        None => Vec::new(),
    };
    out.push(Def { lit, tags });
}

/// `&[OpTag::Core, OpTag::Pointwise]` (or `[..]`), each name checked against the one list.
fn tag_list(expr: &Expr, errors: &mut Errors) -> Vec<OpTag> {
    let inner = match expr {
        Expr::Reference(r) => r.expr.as_ref(),
        other => other,
    };
    let Expr::Array(array) = inner else {
        errors.at(
            expr.span(),
            "the tags are an array of `OpTag` variants, e.g. `&[OpTag::Pt2Compliant]`",
        );
        return Vec::new();
    };
    let mut tags = Vec::new();
    for elem in &array.elems {
        let name = match elem {
            Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        match name.as_deref().and_then(OpTag::from_variant_name) {
            Some(tag) if tags.contains(&tag) => {
                errors.at(elem.span(), format!("tag `{tag:?}` is listed twice"))
            }
            Some(tag) => tags.push(tag),
            None => {
                let names: Vec<&str> = OpTag::ALL.iter().map(|t| t.variant_name()).collect();
                errors.at(
                    elem.span(),
                    format!(
                        "unknown op tag; the tags are PyTorch's: OpTag::{}",
                        names.join(", OpTag::")
                    ),
                );
            }
        }
    }
    tags
}

/// `m.set_python_module("pkg.ops")`: once per block, a dotted Python module path.
fn python_module(
    method: &syn::Ident,
    args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    extras: &mut Extras,
    errors: &mut Errors,
) {
    let lit = match (args.len(), args.first()) {
        (
            1,
            Some(Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            })),
        ) => s.clone(),
        _ => {
            errors.at(
                if args.is_empty() { method.span() } else { args.span() },
                "m.set_python_module takes the module as one string literal, e.g. `m.set_python_module(\"my_pkg.ops\")`",
            );
            return;
        }
    };
    let value = lit.value();
    let valid = !value.is_empty()
        && value.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !valid {
        errors.at(
            lit.span(),
            format!("`{value}` is not a Python module path: write dotted identifiers, e.g. `my_pkg.ops`"),
        );
    } else if extras.python_module.is_some() {
        errors.at(
            lit.span(),
            "the Python module is already set in this block: call m.set_python_module once",
        );
    } else {
        extras.python_module = Some(lit);
    }
}
