use super::*;
use crate::native::tests::{COLOR, PIXEL};
use crate::native::{NativeFieldSchema, NativeScalar};

static HANDLE: NativeSchema = NativeSchema {
    rust_name: "app::Handle",
    native_name: "::my_addon::Handle",
    size: 8,
    align: 8,
    initializer: Initializer::Opaque,
    fields: &[],
};

#[test]
fn nested_types_come_first_and_once() {
    let types = collect_native_types(&[&PIXEL, &COLOR, &PIXEL]).unwrap();
    let names: Vec<_> = types.iter().map(|t| t.native_name).collect();
    assert_eq!(names, ["my_addon::Color", "my_addon::Pixel"]);
}

#[test]
fn two_definitions_under_one_name_are_an_error_naming_both_rust_types() {
    static OTHER: NativeSchema = NativeSchema {
        rust_name: "other::Color",
        size: 16,
        ..COLOR
    };
    let e = collect_native_types(&[&PIXEL, &OTHER]).unwrap_err();
    assert_eq!(e.first, "app::Color");
    assert_eq!(e.second, "other::Color");
    assert!(e.to_string().contains("'my_addon::Color'"), "{e}");
    // An equal contract under another Rust name is the same type.
    static SAME: NativeSchema = NativeSchema {
        rust_name: "other::Color",
        ..COLOR
    };
    assert_eq!(collect_native_types(&[&PIXEL, &SAME]).unwrap().len(), 2);
}

#[test]
fn host_checks_use_offsetof_and_name_the_rust_type_and_field() {
    let c = native_checks(&[&PIXEL], CheckTarget::HostCxx).unwrap();
    let s = &c.source;
    assert!(s.starts_with("#line 1 \"<opbox-native-checks>\"\n"), "{s}");
    assert_eq!(s.matches("struct is_same").count(), 2, "helper once: {s}");
    for line in [
        "static_assert(__is_trivially_copyable(my_addon::Color), \"opbox: native type 'my_addon::Color' (Rust type 'app::Color') must be trivially copyable\");",
        "static_assert(__is_standard_layout(my_addon::Pixel), \"opbox: native type 'my_addon::Pixel' (Rust type 'app::Pixel') must be standard-layout\");",
        "static_assert(sizeof(my_addon::Pixel) == 16, \"opbox: native type 'my_addon::Pixel' (Rust type 'app::Pixel') has an incompatible size: the Rust type is 16 bytes\");",
        "static_assert(alignof(my_addon::Color) == 4, \"opbox: native type 'my_addon::Color' (Rust type 'app::Color') has an incompatible alignment: the Rust type is aligned to 4 bytes\");",
        "static_assert(opbox_native_detail::same_field<decltype(((my_addon::Pixel*)0)->color), my_addon::Color>::value, \"opbox: native field 'my_addon::Pixel::color' (Rust field 'app::Pixel::color': app::Color) has an incompatible type: expected my_addon::Color\");",
        "static_assert(__builtin_offsetof(my_addon::Pixel, index) == 12, \"opbox: native field 'my_addon::Pixel::index' (Rust field 'app::Pixel::index': i32) has an incompatible offset: the Rust field is at byte 12 (are the fields declared in the same order\\?)\");",
    ] {
        assert!(s.contains(line), "missing\n{line}\nin\n{s}");
    }
    assert!(!s.contains("__INTADDR__"));
    assert_eq!(c.checked, ["my_addon::Color", "my_addon::Pixel"]);
    assert!(!c.needs_f16 && !c.needs_bf16);
}

#[test]
fn nvrtc_checks_use_field_sizes_and_intaddr_offsets() {
    let s = native_checks(&[&COLOR], CheckTarget::Nvrtc).unwrap().source;
    assert!(!s.contains("__builtin_offsetof"), "{s}");
    assert!(s.contains("static_assert(sizeof(((my_addon::Color*)0)->g) == 4, \"opbox: native field 'my_addon::Color::g' (Rust field 'app::Color::g': f32) has an incompatible size: the Rust field is 4 bytes\");"), "{s}");
    assert!(
        s.contains("static_assert(__INTADDR__(&(((my_addon::Color*)0)->b)) == 8, "),
        "{s}"
    );
}

#[test]
fn opaque_types_get_layout_checks_only_and_no_helper() {
    let s = native_checks(&[&HANDLE], CheckTarget::Nvrtc)
        .unwrap()
        .source;
    assert!(!s.contains("opbox_native_detail"), "{s}");
    assert!(
        s.contains("static_assert(sizeof(::my_addon::Handle) == 8,"),
        "{s}"
    );
    assert!(
        s.contains("static_assert(alignof(::my_addon::Handle) == 8,"),
        "{s}"
    );
    assert!(!s.contains("->"), "{s}");
}

#[test]
fn the_checks_depend_only_on_the_schemas() {
    let a = native_checks(&[&PIXEL, &HANDLE], CheckTarget::Nvrtc).unwrap();
    let b = native_checks(&[&PIXEL, &HANDLE], CheckTarget::Nvrtc).unwrap();
    assert_eq!(a, b);
}

#[test]
fn half_fields_ask_for_the_half_prelude() {
    static H: NativeSchema = NativeSchema {
        rust_name: "H",
        native_name: "H",
        size: 4,
        align: 2,
        initializer: Initializer::None,
        fields: &[
            NativeFieldSchema {
                name: "h",
                ty: FieldType::Scalar(NativeScalar::F16),
                offset: 0,
            },
            NativeFieldSchema {
                name: "b",
                ty: FieldType::Scalar(NativeScalar::BF16),
                offset: 2,
            },
        ],
    };
    let c = native_checks(&[&H], CheckTarget::Nvrtc).unwrap();
    assert!(c.needs_f16 && c.needs_bf16);
    assert!(c.source.contains("__half>::value"), "{}", c.source);
}
