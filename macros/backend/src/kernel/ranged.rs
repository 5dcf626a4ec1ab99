//! Range splitting for the CPU build of a barrier-free body (the runtime side is
//! `opbox::dsl::ranged`). A body run thread by thread checks every index and its own `if i < n`
//! at every thread, and those early exits keep LLVM from vectorizing the thread loop. Where every
//! buffer index the body reaches is `i + k` (`i` bound once by `let i = global_id_x();`, `k`
//! literals, scalar params and `len()`s, none rebound), the block computes once which of its
//! threads have all of those inside their buffers and every guard on `i` (`i < n`, `i >= n` with
//! an early `return`, ...) decided, and runs those through the body built with `FAST`: indices
//! unchecked, guards folded. The other threads, before and after them, run the checked body.
//!
//! The body stays one fn, generic over `const __OPBOX_FAST: bool`, so that rustc checks (and
//! reports on) the user's code once.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};

use super::cpu::KernelRewrite;
use super::fission::rebound;
use super::lower::strip_parens as strip;

/// The body with its proven indices and folded guards, and the narrowing calls that compute
/// the threads it may run (`FastThreads::of(block).index(..).below(..)`).
pub(crate) struct Ranged {
    pub body: syn::Block,
    pub narrow: Vec<TokenStream>,
}

/// The params the proof reads: buffers (with whether they are written) and integer scalars.
pub(crate) struct RangeParams<'a> {
    pub all: &'a [String],
    pub views: Vec<(String, bool)>,
    pub scalars: Vec<String>,
}

/// The ranged form of `block`, or `None` when some index or construct is outside the proof
/// (the kernel keeps the plain thread loop).
pub(crate) fn split(
    block: &syn::Block,
    params: &RangeParams<'_>,
    d: &TokenStream,
) -> Option<Ranged> {
    let rebound = rebound(block, params.all);
    let fixed = |n: &String| !rebound.contains(n);
    let mut body = block.clone();
    let at = body.stmts.iter().position(|s| id_let(s).is_some())?;
    let id = id_let(&body.stmts[at])?;
    let name = id.to_string();
    if params.all.contains(&name) || rebound.contains(&name) {
        return None;
    }
    let mut p = Proof {
        id,
        views: params
            .views
            .iter()
            .filter(|(n, _)| fixed(n))
            .cloned()
            .collect(),
        scalars: params
            .scalars
            .iter()
            .filter(|n| fixed(n))
            .cloned()
            .collect(),
        shadowed: params
            .views
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !fixed(n))
            .collect(),
        dead: false,
        failed: false,
        sites: 0,
        narrow: Vec::new(),
        d: d.clone(),
    };
    // Before the id's `let`, no index can be proven and no guard is on the id: visited as dead
    // code, only to count buffer indices.
    p.dead = true;
    for s in &mut body.stmts[..at] {
        p.visit_stmt_mut(s);
    }
    if p.sites > 0 {
        return None;
    }
    p.dead = false;
    for s in &mut body.stmts[at + 1..] {
        p.visit_stmt_mut(s);
    }
    if p.failed || p.sites == 0 {
        return None;
    }
    let mut narrow: Vec<TokenStream> = Vec::new();
    for n in p.narrow {
        if !narrow.iter().any(|m| m.to_string() == n.to_string()) {
            narrow.push(n);
        }
    }
    Some(Ranged { body, narrow })
}

/// `let i = global_id_x();` (or `let i: u32 = ..`): the bound name.
fn id_let(s: &syn::Stmt) -> Option<syn::Ident> {
    let syn::Stmt::Local(l) = s else { return None };
    let init = l.init.as_ref()?;
    if init.diverge.is_some() {
        return None;
    }
    let syn::Expr::Call(c) = strip(&init.expr) else {
        return None;
    };
    let is_id = matches!(&*c.func, syn::Expr::Path(f) if f.path.is_ident("global_id_x"));
    if !is_id || !c.args.is_empty() {
        return None;
    }
    let pat = match &l.pat {
        syn::Pat::Type(t) => {
            let u32_ty = matches!(&*t.ty, syn::Type::Path(p) if p.path.is_ident("u32"));
            if !u32_ty {
                return None;
            }
            &*t.pat
        }
        p => p,
    };
    match pat {
        syn::Pat::Ident(p)
            if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none() =>
        {
            Some(p.ident.clone())
        }
        _ => None,
    }
}

struct Proof {
    id: syn::Ident,
    /// Buffers never rebound, and whether each is written.
    views: Vec<(String, bool)>,
    scalars: Vec<String>,
    /// Buffers whose name the body binds again: an index of one is not proven.
    shadowed: Vec<String>,
    /// Inside a branch the fast threads never take (a folded guard's other side).
    dead: bool,
    failed: bool,
    /// Buffer indices seen (proven or not).
    sites: usize,
    narrow: Vec<TokenStream>,
    d: TokenStream,
}

