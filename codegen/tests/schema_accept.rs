//! Every accepted schema form: what it parses to, and its canonical print.

use std::borrow::Cow;

use opbox_codegen::schema::{
    parse, Alias, Argument, BaseType, DefaultValue, OperatorName, Return, Schema, Type,
};

fn ok(s: &str) -> Schema {
    match parse(s) {
        Ok(schema) => schema,
        Err(e) => panic!("{s:?} should parse, got: {e}"),
    }
}

/// `input` parses, prints as `canonical`, and the canonical form parses back to the same schema.
fn canonical(input: &str, canonical: &str) {
    let schema = ok(input);
    assert_eq!(
        schema.to_string(),
        canonical,
        "canonical print of {input:?}"
    );
    assert_eq!(ok(canonical), schema, "re-parse of {canonical:?}");
}

#[test]
fn canonical_forms() {
    let table: &[(&str, &str)] = &[
        ("foo(Tensor x) -> Tensor", "foo(Tensor x) -> Tensor"),
        ("mylib::foo(Tensor x) -> Tensor", "mylib::foo(Tensor x) -> Tensor"),
        ("foo.out(Tensor x) -> Tensor", "foo.out(Tensor x) -> Tensor"),
        ("  foo . bar ( Tensor  x ,int y )->( Tensor , Tensor ) ", "foo.bar(Tensor x, int y) -> (Tensor, Tensor)"),
        ("foo\t(\nTensor x\r\n)\n->\tTensor", "foo(Tensor x) -> Tensor"),
        ("ns :: foo(Tensor x) -> Tensor", "ns::foo(Tensor x) -> Tensor"),
        ("foo()->()", "foo() -> ()"),
        ("foo(Tensor x) -> (Tensor)", "foo(Tensor x) -> Tensor"),
        ("foo(Tensor x) -> Tensor[]", "foo(Tensor x) -> Tensor[]"),
        ("foo(Tensor[] xs) -> (Tensor[], int)", "foo(Tensor[] xs) -> (Tensor[], int)"),
        ("foo(int[]?[] x, int?[]? y, str[]? z) -> str[]?", "foo(int[]?[] x, int?[]? y, str[]? z) -> str[]?"),
        ("foo(int [ ] x, int ? y) -> ()", "foo(int[] x, int? y) -> ()"),
        ("foo(int[][][][][][][][] x) -> ()", "foo(int[][][][][][][][] x) -> ()"),
        ("foo(Tensor? x=None) -> Tensor", "foo(Tensor? x=None) -> Tensor"),
        ("foo(Tensor[]? x=None) -> ()", "foo(Tensor[]? x=None) -> ()"),
        (
            "foo(float a=1, float b=1., float c=-2.5, float d=1e-3, float e=0.1, float f=1E+2) -> ()",
            "foo(float a=1.0, float b=1.0, float c=-2.5, float d=0.001, float e=0.1, float f=100.0) -> ()",
        ),
        ("foo(float a=1e-7, float b=1e20, float c=-0.0) -> ()", "foo(float a=1e-7, float b=1e20, float c=-0.0) -> ()"),
        (
            "foo(int a=0, int b=-1, int c=9223372036854775807, int d=-9223372036854775808) -> ()",
            "foo(int a=0, int b=-1, int c=9223372036854775807, int d=-9223372036854775808) -> ()",
        ),
        ("foo(bool a=True, bool b=False) -> ()", "foo(bool a=True, bool b=False) -> ()"),
        (
            r#"foo(str a="mean", str b='x', str c="a\"b\\c\nd\te", str d='it\'s', str e="") -> ()"#,
            r#"foo(str a="mean", str b="x", str c="a\"b\\c\nd\te", str d="it's", str e="") -> ()"#,
        ),
        ("foo(str a=\"héllo 🙂\") -> ()", "foo(str a=\"héllo 🙂\") -> ()"),
        (r#"foo(Device d="cuda:0", Device? e="cpu") -> ()"#, r#"foo(Device d="cuda:0", Device? e="cpu") -> ()"#),
        (
            "foo(ScalarType a=float32, ScalarType? b=None, ScalarType? c=bfloat16, ScalarType d=long) -> ()",
            "foo(ScalarType a=float32, ScalarType? b=None, ScalarType? c=bfloat16, ScalarType d=long) -> ()",
        ),
        (
            "foo(Scalar a=1, Scalar b=2.5, Scalar c=True, Scalar? d=None, Scalar e=-3) -> ()",
            "foo(Scalar a=1, Scalar b=2.5, Scalar c=True, Scalar? d=None, Scalar e=-3) -> ()",
        ),
        (
            "foo(int[] a=[1,2], float[] b=[1, 2.5], bool[] c=[True,False], int[] d=[], float[]? e=[0]) -> ()",
            "foo(int[] a=[1, 2], float[] b=[1.0, 2.5], bool[] c=[True, False], int[] d=[], float[]? e=[0.0]) -> ()",
        ),
        ("foo(int? dim=1, float? eps=1e-5, bool? b=True, str? s='a') -> ()", "foo(int? dim=1, float? eps=1e-5, bool? b=True, str? s=\"a\") -> ()"),
        ("foo(int?? x=3, int[]? y=None) -> ()", "foo(int?? x=3, int[]? y=None) -> ()"),
        ("foo(Tensor x) -> (Tensor values, Tensor indices)", "foo(Tensor x) -> (Tensor values, Tensor indices)"),
        ("foo(Tensor x) -> Tensor out", "foo(Tensor x) -> Tensor out"),
        ("foo(Tensor(a) x) -> Tensor(a)", "foo(Tensor(a) x) -> Tensor(a)"),
        ("foo(Tensor( a ! ) x) -> Tensor(a!)", "foo(Tensor(a!) x) -> Tensor(a!)"),
        ("foo(Tensor(a!)[] xs, Tensor(b!)? out=None) -> ()", "foo(Tensor(a!)[] xs, Tensor(b!)? out=None) -> ()"),
        ("foo(Tensor x) -> (Tensor(a!) out, Tensor(b)[])", "foo(Tensor x) -> (Tensor(a!) out, Tensor(b)[])"),
        ("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", "abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"),
        ("foo(*, int x, int y=2) -> ()", "foo(*, int x, int y=2) -> ()"),
        ("foo(Tensor a,*,int x) -> ()", "foo(Tensor a, *, int x) -> ()"),
        // Type names may be argument and return names.
        ("int(int int) -> (int int, Tensor Tensor)", "int(int int) -> (int int, Tensor Tensor)"),
        // The examples from PyTorch's stable-ABI tests.
        ("fill_infinity(Tensor(a!) t) -> Tensor(a!)", "fill_infinity(Tensor(a!) t) -> Tensor(a!)"),
        ("my_flatten(Tensor t, int start_dim=0, int end_dim=-1) -> Tensor", "my_flatten(Tensor t, int start_dim=0, int end_dim=-1) -> Tensor"),
        ("my_string_op(Tensor t, str accessor, str passthru) -> (str[], int)", "my_string_op(Tensor t, str accessor, str passthru) -> (str[], int)"),
        ("exp_neg_is_leaf(Tensor t1, Tensor t2, Tensor t3) -> (Tensor, Tensor, bool)", "exp_neg_is_leaf(Tensor t1, Tensor t2, Tensor t3) -> (Tensor, Tensor, bool)"),
        ("my_ones_like(Tensor t, Device d) -> Tensor", "my_ones_like(Tensor t, Device d) -> Tensor"),
        (
            "our_subtract_stable_error_check(Tensor self, Tensor other, float alpha=1.0) -> Tensor",
            "our_subtract_stable_error_check(Tensor self, Tensor other, float alpha=1.0) -> Tensor",
        ),
    ];
    for (input, expected) in table {
        canonical(input, expected);
    }
}

#[test]
fn parsed_structure() {
    let s = ok(
        "mylib::axpby.out(Tensor x, float a=1, *, Tensor(a!)? out=None) -> (Tensor(a!) out, int[])",
    );
    let expected = Schema {
        name: OperatorName {
            namespace: Some(Cow::Borrowed("mylib")),
            name: Cow::Borrowed("axpby"),
            overload: Cow::Borrowed("out"),
        },
        arguments: Cow::Owned(vec![
            Argument {
                name: "x".into(),
                ty: Type::TENSOR,
                alias: None,
                default: None,
                kw_only: false,
            },
            Argument {
                name: "a".into(),
                ty: Type::FLOAT,
                alias: None,
                default: Some(DefaultValue::Float(1.0)),
                kw_only: false,
            },
            Argument {
                name: "out".into(),
                ty: Type::TENSOR.optional().unwrap(),
                alias: Some(Alias::single("a", true)),
                default: Some(DefaultValue::None),
                kw_only: true,
            },
        ]),
        returns: Cow::Owned(vec![
            Return {
                name: Some("out".into()),
                ty: Type::TENSOR,
                alias: Some(Alias::single("a", true)),
            },
            Return {
                name: None,
                ty: Type::INT.list().unwrap(),
                alias: None,
            },
        ]),
    };
    assert_eq!(s, expected);
    assert!(s.arguments[2].is_mutable());
    assert!(!s.arguments[0].is_mutable());
}

#[test]
fn default_values() {
    let s = ok(
        r#"f(Scalar a=1, Scalar b=1.5, Scalar c=False, float d=3, ScalarType e=half, Device g="cpu", float[] h=[1, 2]) -> ()"#,
    );
    let defaults: Vec<_> = s
        .arguments
        .iter()
        .map(|a| a.default.clone().unwrap())
        .collect();
    assert_eq!(
        defaults,
        vec![
            DefaultValue::Int(1),
            DefaultValue::Float(1.5),
            DefaultValue::Bool(false),
            DefaultValue::Float(3.0),
            DefaultValue::Str("half".into()),
            DefaultValue::Str("cpu".into()),
            DefaultValue::FloatList(vec![1.0, 2.0].into()),
        ]
    );
}

#[test]
fn scalar_type_names_all_accepted() {
    for name in opbox_codegen::schema::SCALAR_TYPE_NAMES {
        canonical(
            &format!("f(ScalarType t={name}) -> ()"),
            &format!("f(ScalarType t={name}) -> ()"),
        );
    }
}

#[test]
fn returns_shapes() {
    assert!(ok("f() -> ()").returns.is_empty());
    assert_eq!(ok("f() -> Tensor").returns.len(), 1);
    assert_eq!(ok("f() -> (Tensor)").returns.len(), 1);
    assert_eq!(ok("f() -> (Tensor, int, str[])").returns.len(), 3);
    let list = ok("f() -> Tensor[]");
    assert_eq!(list.returns[0].ty.base_type(), BaseType::Tensor);
    assert_eq!(list.returns[0].ty.to_string(), "Tensor[]");
}

#[test]
fn names() {
    let s = ok("mylib::foo.out(Tensor x) -> Tensor");
    assert_eq!(s.qualified_name("other"), "mylib::foo.out");
    assert_eq!(s.display_name(), "mylib::foo.out");
    assert_eq!(s.name.namespace.as_deref(), Some("mylib"));
    let s = ok("foo(Tensor x) -> Tensor");
    assert_eq!(s.qualified_name("lib"), "lib::foo");
    assert_eq!(s.display_name(), "foo");
    assert_eq!(s.name.namespace, None);
    assert_eq!(s.name.overload, "");
    let s: Schema = "bar.Scalar(Scalar s) -> Tensor".parse().unwrap();
    assert_eq!(s.qualified_name("lib"), "lib::bar.Scalar");
}

#[test]
fn type_with_alias_display() {
    let alias = Alias::single("a", true);
    let ty = Type::TENSOR.list().unwrap().optional().unwrap();
    assert_eq!(
        ty.display_with_alias(Some(&alias)).to_string(),
        "Tensor(a!)[]?"
    );
    assert_eq!(ty.display_with_alias(None).to_string(), "Tensor[]?");
    assert_eq!(alias.to_string(), "(a!)");
}

#[test]
fn default_value_display() {
    let table = [
        (DefaultValue::None, "None"),
        (DefaultValue::Bool(true), "True"),
        (DefaultValue::Int(-3), "-3"),
        (DefaultValue::Float(1.0), "1.0"),
        (DefaultValue::Float(0.1), "0.1"),
        (DefaultValue::Float(1e-7), "1e-7"),
        (DefaultValue::Str("a\"b\\c\n".into()), r#""a\"b\\c\n""#),
        (DefaultValue::IntList(vec![1, 2].into()), "[1, 2]"),
        (DefaultValue::FloatList(vec![1.0, 0.5].into()), "[1.0, 0.5]"),
        (
            DefaultValue::BoolList(vec![true, false].into()),
            "[True, False]",
        ),
        (DefaultValue::IntList(Cow::Borrowed(&[])), "[]"),
    ];
    for (value, text) in table {
        assert_eq!(value.to_string(), text);
    }
}

#[test]
fn const_schema_prints() {
    static ARGS: [Argument; 1] = [Argument {
        name: Cow::Borrowed("x"),
        ty: Type::TENSOR,
        alias: None,
        default: None,
        kw_only: false,
    }];
    static RETS: [Return; 1] = [Return {
        name: None,
        ty: Type::TENSOR,
        alias: None,
    }];
    static S: Schema = Schema {
        name: OperatorName {
            namespace: None,
            name: Cow::Borrowed("id"),
            overload: Cow::Borrowed(""),
        },
        arguments: Cow::Borrowed(&ARGS),
        returns: Cow::Borrowed(&RETS),
    };
    assert_eq!(S.to_string(), "id(Tensor x) -> Tensor");
    assert_eq!(ok(&S.to_string()), S);
}

#[test]
fn custom_classes_are_kept_by_name() {
    // PyTorch's quantized ops take their packed weights as a custom class (a TorchBind object).
    let schema = ok("quantized::linear(Tensor X, __torch__.torch.classes.quantized.LinearPackedParamsBase W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y");
    let w = &schema.arguments[1];
    assert_eq!(w.ty.base_type(), BaseType::Class);
    assert_eq!(
        w.ty.class_name(),
        Some("__torch__.torch.classes.quantized.LinearPackedParamsBase")
    );
    assert_eq!(
        w.ty,
        Type::class("__torch__.torch.classes.quantized.LinearPackedParamsBase")
    );
    assert_ne!(w.ty, Type::class("__torch__.torch.classes.quantized.Other"));
    assert_eq!(schema.arguments[0].ty.class_name(), None);
    // Wrapped, defaulted to None, returned, with spaces around the dots: one canonical print.
    canonical(
        "f(__torch__ . torch.classes.ns.Obj? o=None, __torch__.torch.classes.ns.Obj[2] pair) -> (__torch__.torch.classes.ns.Obj[], __torch__.torch.classes.other.Obj out)",
        "f(__torch__.torch.classes.ns.Obj? o=None, __torch__.torch.classes.ns.Obj[2] pair) -> (__torch__.torch.classes.ns.Obj[], __torch__.torch.classes.other.Obj out)",
    );
    let f = ok("f(__torch__.torch.classes.ns.Obj[2] pair) -> ()");
    assert_eq!(f.arguments[0].ty.list_len(), Some(2));
    assert_eq!(
        f.arguments[0].ty.to_string(),
        "__torch__.torch.classes.ns.Obj[2]"
    );
    // A class is no tensor: dispatch does not read it.
    assert!(f.tensor_arguments().is_empty());
}

#[test]
fn tensor_arguments_fill_a_64_bit_mask_and_the_rest_are_listed() {
    let args: Vec<String> = (0..70)
        .map(|i| match i {
            0 | 63 => format!("Tensor a{i}"),
            5 => format!("Tensor[] a{i}"),
            64 | 69 => format!("Tensor? a{i}"),
            _ => format!("int a{i}"),
        })
        .collect();
    let f = ok(&format!("f({}) -> ()", args.join(", ")));
    let (mask, beyond) = f.tensor_argument_mask();
    assert_eq!(mask, 1 | 1 << 5 | 1 << 63);
    assert_eq!(beyond, vec![64, 69]);
    assert_eq!(
        ok("f(Tensor x, int n) -> Tensor").tensor_argument_mask(),
        (1, vec![])
    );
}
