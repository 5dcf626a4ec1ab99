//! PyTorch's real schemas: every `func:` line of PyTorch 2.11's `native_functions.yaml` parses,
//! round-trips through the printer, and agrees with torchgen's own parse of it field by field
//! (operator name, each argument's type, annotation, name and keyword-only flag, each return's
//! type, annotation and name: `fixtures/native_functions_2_11.torchgen.tsv`).

use opbox_codegen::schema::{parse, Alias, Schema};

const SCHEMAS: &str = include_str!("fixtures/native_functions_2_11.txt");
const TORCHGEN: &str = include_str!("fixtures/native_functions_2_11.torchgen.tsv");

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
}

/// An annotation as torchgen prints it: `a!`, `a -> *`, `a|b`.
fn annotation(alias: Option<&Alias>) -> String {
    alias.map_or_else(String::new, |a| {
        let printed = a.to_string();
        printed
            .strip_prefix('(')
            .and_then(|p| p.strip_suffix(')'))
            .unwrap_or(&printed)
            .to_string()
    })
}

/// The schema in the fixture's torchgen form.
fn torchgen_view(schema: &Schema) -> String {
    let args: Vec<String> = schema
        .arguments
        .iter()
        .map(|a| {
            format!(
                "{}|{}|{}|{}",
                a.ty,
                annotation(a.alias.as_ref()),
                a.name,
                if a.kw_only { "kw" } else { "" }
            )
        })
        .collect();
    let rets: Vec<String> = schema
        .returns
        .iter()
        .map(|r| {
            format!(
                "{}|{}|{}",
                r.ty,
                annotation(r.alias.as_ref()),
                r.name.as_deref().unwrap_or("")
            )
        })
        .collect();
    format!("{}\t{}\t{}", schema.name, args.join("; "), rets.join("; "))
}

#[test]
fn every_aten_schema_parses_round_trips_and_agrees_with_torchgen() {
    let schemas: Vec<&str> = lines(SCHEMAS).collect();
    let expected: Vec<&str> = lines(TORCHGEN).collect();
    assert_eq!(schemas.len(), 2674, "the fixture holds every func: line");
    assert_eq!(schemas.len(), expected.len());
    let mut failures = Vec::new();
    for (line, want) in schemas.iter().zip(&expected) {
        let schema = match parse(line) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{line}\n  does not parse: {e}"));
                continue;
            }
        };
        let printed = schema.to_string();
        if parse(&printed).as_ref() != Ok(&schema) {
            failures.push(format!(
                "{line}\n  printed as {printed}, which reads back differently"
            ));
        }
        let got = torchgen_view(&schema);
        if got != *want {
            failures.push(format!("{line}\n  ours:     {got}\n  torchgen: {want}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} schemas fail:\n{}",
        failures.len(),
        schemas.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn named_defaults_resolve_as_torchgen_does() {
    let s = parse("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor")
        .expect("parses");
    assert_eq!(s.arguments[2].to_string(), "int reduction=1");
    let s = parse("clone(Tensor self, *, MemoryFormat? memory_format=contiguous_format) -> Tensor")
        .expect("parses");
    assert_eq!(
        s.arguments[1].to_string(),
        "MemoryFormat? memory_format=contiguous_format"
    );
    let s = parse(
        "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0) -> Tensor",
    )
    .expect("parses");
    assert_eq!(s.arguments[2].to_string(), "int[2] stride=[]");
    assert_eq!(s.arguments[3].to_string(), "int[2] padding=[0, 0]");
}
