//! The CPU build of a DSL body: the same Rust, with the operators whose Rust meaning differs from
//! the DSL's (overflow panics in debug, division by zero, unmasked shifts, `as` with `f16`,
//! std's float `min`/`max`) routed to `opbox::dsl::ops`, the Rust twins of the C++ helpers. The
//! rest (comparisons, `& | ^ !`, indexing, calls, control flow) is left exactly as written, so
//! rustc type-checks the user's own code.

use opbox_codegen::cuda::dsl_prelude::{dsl_method, dsl_warp_fn, MethodOn, THREAD_INDEX_FNS};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};

use super::lower::{compound, is_dynamic_shared, is_shared_fn, shared_call};

struct Rewrite {
    /// In a kernel's body, whose thread indices are its `__opbox_ctx` parameter (a `#[device]`
    /// fn reads them through a thread-local).
    kernel: bool,
    /// Barriers and shared arrays so far: each call site's number.
    barriers: u32,
    shared: usize,
}

fn ops() -> TokenStream {
    quote!(::opbox::__private::dsl::ops)
}

fn op_fn(op: &syn::BinOp) -> Option<&'static str> {
    Some(match op {
        syn::BinOp::Add(_) => "add",
        syn::BinOp::Sub(_) => "sub",
        syn::BinOp::Mul(_) => "mul",
        syn::BinOp::Div(_) => "div",
        syn::BinOp::Rem(_) => "rem",
        syn::BinOp::Shl(_) => "shl",
        syn::BinOp::Shr(_) => "shr",
        syn::BinOp::AddAssign(_) => "add_assign",
        syn::BinOp::SubAssign(_) => "sub_assign",
        syn::BinOp::MulAssign(_) => "mul_assign",
        syn::BinOp::DivAssign(_) => "div_assign",
        syn::BinOp::RemAssign(_) => "rem_assign",
        syn::BinOp::ShlAssign(_) => "shl_assign",
        syn::BinOp::ShrAssign(_) => "shr_assign",
        _ => return None,
    })
}

