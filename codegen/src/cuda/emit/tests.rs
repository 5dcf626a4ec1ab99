use std::borrow::Cow;

use super::*;
use crate::cuda::decl::tests::axpby_decl;
use crate::cuda::decl::{IncludeEdge, Param, ParamKind};
use crate::types::ScalarType;

const AXPBY: &str =
    "extern \"C\" __global__ void axpby(const float* x, const float* y, float* out,\n\
                     float a, float b, long long n) {}\n";

/// Replays the TU's `#line` directives and returns, for every other line, `(file, line, text)`:
/// what NVRTC will name in its log for that line.
fn mapped_lines(tu: &str) -> Vec<(String, u32, String)> {
    let mut file = "<program>".to_string();
    let mut line = 1u32;
    let mut out = Vec::new();
    for text in tu.lines() {
        if let Some(rest) = text.strip_prefix("#line ") {
            let (n, name) = rest.split_once(' ').expect("#line N \"file\"");
            line = n.parse().expect("line number");
            file = name.trim_matches('"').to_string();
            continue;
        }
        out.push((file.clone(), line, text.to_string()));
        line += 1;
    }
    out
}

fn file(name: &'static str, content: &'static str, includes: &'static [IncludeEdge]) -> SourceFile {
    SourceFile {
        name: Cow::Borrowed(name),
        content: Cow::Borrowed(content),
        includes: Cow::Borrowed(includes),
    }
}

#[test]
fn emits_prelude_source_and_signature_check() {
    let tu = emit(&axpby_decl(AXPBY), &[]).expect("emit");
    assert_eq!(tu.name_expression(), "&axpby");
    assert_eq!(tu.program_name, "opbox/axpby_f32.cu");
    assert!(tu.source.contains("namespace opbox_detail"));
    assert!(
        !tu.source.contains("__half"),
        "no half support unless the declaration uses f16"
    );
    let checks: Vec<&str> = tu
        .source
        .lines()
        .filter(|l| l.contains("struct opbox_check_0_axpby_f32"))
        .collect();
    assert_eq!(checks.len(), 7, "a count check and one per parameter");
    assert!(checks[0].contains(
        "must take 6 parameters, as the Rust declaration of axpby_f32 implies: __global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n)"
    ), "{}", checks[0]);
    assert!(checks[6].contains(
        "same_abi<Actual, long long>::value, \"opbox: parameter #5 (n) of axpby_f32: the Rust declaration 'i64' needs 'long long'\""
    ), "{}", checks[6]);
    let mapped = mapped_lines(&tu.source);
    let user: Vec<_> = mapped.iter().filter(|(f, _, _)| f == "axpby.cu").collect();
    assert_eq!(user.len(), 2);
    assert_eq!(
        (user[1].1, user[1].2.as_str()),
        (2, "float a, float b, long long n) {}")
    );
    assert!(mapped.iter().any(|(f, l, t)| f == "<opbox-check:axpby_f32>"
        && *l == 2
        && t.starts_with("static_assert(opbox_check_0_axpby_f32_count")));
}

#[test]
fn inlined_headers_keep_their_own_file_and_line_numbers() {
    // main.cu includes a.cuh (pragma once) twice via b.cuh, the diamond of the example.
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(vec![
        file(
            "main.cu",
            "// main\n#include \"a.cuh\"\n#include <b.cuh>\nint main_line4;\n",
            &[
                IncludeEdge { line: 2, file: 1 },
                IncludeEdge { line: 3, file: 2 },
            ],
        ),
        file("a.cuh", "#pragma once\nint a_line2;\n", &[]),
        file(
            "b.cuh",
            "#include \"a.cuh\"\r\nint b_line2;",
            &[IncludeEdge { line: 1, file: 1 }],
        ),
    ]);
    let tu = emit(&decl, &[]).expect("emit");
    let mapped = mapped_lines(&tu.source);
    let find = |text: &str| -> Vec<(String, u32)> {
        mapped
            .iter()
            .filter(|(_, _, t)| t == text)
            .map(|(f, l, _)| (f.clone(), *l))
            .collect()
    };
    assert_eq!(find("int main_line4;"), [("main.cu".to_string(), 4)]);
    assert_eq!(find("int b_line2;"), [("b.cuh".to_string(), 2)]);
    // Included twice, written once: the second include is a comment, as the preprocessor
    // would expand it to nothing.
    assert_eq!(find("int a_line2;"), [("a.cuh".to_string(), 2)]);
    assert_eq!(
        tu.source
            .matches("/* opbox: a.cuh is already included */")
            .count(),
        1
    );
    assert!(!tu.source.contains("#pragma once"));
    assert!(!tu.source.contains("#include \"a.cuh\""));
}

