//! Every schema error: its message, and for most the byte range it points at.

use opbox_codegen::schema::{parse, SchemaError};

fn err(s: &str) -> SchemaError {
    match parse(s) {
        Ok(schema) => panic!("{s:?} should not parse, got {schema}"),
        Err(e) => {
            assert!(
                e.range.start <= e.range.end && e.range.end <= s.len(),
                "{s:?}: bad range {e:?}"
            );
            assert!(
                s.get(e.range.clone()).is_some(),
                "{s:?}: range {e:?} not on char boundaries"
            );
            e
        }
    }
}

/// The error's message is exactly `message`, at `range`.
fn exact(s: &str, message: &str, range: std::ops::Range<usize>) {
    let e = err(s);
    assert_eq!(e.message, message, "message for {s:?}");
    assert_eq!(e.range, range, "range for {s:?}");
}

/// The error's message contains `part`, and its range covers the text `at` (its first match;
/// an empty `at` means the end of input).
fn contains(s: &str, part: &str, at: &str) {
    let e = err(s);
    assert!(
        e.message.contains(part),
        "message for {s:?} should contain {part:?}, got {:?}",
        e.message
    );
    let start = if at.is_empty() {
        s.len()
    } else {
        s.find(at).unwrap_or_else(|| panic!("{at:?} not in {s:?}"))
    };
    assert_eq!(
        e.range,
        start..start + at.len(),
        "range for {s:?} ({})",
        e.message
    );
}

/// The error's message contains `part`, at `range`.
fn contains_at(s: &str, part: &str, range: std::ops::Range<usize>) {
    let e = err(s);
    assert!(
        e.message.contains(part),
        "message for {s:?} should contain {part:?}, got {:?}",
        e.message
    );
    assert_eq!(e.range, range, "range for {s:?} ({})", e.message);
}

const DOUBLE: &str = "Use `float` instead of `double` in an operator's schema string. `float` in schema corresponds to the double type in C++ (f64 in Rust)";
const TYPES: &str = "schema types are Tensor, int, float, bool, str, ScalarType, Device, Scalar, SymInt, SymFloat, SymBool, Layout, MemoryFormat, Generator, Dimname, DeviceIndex, Stream, Storage, QScheme, DimVector, GraphModule, __torch__.torch.classes.ns.Name, with `[]` (or `[N]`) for lists and `?` for optionals";
const TENSOR_DEFAULT: &str =
    "Tensor arguments can only default to None, and only when optional (`Tensor? x=None`)";

#[test]
fn cxx_type_spellings() {
    exact("foo(double x) -> ()", DOUBLE, 4..10);
    exact("foo(Tensor x) -> double", DOUBLE, 17..23);
    let e = err("foo(int64_t x) -> ()");
    assert!(
        e.message
            .starts_with("Use `int` instead of `int64_t` in an operator's schema string."),
        "{}",
        e.message
    );
    assert!(e.message.contains("i64 in Rust"), "{}", e.message);
    assert_eq!(e.range, 4..11);
    let e = err("foo(long x) -> ()");
    assert!(
        e.message.starts_with("Use `int` instead of `long`"),
        "{}",
        e.message
    );
    assert_eq!(e.range, 4..8);
}

#[test]
fn malformed_custom_class_names() {
    const FORM: &str = "a custom class is written `__torch__.torch.classes.<namespace>.<Name>`";
    exact(
        "foo(__torch__ x) -> ()",
        &format!("{FORM}; found `x` after `__torch__`"),
        4..15,
    );
    exact(
        "foo(__torch__.torch.klasses.ns.A x) -> ()",
        &format!("{FORM}; found `klasses` after `__torch__.torch`"),
        4..27,
    );
    exact(
        "foo(__torch__.torch.classes.ns x) -> ()",
        &format!("{FORM}; found `x` after `__torch__.torch.classes.ns`"),
        4..32,
    );
    exact(
        "foo(__torch__.torch.classes.ns.) -> ()",
        &format!("{FORM}; found `)` after `__torch__.torch.classes.ns`"),
        4..32,
    );
    exact(
        "foo() -> __torch__.torch.classes",
        &format!("{FORM}; found end of input after `__torch__.torch.classes`"),
        9..32,
    );
    // Alias annotations stay Tensor's.
    contains(
        "foo(__torch__.torch.classes.ns.A(a) x) -> ()",
        "only allowed on `Tensor`, not on `__torch__.torch.classes.ns.A`",
        "(a)",
    );
}

