//! The parser is linear in the schema's length: a 1 MB schema of 100,000 arguments parses and
//! round-trips. The duplicate-name check used to compare each name with every earlier one, which
//! took 24 s for 110,000 arguments in release; a quadratic parser would take minutes here in a
//! debug build, so this test finishing is the check. The printed table shows the scaling (run
//! with `--nocapture`, ideally `--release`); nothing asserts a time.

use std::time::Instant;

use opbox_codegen::schema::parse;

/// `big(Tensor a0, int a1=1, float[] a2, ...) -> Tensor`, about 10 bytes per argument.
fn schema_with(n: usize) -> String {
    let mut s = String::from("big(");
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        let ty = match i % 3 {
            0 => "Tensor",
            1 => "int",
            _ => "SymInt[2]",
        };
        s.push_str(&format!("{ty} a{i}"));
    }
    s.push_str(") -> Tensor");
    s
}

#[test]
fn a_megabyte_schema_of_100k_arguments_parses_in_linear_time() {
    let mut rows = Vec::new();
    for n in [25_000, 50_000, 100_000] {
        let text = schema_with(n);
        let start = Instant::now();
        let schema = parse(&text).expect("parses");
        let elapsed = start.elapsed();
        assert_eq!(schema.arguments.len(), n);
        assert_eq!(schema.to_string(), text, "round-trips");
        rows.push((n, text.len(), elapsed));
    }
    assert!(rows.iter().any(|&(_, bytes, _)| bytes > 1_000_000));
    eprintln!("arguments   bytes      parse");
    for (n, bytes, t) in &rows {
        eprintln!("{n:>9} {bytes:>9} {:>8.1} ms", t.as_secs_f64() * 1e3);
    }
}

#[test]
fn a_duplicate_among_100k_is_found_at_its_position() {
    let mut text = schema_with(100_000);
    let at = text.rfind(')').map_or(0, |i| i);
    text.insert_str(at, ", int a7");
    let err = parse(&text).expect_err("a7 appears twice");
    assert_eq!(err.message, "duplicate argument name `a7`");
    assert_eq!(text.get(err.range.clone()), Some("a7"));
    assert!(err.range.start > text.len() - 20);
}
