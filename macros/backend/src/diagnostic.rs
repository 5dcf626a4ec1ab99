//! `#[diagnostic::on_unimplemented]`, emitted from here only: the field-type traits of native
//! types, kernel argument structs and builtins.

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Type;

/// The attribute, for a trait whose missing impl is the user's mistake: rustc then says
/// `message` instead of "the trait bound is not satisfied".
fn on_unimplemented(message: &str, label: &str, notes: &[&str]) -> TokenStream {
    quote!(#[diagnostic::on_unimplemented(message = #message, label = #label #(, note = #notes)*)])
}

/// A local trait `tr` that every `NativeField` type has, forwarding its `FIELD_TYPE`: a type that
/// cannot cross to C++ then fails with `message`, which names the field or parameter it is in,
/// instead of with `NativeField`'s own message.
pub(crate) fn field_type_trait(
    tr: &Ident,
    message: &str,
    label: &str,
    notes: &[&str],
) -> TokenStream {
    let p = quote!(::opbox::__private::native);
    let attr = on_unimplemented(message, label, notes);
    quote! {
        #attr
        trait #tr {
            const FIELD_TYPE: #p::FieldType;
        }
        impl<T: #p::NativeField> #tr for T {
            const FIELD_TYPE: #p::FieldType = <T as #p::NativeField>::FIELD_TYPE;
        }
    }
}

/// `<ty as tr>::FIELD_TYPE`, spanned at the type, so that rustc's error points at it.
pub(crate) fn field_type_of(ty: &Type, tr: &Ident) -> TokenStream {
    quote_spanned!(ty.span()=> <#ty as #tr>::FIELD_TYPE)
}
