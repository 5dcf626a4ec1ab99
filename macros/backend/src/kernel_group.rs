//! `#[kernel_group] mod name { .. }`: kernels that dispatch as one unit (PyPTO's groups).
//!
//! parse (the module's `#[kernel]` and `#[extern_kernel]` fns are its members; other items pass
//! through) → validate (one kind for all members, PyPTO's rule; every member takes the first
//! member's parameters, which the group exposes) → expand (the module as written, plus `GROUP`,
//! `launch(cfg, ..)` and `launch_in(r, cfg, ..)` taking those parameters).
//!
//! The members' own macros run after this one, on the items as written, so each member is
//! checked and expanded exactly as outside a group.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ForeignItemFn, Item, ItemMod, Signature};

use crate::errors::{with_item, Errors};
use crate::extern_kernel::expand::rust_arg;
use crate::kernel_params::{classify_inputs, KernelMacro};

const GROUP: KernelMacro = KernelMacro {
    attr: "#[kernel_group]",
    an: "a #[kernel_group]",
};

/// The names the expansion adds to the module.
const RESERVED: [&str; 3] = ["GROUP", "launch", "launch_in"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Extern,
    Dsl,
}

impl Kind {
    fn of(attrs: &[Attribute]) -> Option<Kind> {
        attrs.iter().find_map(|a| {
            let last = a.path().segments.last()?;
            match last.ident.to_string().as_str() {
                "extern_kernel" => Some(Kind::Extern),
                "kernel" => Some(Kind::Dsl),
                _ => None,
            }
        })
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Extern => "an #[extern_kernel] (hand-written CUDA C++)",
            Kind::Dsl => "a #[kernel] (the Rust kernel DSL)",
        }
    }
}

struct Member {
    kind: Kind,
    sig: Signature,
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let module = match syn::parse2::<ItemMod>(item) {
        Ok(m) => m,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "#[kernel_group] goes on an inline module of kernels: `#[kernel_group] mod name { #[kernel] fn a(..) {..} #[kernel] fn b(..) {..} }`",
            )
            .to_compile_error()
        }
    };
    match try_expand(attr, &module) {
        Ok(tokens) => tokens,
        Err(e) => with_item(e, module),
    }
}

/// A member declared without a body (`#[extern_kernel] fn k(..);`), which syn keeps verbatim.
fn bodiless(tokens: &TokenStream) -> Option<ForeignItemFn> {
    syn::parse2::<ForeignItemFn>(tokens.clone()).ok()
}

fn members(items: &[Item]) -> Vec<Member> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::Fn(f) => Kind::of(&f.attrs).map(|kind| Member {
                kind,
                sig: f.sig.clone(),
            }),
            Item::Verbatim(v) => {
                bodiless(v).and_then(|f| Kind::of(&f.attrs).map(|kind| Member { kind, sig: f.sig }))
            }
            _ => None,
        })
        .collect()
}

/// `x: In<[f32]>` as compared and shown (`#[constexpr]` included).
fn param_text(arg: &FnArg) -> String {
    arg.to_token_stream()
        .to_string()
        .replace(" : ", ": ")
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" <", "<")
        .replace(" >", ">")
        .replace("[ ", "[")
        .replace(" ]", "]")
        .replace("# [", "#[")
}

