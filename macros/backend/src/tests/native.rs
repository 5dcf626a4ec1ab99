//! `#[derive(NativeType)]`, `#[derive(KernelArg)]` and `#[builtin]`.

use quote::quote;

use super::{assert_has, assert_has_all, compile_errors, has, pretty};

#[test]
fn exposed_fields_skip_the_skipped_and_keep_their_offsets() {
    let out = pretty(crate::native_type::expand(quote! {
        #[repr(C, align(16))]
        #[native(name = "::img::Image")]
        struct Image { handle: Handle, #[native(skip)] cookie: u32, tint: [Color; 2] }
    }));
    assert_has_all(
        &out,
        &[
        "unsafe impl ::opbox::__private::native::NativeType for Image",
        "native_name: \"::img::Image\"",
        "initializer: ::opbox::__private::native::Initializer::None",
        "name: \"handle\", ty: <Handle as __OpboxNativeField0>::FIELD_TYPE, offset: ::core::mem::offset_of!(Image, handle)",
        "name: \"tint\", ty: <[Color; 2] as __OpboxNativeField1>::FIELD_TYPE",
        "::core::mem::offset_of!(Image, tint) >= ::core::mem::offset_of!(Image, handle)",
        "impl ::opbox::__private::native::NativeField for Image",
        "::opbox::__private::native::NativeTypeRegistration",
        ],
    );
    assert!(!has(&out, "\"cookie\""), "{out}");
}

#[test]
fn an_opaque_tuple_struct_exposes_nothing() {
    let out = pretty(crate::native_type::expand(quote! {
        #[repr(C)]
        #[native(name = "img::Handle", opaque)]
        struct Handle(u64);
    }));
    assert_has_all(
        &out,
        &[
            "initializer: ::opbox::__private::native::Initializer::Opaque",
            "fields: &[]",
        ],
    );
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
    assert_has_all(
        &with_body,
        &[
            "pub fn lerp(a: f32, b: f32, t: f32) -> f32",
            "pub const __opbox_builtin_lerp: &'static ::opbox::__private::native::BuiltinDecl",
            "native_name: \"::m::lerp\"",
            "name: \"t\", ty: <f32 as __OpboxBuiltinType2>::FIELD_TYPE",
            "ret: ::core::option::Option::Some(<f32 as __OpboxBuiltinType3>::FIELD_TYPE)",
            "::opbox::__private::native::BuiltinRegistration",
        ],
    );
    let decl = pretty(crate::builtin::expand(
        quote!(native = "m::touch"),
        quote!(
            fn touch(p: Pixel);
        ),
    ));
    assert!(!has(&decl, "fn touch"), "{decl}");
    assert_has(&decl, "ret: ::core::option::Option::None");
}

#[test]
fn a_kernel_arg_implements_the_traits_through_the_private_paths() {
    let out = pretty(crate::kernel_arg::expand(quote! {
        #[repr(C, align(16))]
        #[kernel_arg(name = "ops::Params")]
        struct Params { scale: f32, bias: [f32; 4] }
    }));
    assert_has_all(
        &out,
        &[
            "impl ::opbox::__private::cuda::KernelArgStruct for Params",
            "native_name: \"ops::Params\"",
            "initializer: ::opbox::__private::native::Initializer::Generated",
            "name: \"bias\", ty: <[f32; 4] as __OpboxKernelArgField1>::FIELD_TYPE",
            "impl ::opbox::__private::cuda::KernelArg for Params",
            "::opbox::__private::cuda::DerivedKernelArg",
        ],
    );
}

#[test]
fn native_types_and_kernel_args_share_the_repr_rule() {
    let packed = |derive: fn(proc_macro2::TokenStream) -> proc_macro2::TokenStream| {
        compile_errors(derive(quote! {
            #[repr(C, packed)]
            #[native(name = "a::B")]
            struct B { x: u8, y: u32 }
        }))
    };
    let native = packed(crate::native_type::expand);
    let kernel_arg = packed(crate::kernel_arg::expand);
    assert_eq!(native.len(), 1, "{native:#?}");
    assert_eq!(kernel_arg.len(), 1, "{kernel_arg:#?}");
    assert!(native[0].starts_with("a native type cannot be #[repr(packed)]"));
    assert!(kernel_arg[0].starts_with("a kernel argument struct cannot be #[repr(packed)]"));
}

#[test]
fn a_field_named_by_a_cpp_keyword_is_refused_unless_skipped() {
    let errors = compile_errors(crate::native_type::expand(quote! {
        #[repr(C)]
        #[native(name = "a::B")]
        struct B { class: u32, #[native(skip)] template: u32, r#virtual: u8 }
    }));
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].starts_with("field `class` is named by a C++ keyword"));
    assert!(errors[1].starts_with("field `virtual` is named by a C++ keyword"));
}