/// The diamond lattice: `l{i}a` and `l{i}b` each include both of level `i + 1`, so
/// level `i` is reached by 2^i paths. `guard` wraps one header's text.
fn lattice(levels: usize, guard: fn(&str, &str) -> String) -> KernelDecl {
    let mut sources = vec![SourceFile {
        name: Cow::Borrowed("k.cu"),
        content: Cow::Borrowed("#include \"l0a.cuh\"\n#include \"l0b.cuh\"\n"),
        includes: Cow::Owned(vec![
            IncludeEdge { line: 1, file: 1 },
            IncludeEdge { line: 2, file: 2 },
        ]),
    }];
    for level in 0..levels {
        for side in ["a", "b"] {
            let name = format!("l{level}{side}.cuh");
            let body = format!("__device__ inline int f{level}{side}() {{ return {level}; }}\n");
            let (content, includes) = if level + 1 < levels {
                let first = (2 * level + 3) as u32;
                let includes = format!(
                    "#include \"l{n}a.cuh\"\n#include \"l{n}b.cuh\"\n",
                    n = level + 1
                );
                (format!("{includes}{body}"), vec![first, first + 1])
            } else {
                (body, vec![])
            };
            let guarded = guard(&name, &content);
            // The guard adds lines above the includes: find them again.
            let offset = guarded
                .lines()
                .position(|l| l.starts_with("#include"))
                .unwrap_or(0) as u32;
            sources.push(SourceFile {
                name: Cow::Owned(name),
                content: Cow::Owned(guarded),
                includes: Cow::Owned(
                    includes
                        .iter()
                        .enumerate()
                        .map(|(i, &file)| IncludeEdge {
                            line: offset + 1 + i as u32,
                            file,
                        })
                        .collect(),
                ),
            });
        }
    }
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(sources);
    decl
}

#[test]
fn a_lattice_of_guarded_headers_writes_each_header_once() {
    let pragma = |_: &str, body: &str| format!("#pragma once\n{body}");
    let classic = |name: &str, body: &str| {
        let m = name.replace('.', "_").to_uppercase();
        format!("#ifndef {m}\n#define {m}\n{body}#endif\n")
    };
    for (what, guard) in [
        ("pragma once", pragma as fn(&str, &str) -> String),
        ("#ifndef", classic),
    ] {
        // 42 headers: level 20 is reached by a million paths.
        let decl = lattice(21, guard);
        assert_eq!(decl.sources.len(), 43);
        let tu = emit(&decl, &[]).expect("emit");
        let user = &tu.source[tu.source.find("#line 1 \"k.cu\"").expect("k.cu")..];
        assert!(
            user.len() < 10_000,
            "{what}: {} bytes of user code",
            user.len()
        );
        for level in 0..21 {
            for side in ["a", "b"] {
                let f = format!("int f{level}{side}()");
                assert_eq!(user.matches(&f).count(), 1, "{what}: {f}");
            }
        }
    }
}

#[test]
fn a_guard_that_is_undefined_again_is_not_skipped() {
    // x.h's guard is #undef'd by y.h, so the preprocessor would expand x.h twice; so does the
    // emitter.
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(vec![
        file(
            "k.cu",
            "#include \"x.h\"\n#include \"y.h\"\n#include \"x.h\"\n",
            &[
                IncludeEdge { line: 1, file: 1 },
                IncludeEdge { line: 2, file: 2 },
                IncludeEdge { line: 3, file: 1 },
            ],
        ),
        file(
            "x.h",
            "#ifndef X_H\n#define X_H\nint x_line3;\n#endif\n",
            &[],
        ),
        file("y.h", "#undef X_H\n", &[]),
    ]);
    let tu = emit(&decl, &[]).expect("emit");
    assert_eq!(tu.source.matches("int x_line3;").count(), 2);
}

#[test]
fn an_unguarded_lattice_is_refused_not_expanded_without_bound() {
    // Long one-line bodies reach the limit in a few thousand copies, so the test stays quick.
    let decl = lattice(26, |_, body| format!("{body}// {}\n", "x".repeat(1 << 16)));
    match emit(&decl, &[]) {
        Err(EmitError::UnitTooLarge { kernel, .. }) => assert_eq!(kernel, "axpby_f32"),
        other => panic!(
            "expected UnitTooLarge, got {:?}",
            other.map(|tu| tu.source.len())
        ),
    }
}

#[test]
fn a_guarded_cycle_expands_to_nothing() {
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(vec![
        file(
            "k.cu",
            "#include \"a.h\"\n",
            &[IncludeEdge { line: 1, file: 1 }],
        ),
        file(
            "a.h",
            "#pragma once\n#include \"k.cu\"\nint a;\n",
            &[IncludeEdge { line: 2, file: 0 }],
        ),
    ]);
    let tu = emit(&decl, &[]).expect("emit");
    assert_eq!(tu.source.matches("int a;").count(), 1);
    assert!(tu
        .source
        .contains("/* opbox: include cycle ends here: k.cu is guarded */"));
}

#[test]
fn edges_outside_the_sources_are_rejected() {
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(vec![file(
        "k.cu",
        "#include \"a.h\"\n",
        &[IncludeEdge { line: 1, file: 9 }],
    )]);
    assert_eq!(
        emit(&decl, &[]),
        Err(EmitError::BadInclude {
            kernel: "axpby_f32".into(),
            file: "k.cu".into(),
            line: 1
        })
    );
    decl.sources = Cow::Owned(vec![file(
        "k.cu",
        "\n",
        &[IncludeEdge { line: 7, file: 0 }],
    )]);
    assert!(matches!(
        emit(&decl, &[]),
        Err(EmitError::BadInclude { line: 7, .. })
    ));
}