/// A comparison of the id with an invariant, as a bound on the id: `Below(b)` is `id < b`,
/// `AtLeast(b)` is `id >= b`.
enum Bound {
    Below(TokenStream),
    AtLeast(TokenStream),
}

impl Proof {
    fn ident_of<'e>(&self, e: &'e syn::Expr) -> Option<&'e syn::Ident> {
        match strip(e) {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
            _ => None,
        }
    }

    fn view(&self, e: &syn::Expr) -> Option<bool> {
        let name = self.ident_of(e)?.to_string();
        self.views.iter().find(|(n, _)| *n == name).map(|(_, w)| *w)
    }

    fn is_id(&self, e: &syn::Expr) -> bool {
        self.ident_of(e).is_some_and(|i| *i == self.id)
    }

    /// Built only of literals, fixed integer params, buffers' `len()` and wrapping `+ - *`:
    /// the same value at every thread, and evaluable before the block runs.
    fn invariant(&self, e: &syn::Expr) -> bool {
        match strip(e) {
            syn::Expr::Lit(l) => matches!(l.lit, syn::Lit::Int(_)),
            syn::Expr::Path(_) => self
                .ident_of(e)
                .is_some_and(|i| self.scalars.contains(&i.to_string())),
            syn::Expr::Binary(b) => {
                matches!(
                    b.op,
                    syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_)
                ) && self.invariant(&b.left)
                    && self.invariant(&b.right)
            }
            syn::Expr::MethodCall(m) => {
                m.method == "len" && m.args.is_empty() && self.view(&m.receiver).is_some()
            }
            _ => false,
        }
    }

    /// `v` (an invariant) as its exact value, evaluated with the DSL's operators as the body
    /// does: an `i128` expression.
    fn exact(&self, v: &syn::Expr) -> TokenStream {
        let d = &self.d;
        let v = KernelRewrite::new().expr(v);
        quote!(#d::ranged::exact(#v))
    }

    /// `e` as `id + k`: the exact `k` (`None` when `e` is not of that form). The DSL's `+ -`
    /// wrap, so the index is `id + k` modulo 2^32; a thread admitted only where that sum is
    /// inside a buffer (so below 2^32) sees exactly it.
    fn offset(&self, e: &syn::Expr) -> Option<TokenStream> {
        let mut terms = Vec::new();
        self.terms(e, &mut terms)?;
        let mut k = quote!();
        for (i, (minus, v)) in terms.into_iter().enumerate() {
            k = match (i, minus) {
                (0, false) => v,
                (0, true) => quote!(-#v),
                (_, false) => quote!(#k + #v),
                (_, true) => quote!(#k - #v),
            };
        }
        Some(if k.is_empty() { quote!(0) } else { k })
    }

    /// The invariant terms of `e` (`id + k1 - k2 ..`), each with whether it is subtracted.
    fn terms(&self, e: &syn::Expr, out: &mut Vec<(bool, TokenStream)>) -> Option<()> {
        if self.is_id(e) {
            return Some(());
        }
        let syn::Expr::Binary(b) = strip(e) else {
            return None;
        };
        match b.op {
            syn::BinOp::Add(_) if self.invariant(&b.right) => {
                self.terms(&b.left, out)?;
                out.push((false, self.exact(&b.right)));
            }
            syn::BinOp::Add(_) if self.invariant(&b.left) => {
                out.push((false, self.exact(&b.left)));
                self.terms(&b.right, out)?;
            }
            syn::BinOp::Sub(_) if self.invariant(&b.right) => {
                self.terms(&b.left, out)?;
                out.push((true, self.exact(&b.right)));
            }
            _ => return None,
        }
        Some(())
    }

    /// `id < b`, `b > id`, `id >= b`, ... as a bound, negated when `negate`.
    fn bound(&self, e: &syn::Expr, negate: bool) -> Option<Bound> {
        let syn::Expr::Binary(b) = strip(e) else {
            return None;
        };
        use syn::BinOp::{Ge, Gt, Le, Lt};
        // (id below the bound?, bound + 1?) for `id OP bound`, before `negate`.
        let (below, plus_one, bound) = if self.is_id(&b.left) && self.invariant(&b.right) {
            match b.op {
                Lt(_) => (true, false, &b.right),
                Le(_) => (true, true, &b.right),
                Gt(_) => (false, true, &b.right),
                Ge(_) => (false, false, &b.right),
                _ => return None,
            }
        } else if self.is_id(&b.right) && self.invariant(&b.left) {
            match b.op {
                Gt(_) => (true, false, &b.left),
                Ge(_) => (true, true, &b.left),
                Lt(_) => (false, true, &b.left),
                Le(_) => (false, false, &b.left),
                _ => return None,
            }
        } else {
            return None;
        };
        // `!(id < b)` is `id >= b`; `!(id < b + 1)` is `id >= b + 1`.
        let below = below != negate;
        let v = self.exact(bound);
        let v = if plus_one { quote!((#v + 1)) } else { v };
        Some(if below {
            Bound::Below(v)
        } else {
            Bound::AtLeast(v)
        })
    }

    /// The bounds `cond` sets when it holds (`&&` of comparisons) or, with `negate`, when it
    /// does not (`||` of them).
    fn guard(&self, cond: &syn::Expr, negate: bool, out: &mut Vec<Bound>) -> bool {
        match strip(cond) {
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) && !negate => {
                self.guard(&b.left, negate, out) && self.guard(&b.right, negate, out)
            }
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Or(_)) && negate => {
                self.guard(&b.left, negate, out) && self.guard(&b.right, negate, out)
            }
            e => match self.bound(e, negate) {
                Some(b) => {
                    out.push(b);
                    true
                }
                None => false,
            },
        }
    }

    fn narrow_by(&mut self, bounds: Vec<Bound>) {
        for b in bounds {
            self.narrow.push(match b {
                Bound::Below(v) => quote!(below(#v)),
                Bound::AtLeast(v) => quote!(at_least(#v)),
            });
        }
    }

    /// `x[e]` of a buffer: proven (rewritten to a `Proven` index, its bound recorded), or the
    /// whole body is refused.
    fn index(&mut self, ix: &mut syn::ExprIndex, written: bool) {
        let Some(writable) = self.view(&ix.expr) else {
            let shadowed = self
                .ident_of(&ix.expr)
                .is_some_and(|i| self.shadowed.contains(&i.to_string()));
            if shadowed {
                self.sites += 1;
                self.failed = true;
            }
            visit_mut::visit_expr_index_mut(self, ix);
            return;
        };
        self.sites += 1;
        if self.dead {
            visit_mut::visit_expr_index_mut(self, ix);
            return;
        }
        // A write to an In buffer is rustc's error, reported as for the plain body.
        if written && !writable {
            self.failed = true;
            return;
        }
        let Some(k) = self.offset(&ix.index) else {
            self.failed = true;
            return;
        };
        let (view, d, e) = (&ix.expr, &self.d, &ix.index);
        self.narrow.push(quote!(index(#k, #view.len())));
        let span = ix.index.span();
        let proven = quote_spanned! {span=> {
            let __opbox_i = #e;
            // SAFETY: with `__OPBOX_FAST`, the thread is one that `FastThreads` admitted for
            // this index: inside the buffer.
            unsafe { #d::ranged::Proven::<__OPBOX_FAST, _>::new(__opbox_i) }
        }};
        match syn::parse2(proven) {
            Ok(p) => *ix.index = p,
            Err(_) => self.failed = true,
        }
    }

    /// A place written through: an index of it is a write.
    fn place(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Index(ix) => self.index(ix, true),
            syn::Expr::Paren(p) => self.place(&mut p.expr),
            syn::Expr::Field(f) => self.place(&mut f.base),
            e => self.visit_expr_mut(e),
        }
    }

    fn fold_if(&mut self, i: &mut syn::ExprIf) -> bool {
        let returns = i.else_branch.is_none()
            && matches!(
                i.then_branch.stmts.last(),
                Some(syn::Stmt::Expr(syn::Expr::Return(_), _))
            );
        let mut bounds = Vec::new();
        if !self.guard(&i.cond, returns, &mut bounds) {
            return false;
        }
        let dead = self.dead;
        if !dead {
            self.narrow_by(bounds);
            let cond = &i.cond;
            let folded = if returns {
                quote!(!__OPBOX_FAST && (#cond))
            } else {
                quote!(__OPBOX_FAST || (#cond))
            };
            match syn::parse2(folded) {
                Ok(c) => *i.cond = c,
                Err(_) => self.failed = true,
            }
        }
        // The fast threads take one side only; the other needs no proof.
        self.dead = dead || returns;
        self.visit_block_mut(&mut i.then_branch);
        self.dead = dead || !returns;
        if let Some((_, e)) = &mut i.else_branch {
            self.visit_expr_mut(e);
        }
        self.dead = dead;
        true
    }
}

impl VisitMut for Proof {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Index(ix) => self.index(ix, false),
            syn::Expr::Assign(a) => {
                self.place(&mut a.left);
                self.visit_expr_mut(&mut a.right);
            }
            syn::Expr::Binary(b) if super::lower::compound(&b.op).is_some() => {
                self.place(&mut b.left);
                self.visit_expr_mut(&mut b.right);
            }
            syn::Expr::Reference(r) if r.mutability.is_some() => self.place(&mut r.expr),
            syn::Expr::If(i) => {
                if !self.fold_if(i) {
                    visit_mut::visit_expr_mut(self, e);
                }
            }
            // A buffer method other than `len()` (load4, the atomics) keeps its own check.
            syn::Expr::MethodCall(m) if self.view(&m.receiver).is_some() && m.method != "len" => {
                self.sites += 1;
                self.failed = true;
            }
            syn::Expr::Macro(_) | syn::Expr::Closure(_) => self.failed = true,
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        match s {
            syn::Stmt::Item(_) | syn::Stmt::Macro(_) => self.failed = true,
            _ => visit_mut::visit_stmt_mut(self, s),
        }
    }
}
