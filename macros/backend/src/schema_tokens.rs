//! A parsed schema as a const expression of `opbox::__private::schema::Schema`, so the runtime
//! reads the model the macro built instead of parsing again.

use opbox_codegen::schema::{Alias, Argument, DefaultValue, Return, Schema, Type, TypeShape};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// What the expressions below name, imported once into the module that holds them: short
/// paths keep each op's expansion small, which is most of what an op costs rustc.
pub fn imports() -> TokenStream {
    quote! {
        #[allow(unused_imports)]
        use ::opbox::__private::schema::{
            Alias, Argument, BaseType, DefaultValue, Layout, MemoryFormat, OperatorName, Return,
            Schema, Type,
        };
        #[allow(unused_imports)]
        use ::std::borrow::Cow::Borrowed;
        #[allow(unused_imports)]
        use ::core::option::Option::{None, Some};
    }
}

pub fn schema(schema: &Schema, namespace: &str) -> TokenStream {
    let name = schema.name.name.as_ref();
    let overload = schema.name.overload.as_ref();
    let arguments = schema.arguments.iter().map(argument);
    let returns = schema.returns.iter().map(ret);
    quote! {
        Schema {
            name: OperatorName {
                namespace: Some(Borrowed(#namespace)),
                name: Borrowed(#name),
                overload: Borrowed(#overload),
            },
            arguments: Borrowed(&[#(#arguments),*]),
            returns: Borrowed(&[#(#returns),*]),
        }
    }
}

fn argument(arg: &Argument) -> TokenStream {
    let name = arg.name.as_ref();
    let ty = ty(arg.ty);
    let alias = alias(arg.alias.as_ref());
    let default = match &arg.default {
        Some(d) => {
            let d = default(d);
            quote!(Some(#d))
        }
        None => quote!(None),
    };
    let kw_only = arg.kw_only;
    quote! {
        Argument {
            name: Borrowed(#name),
            ty: #ty,
            alias: #alias,
            default: #default,
            kw_only: #kw_only,
        }
    }
}

fn ret(r: &Return) -> TokenStream {
    let name = match &r.name {
        Some(n) => {
            let n = n.as_ref();
            quote!(Some(Borrowed(#n)))
        }
        None => quote!(None),
    };
    let ty = ty(r.ty);
    let alias = alias(r.alias.as_ref());
    quote!(Return { name: #name, ty: #ty, alias: #alias })
}

fn alias(alias: Option<&Alias>) -> TokenStream {
    match alias {
        Some(a) => {
            let sets = a.sets.iter().map(|s| s.as_ref());
            let after = a.after.iter().map(|s| s.as_ref());
            let is_write = a.is_write;
            quote! {
                Some(Alias {
                    sets: Borrowed(&[#(Borrowed(#sets)),*]),
                    is_write: #is_write,
                    after: Borrowed(&[#(Borrowed(#after)),*]),
                })
            }
        }
        None => quote!(None),
    }
}

/// `Type::base(BaseType::Int).list().unwrap()...`, evaluated at compile time: the macro has
/// already checked the depth, so the unwraps cannot fail.
pub fn ty(t: Type) -> TokenStream {
    match t.shape() {
        TypeShape::Base(_) if t.class_name().is_some() => {
            let name = t.base_name();
            quote!(Type::class(#name))
        }
        TypeShape::Base(base) => {
            let variant = format_ident!("{}", base.variant_name());
            quote!(Type::base(BaseType::#variant))
        }
        TypeShape::List(inner) => {
            let list = match t.list_len() {
                Some(n) => quote!(fixed_list(#n)),
                None => quote!(list()),
            };
            let inner = ty(inner);
            quote!(#inner.#list.unwrap())
        }
        TypeShape::Optional(inner) => {
            let inner = ty(inner);
            quote!(#inner.optional().unwrap())
        }
    }
}

fn default(d: &DefaultValue) -> TokenStream {
    let d_path = quote!(DefaultValue);
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
            quote!(#d_path::Str(Borrowed(#v)))
        }
        DefaultValue::IntList(v) => {
            let v = v.iter();
            quote!(#d_path::IntList(Borrowed(&[#(#v),*])))
        }
        DefaultValue::FloatList(v) => {
            let v = v.iter().map(|f| f.to_bits());
            quote!(#d_path::FloatList(Borrowed(&[#(f64::from_bits(#v)),*])))
        }
        DefaultValue::BoolList(v) => {
            let v = v.iter();
            quote!(#d_path::BoolList(Borrowed(&[#(#v),*])))
        }
        DefaultValue::Layout(l) => {
            let v = format_ident!("{}", l.variant_name());
            quote!(#d_path::Layout(Layout::#v))
        }
        DefaultValue::MemoryFormat(m) => {
            let v = format_ident!("{}", m.variant_name());
            quote!(#d_path::MemoryFormat(MemoryFormat::#v))
        }
    }
}
