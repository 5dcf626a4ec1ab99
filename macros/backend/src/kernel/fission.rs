//! The CPU build of a kernel body with barriers or warp exchanges, split at them (MCUDA's loop
//! fission; the runtime side is `opbox::dsl::fission`): the statements between two split points
//! run for every thread of the block, then the next ones do. A block-level local is kept per
//! thread across the split; an `if` or `while` that holds a split runs once for the block, its
//! condition evaluated by every thread (and required to agree, as the divergence check already
//! requires where the macro can see it).
//!
//! Split points are `sync_threads();` statements and warp exchanges bound by a statement of
//! their own (`let s = warp_reduce_sum(v);`, `s = shfl_down(s, 1);`); they may sit inside `if`,
//! `while` and `for v in a..b`. Anything else (an exchange inside a larger expression, a `loop`
//! or stepped `for` that holds a split, a `break` out of a loop that does) returns `None`, and
//! the kernel keeps the coroutines.

use opbox_codegen::cuda::dsl_prelude::{dsl_method, dsl_warp_fn, WarpReturns, THREAD_INDEX_FNS};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use super::cpu::KernelRewrite;

/// A block-level local: its name, whether it is written, and the vector holding it per thread.
struct Local {
    name: syn::Ident,
    mutable: bool,
    slot: syn::Ident,
    /// A local recomputed where it is read rather than kept per thread: its `let` (rewritten),
    /// whose value is a pure function of the thread's indices, the params and the locals in
    /// `deps` (themselves recomputed). `let row = block_id_x() * d4;` costs less to compute
    /// again than to store for every thread and load in every later piece.
    remat: Option<(TokenStream, Vec<usize>)>,
}

/// The statements between two split points, and the locals they declare at block level.
#[derive(Default)]
struct Segment {
    /// Declarations that go before the segment's thread loop (slots, warp lanes).
    pre: Vec<TokenStream>,
    stmts: Vec<TokenStream>,
    declared: Vec<usize>,
}

struct Split {
    rw: KernelRewrite,
    /// Every block-level local, in declaration order.
    locals: Vec<Local>,
    /// The indices into `locals` visible at each nesting level.
    scopes: Vec<Vec<usize>>,
    warps: usize,
    fors: usize,
    barriers: u32,
    publish: bool,
    d: TokenStream,
    /// The params' names, and the names bound more than once in the body (params included):
    /// a recomputed local reads only names that always mean the same binding.
    params: Vec<String>,
    rebound: Vec<String>,
}

/// The block-level body of `block`, or `None` when the split does not cover it.
pub(crate) fn split(
    block: &syn::Block,
    params: &[String],
    publish: bool,
    d: &TokenStream,
) -> Option<TokenStream> {
    let rebound = rebound(block, params);
    let mut s = Split {
        rw: KernelRewrite::new(),
        locals: Vec::new(),
        scopes: Vec::new(),
        warps: 0,
        fors: 0,
        barriers: 0,
        publish,
        d: d.clone(),
        params: params.to_vec(),
        rebound,
    };
    let body = s.level(&block.stmts, false)?;
    Some(quote! {
        let __opbox_n = __opbox_block.block_threads();
        let __opbox_reset = __opbox_block.publishing(#publish);
        let mut __opbox_done = #d::fission::done_flags(__opbox_n);
        #body
    })
}

/// A warp exchange that a statement binds: `let name = f(args);` or `name = f(args);`.
struct WarpPoint<'a> {
    local: Option<(&'a syn::Ident, bool, Option<&'a syn::Type>)>,
    assigned: Option<&'a syn::Ident>,
    name: String,
    returns: WarpReturns,
    args: Vec<&'a syn::Expr>,
}

