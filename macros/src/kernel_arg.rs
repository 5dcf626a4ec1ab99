//! `#[derive(KernelArg)]` (a plain `#[repr(C)]` struct passed to kernels by value, with a
//! generated C++ twin) and `#[derive(ConstexprEnum)]` (an enum whose variants name C++ types, for
//! `#[constexpr]` parameters).

use crate::errors::Errors;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, ExprLit, Fields, Lit, LitStr, Meta};

use opbox_codegen::native::validate_native_name;

fn parse_then(input: TokenStream, f: fn(&DeriveInput) -> syn::Result<TokenStream>) -> TokenStream {
    match syn::parse2::<DeriveInput>(input) {
        Ok(input) => f(&input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
}

pub fn expand_kernel_arg(input: TokenStream) -> TokenStream {
    parse_then(input, kernel_arg)
}

pub fn expand_constexpr_enum(input: TokenStream) -> TokenStream {
    parse_then(input, constexpr_enum)
}

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
        errors.push(syn::Error::new(
            input.generics.span(),
            "#[derive(KernelArg)] takes no generics: the C++ twin is one struct",
        ));
    }
    let repr_c = input.attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .map(|list| list.iter().any(|m| m.path().is_ident("C")))
            .unwrap_or(false)
    });
    if !repr_c {
        errors.push(syn::Error::new(
                ident.span(),
                format!("#[derive(KernelArg)] needs #[repr(C)] on `{ident}`: the kernel reads its bytes with the C++ twin's layout, and only repr(C) fixes Rust's"),
            ),
        );
    }
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
                Err(e) => errors.push(syn::Error::new(value.span(), e.to_string())),
            },
            Ok((key, _)) => errors.push(syn::Error::new(
                key.span(),
                "expected #[kernel_arg(name = \"ns::Name\")], the C++ name of the generated struct",
            )),
            Err(e) => errors.push(e),
        }
    }
    let fields = match &data.fields {
        Fields::Named(f) => f.named.iter().collect::<Vec<_>>(),
        other => {
            errors.push(syn::Error::new(
                other.span(),
                "#[derive(KernelArg)] needs named fields: the C++ twin names each field",
            ));
            Vec::new()
        }
    };
    errors.finish()?;
    let n = quote!(::opbox::__private::native);
    let c = quote!(::opbox::cuda);
    let field_trait = |i: usize| format_ident!("__OpboxKernelArgField{}", i);
    let traits = fields.iter().enumerate().map(|(i, f)| {
        let tr = field_trait(i);
        let fname = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
        let message = LitStr::new(
            &format!("field `{fname}` of kernel argument struct `{ident}` is a `{{Self}}`, which cannot be passed to a kernel by value"),
            Span::call_site(),
        );
        quote! {
            #[diagnostic::on_unimplemented(
                message = #message,
                label = "not a by-value kernel argument type",
                note = "a #[derive(KernelArg)] field is a scalar (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16, a #[derive(NativeType)] type, another #[derive(KernelArg)] struct, or a fixed array [T; N] of those (a tuple is not: use an array or a struct)",
                note = "device buffers (tensors) are separate kernel parameters: In<[T]>, Out<[T]>, InOut<[T]>"
            )]
            trait #tr {
                const FIELD_TYPE: #n::FieldType;
            }
            impl<T: #n::NativeField> #tr for T {
                const FIELD_TYPE: #n::FieldType = <T as #n::NativeField>::FIELD_TYPE;
            }
        }
    });
    let schemas = fields.iter().enumerate().map(|(i, f)| {
        let tr = field_trait(i);
        let fid = f.ident.as_ref();
        let fname = fid.map(|i| i.to_string()).unwrap_or_default();
        let ty = &f.ty;
        let field_type = quote_spanned!(ty.span()=> <#ty as #tr>::FIELD_TYPE);
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
                const KIND: ::opbox::__private::cuda::ParamKind =
                    ::opbox::__private::cuda::ParamKind::Native(::opbox::__private::cuda::NativeParam {
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

fn constexpr_enum(input: &DeriveInput) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            ident.span(),
            "#[derive(ConstexprEnum)] goes on an enum whose unit variants each name a C++ type: #[cpp = \"my_ns::Relu\"]",
        ));
    };
    let mut errors = Errors::default();
    let mut variants = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            errors.push(syn::Error::new(
                    v.fields.span(),
                    "a #[derive(ConstexprEnum)] variant carries no data: it names one C++ type; a value the kernel reads is an ordinary parameter",
                ),
            );
        }
        let cpp = v
            .attrs
            .iter()
            .find(|a| a.path().is_ident("cpp"))
            .and_then(|a| match &a.meta {
                Meta::NameValue(nv) => match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            });
        match cpp {
            Some(s) => {
                let text = s.value();
                let ok = !text.is_empty()
                    && text.split("::").all(|p| {
                        let mut ch = p.chars();
                        ch.next()
                            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                            && ch.all(|c| {
                                c.is_ascii_alphanumeric()
                                    || c == '_'
                                    || c == '<'
                                    || c == '>'
                                    || c == ','
                                    || c == ' '
                            })
                    });
                if ok {
                    variants.push((v.ident.clone(), s));
                } else {
                    errors.push(syn::Error::new(
                        s.span(),
                        "expected a C++ type name such as \"my_ns::Relu\"",
                    ));
                }
            }
            None => errors.push(syn::Error::new(
                v.ident.span(),
                format!(
                    "variant `{}` needs #[cpp = \"my_ns::Type\"]: the C++ type it selects",
                    v.ident
                ),
            )),
        }
    }
    if variants.is_empty() && errors.is_empty() {
        errors.push(syn::Error::new(
            ident.span(),
            "a #[derive(ConstexprEnum)] enum needs at least one variant",
        ));
    }
    errors.finish()?;
    let c = quote!(::opbox::cuda);
    let p = quote!(::opbox::__private::cuda);
    let ident_str = ident.to_string();
    let cpps: Vec<&LitStr> = variants.iter().map(|(_, s)| s).collect();
    let arms = variants.iter().map(|(v, s)| quote!(#ident::#v => #s));
    Ok(quote! {
        impl #c::ConstexprEnum for #ident {
            const PARAM: #p::EnumParam = #p::EnumParam {
                rust_name: #ident_str,
                variants: &[#(#cpps),*],
            };
            fn cpp_type(self) -> &'static str {
                match self {
                    #(#arms,)*
                }
            }
        }

        impl #c::ConstexprArg for #ident {
            const KIND: #p::ParamKind =
                #p::ParamKind::ConstexprEnum(<#ident as #c::ConstexprEnum>::PARAM);
            #[inline]
            fn const_value(self) -> #p::ConstValue {
                #p::ConstValue::Type {
                    enum_name: #ident_str,
                    cpp: <#ident as #c::ConstexprEnum>::cpp_type(self),
                }
            }
        }
    })
}