#[test]
fn unknown_types() {
    exact(
        "foo(Widget x) -> ()",
        &format!("unknown type `Widget`; {TYPES}"),
        4..10,
    );
    for (written, meant) in [
        ("tensor", "Tensor"),
        ("Float", "float"),
        ("string", "str"),
        ("boolean", "bool"),
        ("Int", "int"),
        ("Tensr", "Tensor"),
        ("scalar", "Scalar"),
        ("device", "Device"),
        ("dtype", "ScalarType"),
    ] {
        let s = format!("foo({written} x) -> ()");
        exact(
            &s,
            &format!("unknown type `{written}`; {TYPES}; did you mean `{meant}`?"),
            4..4 + written.len(),
        );
    }
    exact(
        "foo(Tensor x) -> tensor",
        &format!("unknown type `tensor`; {TYPES}; did you mean `Tensor`?"),
        17..23,
    );
    // A name with no type in front of it.
    exact(
        "foo(x) -> ()",
        &format!("unknown type `x`; {TYPES}; an argument is written `type name`, e.g. `Tensor x`"),
        4..5,
    );
}

#[test]
fn structure() {
    exact(
        "foo(Tensor x, int x) -> ()",
        "duplicate argument name `x`",
        18..19,
    );
    contains_at(
        "foo(Tensor x) -> (Tensor a, int a)",
        "duplicate return name `a`",
        32..33,
    );
    exact(
        "foo(Tensor x)",
        "expected `->` followed by the return type(s), found end of input",
        13..13,
    );
    exact(
        "foo(Tensor x) Tensor",
        "expected `->` followed by the return type(s), found `Tensor`",
        14..20,
    );
    exact(
        "foo(Tensor x) - > Tensor",
        "expected `->` followed by the return type(s), found `-`",
        14..15,
    );
    let e = err("foo");
    assert!(
        e.message
            .starts_with("Tried to parse a function schema but only the operator name was given"),
        "{}",
        e.message
    );
    assert_eq!(e.range, 0..3);
    assert_eq!(err("  ns::foo.bar ").range, 2..13);
    contains("", "expected an operator name", "");
    contains_at("   ", "found end of input", 3..3);
    contains("(Tensor x) -> ()", "expected an operator name", "(");
    exact(
        "a::b::c(Tensor x) -> ()",
        "nested namespaces are not supported; expected `ns::name`",
        4..6,
    );
    contains(
        "ns::(Tensor x) -> ()",
        "expected an operator name after `::`",
        "(",
    );
    contains(
        "foo.(Tensor x) -> ()",
        "expected an overload name after `.`",
        "(",
    );
    contains(
        "foo Tensor x) -> ()",
        "expected `(` and the arguments after the operator name, found `Tensor`",
        "Tensor",
    );
    contains(
        "foo(Tensor) -> ()",
        "expected an argument name after the type `Tensor`, found `)`",
        ")",
    );
    contains(
        "foo(int[] =1) -> ()",
        "expected an argument name after the type `int[]`, found `=`",
        "=",
    );
    contains(
        "foo(Tensor x,) -> ()",
        "expected an argument type such as `Tensor` or `int`, found `)`",
        ")",
    );
    contains_at(
        "foo(Tensor x Tensor y) -> ()",
        "expected `,` or `)` after argument `x`, found `Tensor`",
        13..19,
    );
    contains("foo(Tensor x) ->", "expected a return type", "");
    contains(
        "foo(Tensor x) -> (Tensor",
        "expected `,` or `)` in the list of return types, found end of input",
        "",
    );
    contains_at(
        "foo(Tensor x) -> (Tensor,)",
        "expected a return type",
        25..26,
    );
    contains(
        "foo(Tensor x) -> Tensor extra stuff",
        "expected the end of the schema after the return type(s), found `stuff`",
        "stuff",
    );
    contains(
        "foo(Tensor x) -> Tensor, Tensor",
        "expected the end of the schema",
        ",",
    );
    contains("foo(Tensor x, ...) -> ()", "expected an argument type", ".");
}

#[test]
fn keyword_only_marker() {
    exact(
        "foo(*) -> ()",
        "`*` must be followed by at least one keyword-only argument",
        4..5,
    );
    exact(
        "foo(Tensor x, *) -> ()",
        "`*` must be followed by at least one keyword-only argument",
        14..15,
    );
    exact(
        "foo(*, int a, *, int b) -> ()",
        "`*` may appear only once in the argument list",
        14..15,
    );
    contains(
        "foo(* int a) -> ()",
        "expected `,` after `*`, found `int`",
        "int",
    );
}