impl Split {
    fn level(&mut self, stmts: &[syn::Stmt], in_loop: bool) -> Option<TokenStream> {
        self.scopes.push(Vec::new());
        let mut out = TokenStream::new();
        let mut seg = Segment::default();
        for stmt in stmts {
            if is_barrier(stmt) {
                out.extend(self.flush(&mut seg)?);
                let site = self.barriers;
                self.barriers += 1;
                out.extend(quote!(__opbox_block.barrier(#site, &__opbox_done);));
                continue;
            }
            if let Some(w) = warp_point(stmt) {
                if w.args.iter().any(|a| has_split(a)) {
                    return None;
                }
                let lanes = format_ident!("__opbox_w{}", self.warps);
                self.warps += 1;
                let defer = format_ident!("defer_{}", w.name);
                let args: Vec<syn::Expr> = w.args.iter().map(|a| self.rw.expr(a)).collect();
                let d = &self.d;
                seg.pre
                    .push(quote!(let mut #lanes = #d::fission::WarpLanes::new(__opbox_n);));
                seg.stmts
                    .push(quote!(#lanes.put(__opbox_t, __opbox_ctx.#defer(#(#args),*));));
                out.extend(self.flush(&mut seg)?);
                out.extend(quote!(__opbox_block.exchange_warps(&mut #lanes);));
                let get = if w.returns == WarpReturns::Bool {
                    quote!(#lanes.vote(__opbox_t))
                } else {
                    quote!(#lanes.get(__opbox_t))
                };
                match (w.local, w.assigned) {
                    (Some((name, mutable, ty)), _) => {
                        let m = mutable.then(|| quote!(mut));
                        let ty = ty.map(|t| quote!(: #t));
                        seg.stmts.push(quote!(let #m #name #ty = #get;));
                        self.declare(&mut seg, name, mutable);
                    }
                    (None, Some(name)) => seg.stmts.push(quote!(#name = #get;)),
                    (None, None) => return None,
                }
                continue;
            }
            if has_split_stmt(stmt) {
                out.extend(self.flush(&mut seg)?);
                let construct = match stmt {
                    syn::Stmt::Expr(e, _) => match strip_parens(e) {
                        syn::Expr::If(i) => self.uniform_if(i, in_loop)?,
                        syn::Expr::While(w) if w.label.is_none() => self.uniform_while(w)?,
                        syn::Expr::ForLoop(f) if f.label.is_none() => {
                            self.uniform_for(f, in_loop)?
                        }
                        _ => return None,
                    },
                    _ => return None,
                };
                out.extend(construct);
                continue;
            }
            if matches!(stmt, syn::Stmt::Item(_)) || (in_loop && breaks_out(stmt)) {
                return None;
            }
            let rewritten = self.rw.stmt(&returns_to_done(stmt));
            let declared = match &rewritten {
                syn::Stmt::Local(l) => Some(local_name(l)?),
                _ => None,
            };
            let remat = match stmt {
                syn::Stmt::Local(l) => self
                    .rematerializable(l)
                    .map(|deps| (quote!(#rewritten), deps)),
                _ => None,
            };
            seg.stmts.push(match &rewritten {
                // A value-less tail expression (`if .. {}`) becomes a statement: stores follow it.
                syn::Stmt::Expr(e, None) => quote!(#e;),
                other => quote!(#other),
            });
            if let Some((name, mutable)) = declared {
                self.declare_with(&mut seg, &name, mutable, remat);
            }
        }
        out.extend(self.flush(&mut seg)?);
        self.scopes.pop();
        Some(out)
    }

    /// The locals `l`'s value reads, if it is recomputable (see [`Local::remat`]): an immutable
    /// `let` of one name, never rebound, whose value is literals, params, thread indices,
    /// recomputable locals and the DSL's operators, casts and numeric methods over them.
    fn rematerializable(&self, l: &syn::Local) -> Option<Vec<usize>> {
        let (name, mutable) = local_name(l)?;
        let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
        if mutable || self.rebound.contains(&name.to_string()) {
            return None;
        }
        let mut names = Vec::new();
        if !pure(&init.expr, &mut names) {
            return None;
        }
        let visible = self.visible(&[]);
        let mut deps = Vec::new();
        for n in names {
            if self.rebound.contains(&n) {
                return None;
            }
            if self.params.contains(&n) {
                continue;
            }
            let i = visible
                .iter()
                .copied()
                .find(|i| self.locals[*i].name == n)?;
            self.locals[i].remat.as_ref()?;
            deps.push(i);
        }
        Some(deps)
    }

    fn declare(&mut self, seg: &mut Segment, name: &syn::Ident, mutable: bool) {
        self.declare_with(seg, name, mutable, None);
    }

    fn declare_with(
        &mut self,
        seg: &mut Segment,
        name: &syn::Ident,
        mutable: bool,
        remat: Option<(TokenStream, Vec<usize>)>,
    ) {
        let slot = format_ident!("__opbox_l{}", self.locals.len());
        let d = &self.d;
        if remat.is_none() {
            seg.pre
                .push(quote!(let mut #slot = #d::fission::Slots::new();));
        }
        seg.declared.push(self.locals.len());
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(self.locals.len());
        }
        self.locals.push(Local {
            name: name.clone(),
            mutable,
            slot,
            remat,
        });
    }

    /// The latest visible binding of each name, leaving out `skip`.
    fn visible(&self, skip: &[usize]) -> Vec<usize> {
        let mut seen: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for i in self.scopes.iter().rev().flat_map(|s| s.iter().rev()) {
            let name = self.locals[*i].name.to_string();
            if skip.contains(i) || seen.contains(&name) {
                continue;
            }
            seen.push(name);
            out.push(*i);
        }
        out
    }

    /// Each of `locals` as the thread's value: recomputed ones (and what they read) first, in
    /// declaration order, then the kept ones from their slots.
    fn load_each(&self, locals: &[usize]) -> Vec<TokenStream> {
        let mut remat: Vec<usize> = Vec::new();
        let mut pending: Vec<usize> = locals
            .iter()
            .copied()
            .filter(|i| self.locals[*i].remat.is_some())
            .collect();
        while let Some(i) = pending.pop() {
            if remat.contains(&i) {
                continue;
            }
            remat.push(i);
            if let Some((_, deps)) = &self.locals[i].remat {
                pending.extend(deps);
            }
        }
        remat.sort_unstable();
        let recomputed = remat.iter().filter_map(|i| self.locals[*i].remat.as_ref());
        let mut out: Vec<TokenStream> = recomputed.map(|(stmt, _)| stmt.clone()).collect();
        out.extend(
            locals
                .iter()
                .filter(|i| self.locals[**i].remat.is_none())
                .map(|&i| {
                    let Local {
                        name,
                        mutable,
                        slot,
                        ..
                    } = &self.locals[i];
                    let m = mutable.then(|| quote!(mut));
                    // A clone, which is a copy for all but local arrays (whose elements may
                    // spill to the heap).
                    quote!(let #m #name = ::core::clone::Clone::clone(&#slot[__opbox_t]);)
                }),
        );
        out
    }

    /// The visible locals (leaving out `skip`) that `tokens` name.
    fn named_in(&self, tokens: &[TokenStream], skip: &[usize]) -> Vec<usize> {
        let named = mentioned(tokens);
        self.visible(skip)
            .into_iter()
            .filter(|i| named.contains(&self.locals[*i].name.to_string()))
            .collect()
    }

    /// The segment as a loop over the block's live threads: each loads the locals it may read,
    /// runs the statements (a `return` marks it done), and stores what it declared or wrote.
    fn flush(&mut self, seg: &mut Segment) -> Option<TokenStream> {
        let seg = std::mem::take(seg);
        if seg.stmts.is_empty() {
            let pre = seg.pre;
            return Some(quote!(#(#pre)*));
        }
        // Only the locals the segment names are loaded (and written ones stored back).
        let loaded = self.named_in(&seg.stmts, &seg.declared);
        // A written local shadowed inside the segment could not be stored back.
        let shadowed = |i: &usize| {
            seg.declared
                .iter()
                .any(|d| self.locals[*d].name == self.locals[*i].name)
        };
        if loaded
            .iter()
            .any(|i| self.locals[*i].mutable && shadowed(i))
        {
            return None;
        }
        let loads = self.load_each(&loaded);
        let mut stored: Vec<usize> = loaded
            .into_iter()
            .filter(|i| self.locals[*i].mutable)
            .collect();
        let all_visible = self.visible(&[]);
        stored.extend(
            seg.declared
                .iter()
                .filter(|i| all_visible.contains(i) && self.locals[**i].remat.is_none()),
        );
        let d = &self.d;
        let stores = stored.iter().map(|i| {
            let Local { name, slot, .. } = &self.locals[*i];
            quote!(#d::fission::store(&mut #slot, __opbox_n, __opbox_t, #name);)
        });
        let (pre, stmts, publish) = (seg.pre, seg.stmts, self.publish);
        Some(quote! {
            #(#pre)*
            for __opbox_t in 0..__opbox_n {
                if __opbox_done[__opbox_t] {
                    continue;
                }
                let __opbox_ctx = &__opbox_block.thread_at(__opbox_t, #publish);
                #(#loads)*
                '__opbox_seg: {
                    #(#stmts)*
                    #(#stores)*
                }
            }
        })
    }

    /// `let __opbox_c` = the condition, as every live thread sees it (they must agree).
    fn condition(&mut self, cond: &syn::Expr) -> Option<TokenStream> {
        if has_split(cond) {
            return None;
        }
        let c = self.rw.expr(cond);
        let loads = self.load_each(&self.named_in(&[quote!(#c)], &[]));
        let (site, publish) = (self.barriers, self.publish);
        Some(quote! {
            let mut __opbox_agreed: ::core::option::Option<(usize, bool)> = ::core::option::Option::None;
            for __opbox_t in 0..__opbox_n {
                if __opbox_done[__opbox_t] {
                    continue;
                }
                let __opbox_ctx = &__opbox_block.thread_at(__opbox_t, #publish);
                #(#loads)*
                let __opbox_v: bool = #c;
                __opbox_block.uniform(&mut __opbox_agreed, __opbox_t, __opbox_v, #site);
            }
            let __opbox_c = __opbox_agreed.is_some_and(|a| a.1);
        })
    }

    fn uniform_if(&mut self, i: &syn::ExprIf, in_loop: bool) -> Option<TokenStream> {
        let cond = self.condition(&i.cond)?;
        let then = self.level(&i.then_branch.stmts, in_loop)?;
        let els = match &i.else_branch {
            None => TokenStream::new(),
            Some((_, e)) => match strip_parens(e) {
                syn::Expr::Block(b) => {
                    let b = self.level(&b.block.stmts, in_loop)?;
                    quote!(else { #b })
                }
                syn::Expr::If(inner) => {
                    let b = self.uniform_if(inner, in_loop)?;
                    quote!(else { #b })
                }
                _ => return None,
            },
        };
        Some(quote!({ #cond if __opbox_c { #then } #els }))
    }

    /// `for v in a..b { .. }` holding a barrier: the `while` it means, with the counter a
    /// block-level local (`a` and `b` evaluated once, as Rust's range is).
    fn uniform_for(&mut self, f: &syn::ExprForLoop, in_loop: bool) -> Option<TokenStream> {
        let var = match &*f.pat {
            syn::Pat::Ident(p) if p.subpat.is_none() && p.mutability.is_none() => &p.ident,
            _ => return None,
        };
        let syn::Expr::Range(range) = strip_parens(&f.expr) else {
            return None;
        };
        let (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) =
            (&range.start, &range.end, &range.limits)
        else {
            return None;
        };
        let (i, e) = (
            format_ident!("__opbox_f{}", self.fors),
            format_ident!("__opbox_e{}", self.fors),
        );
        self.fors += 1;
        let body = &f.body.stmts;
        let desugared: syn::Block = syn::parse_quote!({
            let mut #i = #start;
            let #e = #end;
            while #i < #e {
                let #var = #i;
                #i += 1;
                #(#body)*
            }
        });
        let b = self.level(&desugared.stmts, in_loop)?;
        Some(quote!({ #b }))
    }

    fn uniform_while(&mut self, w: &syn::ExprWhile) -> Option<TokenStream> {
        let cond = self.condition(&w.cond)?;
        let body = self.level(&w.body.stmts, true)?;
        Some(quote!(loop { #cond if !__opbox_c { break; } #body }))
    }
}

/// Every identifier in `tokens`: the names a segment may read or write.
fn mentioned(tokens: &[TokenStream]) -> Vec<String> {
    fn walk(t: TokenStream, out: &mut Vec<String>) {
        for tt in t {
            match tt {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for t in tokens {
        walk(t.clone(), &mut out);
    }
    out
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

/// The single-segment name a call is made through: `sync_threads`, `shfl_down`, ...
fn call_name(e: &syn::Expr) -> Option<(String, &syn::ExprCall)> {
    match strip_parens(e) {
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                Some((p.path.segments[0].ident.to_string(), c))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A call that the block's threads meet at: a barrier, or a warp fn that exchanges.
fn is_split_call(c: &syn::ExprCall) -> bool {
    match &*c.func {
        syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let name = p.path.segments[0].ident.to_string();
            name == "sync_threads" || dsl_warp_fn(&name).is_some_and(|f| f.args > 0)
        }
        _ => false,
    }
}

fn is_barrier(stmt: &syn::Stmt) -> bool {
    matches!(stmt, syn::Stmt::Expr(e, Some(_)) if call_name(e).is_some_and(|(n, c)| n == "sync_threads" && c.args.is_empty()))
}

fn warp_point(stmt: &syn::Stmt) -> Option<WarpPoint<'_>> {
    let (local, assigned, value) = match stmt {
        syn::Stmt::Local(l) => {
            let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
            let (name, mutable, ty) = match &l.pat {
                syn::Pat::Ident(p) if p.subpat.is_none() => {
                    (&p.ident, p.mutability.is_some(), None)
                }
                syn::Pat::Type(t) => match &*t.pat {
                    syn::Pat::Ident(p) if p.subpat.is_none() => {
                        (&p.ident, p.mutability.is_some(), Some(&*t.ty))
                    }
                    _ => return None,
                },
                _ => return None,
            };
            (Some((name, mutable, ty)), None, &*init.expr)
        }
        syn::Stmt::Expr(syn::Expr::Assign(a), Some(_)) => match strip_parens(&a.left) {
            syn::Expr::Path(p) => (None, Some(p.path.get_ident()?), &*a.right),
            _ => return None,
        },
        _ => return None,
    };
    let (name, call) = call_name(value)?;
    let f = dsl_warp_fn(&name).filter(|f| f.args > 0 && f.args == call.args.len())?;
    Some(WarpPoint {
        local,
        assigned,
        name,
        returns: f.returns,
        args: call.args.iter().collect(),
    })
}

/// Whether the block's threads meet anywhere inside `e`.
fn has_split(e: &syn::Expr) -> bool {
    let mut f = FindSplit(false);
    f.visit_expr(e);
    f.0
}

fn has_split_stmt(s: &syn::Stmt) -> bool {
    let mut f = FindSplit(false);
    f.visit_stmt(s);
    f.0
}

struct FindSplit(bool);

impl<'a> Visit<'a> for FindSplit {
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        self.0 |= is_split_call(c);
        syn::visit::visit_expr_call(self, c);
    }
}

/// Whether `s` breaks out of, or continues, a loop it is not inside of.
fn breaks_out(s: &syn::Stmt) -> bool {
    let mut f = FindEscape {
        depth: 0,
        found: false,
    };
    f.visit_stmt(s);
    f.found
}

struct FindEscape {
    depth: usize,
    found: bool,
}

impl<'a> Visit<'a> for FindEscape {
    fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
        self.found |= self.depth == 0 || b.label.is_some();
        syn::visit::visit_expr_break(self, b);
    }
    fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
        self.found |= self.depth == 0 || c.label.is_some();
    }
    fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
        self.depth += 1;
        syn::visit::visit_expr_while(self, w);
        self.depth -= 1;
    }
    fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
        self.depth += 1;
        syn::visit::visit_expr_loop(self, l);
        self.depth -= 1;
    }
    fn visit_expr_for_loop(&mut self, l: &'a syn::ExprForLoop) {
        self.depth += 1;
        syn::visit::visit_expr_for_loop(self, l);
        self.depth -= 1;
    }
}

/// `s` with each `return` turned into: this thread is done, leave the segment.
fn returns_to_done(s: &syn::Stmt) -> syn::Stmt {
    struct Returns;
    impl VisitMut for Returns {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            if matches!(e, syn::Expr::Return(r) if r.expr.is_none()) {
                *e = syn::Expr::Verbatim(quote!({
                    __opbox_done[__opbox_t] = true;
                    break '__opbox_seg;
                }));
                return;
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    let mut s = s.clone();
    Returns.visit_stmt_mut(&mut s);
    s
}

fn local_name(l: &syn::Local) -> Option<(syn::Ident, bool)> {
    match &l.pat {
        syn::Pat::Ident(p) if p.subpat.is_none() => Some((p.ident.clone(), p.mutability.is_some())),
        syn::Pat::Type(t) => match &*t.pat {
            syn::Pat::Ident(p) if p.subpat.is_none() => {
                Some((p.ident.clone(), p.mutability.is_some()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` is a pure function of the names it reads (pushed to `names`): literals, names,
/// the DSL's operators, casts, thread indices and numeric methods, and `if` between two such
/// values. No indexing (memory another thread may write), no calls (a `#[device]` fn may read
/// it too).
fn pure(e: &syn::Expr, names: &mut Vec<String>) -> bool {
    match e {
        syn::Expr::Lit(_) => true,
        syn::Expr::Path(p) => match p.path.get_ident() {
            Some(i) => {
                names.push(i.to_string());
                true
            }
            // `f32::NEG_INFINITY` and other constants of the scalar types.
            None => p.qself.is_none() && p.path.segments.len() == 2,
        },
        syn::Expr::Paren(p) => pure(&p.expr, names),
        syn::Expr::Group(g) => pure(&g.expr, names),
        syn::Expr::Binary(b) => {
            super::lower::compound(&b.op).is_none() && pure(&b.left, names) && pure(&b.right, names)
        }
        syn::Expr::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)) && pure(&u.expr, names),
        syn::Expr::Cast(c) => pure(&c.expr, names),
        syn::Expr::Call(c) => {
            c.args.is_empty()
                && matches!(&*c.func, syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| {
                    let i = i.to_string();
                    THREAD_INDEX_FNS.contains(&i.as_str())
                        || dsl_warp_fn(&i).is_some_and(|f| f.args == 0)
                }))
        }
        syn::Expr::MethodCall(m) => {
            dsl_method(&m.method.to_string()).is_some()
                && pure(&m.receiver, names)
                && m.args.iter().all(|a| pure(a, names))
        }
        syn::Expr::If(i) => {
            let branch = |b: &syn::Block, names: &mut Vec<String>| matches!(b.stmts.as_slice(), [syn::Stmt::Expr(e, None)] if pure(e, names));
            pure(&i.cond, names)
                && branch(&i.then_branch, names)
                && match i.else_branch.as_ref().map(|(_, e)| &**e) {
                    Some(syn::Expr::Block(b)) => branch(&b.block, names),
                    Some(other) => pure(other, names),
                    None => false,
                }
        }
        _ => false,
    }
}

/// The names bound more than once in `block`, `params` included (see [`Bindings`]): a name
/// outside this list means one binding wherever it is read.
pub(super) fn rebound(block: &syn::Block, params: &[String]) -> Vec<String> {
    let mut names = Bindings(params.to_vec());
    names.visit_block(block);
    let mut rebound: Vec<String> = Vec::new();
    for (i, n) in names.0.iter().enumerate() {
        if names.0[..i].contains(n) && !rebound.contains(n) {
            rebound.push(n.clone());
        }
    }
    rebound
}

/// Every name a pattern binds in a body, in order, repeats kept; a name assigned to (a `mut`
/// param, say) is listed twice, so that it counts as rebound too.
struct Bindings(Vec<String>);

impl Bindings {
    fn assigned(&mut self, place: &syn::Expr) {
        if let syn::Expr::Path(p) = strip_parens(place) {
            if let Some(i) = p.path.get_ident() {
                self.0.extend([i.to_string(), i.to_string()]);
            }
        }
    }
}

impl<'a> Visit<'a> for Bindings {
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.0.push(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        self.assigned(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        if super::lower::compound(&b.op).is_some() {
            self.assigned(&b.left);
        }
        syn::visit::visit_expr_binary(self, b);
    }
}