fn try_expand(attr: TokenStream, module: &ItemMod) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.at(
            attr.span(),
            "#[kernel_group] takes no arguments: the module's name is the group's",
        );
    }
    let name = &module.ident;
    let Some((_, items)) = &module.content else {
        return Err(syn::Error::new(
            module.span(),
            "#[kernel_group] needs the module's items here: `mod name { .. }`, not `mod name;`",
        ));
    };
    let members = members(items);
    let Some(first) = members.first() else {
        return Err(syn::Error::new(
            name.span(),
            format!("kernel group `{name}` has no members: put its #[kernel] fns (or its #[extern_kernel] fns) inside the module"),
        ));
    };
    for m in &members {
        let ident = m.sig.ident.to_string();
        if RESERVED.contains(&ident.as_str()) {
            errors.at(
                m.sig.ident.span(),
                format!("kernel group `{name}` defines `{ident}` itself: rename this kernel"),
            );
        }
    }
    if let Some(other) = members.iter().find(|m| m.kind != first.kind) {
        errors.at(
            other.sig.ident.span(),
            format!(
                "kernel group `{name}` mixes kinds: `{}` is {}, but `{}` is {}; a group is all #[extern_kernel] or all #[kernel] fns (PyPTO's rule): move one kind into a group of its own",
                first.sig.ident,
                first.kind.describe(),
                other.sig.ident,
                other.kind.describe()
            ),
        );
    }
    let exposed: Vec<String> = first.sig.inputs.iter().map(param_text).collect();
    for m in &members[1..] {
        let theirs: Vec<String> = m.sig.inputs.iter().map(param_text).collect();
        let differing = exposed
            .iter()
            .zip(&theirs)
            .zip(&m.sig.inputs)
            .find(|((a, b), _)| a != b);
        let why = match differing {
            Some(((a, b), arg)) => Some((
                arg.span(),
                format!("takes `{b}` where `{}` takes `{a}`", first.sig.ident),
            )),
            None if theirs.len() != exposed.len() => Some((
                m.sig.ident.span(),
                format!(
                    "takes {} parameters, but `{}` takes {}",
                    theirs.len(),
                    first.sig.ident,
                    exposed.len()
                ),
            )),
            None => None,
        };
        if let Some((span, why)) = why {
            errors.at(
                span,
                format!(
                    "kernel group `{name}`: member `{}` {why}; every member takes the parameters the group exposes, those of its first member `{}` ({}), with the same names and types in the same order",
                    m.sig.ident,
                    first.sig.ident,
                    exposed.join(", ")
                ),
            );
        }
    }
    errors.finish()?;
    // The first member's own macro reports any wrong parameter; the group then adds nothing.
    let mut quiet = Errors::default();
    let params = classify_inputs(&first.sig.inputs, GROUP, &mut quiet);
    if !quiet.is_empty() {
        return Ok(module.to_token_stream());
    }
    Ok(emit(module, &members, &params))
}

fn emit(
    module: &ItemMod,
    members: &[Member],
    params: &[crate::kernel_params::KernelParam],
) -> TokenStream {
    let name = module.ident.to_string();
    let handles = members.iter().map(|m| {
        let ident = &m.sig.ident;
        quote!(&#ident::HANDLE)
    });
    let mut fn_params = Vec::new();
    let mut launch_args = Vec::new();
    let mut const_args = Vec::new();
    for p in params {
        let ident = &p.name;
        let (ty, value) = rust_arg(p);
        fn_params.push(quote!(#ident: #ty));
        if p.class.is_constexpr() {
            const_args.push(value);
        } else {
            launch_args.push(value);
        }
    }
    let member_names: Vec<String> = members.iter().map(|m| m.sig.ident.to_string()).collect();
    let launch_doc = format!(
        " Launches the group's members ({}) in order on one stream, each checked first.",
        member_names.join(", ")
    );
    let added = quote! {
        /// The group: its name and its members, in launch order.
        pub static GROUP: ::opbox::__private::cuda::KernelGroupDecl = ::opbox::__private::cuda::KernelGroupDecl {
            name: #name,
            members: &[#(#handles),*],
        };

        #[doc = #launch_doc]
        #[allow(clippy::too_many_arguments)]
        pub fn launch(cfg: ::opbox::__private::cuda::LaunchConfig, #(#fn_params),*) -> ::opbox::__private::Result<()> {
            ::opbox::__private::cuda::launch_group(&GROUP, &cfg, &[#(#launch_args),*], &[#(#const_args),*])
        }

        /// Records the group into a kernel graph as one node (`opbox::graph::record`).
        #[allow(clippy::too_many_arguments)]
        pub fn launch_in(r: &mut ::opbox::__private::cuda::Recorder, cfg: ::opbox::__private::cuda::LaunchConfig, #(#fn_params),*) -> ::opbox::__private::Result<::opbox::__private::cuda::NodeId> {
            r.launch_group(&GROUP, &cfg, &[#(#launch_args),*], &[#(#const_args),*])
        }
    };
    let mut module = module.clone();
    if let Some((_, items)) = &mut module.content {
        items.push(Item::Verbatim(added));
    }
    module.to_token_stream()
}
