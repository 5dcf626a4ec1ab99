//! `#[derive(ConstexprEnum)]`: an enum for `#[constexpr]` parameters, each unit variant naming a
//! C++ type (`#[cpp = "my_ns::Relu"]`) that becomes the kernel's template argument.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, ExprLit, Fields, Lit, LitStr, Meta};

use opbox_codegen::cpp_ident;

use crate::errors::Errors;

pub fn expand(input: TokenStream) -> TokenStream {
    syn::parse2::<DeriveInput>(input)
        .and_then(|input| constexpr_enum(&input))
        .unwrap_or_else(|e| e.to_compile_error())
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
            errors.at(
                v.fields.span(),
                "a #[derive(ConstexprEnum)] variant carries no data: it names one C++ type; a value the kernel reads is an ordinary parameter",
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
                if cpp_ident::is_type_spelling(&s.value()) {
                    variants.push((v.ident.clone(), s));
                } else {
                    errors.at(s.span(), "expected a C++ type name such as \"my_ns::Relu\"");
                }
            }
            None => errors.at(
                v.ident.span(),
                format!(
                    "variant `{}` needs #[cpp = \"my_ns::Type\"]: the C++ type it selects",
                    v.ident
                ),
            ),
        }
    }
    if variants.is_empty() && errors.is_empty() {
        errors.at(
            ident.span(),
            "a #[derive(ConstexprEnum)] enum needs at least one variant",
        );
    }
    errors.finish()?;
    let c = quote!(::opbox::__private::cuda);
    let ident_str = ident.to_string();
    let cpps: Vec<&LitStr> = variants.iter().map(|(_, s)| s).collect();
    let arms = variants.iter().map(|(v, s)| quote!(#ident::#v => #s));
    Ok(quote! {
        impl #c::ConstexprEnum for #ident {
            const PARAM: #c::EnumParam = #c::EnumParam {
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
            const KIND: #c::ParamKind =
                #c::ParamKind::ConstexprEnum(<#ident as #c::ConstexprEnum>::PARAM);
            #[inline]
            fn const_value(self) -> #c::ConstValue {
                #c::ConstValue::Type {
                    enum_name: #ident_str,
                    cpp: <#ident as #c::ConstexprEnum>::cpp_type(self),
                }
            }
        }
    })
}
