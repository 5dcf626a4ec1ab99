use super::*;

pub(crate) static COLOR: NativeSchema = NativeSchema {
    rust_name: "app::Color",
    native_name: "my_addon::Color",
    size: 12,
    align: 4,
    initializer: Initializer::Aggregate,
    fields: &[
        NativeFieldSchema {
            name: "r",
            ty: FieldType::Scalar(NativeScalar::F32),
            offset: 0,
        },
        NativeFieldSchema {
            name: "g",
            ty: FieldType::Scalar(NativeScalar::F32),
            offset: 4,
        },
        NativeFieldSchema {
            name: "b",
            ty: FieldType::Scalar(NativeScalar::F32),
            offset: 8,
        },
    ],
};

pub(crate) static PIXEL: NativeSchema = NativeSchema {
    rust_name: "app::Pixel",
    native_name: "my_addon::Pixel",
    size: 16,
    align: 4,
    initializer: Initializer::Aggregate,
    fields: &[
        NativeFieldSchema {
            name: "color",
            ty: FieldType::Native(&COLOR),
            offset: 0,
        },
        NativeFieldSchema {
            name: "index",
            ty: FieldType::Scalar(NativeScalar::I32),
            offset: 12,
        },
    ],
};

fn leak(v: Vec<NativeFieldSchema>) -> &'static [NativeFieldSchema] {
    v.leak()
}

fn is_code(code: &str) -> bool {
    code.len() == 18
        && code.starts_with("nt")
        && code[2..]
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

#[test]
fn type_code_is_nt_and_16_hex_digits_of_sha256_over_the_contract() {
    let code = type_code(&COLOR);
    assert!(is_code(&code), "{code}");
    assert_eq!(
        COLOR.contract_text(),
        "my_addon::Color:12:4:aggregate:r:f4:0:g:f4:4:b:f4:8"
    );
    let digest = Sha256::digest(COLOR.contract_text().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(code, format!("nt{hex}"));
}

#[test]
fn nested_types_contribute_their_own_code() {
    let text = PIXEL.contract_text();
    assert!(
        text.contains(&format!(":color:{}:0", type_code(&COLOR))),
        "{text}"
    );
    assert!(is_code(&type_code(&PIXEL)));
}

#[test]
fn every_part_of_the_contract_changes_the_code_but_the_rust_name_does_not() {
    let base = type_code(&COLOR);
    let renamed = NativeSchema {
        rust_name: "other::Colour",
        ..COLOR
    };
    assert_eq!(type_code(&renamed), base);
    assert!(renamed.same_contract(&COLOR));
    let variants = [
        NativeSchema {
            native_name: "my_addon::Colour",
            ..COLOR
        },
        NativeSchema { size: 16, ..COLOR },
        NativeSchema { align: 8, ..COLOR },
        NativeSchema {
            initializer: Initializer::None,
            ..COLOR
        },
        NativeSchema {
            fields: &COLOR.fields[..2],
            ..COLOR
        },
        NativeSchema {
            fields: leak(vec![
                NativeFieldSchema {
                    name: "r",
                    ty: FieldType::Scalar(NativeScalar::I32),
                    offset: 0,
                },
                COLOR.fields[1],
                COLOR.fields[2],
            ]),
            ..COLOR
        },
        NativeSchema {
            fields: leak(vec![
                COLOR.fields[0],
                NativeFieldSchema {
                    offset: 8,
                    ..COLOR.fields[1]
                },
                NativeFieldSchema {
                    offset: 4,
                    ..COLOR.fields[2]
                },
            ]),
            ..COLOR
        },
    ];
    for v in &variants {
        assert_ne!(type_code(v), base, "{}", v.contract_text());
        assert!(!v.same_contract(&COLOR));
    }
}

#[test]
fn a_change_in_a_nested_type_changes_the_outer_code() {
    static COLOR2: NativeSchema = NativeSchema {
        initializer: Initializer::None,
        ..COLOR
    };
    let pixel2 = NativeSchema {
        fields: leak(vec![
            NativeFieldSchema {
                name: "color",
                ty: FieldType::Native(&COLOR2),
                offset: 0,
            },
            PIXEL.fields[1],
        ]),
        ..PIXEL
    };
    assert_ne!(type_code(&pixel2), type_code(&PIXEL));
}

#[test]
fn field_types_spell_codes_rust_and_cpp() {
    static F32: FieldType = FieldType::Scalar(NativeScalar::F32);
    static ROW: FieldType = FieldType::Array(&F32, 3);
    let grid = FieldType::Array(&ROW, 2);
    assert_eq!(grid.type_code(), "a2a3f4");
    assert_eq!(grid.rust_name(), "[[f32; 3]; 2]");
    assert_eq!(grid.c_type(), "float[2][3]");
    assert_eq!(grid.size(), 24);
    static C: FieldType = FieldType::Native(&COLOR);
    let colors = FieldType::Array(&C, 4);
    assert_eq!(colors.c_type(), "my_addon::Color[4]");
    assert_eq!(colors.rust_name(), "[app::Color; 4]");
    assert_eq!(colors.size(), 48);
    assert_eq!(FieldType::Scalar(NativeScalar::I64).c_type(), "long long");
}

#[test]
fn native_names_follow_warps_rule() {
    for ok in [
        "Color",
        "my_addon::Color",
        "::Color",
        "::a::b::_c9",
        "_",
        "a1::B2",
    ] {
        assert_eq!(validate_native_name(ok), Ok(()), "{ok}");
    }
    for bad in [
        "",
        "::",
        "1abc",
        "a::",
        "a:::b",
        "a::1b",
        "my-addon::Color",
        "a b",
        "a::::b",
        ":a",
        "a:b",
        "Colör",
        "a::b::",
        "Color<int>",
    ] {
        let e = validate_native_name(bad).unwrap_err();
        assert_eq!(e.name, bad);
        assert!(
            e.to_string()
                .starts_with("native name must be a qualified C++ identifier"),
            "{e}"
        );
        assert!(e.to_string().ends_with(&format!("got '{bad}'")), "{e}");
    }
}

#[test]
fn native_fn_names_split_into_namespace_and_function() {
    let s = |n| split_native_name(n).unwrap();
    assert_eq!(
        s("my_addon::scale"),
        NativeFn {
            namespace: "my_addon::",
            function: "scale"
        }
    );
    assert_eq!(
        s("::scale"),
        NativeFn {
            namespace: "::",
            function: "scale"
        }
    );
    assert_eq!(
        s("::a::b::scale"),
        NativeFn {
            namespace: "::a::b::",
            function: "scale"
        }
    );
    assert_eq!(
        s("scale"),
        NativeFn {
            namespace: "",
            function: "scale"
        }
    );
    assert!(split_native_name("a::").is_err());
}

#[test]
fn half_fields_are_found_through_nesting() {
    static H: NativeSchema = NativeSchema {
        rust_name: "H",
        native_name: "H",
        size: 2,
        align: 2,
        initializer: Initializer::Aggregate,
        fields: &[NativeFieldSchema {
            name: "h",
            ty: FieldType::Scalar(NativeScalar::F16),
            offset: 0,
        }],
    };
    static HH: FieldType = FieldType::Native(&H);
    let outer = NativeSchema {
        fields: leak(vec![NativeFieldSchema {
            name: "hs",
            ty: FieldType::Array(&HH, 2),
            offset: 0,
        }]),
        ..H
    };
    assert!(outer.uses_scalar(NativeScalar::F16));
    assert!(!outer.uses_scalar(NativeScalar::BF16));
    assert!(!COLOR.uses_scalar(NativeScalar::F16));
}
