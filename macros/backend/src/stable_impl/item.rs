//! What `#[stable_impl]` reads of the item it is on: a module's kernels, or one kernel fn, each
//! with its signature parsed and its body kept as the tokens it came as.
//!
//! The macro needs only the signatures. Proc macros run unoptimised, and parsing every
//! statement of every body with syn, then printing it back, was a third of `#[stable_impl]`'s
//! cost; the body group passes through untouched instead (rustc reports its syntax errors
//! itself, where they are).

use proc_macro2::{Group, TokenStream};
use quote::{quote, ToTokens};
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::token::Brace;
use syn::{braced, Attribute, Ident, Item, Signature, Token, Visibility};

/// A fn with its body unparsed.
pub(super) struct KernelFn {
    pub(super) attrs: Vec<Attribute>,
    pub(super) vis: Visibility,
    pub(super) sig: Signature,
    pub(super) body: Group,
}

/// An item of an impl module: a fn, or anything else, parsed as syn parses it.
pub(super) enum ModuleItem {
    Fn(KernelFn),
    Other(Item),
}

/// `mod name { items }`, or `mod name;` (which the macro refuses: it cannot see the file).
pub(super) struct ImplModule {
    pub(super) attrs: Vec<Attribute>,
    pub(super) vis: Visibility,
    pub(super) mod_token: Token![mod],
    pub(super) ident: Ident,
    /// The inner attributes and the items, for an inline module.
    pub(super) content: Option<(Vec<Attribute>, Vec<ModuleItem>)>,
}

/// The item under `#[stable_impl]`.
pub(super) enum ImplItem {
    Module(ImplModule),
    Fn(Box<KernelFn>),
    /// Anything else, parsed (so a syntax error in it is reported as such).
    Other(Box<Item>),
}

/// The attributes, visibility and signature of a fn with a body at `input`, and the fork they
/// were read on; None when what follows is not such a fn.
fn fn_head<'a>(
    input: ParseStream<'a>,
) -> Option<(
    Vec<Attribute>,
    Visibility,
    Signature,
    syn::parse::ParseBuffer<'a>,
)> {
    let fork = input.fork();
    let attrs = fork.call(Attribute::parse_outer).ok()?;
    let vis: Visibility = fork.parse().ok()?;
    let sig: Signature = fork.parse().ok()?;
    fork.peek(Brace).then_some((attrs, vis, sig, fork))
}

fn kernel_fn(input: ParseStream) -> Option<syn::Result<KernelFn>> {
    let (attrs, vis, sig, fork) = fn_head(input)?;
    input.advance_to(&fork);
    Some(input.parse::<Group>().map(|body| KernelFn {
        attrs,
        vis,
        sig,
        body,
    }))
}

impl Parse for ModuleItem {
    fn parse(input: ParseStream) -> syn::Result<ModuleItem> {
        match kernel_fn(input) {
            Some(f) => f.map(ModuleItem::Fn),
            None => input.parse().map(ModuleItem::Other),
        }
    }
}

impl Parse for ImplItem {
    fn parse(input: ParseStream) -> syn::Result<ImplItem> {
        if let Some(f) = kernel_fn(input) {
            return f.map(|f| ImplItem::Fn(Box::new(f)));
        }
        let fork = input.fork();
        let attrs = fork.call(Attribute::parse_outer)?;
        let vis: Visibility = fork.parse()?;
        if !fork.peek(Token![mod]) {
            return input.parse().map(|item| ImplItem::Other(Box::new(item)));
        }
        input.advance_to(&fork);
        let mod_token = input.parse()?;
        let ident = input.parse()?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            return Ok(ImplItem::Module(ImplModule {
                attrs,
                vis,
                mod_token,
                ident,
                content: None,
            }));
        }
        let body;
        braced!(body in input);
        let inner = body.call(Attribute::parse_inner)?;
        let mut items = Vec::new();
        while !body.is_empty() {
            items.push(body.parse()?);
        }
        Ok(ImplItem::Module(ImplModule {
            attrs,
            vis,
            mod_token,
            ident,
            content: Some((inner, items)),
        }))
    }
}

impl ToTokens for KernelFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let KernelFn {
            attrs,
            vis,
            sig,
            body,
        } = self;
        tokens.extend(quote!(#(#attrs)* #vis #sig #body));
    }
}

impl ToTokens for ModuleItem {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            ModuleItem::Fn(f) => f.to_tokens(tokens),
            ModuleItem::Other(item) => item.to_tokens(tokens),
        }
    }
}
