//! `#[derive(KernelArg)]`: a plain `#[repr(C)]` struct passed to kernels by value, with a
//! generated C++ twin (same name, or `#[kernel_arg(name = "ns::Name")]`; fields in order).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr};

use opbox_codegen::native::validate_native_name;

use crate::diagnostic::{field_type_of, field_type_trait};
use crate::errors::Errors;
use crate::repr::{check_repr, ReprRule};

pub fn expand(input: TokenStream) -> TokenStream {
    syn::parse2::<DeriveInput>(input)
        .and_then(|input| kernel_arg(&input))
        .unwrap_or_else(|e| e.to_compile_error())
}

const REPR: ReprRule = ReprRule {
    derive: "KernelArg",
    what: "a kernel argument struct",
    why_c: "the kernel reads its bytes with the C++ twin's layout, and only repr(C) fixes Rust's",
};

fn kernel_arg(input: &DeriveInput) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let data = match &input.data {
        Data::Struct(s) => s,
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                format!("#[derive(KernelArg)] needs a plain #[repr(C)] struct (a C++ struct mirrors it and the kernel takes it by value); `{ident}` is an enum, which has no by-value C++ twin. To choose C++ code per variant, make it a #[derive(ConstexprEnum)] enum with #[cpp = \"ns::Type\"] on each variant and pass it as a #[constexpr] parameter"),
            ))
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                format!("#[derive(KernelArg)] needs a plain #[repr(C)] struct; `{ident}` is a union, whose active field the kernel could not know: pass the variant's struct, or the bytes as #[derive(NativeType)] #[native(opaque)]"),
            ))
        }
    };
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.at(
            input.generics.span(),
            "#[derive(KernelArg)] takes no generics: the C++ twin is one struct",
        );
    }
    check_repr(input, &REPR, &mut errors);
    let mut name = ident.to_string();
    for a in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("kernel_arg"))
    {
        let parsed = a.parse_args_with(|p: syn::parse::ParseStream| {
            let key: syn::Ident = p.parse()?;
            let _: syn::Token![=] = p.parse()?;
            let value: LitStr = p.parse()?;
            Ok((key, value))
        });
        match parsed {
            Ok((key, value)) if key == "name" => match validate_native_name(&value.value()) {
                Ok(()) => name = value.value(),
                Err(e) => errors.at(value.span(), e),
            },
            Ok((key, _)) => errors.at(
                key.span(),
                "expected #[kernel_arg(name = \"ns::Name\")], the C++ name of the generated struct",
            ),
            Err(e) => errors.push(e),
        }
    }
    let fields = match &data.fields {
        Fields::Named(f) => f.named.iter().collect::<Vec<_>>(),
        other => {
            errors.at(
                other.span(),
                "#[derive(KernelArg)] needs named fields: the C++ twin names each field",
            );
            Vec::new()
        }
    };
    errors.finish()?;
    let n = quote!(::opbox::__private::native);
    let c = quote!(::opbox::__private::cuda);
    let field_trait = |i: usize| format_ident!("__OpboxKernelArgField{}", i);
    let traits = fields.iter().enumerate().map(|(i, f)| {
        let fname = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
        field_type_trait(
            &field_trait(i),
            &format!("field `{fname}` of kernel argument struct `{ident}` is a `{{Self}}`, which cannot be passed to a kernel by value"),
            "not a by-value kernel argument type",
            &[
                "a #[derive(KernelArg)] field is a scalar (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16, a #[derive(NativeType)] type, another #[derive(KernelArg)] struct, or a fixed array [T; N] of those (a tuple is not: use an array or a struct)",
                "device buffers (tensors) are separate kernel parameters: In<[T]>, Out<[T]>, InOut<[T]>",
            ],
        )
    });
    let schemas = fields.iter().enumerate().map(|(i, f)| {
        let fid = f.ident.as_ref();
        let fname = fid.map(|i| i.to_string()).unwrap_or_default();
        let field_type = field_type_of(&f.ty, &field_trait(i));
        quote! {
            #n::NativeFieldSchema {
                name: #fname,
                ty: #field_type,
                offset: ::core::mem::offset_of!(#ident, #fid),
            }
        }
    });
    let sizes = fields.iter().enumerate().map(|(i, f)| {
        let tr = field_trait(i);
        let ty = &f.ty;
        quote!(::core::assert!(<#ty as #tr>::FIELD_TYPE.size() == ::core::mem::size_of::<#ty>());)
    });
    let ident_str = ident.to_string();
    let lower_fn = format_ident!("__opbox_lower_{}", ident);
    let type_fn = format_ident!("__opbox_type_{}", ident);
    Ok(quote! {
        const _: () = {
            #(#traits)*

            impl #c::KernelArgStruct for #ident {
                const SCHEMA: &'static #n::NativeSchema = &#n::NativeSchema {
                    rust_name: ::core::concat!(::core::module_path!(), "::", #ident_str),
                    native_name: #name,
                    size: ::core::mem::size_of::<#ident>(),
                    align: ::core::mem::align_of::<#ident>(),
                    initializer: #n::Initializer::Generated,
                    fields: &[#(#schemas),*],
                };
            }

            impl #c::KernelArg for #ident {
                type Value<'v> = #ident;
                const KIND: #c::ParamKind =
                    #c::ParamKind::Native(#c::NativeParam {
                        schema: <#ident as #c::KernelArgStruct>::SCHEMA,
                        generated: true,
                    });
                #[inline]
                fn lower<'a>(value: &'a #ident) -> #c::LaunchArg<'a> {
                    #c::LaunchArg::Native(#c::NativeBytes::of(
                        <#ident as #c::KernelArgStruct>::SCHEMA,
                        value,
                    ))
                }
            }

            impl #n::NativeField for #ident {
                const FIELD_TYPE: #n::FieldType =
                    #n::FieldType::Native(<#ident as #c::KernelArgStruct>::SCHEMA);
            }

            const _: () = {
                #(#sizes)*
            };

            #[allow(non_snake_case)]
            fn #type_fn() -> ::core::any::TypeId {
                ::core::any::TypeId::of::<#ident>()
            }
            #[allow(non_snake_case)]
            fn #lower_fn(value: &dyn ::core::any::Any) -> ::core::option::Option<#c::OwnedArg> {
                value.downcast_ref::<#ident>().map(|v| {
                    #c::OwnedArg::native(<#ident as #c::KernelArgStruct>::SCHEMA, v)
                })
            }
            ::opbox::__private::inventory::submit! {
                #c::DerivedKernelArg {
                    type_id: #type_fn,
                    rust_name: #ident_str,
                    lower: #lower_fn,
                }
            }
        };
    })
}