#[test]
fn types_and_aliases() {
    contains(
        "foo(int(a) x) -> ()",
        "alias annotations such as `(a!)` are only allowed on `Tensor`, not on `int`",
        "(a)",
    );
    contains(
        "foo(Tensor x) -> int(a!)",
        "only allowed on `Tensor`",
        "(a!)",
    );
    contains(
        "foo(int[](a) x) -> ()",
        "only allowed on `Tensor`, not on `int[]`",
        "(a)",
    );
    contains(
        "foo(Tensor[](a) x) -> ()",
        "an alias annotation goes once, directly after `Tensor`",
        "(a)",
    );
    contains(
        "foo(Tensor(a)(b) x) -> ()",
        "an alias annotation goes once",
        "(b)",
    );
    contains(
        "foo(Tensor! x) -> ()",
        "`Tensor(a!)` instead of `Tensor!`",
        "!",
    );
    contains(
        "foo(Tensor(a|b!) x) -> ()",
        "an alias set larger than one cannot be written to",
        "(a|b!)",
    );
    contains(
        "foo(Tensor(a|b -> c|d) x) -> ()",
        "cannot both be larger than one",
        "(a|b -> c|d)",
    );
    contains(
        "foo(Tensor(a -> ) x) -> ()",
        "expected an alias set name or `*` after `->`",
        ")",
    );
    contains("foo(Tensor(a|) x) -> ()", "expected an alias set name", ")");
    contains(
        "foo(Tensor(a b) x) -> ()",
        "expected `)` to close the alias annotation",
        "b",
    );
    contains("foo(Tensor(*) x) -> ()", "expected an alias set name", "*");
    contains("foo(Tensor() x) -> ()", "expected an alias set name", ")");
    contains(
        "foo(int[][2] x) -> ()",
        "only the innermost list can have a fixed size",
        "[2]",
    );
    contains(
        "foo(int[0] x) -> ()",
        "a fixed-size list holds at least one element",
        "[0]",
    );
    contains(
        "foo(int[99999999999] x) -> ()",
        "is not a list size",
        "[99999999999]",
    );
    contains(
        "foo(int[2 x) -> ()",
        "expected `]` after the list's size",
        "x",
    );
    contains(
        "foo(int[ x) -> ()",
        "expected `]` after `[`, found `x`",
        "x",
    );
    let nine = "foo(int[][][][][][][][]? x) -> ()";
    contains(
        nine,
        "is nested too deeply: a type may carry at most 8",
        "?",
    );
    contains_at("foo(int?????????? x) -> ()", "nested too deeply", 15..16);
}

#[test]
fn defaults_that_do_not_fit() {
    exact(
        "foo(float a=True) -> ()",
        "default `True` does not fit argument `a` of type `float`; expected a number such as `1.0`, `-2.5` or `1e-3`",
        12..16,
    );
    contains(
        "foo(int a=1.5) -> ()",
        "default `1.5` does not fit argument `a` of type `int`; expected an integer",
        "1.5",
    );
    contains(
        "foo(int? a=1.5) -> ()",
        "default `1.5` does not fit argument `a` of type `int?`",
        "1.5",
    );
    contains(
        "foo(bool b=1) -> ()",
        "default `1` does not fit argument `b` of type `bool`; expected `True` or `False`",
        "1",
    );
    contains("foo(bool b=true) -> ()", "of type `bool`", "true");
    contains("foo(str s=1) -> ()", "expected a string literal", "1");
    contains("foo(Device d=cpu) -> ()", "expected a device string", "cpu");
    contains(
        "foo(Device d=\"gpu\") -> ()",
        "`gpu` is not a device; a device default is `\"cpu\"`, `\"cuda\"`, `\"cuda:N\"`",
        "\"gpu\"",
    );
    contains(
        "foo(Device? d=\"cuda:x\") -> ()",
        "`cuda:x` is not a device",
        "\"cuda:x\"",
    );
    contains(
        "foo(Layout l=dense) -> ()",
        "expected a layout: `strided`, `sparse_coo`",
        "dense",
    );
    contains(
        "foo(int r=Average) -> ()",
        "named constant: `Mean` (1), `Sum` (2)",
        "Average",
    );
    contains(
        "foo(Generator g=None) -> ()",
        "only optional types such as `Generator?` can default to `None`",
        "None",
    );
    contains(
        "foo(Stream? s=0) -> ()",
        "a `Stream` has no other default",
        "0",
    );
    contains(
        "foo(ScalarType t=complex64) -> ()",
        "expected a dtype name",
        "complex64",
    );
    contains(
        "foo(ScalarType t='float32') -> ()",
        "expected a dtype name",
        "'float32'",
    );
    contains(
        "foo(Scalar s='a') -> ()",
        "expected a number, `True` or `False`",
        "'a'",
    );
    contains(
        "foo(float a=nan) -> ()",
        "default `nan` does not fit",
        "nan",
    );
    contains(
        "foo(float a=inf) -> ()",
        "default `inf` does not fit",
        "inf",
    );
    contains(
        "foo(int a=[1]) -> ()",
        "default `[1]` does not fit argument `a` of type `int`",
        "[1]",
    );
    contains("foo(int a=None) -> ()", "default `None` does not fit argument `a` of type `int`; only optional types such as `int?` can default to `None`", "None");
    contains(
        "foo(int[] a=None) -> ()",
        "only optional types such as `int[]?`",
        "None",
    );
    exact("foo(Tensor x=None) -> ()", TENSOR_DEFAULT, 13..17);
    exact("foo(Tensor? x=1) -> ()", TENSOR_DEFAULT, 14..15);
    exact("foo(Tensor(a!) x=None) -> ()", TENSOR_DEFAULT, 17..21);
}

