//! The expansion of a checked native type: `unsafe impl NativeType`, `impl NativeField`, the
//! const layout asserts and the registration.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::LitStr;

use super::{Initializer, NativeStruct};
use crate::diagnostic::{field_type_of, field_type_trait};
use crate::naming::unraw;
use crate::paths;

pub(super) fn emit(model: &NativeStruct<'_>) -> TokenStream {
    let NativeStruct {
        ident,
        name,
        exposed,
        ..
    } = model;
    let p = quote!(::opbox::__private::native);
    let initializer = match model.initializer {
        Initializer::Opaque => quote!(#p::Initializer::Opaque),
        Initializer::Aggregate => quote!(#p::Initializer::Aggregate),
        Initializer::None => quote!(#p::Initializer::None),
    };
    // One local trait per exposed field, so that rustc's message for a type that cannot be a
    // field names the field.
    let field_trait = |i: usize| format_ident!("__OpboxNativeField{}", i);
    let field_traits = exposed.iter().enumerate().map(|(i, (fname, _))| {
        field_type_trait(
            &field_trait(i),
            &format!(
                "field `{}` of native type `{ident}` is a `{{Self}}`, which cannot cross to C++",
                unraw(fname)
            ),
            "this field's type is not native-compatible",
            &[
                "a #[derive(NativeType)] field must be a scalar (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16 (also opbox::native::f16, bf16), another #[derive(NativeType)] type, or a fixed array [T; N] of those",
                "to keep a field out of C++'s view, mark it #[native(skip)] (not allowed with initializer = \"aggregate\"), or make the whole type #[native(opaque)]",
            ],
        )
    });
    let field_schemas = exposed.iter().enumerate().map(|(i, (fname, ty))| {
        let fname_str = unraw(fname);
        let field_type = field_type_of(ty, &field_trait(i));
        quote! {
            #p::NativeFieldSchema {
                name: #fname_str,
                ty: #field_type,
                offset: ::core::mem::offset_of!(#ident, #fname),
            }
        }
    });
    let ident_str = ident.to_string();
    let lit = |s: String| LitStr::new(&s, Span::call_site());
    let nonzero = lit(format!(
        "opbox: native type `{ident_str}` is zero-sized, but every C++ struct has at least one byte: give it a field"
    ));
    let field_asserts = exposed.iter().enumerate().map(|(i, (fname, ty))| {
        let f = unraw(fname);
        let tr = field_trait(i);
        let size_msg = lit(format!("opbox: the NativeField type of `{ident_str}::{f}` declares another size than Rust gives it"));
        let align_msg = lit(format!("opbox: `{ident_str}::{f}` is not aligned for its type"));
        let order_msg = lit(format!("opbox: `{ident_str}::{f}` is not after the field declared before it; repr(C) keeps declaration order"));
        let schema_msg = lit(format!("opbox: the schema's offset of `{ident_str}::{f}` is not Rust's"));
        let order = (i > 0).then(|| {
            let (prev, _) = exposed[i - 1];
            quote! {
                ::core::assert!(
                    ::core::mem::offset_of!(#ident, #fname) >= ::core::mem::offset_of!(#ident, #prev),
                    #order_msg
                );
            }
        });
        quote! {
            ::core::assert!(
                <#ty as #tr>::FIELD_TYPE.size() == ::core::mem::size_of::<#ty>(),
                #size_msg
            );
            ::core::assert!(
                ::core::mem::offset_of!(#ident, #fname) % ::core::mem::align_of::<#ty>() == 0,
                #align_msg
            );
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.fields[#i].offset == ::core::mem::offset_of!(#ident, #fname),
                #schema_msg
            );
            #order
        }
    });
    let size_msg = lit(format!(
        "opbox: the schema's size of `{ident_str}` is not Rust's"
    ));
    let align_msg = lit(format!(
        "opbox: the schema's alignment of `{ident_str}` is not Rust's"
    ));
    let code_static = format_ident!("OPBOX_TYPE_CODE");
    let site = paths::site(Span::call_site());

    quote! {
        const _: () = {
        #(#field_traits)*

        // SAFETY: the schema is built from rustc's own layout of this #[repr(C)] struct
        // (size_of, align_of, offset_of!), and the const block below re-checks it.
        unsafe impl #p::NativeType for #ident {
            const SCHEMA: &'static #p::NativeSchema = &#p::NativeSchema {
                rust_name: ::core::concat!(::core::module_path!(), "::", #ident_str),
                native_name: #name,
                size: ::core::mem::size_of::<#ident>(),
                align: ::core::mem::align_of::<#ident>(),
                initializer: #initializer,
                fields: &[#(#field_schemas),*],
            };

            fn type_code() -> &'static str {
                static #code_static: #p::OnceLock<::std::string::String> = #p::OnceLock::new();
                #code_static
                    .get_or_init(|| #p::type_code(<#ident as #p::NativeType>::SCHEMA))
                    .as_str()
            }
        }

        impl #p::NativeField for #ident {
            const FIELD_TYPE: #p::FieldType =
                #p::FieldType::Native(<#ident as #p::NativeType>::SCHEMA);
        }

        const _: () = {
            ::core::assert!(::core::mem::size_of::<#ident>() != 0, #nonzero);
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.size == ::core::mem::size_of::<#ident>(),
                #size_msg
            );
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.align == ::core::mem::align_of::<#ident>(),
                #align_msg
            );
            #(#field_asserts)*
        };

        ::opbox::__private::inventory::submit! {
            #p::NativeTypeRegistration {
                schema: <#ident as #p::NativeType>::SCHEMA,
                site: #site,
            }
        }
        };
    }
}
