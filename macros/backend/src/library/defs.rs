//! The library body: its `m.def("schema")` calls, each schema parsed and checked.

use std::collections::HashMap;

use opbox_codegen::schema;
use syn::spanned::Spanned;
use syn::{Expr, ExprMethodCall, ItemFn, Lit, LitStr, Stmt};

use super::OpDef;
use crate::errors::Errors;
use crate::naming;
use crate::schema_error::to_syn_error;

const BODY_ONLY_DEFS: &str =
    "a library body holds only `m.def(\"schema\");` calls, so every schema is known at compile time";

/// Every `m.def("...")` in the body, parsed, with every problem collected. `ns` is the library's
/// namespace, unless the attribute failed to name one.
pub(super) fn collect(func: &ItemFn, ns: Option<&str>, errors: &mut Errors) -> Vec<OpDef> {
    let mut literals = Vec::new();
    for stmt in &func.block.stmts {
        match stmt {
            Stmt::Expr(expr, _) => collect_calls(expr, &mut literals, errors),
            other => errors.at(other.span(), BODY_ONLY_DEFS),
        }
    }
    let mut ops: Vec<OpDef> = Vec::new();
    let mut seen: HashMap<String, LitStr> = HashMap::new();
    for lit in literals {
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
        seen.insert(marker.clone(), lit.clone());
        ops.push(OpDef {
            lit,
            schema,
            marker,
        });
    }
    ops
}

fn collect_calls(expr: &Expr, out: &mut Vec<LitStr>, errors: &mut Errors) {
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
        collect_calls(receiver, out, errors);
    }
    if method != "def" {
        errors.at(
            method.span(),
            format!("unknown library method `{method}`; use `m.def(\"schema\")`"),
        );
        return;
    }
    match (args.len(), args.first()) {
        (1, Some(Expr::Lit(lit))) => match &lit.lit {
            Lit::Str(s) => out.push(s.clone()),
            other => errors.at(other.span(), "m.def takes the schema as a string literal"),
        },
        _ => errors.at(
            args.span(),
            "m.def takes one string literal, the schema, so it can be checked at compile time",
        ),
    }
}
