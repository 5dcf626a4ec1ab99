//! Property tests: every valid schema survives print → parse, and no input makes `parse` panic.

use std::borrow::Cow;
use std::collections::HashSet;

use opbox_codegen::schema::{
    intern_class_name, parse, Alias, Argument, BaseType, DefaultValue, Layout, MemoryFormat,
    OperatorName, Return, Schema, Type, TypeShape, MAX_TYPE_DEPTH, SCALAR_TYPE_NAMES,
};
use proptest::prelude::*;

fn ident() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_]{0,7}"
}

/// A base type, sometimes as a fixed-size list `T[N]`, wrapped in up to `MAX_TYPE_DEPTH`
/// random `[]`/`?` layers.
fn ty() -> impl Strategy<Value = Type> {
    let base = (
        prop::sample::select(BaseType::ALL.to_vec()),
        prop::option::weighted(0.2, 1u32..5),
        class_name(),
    )
        .prop_map(|(base, fixed, class)| {
            let t = match base {
                BaseType::Class => Type::class(intern_class_name(&class)),
                other => Type::base(other),
            };
            fixed.and_then(|n| t.fixed_list(n)).unwrap_or(t)
        });
    // Mostly shallow types, sometimes the deepest allowed.
    let layers = prop_oneof![
        4 => prop::collection::vec(any::<bool>(), 0..=2),
        1 => prop::collection::vec(any::<bool>(), 0..=usize::from(MAX_TYPE_DEPTH)),
    ];
    (base, layers).prop_map(|(base, layers)| {
        layers.into_iter().fold(base, |t, optional| {
            let wrapped = if optional { t.optional() } else { t.list() };
            // A fixed list already used one layer; at the limit, stop wrapping.
            wrapped.unwrap_or(t)
        })
    })
}

/// A custom class's qualified name, `__torch__.torch.classes.ns.Name`.
fn class_name() -> impl Strategy<Value = String> {
    (ident(), ident()).prop_map(|(ns, name)| format!("__torch__.torch.classes.{ns}.{name}"))
}

fn finite_f64() -> impl Strategy<Value = f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        (POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO),
        prop::sample::select(vec![
            0.0,
            1.0,
            -1.0,
            0.1,
            1e-7,
            1e16,
            2.5,
            f64::MAX,
            f64::MIN_POSITIVE
        ]),
    ]
    .prop_filter("finite", |x: &f64| x.is_finite())
}

/// Some default that fits `ty`, or none. Mirrors the rules of the parser.
fn default_for(ty: Type) -> BoxedStrategy<Option<DefaultValue>> {
    match value_for(ty) {
        Some(value) => prop_oneof![Just(None), value.prop_map(Some)].boxed(),
        None => Just(None).boxed(),
    }
}

/// The default values `ty` accepts, or `None` when it accepts none.
fn value_for(ty: Type) -> Option<BoxedStrategy<DefaultValue>> {
    let value = match ty.shape() {
        TypeShape::Optional(inner) => match value_for(inner) {
            Some(inner) => prop_oneof![Just(DefaultValue::None), inner].boxed(),
            None => Just(DefaultValue::None).boxed(),
        },
        TypeShape::Base(base) => match base.concrete() {
            BaseType::Tensor
            | BaseType::Generator
            | BaseType::Stream
            | BaseType::Storage
            | BaseType::QScheme
            | BaseType::DimVector
            | BaseType::GraphModule
            | BaseType::Class => return None,
            BaseType::Int | BaseType::DeviceIndex => {
                any::<i64>().prop_map(DefaultValue::Int).boxed()
            }
            BaseType::Float => finite_f64().prop_map(DefaultValue::Float).boxed(),
            BaseType::Bool => any::<bool>().prop_map(DefaultValue::Bool).boxed(),
            BaseType::Str | BaseType::Dimname => any::<String>()
                .prop_map(|s| DefaultValue::Str(Cow::Owned(s)))
                .boxed(),
            BaseType::Device => prop_oneof![
                prop::sample::select(vec!["cpu", "cuda", "meta"]).prop_map(str::to_string),
                any::<u32>().prop_map(|i| format!("cuda:{i}")),
            ]
            .prop_map(|s| DefaultValue::Str(Cow::Owned(s)))
            .boxed(),
            BaseType::ScalarType => prop::sample::select(SCALAR_TYPE_NAMES.to_vec())
                .prop_map(|s| DefaultValue::Str(Cow::Borrowed(s)))
                .boxed(),
            BaseType::Layout => prop::sample::select(Layout::ALL.to_vec())
                .prop_map(DefaultValue::Layout)
                .boxed(),
            BaseType::MemoryFormat => prop::sample::select(MemoryFormat::ALL.to_vec())
                .prop_map(DefaultValue::MemoryFormat)
                .boxed(),
            BaseType::Scalar => prop_oneof![
                any::<i64>().prop_map(DefaultValue::Int),
                finite_f64().prop_map(DefaultValue::Float),
                any::<bool>().prop_map(DefaultValue::Bool),
            ]
            .boxed(),
            // `concrete` maps the Sym types away.
            BaseType::SymInt | BaseType::SymFloat | BaseType::SymBool => return None,
        },
        TypeShape::List(inner) => match inner.shape() {
            TypeShape::Base(base) => match base.concrete() {
                BaseType::Int => prop::collection::vec(any::<i64>(), 0..4)
                    .prop_map(|v| DefaultValue::IntList(Cow::Owned(v)))
                    .boxed(),
                BaseType::Float => prop::collection::vec(finite_f64(), 0..4)
                    .prop_map(|v| DefaultValue::FloatList(Cow::Owned(v)))
                    .boxed(),
                BaseType::Bool => prop::collection::vec(any::<bool>(), 0..4)
                    .prop_map(|v| DefaultValue::BoolList(Cow::Owned(v)))
                    .boxed(),
                _ => return None,
            },
            _ => return None,
        },
    };
    Some(value)
}

