//! A kernel declaration's parameters, classified: device buffers (`In`/`Out`/`InOut<[T]>`),
//! scalars by value, structs by value (`#[derive(NativeType)]`, `#[derive(KernelArg)]`) and
//! `#[constexpr]` values. `#[extern_kernel]` declares its parameters with these rules, and so will
//! the `#[kernel]` DSL: [`classify_inputs`] is the one place they live, and every message names
//! the macro that asked ([`KernelMacro`]).

use opbox_codegen::cuda::{ElemType, ParamKind, ScalarType};
use proc_macro2::{Ident, Span};
use quote::quote;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, GenericArgument, Pat, PathArguments, Token, Type};

use crate::errors::Errors;

/// The macro whose parameters are classified, as its messages name it.
#[derive(Clone, Copy)]
pub(crate) struct KernelMacro {
    /// `#[extern_kernel]`.
    pub attr: &'static str,
    /// With its article: `an #[extern_kernel]`.
    pub an: &'static str,
}

/// One declared parameter, checked.
pub(crate) struct KernelParam {
    pub name: Ident,
    pub class: ParamClass,
}

/// What a parameter's declared type says about how it crosses to the kernel.
pub(crate) enum ParamClass {
    /// A spelling the macro knows (slice views of the built-in elements, scalars).
    Known(ParamKind),
    /// Any other type: its `KernelArg` impl says how it crosses (native and derived structs).
    Arg(Type),
    /// A `#[constexpr]` of any other type: its `ConstexprArg` impl (derived enums).
    Constexpr(Type),
    /// `In<[T]>` / `Out<[T]>` / `InOut<[T]>` of another element type: a `#[derive(NativeType)]`.
    NativeSlice(Access, Type),
}

impl ParamClass {
    /// Fixed per specialization, not passed at launch.
    pub fn is_constexpr(&self) -> bool {
        matches!(
            self,
            ParamClass::Known(ParamKind::Constexpr(_)) | ParamClass::Constexpr(_)
        )
    }
}

/// How a kernel reaches a device buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    In,
    Out,
    InOut,
}

impl Access {
    fn from_wrapper(name: &str) -> Option<Access> {
        match name {
            "In" => Some(Access::In),
            "Out" => Some(Access::Out),
            "InOut" => Some(Access::InOut),
            _ => None,
        }
    }

    /// The wrapper as written: `InOut`.
    pub fn name(self) -> &'static str {
        match self {
            Access::In => "In",
            Access::Out => "Out",
            Access::InOut => "InOut",
        }
    }

    fn of(self, elem: ElemType) -> ParamKind {
        match self {
            Access::In => ParamKind::In(elem),
            Access::Out => ParamKind::Out(elem),
            Access::InOut => ParamKind::InOut(elem),
        }
    }
}

/// The element types, as messages list them (the type table's `elem` rows).
fn elem_list() -> String {
    names(ElemType::ALL.iter().map(|t| t.rust_name()))
}

/// The by-value scalar types (the type table's `scalar` rows).
fn scalar_list() -> String {
    names(ScalarType::ALL.iter().map(|t| t.rust_name()))
}

