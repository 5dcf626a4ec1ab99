//! Expansion tests of `#[derive(NativeType)]` and `#[builtin]`, in-process. User-facing messages
//! live in the ui-tests.

use proc_macro2::TokenStream;
use quote::quote;

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("expansion is not valid Rust ({e}):\n{tokens}"),
    }
}

fn has(out: &str, expected: &str) -> bool {
    squash(out).contains(&squash(expected))
}

#[test]
fn exposed_fields_skip_the_skipped_and_keep_their_offsets() {
    let out = pretty(crate::native_type::expand(quote! {
        #[repr(C, align(16))]
        #[native(name = "::img::Image")]
        struct Image { handle: Handle, #[native(skip)] cookie: u32, tint: [Color; 2] }
    }));
    for expected in [
        "unsafe impl ::opbox::__private::native::NativeType for Image",
        "native_name: \"::img::Image\"",
        "initializer: ::opbox::__private::native::Initializer::None",
        "name: \"handle\", ty: <Handle as __OpboxNativeField0>::FIELD_TYPE, offset: ::core::mem::offset_of!(Image, handle)",
        "name: \"tint\", ty: <[Color; 2] as __OpboxNativeField1>::FIELD_TYPE",
        "::core::mem::offset_of!(Image, tint) >= ::core::mem::offset_of!(Image, handle)",
        "impl ::opbox::__private::native::NativeField for Image",
        "::opbox::__private::native::NativeTypeRegistration",
    ] {
        assert!(has(&out, expected), "missing `{expected}` in:\n{out}");
    }
    assert!(!has(&out, "\"cookie\""), "{out}");
}

#[test]
fn an_opaque_tuple_struct_exposes_nothing() {
    let out = pretty(crate::native_type::expand(quote! {
        #[repr(C)]
        #[native(name = "img::Handle", opaque)]
        struct Handle(u64);
    }));
    assert!(
        has(
            &out,
            "initializer: ::opbox::__private::native::Initializer::Opaque"
        ),
        "{out}"
    );
    assert!(has(&out, "fields: &[],"), "{out}");
    assert!(!has(&out, "__OpboxNativeField0"), "{out}");
}

#[test]
fn a_builtin_keeps_its_body_as_the_cpu_build_and_a_declaration_has_no_fn() {
    let with_body = pretty(crate::builtin::expand(
        quote!(native = "::m::lerp"),
        quote!(
            pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
                a + (b - a) * t
            }
        ),
    ));
    for expected in [
        "pub fn lerp(a: f32, b: f32, t: f32) -> f32",
        "pub const __opbox_builtin_lerp: &'static ::opbox::__private::native::BuiltinDecl",
        "native_name: \"::m::lerp\"",
        "name: \"t\", ty: <f32 as __OpboxBuiltinType2>::FIELD_TYPE",
        "ret: ::core::option::Option::Some(<f32 as __OpboxBuiltinType3>::FIELD_TYPE)",
        "::opbox::__private::native::BuiltinRegistration",
    ] {
        assert!(
            has(&with_body, expected),
            "missing `{expected}` in:\n{with_body}"
        );
    }
    let decl = pretty(crate::builtin::expand(
        quote!(native = "m::touch"),
        quote!(
            fn touch(p: Pixel);
        ),
    ));
    assert!(!has(&decl, "fn touch"), "{decl}");
    assert!(has(&decl, "ret: ::core::option::Option::None"), "{decl}");
}