fn alias_for(ty: Type) -> BoxedStrategy<Option<Alias>> {
    if ty.base_type() != BaseType::Tensor {
        return Just(None).boxed();
    }
    let set_name = || prop_oneof![ident(), Just("a".to_string())];
    let after = prop::collection::vec(
        prop_oneof![set_name(), Just(Alias::WILDCARD.to_string())],
        0..3,
    );
    let alias = (
        prop::collection::vec(set_name(), 1..3),
        any::<bool>(),
        after,
    )
        .prop_map(|(sets, is_write, mut after)| {
            // torchgen's rules: a written annotation names one set, and only one side of
            // `->` may hold several.
            if sets.len() > 1 {
                after.truncate(1);
            }
            Alias {
                is_write: is_write && sets.len() == 1,
                sets: Cow::Owned(sets.into_iter().map(Cow::Owned).collect()),
                after: Cow::Owned(after.into_iter().map(Cow::Owned).collect()),
            }
        });
    prop::option::of(alias).boxed()
}

/// An argument without its name (names are made unique later) and with `kw_only` unset.
fn argument() -> impl Strategy<Value = Argument> {
    ty().prop_flat_map(|ty| {
        (alias_for(ty), default_for(ty)).prop_map(move |(alias, default)| Argument {
            name: Cow::Borrowed(""),
            ty,
            alias,
            default,
            kw_only: false,
        })
    })
}

fn ret() -> impl Strategy<Value = Return> {
    (ty(), prop::option::of(ident())).prop_flat_map(|(ty, name)| {
        alias_for(ty).prop_map(move |alias| Return {
            name: name.clone().map(Cow::Owned),
            ty,
            alias,
        })
    })
}

/// Names with the duplicates dropped, in order.
fn unique(names: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

fn schema() -> impl Strategy<Value = Schema> {
    let name = (
        prop::option::of(ident()),
        ident(),
        prop_oneof![Just(String::new()), ident()],
    );
    let args = (
        prop::collection::vec(ident(), 0..6),
        prop::collection::vec(argument(), 6),
    );
    let rets = (
        prop::collection::vec(prop::option::of(ident()), 0..4),
        prop::collection::vec(ret(), 4),
    );
    (name, args, any::<prop::sample::Index>(), rets).prop_map(
        |((ns, name, overload), (arg_names, arg_pool), split, (ret_names, ret_pool))| {
            let arg_names = unique(arg_names);
            let first_kw = split.index(arg_names.len() + 1);
            let arguments = arg_names
                .into_iter()
                .zip(arg_pool)
                .enumerate()
                .map(|(i, (name, arg))| Argument {
                    name: Cow::Owned(name),
                    kw_only: i >= first_kw,
                    ..arg
                })
                .collect::<Vec<_>>();
            let mut seen = HashSet::new();
            let returns = ret_names
                .into_iter()
                .zip(ret_pool)
                .map(|(name, r)| {
                    // Return names must be unique too.
                    let name = name.filter(|n| seen.insert(n.clone())).map(Cow::Owned);
                    Return { name, ..r }
                })
                .collect::<Vec<_>>();
            Schema {
                name: OperatorName {
                    namespace: ns.map(Cow::Owned),
                    name: Cow::Owned(name),
                    overload: Cow::Owned(overload),
                },
                arguments: Cow::Owned(arguments),
                returns: Cow::Owned(returns),
            }
        },
    )
}

/// Pieces of schema syntax, valid and not, to shuffle into near-miss inputs.
const TOKENS: &[&str] = &[
    "Tensor",
    "int",
    "float",
    "bool",
    "str",
    "ScalarType",
    "Device",
    "Scalar",
    "double",
    "int64_t",
    "tensor",
    "(",
    ")",
    "[",
    "]",
    "[]",
    "?",
    "!",
    "*",
    "=",
    ",",
    "->",
    "-",
    ">",
    "::",
    ":",
    ".",
    "...",
    "x",
    "a",
    "foo",
    "None",
    "True",
    "False",
    "1",
    "-2",
    "2.5",
    "1e3",
    "1.",
    "-",
    "\"s\"",
    "'t'",
    "\"",
    "'",
    "\\",
    "\\n",
    "(a!)",
    "(a)",
    "é",
    "🙂",
    "→",
    " ",
    "  ",
    "\t",
    "\n",
    "|",
    "99999999999999999999",
    "1e999",
    "float32",
    "SymInt",
    "SymBool",
    "Layout",
    "MemoryFormat",
    "Generator",
    "Dimname",
    "Stream",
    "Storage",
    "__torch__",
    "__torch__.torch.classes.",
    "__torch__.torch.classes.ns.Name",
    "torch",
    "classes",
    "[2]",
    "[0]",
    "(a -> *)",
    "(a|b)",
    "(a! -> a|b)",
    "->*",
    "contiguous_format",
    "strided",
    "Mean",
    "\"cuda:1\"",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS.to_vec()), 0..40).prop_map(|t| t.concat())
}