impl VisitMut for Rewrite {
    /// `let tile = shared::<T, N>();` binds a view that the body writes through: `mut` on the
    /// CPU, as a `__shared__` array is writable in C++.
    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        if local
            .init
            .as_ref()
            .is_some_and(|init| shared_call(&init.expr).is_some())
        {
            if let syn::Pat::Ident(p) = &mut local.pat {
                p.mutability = Some(Default::default());
            }
        }
        if let (syn::Pat::Ident(p), Some(init)) = (&local.pat, &mut local.init) {
            if let syn::Expr::Repeat(r) = &mut *init.expr {
                self.visit_expr_mut(&mut r.expr);
                let array = local_array(&p.ident, r);
                *init.expr = array;
                return;
            }
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        visit_mut::visit_expr_mut(self, e);
        let ops = ops();
        let replaced: Option<TokenStream> = match e {
            syn::Expr::Binary(b) => op_fn(&b.op).map(|f| {
                let f = syn::Ident::new(f, b.op.span());
                let (l, r) = (&b.left, &b.right);
                if compound(&b.op).is_some() {
                    // The value first, as Rust evaluates `a op= b` for scalars (and C++17 too),
                    // so that `t[i] += t[j]` does not hold `t` borrowed while reading it.
                    quote_spanned!(b.op.span()=> { let __opbox_v = #r; #ops::#f(&mut #l, __opbox_v) })
                } else {
                    quote_spanned!(b.op.span()=> #ops::#f(#l, #r))
                }
            }),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) && !is_literal(&u.expr) => {
                let x = &u.expr;
                Some(quote_spanned!(u.span()=> #ops::neg(#x)))
            }
            syn::Expr::Cast(c) => {
                let (x, t) = (&c.expr, &c.ty);
                Some(quote_spanned!(c.span()=> #ops::cast::<#t, _>(#x)))
            }
            // Warp fns become the thread context's methods, which exchange with the warp.
            syn::Expr::Call(c)
                if self.kernel
                    && matches!(&*c.func, syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| dsl_warp_fn(&i.to_string()).is_some())) =>
            {
                match &*c.func {
                    syn::Expr::Path(p) => p.path.get_ident().map(|i| {
                        let args = c.args.iter();
                        quote_spanned!(c.span()=> __opbox_ctx.#i(#(#args),*))
                    }),
                    _ => None,
                }
            }
            syn::Expr::Call(c) if self.kernel && c.args.is_empty() => match &*c.func {
                syn::Expr::Path(p) if p.path.is_ident("sync_threads") => {
                    let site = self.barriers;
                    self.barriers += 1;
                    Some(quote_spanned!(c.span()=> __opbox_ctx.sync_threads(#site)))
                }
                // `shared_dyn::<T>()`: the launch's dynamic shared memory.
                syn::Expr::Path(p) if is_dynamic_shared(p) => match &p.path.segments[0].arguments {
                    syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => {
                        let t = &a.args[0];
                        Some(quote_spanned!(c.span()=> __opbox_ctx.shared_dyn::<#t>()))
                    }
                    _ => None,
                },
                // `shared::<T, N>()`: N may be a #[constexpr] param, a value on the CPU.
                syn::Expr::Path(p) if is_shared_fn(p) => {
                    shared_args(&p.path.segments[0].arguments).map(|(t, n)| {
                        let site = self.shared;
                        self.shared += 1;
                        quote_spanned!(c.span()=> __opbox_ctx.shared::<#t>(#site, (#n) as usize))
                    })
                }
                syn::Expr::Path(p) => p
                    .path
                    .get_ident()
                    .filter(|i| THREAD_INDEX_FNS.iter().any(|f| i == f))
                    .map(|i| quote_spanned!(i.span()=> __opbox_ctx.#i())),
                _ => None,
            },
            syn::Expr::MethodCall(m) => dsl_method(&m.method.to_string()).map(|method| {
                let tr = match method.on {
                    MethodOn::Numbers => quote!(Num),
                    MethodOn::Floats => quote!(Float),
                };
                let (name, recv) = (&m.method, &m.receiver);
                let args = m.args.iter();
                quote_spanned!(m.span()=> #ops::#tr::#name(#recv #(, #args)*))
            }),
            _ => None,
        };
        if let Some(tokens) = replaced {
            // Parenthesized, so the call binds as the operator it replaces did.
            *e = syn::Expr::Verbatim(quote!((#tokens)));
        }
    }
}

/// Elements a local array of a `#[constexpr]` length holds without the heap (a literal length
/// is the array's exact inline size).
const LOCAL_INLINE: usize = 16;

/// `[init; N]` bound to `name`: a `LocalArray` of N copies of `init`, indexed with the DSL's
/// integer types and bounds-checked. N may be a `#[constexpr]` param, a value on the CPU.
fn local_array(name: &syn::Ident, r: &syn::ExprRepeat) -> syn::Expr {
    let (init, len) = (&r.expr, &r.len);
    let inline = match &*r.len {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => n.base10_parse::<usize>().unwrap_or(LOCAL_INLINE),
        _ => LOCAL_INLINE,
    };
    let shown = name.to_string();
    let d = quote!(::opbox::__private::dsl);
    syn::Expr::Verbatim(quote_spanned!(r.span()=>
        #d::local::LocalArray::<_, #inline>::new(#init, (#len) as usize, #shown)
    ))
}

/// `<T, N>` of `shared::<T, N>()`: the element type and the length as an expression.
fn shared_args(args: &syn::PathArguments) -> Option<(syn::Type, TokenStream)> {
    let syn::PathArguments::AngleBracketed(a) = args else {
        return None;
    };
    let mut it = a.args.iter();
    let (Some(syn::GenericArgument::Type(t)), Some(n), None) = (it.next(), it.next(), it.next())
    else {
        return None;
    };
    let n = match n {
        syn::GenericArgument::Const(e) => quote!(#e),
        syn::GenericArgument::Type(t) => quote!(#t),
        _ => return None,
    };
    Some((t.clone(), n))
}

fn is_literal(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(_) => true,
        syn::Expr::Paren(p) => is_literal(&p.expr),
        _ => false,
    }
}

/// A `#[device]` fn's body with the DSL's operators.
pub(crate) fn rewrite(block: &syn::Block) -> syn::Block {
    let mut b = block.clone();
    Rewrite {
        kernel: false,
        barriers: 0,
        shared: 0,
    }
    .visit_block_mut(&mut b);
    b
}

/// A kernel body's pieces rewritten one at a time, in source order (the split at barriers,
/// `super::fission`): shared arrays keep the numbers a whole-body rewrite gives them.
pub(crate) struct KernelRewrite(Rewrite);

impl KernelRewrite {
    pub fn new() -> KernelRewrite {
        KernelRewrite(Rewrite {
            kernel: true,
            barriers: 0,
            shared: 0,
        })
    }

    pub fn stmt(&mut self, s: &syn::Stmt) -> syn::Stmt {
        let mut s = s.clone();
        self.0.visit_stmt_mut(&mut s);
        s
    }

    pub fn expr(&mut self, e: &syn::Expr) -> syn::Expr {
        let mut e = e.clone();
        self.0.visit_expr_mut(&mut e);
        e
    }
}

/// A kernel's body with the DSL's operators, reading its thread indices from `__opbox_ctx`.
pub(crate) fn rewrite_kernel(block: &syn::Block) -> syn::Block {
    let mut b = block.clone();
    Rewrite {
        kernel: true,
        barriers: 0,
        shared: 0,
    }
    .visit_block_mut(&mut b);
    b
}
