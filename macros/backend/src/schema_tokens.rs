//! A parsed schema as a const expression of `opbox::__private::schema::Schema`, so the runtime
//! reads the model the macro built instead of parsing again.

use opbox_codegen::schema::{
    Alias, Argument, BaseType, DefaultValue, Return, Schema, Type, TypeShape,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

fn schema_path() -> TokenStream {
    quote!(::opbox::__private::schema)
}

pub fn schema(schema: &Schema, namespace: &str) -> TokenStream {
    let s = schema_path();
    let name = schema.name.name.as_ref();
    let overload = schema.name.overload.as_ref();
    let arguments = schema.arguments.iter().map(argument);
    let returns = schema.returns.iter().map(ret);
    quote! {
        #s::Schema {
            name: #s::OperatorName {
                namespace: ::core::option::Option::Some(::std::borrow::Cow::Borrowed(#namespace)),
                name: ::std::borrow::Cow::Borrowed(#name),
                overload: ::std::borrow::Cow::Borrowed(#overload),
            },
            arguments: ::std::borrow::Cow::Borrowed(&[#(#arguments),*]),
            returns: ::std::borrow::Cow::Borrowed(&[#(#returns),*]),
        }
    }
}

fn argument(arg: &Argument) -> TokenStream {
    let s = schema_path();
    let name = arg.name.as_ref();
    let ty = ty(arg.ty);
    let alias = alias(arg.alias.as_ref());
    let default = match &arg.default {
        Some(d) => {
            let d = default(d);
            quote!(::core::option::Option::Some(#d))
        }
        None => quote!(::core::option::Option::None),
    };
    let kw_only = arg.kw_only;
    quote! {
        #s::Argument {
            name: ::std::borrow::Cow::Borrowed(#name),
            ty: #ty,
            alias: #alias,
            default: #default,
            kw_only: #kw_only,
        }
    }
}

fn ret(r: &Return) -> TokenStream {
    let s = schema_path();
    let name = match &r.name {
        Some(n) => {
            let n = n.as_ref();
            quote!(::core::option::Option::Some(::std::borrow::Cow::Borrowed(#n)))
        }
        None => quote!(::core::option::Option::None),
    };
    let ty = ty(r.ty);
    let alias = alias(r.alias.as_ref());
    quote!(#s::Return { name: #name, ty: #ty, alias: #alias })
}

fn alias(alias: Option<&Alias>) -> TokenStream {
    let s = schema_path();
    match alias {
        Some(a) => {
            let set = a.set.as_ref();
            let is_write = a.is_write;
            quote! {
                ::core::option::Option::Some(#s::Alias {
                    set: ::std::borrow::Cow::Borrowed(#set),
                    is_write: #is_write,
                })
            }
        }
        None => quote!(::core::option::Option::None),
    }
}

/// `Type::base(BaseType::Int).list().unwrap()...`, evaluated at compile time: the macro has
/// already checked the depth, so the unwraps cannot fail.
pub fn ty(t: Type) -> TokenStream {
    let s = schema_path();
    match t.shape() {
        TypeShape::Base(base) => {
            let variant = format_ident!("{}", base_variant(base));
            quote!(#s::Type::base(#s::BaseType::#variant))
        }
        TypeShape::List(inner) => {
            let inner = ty(inner);
            quote!(#inner.list().unwrap())
        }
        TypeShape::Optional(inner) => {
            let inner = ty(inner);
            quote!(#inner.optional().unwrap())
        }
    }
}

fn base_variant(base: BaseType) -> &'static str {
    match base {
        BaseType::Tensor => "Tensor",
        BaseType::Int => "Int",
        BaseType::Float => "Float",
        BaseType::Bool => "Bool",
        BaseType::Str => "Str",
        BaseType::ScalarType => "ScalarType",
        BaseType::Device => "Device",
        BaseType::Scalar => "Scalar",
    }
}

fn default(d: &DefaultValue) -> TokenStream {
    let s = schema_path();
    let d_path = quote!(#s::DefaultValue);
    match d {
        DefaultValue::None => quote!(#d_path::None),
        DefaultValue::Bool(b) => quote!(#d_path::Bool(#b)),
        DefaultValue::Int(i) => quote!(#d_path::Int(#i)),
        DefaultValue::Float(f) => {
            let bits = f.to_bits();
            quote!(#d_path::Float(f64::from_bits(#bits)))
        }
        DefaultValue::Str(v) => {
            let v = v.as_ref();
            quote!(#d_path::Str(::std::borrow::Cow::Borrowed(#v)))
        }
        DefaultValue::IntList(v) => {
            let v = v.iter();
            quote!(#d_path::IntList(::std::borrow::Cow::Borrowed(&[#(#v),*])))
        }
        DefaultValue::FloatList(v) => {
            let v = v.iter().map(|f| f.to_bits());
            quote!(#d_path::FloatList(::std::borrow::Cow::Borrowed(&[#(f64::from_bits(#v)),*])))
        }
        DefaultValue::BoolList(v) => {
            let v = v.iter();
            quote!(#d_path::BoolList(::std::borrow::Cow::Borrowed(&[#(#v),*])))
        }
    }
}