#[test]
fn list_defaults() {
    contains(
        "foo(str[] x=[\"a\"]) -> ()",
        "lists are only supported for int, SymInt, float or bool defaults; argument `x` has type `str[]`",
        "[\"a\"]",
    );
    contains_at(
        "foo(Tensor[] x=[]) -> ()",
        "lists are only supported for int, SymInt, float or bool defaults",
        15..17,
    );
    contains(
        "foo(int?[] x=[1]) -> ()",
        "lists are only supported for int, SymInt, float or bool defaults",
        "[1]",
    );
    contains_at(
        "foo(int[][] x=[]) -> ()",
        "lists are only supported for int, SymInt, float or bool defaults",
        14..16,
    );
    contains(
        "foo(int[] x=1) -> ()",
        "a lone value repeats only into a fixed-size list such as `int[2] x=1`",
        "1",
    );
    contains(
        "foo(SymInt[2] x=[1, 2.5]) -> ()",
        "expected a list of integers",
        "2.5",
    );
    contains(
        "foo(int[] x=[1, 2.5]) -> ()",
        "default `[1, 2.5]` does not fit argument `x` of type `int[]`; expected a list of integers",
        "2.5",
    );
    contains(
        "foo(bool[] x=[True, 1]) -> ()",
        "expected a list of `True`/`False`",
        "1",
    );
    contains(
        "foo(float[] x=[1, True]) -> ()",
        "expected a list of numbers",
        "True",
    );
    contains_at(
        "foo(int[] x=[[1]]) -> ()",
        "nested lists are not supported",
        13..14,
    );
    contains(
        "foo(int[] x=[1 2]) -> ()",
        "expected `,` or `]` in the list default, found `2`",
        "2",
    );
    contains_at("foo(int[] x=[1,]) -> ()", "expected a list element", 15..16);
    contains(
        "foo(int[] x=[1, 2) -> ()",
        "expected `,` or `]` in the list default, found `)`",
        ")",
    );
}

#[test]
fn literals() {
    contains(
        "foo(int a=99999999999999999999) -> ()",
        "integer `99999999999999999999` is out of range for `int` (i64)",
        "99999999999999999999",
    );
    contains(
        "foo(int[] a=[9223372036854775808]) -> ()",
        "out of range",
        "9223372036854775808",
    );
    contains(
        "foo(float a=1e999) -> ()",
        "number `1e999` is out of range for `float` (f64)",
        "1e999",
    );
    contains("foo(Scalar a=-1e400) -> ()", "out of range", "-1e400");
    contains(
        "foo(str s=\"abc) -> ()",
        "unterminated string literal",
        "\"abc) -> ()",
    );
    contains(
        "foo(str s='abc\\') -> ()",
        "unterminated string literal",
        "'abc\\') -> ()",
    );
    contains(
        "foo(str s=\"a\\qb\") -> ()",
        "unknown escape `\\q` in string literal",
        "\\q",
    );
    contains("foo(str s=\"a\\éb\") -> ()", "unknown escape `\\é`", "\\é");
    contains(
        "foo(int a=) -> ()",
        "expected a default value after `=`",
        ")",
    );
    contains(
        "foo(int a=-x) -> ()",
        "expected a default value after `=`",
        "-",
    );
    contains(
        "foo(int a=.5) -> ()",
        "expected a default value after `=`",
        ".",
    );
}

#[test]
fn non_ascii() {
    contains(
        "föo(Tensor x) -> ()",
        "expected `(` and the arguments after the operator name, found `ö`",
        "ö",
    );
    contains("foo(Tensor x🙂) -> ()", "found `🙂`", "🙂");
    contains("ünïcode", "expected an operator name", "ü");
    contains(
        "foo(Tensor x) → Tensor",
        "expected `->` followed by the return type(s), found `→`",
        "→",
    );
}

#[test]
fn long_tokens_are_shortened() {
    let long = "y".repeat(200);
    let e = err(&format!("foo(Tensor x) -> Tensor x {long}"));
    assert!(e.message.len() < 150, "{}", e.message);
    assert!(e.message.ends_with("...`"), "{}", e.message);
}

#[test]
fn display_has_range() {
    let e = err("foo(Tensor x, int x) -> ()");
    assert_eq!(
        e.to_string(),
        "duplicate argument name `x` (at bytes 18..19)"
    );
}