proptest! {
    // Failures print their minimal case; persisting them needs a `lib.rs` next to this file.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn print_parse_round_trip(schema in schema()) {
        let printed = schema.to_string();
        let parsed = parse(&printed);
        prop_assert_eq!(parsed.as_ref(), Ok(&schema), "printed: {}", printed);
        // And printing is a fixed point.
        if let Ok(parsed) = parsed {
            prop_assert_eq!(parsed.to_string(), printed);
        }
    }

    #[test]
    fn parse_never_panics_on_any_string(s in ".*") {
        check_no_panic(&s);
    }

    #[test]
    fn parse_never_panics_on_token_soup(s in token_soup()) {
        check_no_panic(&s);
    }

    #[test]
    fn parse_never_panics_on_damaged_schemas(
        schema in schema(),
        cut in any::<prop::sample::Index>(),
        insert in prop::sample::select(TOKENS.to_vec()),
    ) {
        let printed = schema.to_string();
        let at = cut.index(printed.len() + 1);
        if let (Some(head), Some(tail)) = (printed.get(..at), printed.get(at..)) {
            check_no_panic(head);
            check_no_panic(&format!("{head}{insert}{tail}"));
        }
    }
}

/// `parse` returns (never panics); an error's range lies on char boundaries inside the input; a
/// success re-prints and re-parses to itself.
fn check_no_panic(s: &str) {
    match parse(s) {
        Ok(schema) => {
            let printed = schema.to_string();
            assert_eq!(
                parse(&printed).as_ref(),
                Ok(&schema),
                "{s:?} printed as {printed:?}"
            );
        }
        Err(e) => {
            assert!(e.range.start <= e.range.end, "{s:?}: {e:?}");
            assert!(
                s.get(e.range.clone()).is_some(),
                "{s:?}: range off the input: {e:?}"
            );
            assert!(!e.message.is_empty());
        }
    }
}

#[test]
fn every_prefix_of_a_rich_schema() {
    let full = r#"ns::op.ovl(Tensor(a!)[]? x, float a=1e-3, str s="é\"\\", *, int[] d=[1, -2], ScalarType? t=float32, SymInt[2] k=1, Tensor(a -> *) v, Tensor(b|c) w, MemoryFormat m=contiguous_format, Layout? l=None, int r=Mean, Generator? g=None, Device dev="cuda:1", __torch__.torch.classes.ns.Obj? obj=None) -> (Tensor(a!) out, int[], Tensor(a)[], __torch__.torch.classes.ns.Obj[])"#;
    assert!(parse(full).is_ok());
    for (at, _) in full.char_indices() {
        check_no_panic(&full[..at]);
        check_no_panic(&full[at..]);
    }
}

#[test]
fn deep_nesting_does_not_overflow() {
    let brackets = "[".repeat(100_000);
    check_no_panic(&format!("foo(int[] x={brackets}) -> ()"));
    check_no_panic(&format!("foo(int{}) -> ()", "[]".repeat(100_000)));
    check_no_panic(&format!("foo({}) -> ()", "(".repeat(100_000)));
    check_no_panic(&format!("foo(Tensor x) -> {}", "(".repeat(100_000)));
}