/// The `#[constexpr]` types (the type table's `constexpr` rows).
fn constexpr_list() -> String {
    names(
        ScalarType::ALL
            .iter()
            .filter(|t| t.can_be_constexpr())
            .map(|t| t.rust_name()),
    )
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// Every parameter of the declaration, in order; the ones that are wrong are left out, with
/// their errors (each at its own span) in `errors`.
pub(crate) fn classify_inputs(
    inputs: &Punctuated<FnArg, Token![,]>,
    by: KernelMacro,
    errors: &mut Errors,
) -> Vec<KernelParam> {
    let mut params = Vec::new();
    for input in inputs {
        let pt = match input {
            FnArg::Receiver(r) => {
                errors.at(
                    r.span(),
                    format!("{} fn is a free function: it takes no `self`", by.an),
                );
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let name = match &*pt.pat {
            Pat::Ident(p) => Some(p.ident.clone()),
            other => {
                errors.at(
                    other.span(),
                    format!("name each {} parameter with a plain identifier", by.attr),
                );
                None
            }
        };
        match (name, classify(&pt.ty, constexpr_attr(&pt.attrs), by)) {
            (Some(name), Ok(class)) => params.push(KernelParam { name, class }),
            (_, Err(e)) => errors.push(e),
            (None, Ok(_)) => {}
        }
        for a in &pt.attrs {
            if !a.path().is_ident("constexpr") {
                errors.at(
                    a.span(),
                    format!(
                        "the only attribute {} parameter takes is #[constexpr]",
                        by.an
                    ),
                );
            }
        }
    }
    params
}

fn constexpr_attr(attrs: &[Attribute]) -> Option<Span> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("constexpr"))
        .map(|a| a.path().span())
}

/// The class a declared type means, or the error at the part of the type that is wrong.
/// `constexpr` is the span of the parameter's `#[constexpr]`, if it has one.
pub(crate) fn classify(
    ty: &Type,
    constexpr: Option<Span>,
    by: KernelMacro,
) -> syn::Result<ParamClass> {
    let Type::Path(tp) = ty else {
        return Err(syn::Error::new(
            ty.span(),
            format!("unsupported {} parameter type: use In<[T]>, Out<[T]> or InOut<[T]> for device buffers (T one of {}), or a scalar by value ({})", by.attr, elem_list(), scalar_list()),
        ));
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(syn::Error::new(ty.span(), "expected a type"));
    };
    if let Some(access) = Access::from_wrapper(&last.ident.to_string()) {
        return classify_buffer(access, last, constexpr);
    }
    let name = single_ident(ty);
    match name.as_deref().and_then(ScalarType::from_rust_name) {
        Some(t) if constexpr.is_some() && !t.can_be_constexpr() => Err(syn::Error::new(
            ty.span(),
            format!("#[constexpr] {t}: C++ has no literal of this type, so it cannot be a template argument or a #define; #[constexpr] takes {}; pass {t} as an ordinary parameter", constexpr_list()),
        )),
        Some(t) if constexpr.is_some() => Ok(ParamClass::Known(ParamKind::Constexpr(t))),
        Some(t) => Ok(ParamClass::Known(ParamKind::Scalar(t))),
        // A path the macro does not know (a native or derived struct, a derived enum): its trait
        // impl decides, and rustc names the missing impl at this type.
        None if !is_primitive(name.as_deref()) && tp.qself.is_none() => {
            Ok(if constexpr.is_some() {
                ParamClass::Constexpr(ty.clone())
            } else {
                ParamClass::Arg(ty.clone())
            })
        }
        None => {
            let shown = quote!(#ty).to_string();
            let hint = if name.as_deref().and_then(ElemType::from_rust_name).is_some() {
                format!(" ({shown} is an element type for buffers, In<[{shown}]>, not a by-value scalar)")
            } else {
                String::new()
            };
            Err(syn::Error::new(
                ty.span(),
                format!("unsupported {} parameter type `{shown}`: scalars are {}; buffers are In<[T]>, Out<[T]> or InOut<[T]>{hint}", by.attr, scalar_list()),
            ))
        }
    }
}

/// `In<[T]>`, `Out<[T]>`, `InOut<[T]>`: `segment` is the wrapper.
fn classify_buffer(
    access: Access,
    segment: &syn::PathSegment,
    constexpr: Option<Span>,
) -> syn::Result<ParamClass> {
    let wrapper = access.name();
    if let Some(at) = constexpr {
        return Err(syn::Error::new(
            at,
            format!("#[constexpr] goes on an integer or bool scalar (it becomes a template argument or a #define), but this parameter is a buffer ({wrapper}<..>), which is passed at launch: remove #[constexpr]"),
        ));
    }
    let one_slice = || format!("{wrapper} takes one slice type: {wrapper}<[f32]>");
    let inner = match &segment.arguments {
        PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(GenericArgument::Type(t)) => t,
            _ => return Err(syn::Error::new(segment.arguments.span(), one_slice())),
        },
        _ => return Err(syn::Error::new(segment.span(), one_slice())),
    };
    let Type::Slice(slice) = inner else {
        let shown = quote!(#inner).to_string();
        let fix = if access == Access::In {
            format!("an input scalar is passed by value: write `{shown}` instead of `In<{shown}>`, or `In<[{shown}]>` for a buffer")
        } else {
            format!("a kernel cannot write back through a by-value scalar; to return one value, declare `{wrapper}<[{shown}]>` and pass a one-element tensor")
        };
        return Err(syn::Error::new(
            inner.span(),
            format!("`{wrapper}<{shown}>`: {wrapper} takes a slice of elements, `{wrapper}<[{shown}]>`; {fix}"),
        ));
    };
    let elem = &*slice.elem;
    let name = single_ident(elem);
    match name.as_deref().and_then(ElemType::from_rust_name) {
        Some(t) => Ok(ParamClass::Known(access.of(t))),
        // A native element: its NativeType impl decides, and rustc names a missing one.
        None if matches!(elem, Type::Path(p) if p.qself.is_none())
            && !is_primitive(name.as_deref()) =>
        {
            Ok(ParamClass::NativeSlice(access, elem.clone()))
        }
        None => {
            let shown = quote!(#elem).to_string();
            Err(syn::Error::new(
                elem.span(),
                format!("unsupported element type `{shown}` in {wrapper}<[{shown}]>: the element types are {} (f16 and bf16 are half's types, F8E4M3 and F8E5M2 float8's, Complex32 and Complex64 num_complex's; opbox re-exports the three crates)", elem_list()),
            ))
        }
    }
}

/// Rust's primitive names (and `f16`/`bf16`): these get the macro's own message.
fn is_primitive(name: Option<&str>) -> bool {
    matches!(
        name,
        Some(
            "i8" | "i16"
                | "i32"
                | "i64"
                | "i128"
                | "isize"
                | "u8"
                | "u16"
                | "u32"
                | "u64"
                | "u128"
                | "usize"
                | "f16"
                | "bf16"
                | "f32"
                | "f64"
                | "bool"
                | "char"
                | "str"
                | "String"
                | "Tensor"
        )
    )
}

fn single_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp.path.get_ident().map(Ident::to_string),
        _ => None,
    }
}