fn with_constexprs(style: ConstexprStyle, params: &[(&'static str, ScalarType)]) -> KernelDecl {
    let mut decl = axpby_decl("");
    for (name, ty) in params {
        decl.params
            .to_mut()
            .push(Param::new(name, ParamKind::Constexpr(*ty)));
    }
    decl.constexpr_style = style;
    decl
}

#[test]
fn constexpr_defines_precede_the_source() {
    let decl = with_constexprs(
        ConstexprStyle::Defines,
        &[("BLOCK", ScalarType::U32), ("SCALE", ScalarType::F32)],
    );
    let tu = emit(&decl, &[ConstValue::U32(256), ConstValue::F32(0.5)]).expect("emit");
    let defines = tu
        .source
        .find("#define BLOCK 256u\n#define SCALE 0.5f\n")
        .expect("defines");
    assert!(defines < tu.source.find("#line 1 \"axpby.cu\"").expect("source"));
    assert_eq!(tu.name_expression(), "&axpby");
}

#[test]
fn constexpr_template_args_instantiate_the_entry() {
    let decl = with_constexprs(
        ConstexprStyle::TemplateArgs,
        &[("B", ScalarType::I32), ("F", ScalarType::Bool)],
    );
    let tu = emit(&decl, &[ConstValue::I32(128), ConstValue::Bool(true)]).expect("emit");
    assert_eq!(tu.name_expression(), "&axpby<128, true>");
    assert!(tu.source.contains("decltype(&axpby<128, true>)"));
    assert!(tu
        .source
        .contains("implies: template <int B, bool F> __global__ void axpby("));
}

#[test]
fn constexpr_values_are_checked() {
    let decl = with_constexprs(ConstexprStyle::TemplateArgs, &[("B", ScalarType::I32)]);
    assert_eq!(
        emit(&decl, &[]),
        Err(EmitError::ConstexprCount {
            kernel: "axpby_f32".into(),
            expected: 1,
            got: 0
        })
    );
    let err = emit(&decl, &[ConstValue::I64(1)]).expect_err("type");
    assert_eq!(
        err.to_string(),
        "kernel `axpby_f32` expects #[constexpr] B to be i32, but got i64"
    );
    let floats = with_constexprs(ConstexprStyle::TemplateArgs, &[("S", ScalarType::F32)]);
    assert!(matches!(
        emit(&floats, &[ConstValue::F32(1.0)]),
        Err(EmitError::FloatTemplateArg { .. })
    ));
    let define = with_constexprs(ConstexprStyle::Defines, &[("S", ScalarType::F64)]);
    assert!(matches!(
        emit(&define, &[ConstValue::F64(f64::INFINITY)]),
        Err(EmitError::NonFiniteConstexpr { .. })
    ));
}

#[test]
fn half_types_pull_in_their_prelude_part() {
    let mut decl = axpby_decl("");
    decl.params.to_mut()[0].kind = ParamKind::In(ElemType::F16);
    decl.params.to_mut()[1].kind = ParamKind::In(ElemType::BF16);
    let tu = emit(&decl, &[]).expect("emit");
    assert!(tu.source.contains("struct __align__(2) __half"));
    assert!(tu.source.contains("struct __align__(2) __nv_bfloat16"));
    assert!(tu.source.contains("same_abi<Actual, const __half*>::value"));
    assert!(tu
        .source
        .contains("same_abi<Actual, const __nv_bfloat16*>::value"));
}

#[test]
fn names_with_quotes_are_escaped_in_line_directives() {
    let mut decl = axpby_decl("");
    decl.sources = Cow::Owned(vec![file("we\"ird\\dir/k.cu", "int x;\n", &[])]);
    let tu = emit(&decl, &[]).expect("emit");
    assert!(tu.source.contains("#line 1 \"we\\\"ird\\\\dir/k.cu\"\n"));
}

#[test]
fn a_generated_entry_takes_neither_stdint_nor_a_release_signature_check() {
    let user = emit(&axpby_decl(AXPBY), &[]).expect("emit");
    assert!(user.source.contains("#include <stdint.h>"));
    assert!(!user.source.contains("#ifdef OPBOX_DSL_BOUNDS"));

    let mut dsl = axpby_decl(AXPBY);
    dsl.abi = EntryAbi::ParamsAndLens;
    let tu = emit(&dsl, &[]).expect("emit");
    assert!(!tu.source.contains("#include <stdint.h>"), "{}", tu.source);
    let guard = tu
        .source
        .find("#ifdef OPBOX_DSL_BOUNDS")
        .expect("guarded checks");
    let check = tu
        .source
        .find("struct opbox_check_0_axpby_f32")
        .expect("checks");
    let end = tu.source.rfind("#endif").expect("the guard's end");
    assert!(guard < check && check < end);
}
