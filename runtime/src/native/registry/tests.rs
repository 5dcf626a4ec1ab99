use super::*;
use opbox_codegen::builtin::BuiltinParam;
use opbox_codegen::native::{FieldType, Initializer, NativeFieldSchema, NativeScalar};

const F32: FieldType = FieldType::Scalar(NativeScalar::F32);

static COLOR: NativeSchema = NativeSchema {
    rust_name: "app::Color",
    native_name: "my_addon::Color",
    size: 12,
    align: 4,
    initializer: Initializer::Aggregate,
    fields: &[
        NativeFieldSchema {
            name: "r",
            ty: F32,
            offset: 0,
        },
        NativeFieldSchema {
            name: "g",
            ty: F32,
            offset: 4,
        },
        NativeFieldSchema {
            name: "b",
            ty: F32,
            offset: 8,
        },
    ],
};

fn site(line: u32) -> Site {
    Site {
        file: "src/lib.rs",
        line,
    }
}

#[test]
fn an_equal_schema_registers_again_idempotently_even_from_another_rust_type() {
    static SAME: NativeSchema = NativeSchema {
        rust_name: "other::Colour",
        ..COLOR
    };
    let mut r = NativeRegistry::new();
    r.register(&COLOR, site(1)).unwrap();
    r.register(&COLOR, site(1)).unwrap();
    r.register(&SAME, site(9)).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r.get("my_addon::Color").unwrap().rust_name, "app::Color");
}

#[test]
fn a_different_schema_under_the_same_name_names_both_rust_types() {
    static WIDER: NativeSchema = NativeSchema {
        rust_name: "other::Color",
        size: 16,
        align: 8,
        ..COLOR
    };
    let mut r = NativeRegistry::new();
    r.register(&COLOR, site(3)).unwrap();
    let e = r.register(&WIDER, site(7)).unwrap_err();
    let Error::NativeTypeConflict {
        native_name,
        first,
        second,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(native_name, "my_addon::Color");
    assert!(
        first.starts_with("'app::Color' at src/lib.rs:3 (nt"),
        "{first}"
    );
    assert!(
        second.starts_with("'other::Color' at src/lib.rs:7 (nt"),
        "{second}"
    );
    assert!(
        second.contains("my_addon::Color:16:8:aggregate"),
        "{second}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with("native C++ type name 'my_addon::Color' is already registered with a different definition: first 'app::Color'"),
        "{text}"
    );
    // The first registration stays.
    assert_eq!(r.get("my_addon::Color").unwrap().size, 12);
}

fn scale(native_name: &'static str, ret: Option<FieldType>) -> &'static BuiltinDecl {
    Box::leak(Box::new(BuiltinDecl {
        name: "scale",
        native_name,
        params: vec![
            BuiltinParam {
                name: "c",
                ty: FieldType::Native(&COLOR),
            },
            BuiltinParam { name: "s", ty: F32 },
        ]
        .leak(),
        ret,
    }))
}

#[test]
fn identical_builtins_register_again_idempotently() {
    let color = Some(FieldType::Native(&COLOR));
    let mut r = BuiltinRegistry::new();
    r.register(scale("my_addon::scale", color), site(1))
        .unwrap();
    r.register(scale("my_addon::scale", color), site(2))
        .unwrap();
    assert_eq!(r.overloads("scale").len(), 1);
    assert!(r.overloads("nope").is_empty());
}

#[test]
fn the_same_inputs_with_another_result_or_target_name_both_sites() {
    let color = Some(FieldType::Native(&COLOR));
    let mut r = BuiltinRegistry::new();
    r.register(scale("my_addon::scale", color), site(1))
        .unwrap();
    let e = r
        .register(scale("my_addon::scale", None), site(20))
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(
            "cannot register conflicting builtin overload 'scale' with input types (c: nt"
        ),
        "{text}"
    );
    assert!(
        text.contains("first 'scale(c: app::Color, s: f32) -> app::Color' -> my_addon::scale at src/lib.rs:1, again 'scale(c: app::Color, s: f32)' -> my_addon::scale at src/lib.rs:20."),
        "{text}"
    );
    let e = r
        .register(scale("::other::scale", color), site(30))
        .unwrap_err();
    assert!(
        e.to_string().contains("-> ::other::scale at src/lib.rs:30"),
        "{e}"
    );
    assert_eq!(r.overloads("scale").len(), 1);
}

#[test]
fn other_inputs_make_an_overload() {
    let mut r = BuiltinRegistry::new();
    r.register(scale("my_addon::scale", None), site(1)).unwrap();
    let scalar: &'static BuiltinDecl = Box::leak(Box::new(BuiltinDecl {
        name: "scale",
        native_name: "my_addon::scale",
        params: &[
            BuiltinParam { name: "x", ty: F32 },
            BuiltinParam { name: "s", ty: F32 },
        ],
        ret: Some(F32),
    }));
    r.register(scalar, site(2)).unwrap();
    assert_eq!(r.overloads("scale").len(), 2);
}

#[test]
fn the_global_registries_take_runtime_registrations() {
    static PLUGIN: NativeSchema = NativeSchema {
        rust_name: "plugin::Quat",
        native_name: "opbox_registry_test::Quat",
        size: 16,
        align: 4,
        initializer: Initializer::Opaque,
        fields: &[],
    };
    static PLUGIN2: NativeSchema = NativeSchema {
        rust_name: "plugin2::Quat",
        size: 32,
        ..PLUGIN
    };
    register_native_type(&PLUGIN, site(1)).unwrap();
    register_native_type(&PLUGIN, site(1)).unwrap();
    assert!(matches!(
        register_native_type(&PLUGIN2, site(2)),
        Err(Error::NativeTypeConflict { .. })
    ));
    assert!(native_types()
        .unwrap()
        .get("opbox_registry_test::Quat")
        .is_some());
    let b: &'static BuiltinDecl = Box::leak(Box::new(BuiltinDecl {
        name: "opbox_registry_test_fn",
        native_name: "::t::f",
        params: &[],
        ret: None,
    }));
    register_builtin(b, site(3)).unwrap();
    register_builtin(b, site(4)).unwrap();
    assert_eq!(
        builtins()
            .unwrap()
            .overloads("opbox_registry_test_fn")
            .len(),
        1
    );
}
