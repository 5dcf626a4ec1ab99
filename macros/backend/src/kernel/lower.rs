//! syn → the DSL model ([`super::ir`]): every accepted construct becomes a node with a type;
//! every other one is a spanned error naming the construct and what to write instead. Errors
//! are collected, so one expansion reports all of them.

use opbox_codegen::cpp_ident::is_keyword;
use opbox_codegen::cuda::dsl_prelude::{
    dsl_atomic, dsl_atomic_list, dsl_method, dsl_method_list, dsl_warp_fn, DslAtomic, DslWarpFn,
    WarpReturns, THREAD_INDEX_FNS, WARP_VALUE_TYPES,
};
use opbox_codegen::cuda::ElemType;
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

use super::divergence::Divergence;
use super::ir::{BinOp, Block, Elem, Expr, ExprKind, Infer, LitKind, Stmt, StmtKind, Ty, UnOp};
use crate::errors::Errors;

/// Where a body stands while it is lowered: scopes, literal inference, the callees and named
/// types it references (each a slot that run time fills with its C++ name).
pub(crate) struct Lowering<'e> {
    pub infer: Infer,
    scopes: Vec<Vec<(String, String, Ty)>>,
    used_names: Vec<String>,
    pub errors: &'e mut Errors,
    /// The fns the body calls, as written: slot `i` is `callees[i]`.
    pub callees: Vec<syn::Path>,
    /// The native and kernel-argument struct types it names.
    pub named: Vec<syn::Path>,
    /// The fn being lowered: calling it again is recursion.
    self_name: String,
    /// The return type of a `#[device]` fn (`Unit` for a kernel).
    pub ret: Ty,
    /// Lowering a kernel's body (barriers and shared memory are the kernel's own).
    pub in_kernel: bool,
    /// The kernel's `#[constexpr]` params by Rust name: constants a shared array's size may be.
    pub constexprs: Vec<String>,
    /// Whether the body calls `sync_threads()`.
    pub barriers: bool,
    /// The slices `load4`/`store4` move, by C++ name, with the first method seen on each: a
    /// parameter among them must be 16-byte aligned, which its launch checks.
    pub vectors: Vec<(String, &'static str)>,
    /// Local-array element accesses lowered so far: a `for` whose body adds some is unrolled.
    array_indexing: usize,
    /// The path being lowered is an index's base (`v` of `v[j]`), where a local array may be.
    indexing: bool,
    divergence: Divergence,
}

/// What the value at the end of a block does.
#[derive(Clone)]
enum Tail {
    /// Nothing: the block's value is `()`.
    Unit,
    /// `return value;` (a `#[device]` fn's body).
    Return,
    /// `name = value;` (a `let name = if ..` branch).
    Assign(String),
}

pub(crate) fn line_of(span: Span) -> usize {
    span.start().line
}

const HEAP: &[&str] = &[
    "Vec", "Box", "String", "Rc", "Arc", "HashMap", "BTreeMap", "HashSet", "VecDeque",
];

impl<'e> Lowering<'e> {
    pub fn new(errors: &'e mut Errors, self_name: String) -> Lowering<'e> {
        Lowering {
            infer: Infer::default(),
            scopes: vec![Vec::new()],
            used_names: Vec::new(),
            errors,
            callees: Vec::new(),
            named: Vec::new(),
            self_name,
            ret: Ty::Unit,
            in_kernel: false,
            constexprs: Vec::new(),
            barriers: false,
            vectors: Vec::new(),
            array_indexing: 0,
            indexing: false,
            divergence: Divergence::default(),
        }
    }

    fn err(&mut self, span: Span, message: impl std::fmt::Display) {
        self.errors.at(span, message);
    }

    /// A C++ name for Rust local `name`: itself, or with a suffix when an earlier `let` (Rust
    /// shadowing) already took it.
    pub fn declare(&mut self, name: &syn::Ident, ty: Ty) -> String {
        let rust = crate::naming::unraw(name);
        if is_keyword(&rust) {
            self.err(
                name.span(),
                format!("rename `{rust}`: it is a C++ keyword, which the CUDA build of the kernel cannot use as a name"),
            );
        } else if rust.contains("__") || rust.starts_with("opbox") {
            self.err(
                name.span(),
                format!("rename `{rust}`: names with `__` or starting with `opbox` are reserved for the generated code"),
            );
        }
        let mut cpp = rust.clone();
        let mut n = 1;
        while self.used_names.contains(&cpp) {
            cpp = format!("{rust}_{n}");
            n += 1;
        }
        self.used_names.push(cpp.clone());
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((rust, cpp.clone(), ty));
        }
        cpp
    }

    /// The type of C++ local `cpp`, once it is known (a `let x = if ..` after its branches).
    fn retype(&mut self, cpp: &str, ty: &Ty) {
        for scope in self.scopes.iter_mut().rev() {
            if let Some(entry) = scope.iter_mut().rev().find(|(_, c, _)| c == cpp) {
                entry.2 = ty.clone();
                return;
            }
        }
    }

    fn lookup(&self, name: &str) -> Option<(String, Ty)> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(r, _, _)| r == name)
            .map(|(_, c, t)| (c.clone(), t.clone()))
    }

    fn named_slot(&mut self, path: &syn::Path) -> usize {
        slot(&mut self.named, path)
    }

    fn callee_slot(&mut self, path: &syn::Path) -> usize {
        slot(&mut self.callees, path)
    }

    /// A declared type: a scalar, a native or kernel-argument struct, or an error.
    pub fn ty(&mut self, ty: &syn::Type) -> Ty {
        match ty {
            syn::Type::Path(tp) if tp.qself.is_none() => {
                let Some(last) = tp.path.segments.last() else {
                    return Ty::Unknown;
                };
                let name = last.ident.to_string();
                if let Some(t) = ElemType::from_rust_name(&name) {
                    return Ty::Prim(t);
                }
                if HEAP.contains(&name.as_str()) {
                    self.err(ty.span(), format!("heap types (`{name}`) are not available in a #[kernel]: there is no allocator on the GPU; write results to an Out<[T]> parameter, or use a fixed number of locals"));
                    return Ty::Unknown;
                }
                if matches!(
                    name.as_str(),
                    "usize" | "isize" | "u16" | "i16" | "u128" | "i128" | "char" | "str"
                ) {
                    self.err(ty.span(), format!("`{name}` is not a #[kernel] type: the scalar types are f32, f64, f16, bf16, i32, i64, u32, u64, i8, u8 and bool"));
                    return Ty::Unknown;
                }
                if !matches!(last.arguments, syn::PathArguments::None) {
                    self.err(ty.span(), "generic types are not in the #[kernel] subset: use the scalar types, In/Out/InOut slices, or a #[derive(NativeType)] / #[derive(KernelArg)] struct");
                    return Ty::Unknown;
                }
                let slot = self.named_slot(&tp.path);
                let _ = slot;
                Ty::Named(tp.path.to_token_stream().to_string())
            }
            syn::Type::Array(_) => {
                self.err(ty.span(), "a local array's type comes from its value: write `let mut v = [0.0f32; N];` without the annotation (the element type is the value's)");
                Ty::Unknown
            }
            syn::Type::Reference(_) | syn::Type::Ptr(_) => {
                self.err(ty.span(), "references and pointers are not in the #[kernel] subset: take values (In/Out/InOut slices are already views of device memory)");
                Ty::Unknown
            }
            syn::Type::ImplTrait(_) | syn::Type::TraitObject(_) => {
                self.err(ty.span(), "traits are not in the #[kernel] subset (no `impl Trait` or `dyn Trait`): declare one kernel per type, or make the choice a #[constexpr] parameter");
                Ty::Unknown
            }
            other => {
                self.err(other.span(), "this type is not in the #[kernel] subset: use the scalar types (f32, f64, f16, bf16, i32, i64, u32, u64, i8, u8, bool) or a #[derive(NativeType)] / #[derive(KernelArg)] struct");
                Ty::Unknown
            }
        }
    }

    /// A parameter's type in the environment.
    pub fn bind_param(&mut self, name: &syn::Ident, ty: Ty) -> String {
        self.declare(name, ty)
    }

    /// The body of a kernel (`ret` Unit) or `#[device]` fn.
    pub fn body(&mut self, block: &syn::Block) -> Block {
        let tail = if self.ret == Ty::Unit {
            Tail::Unit
        } else {
            Tail::Return
        };
        self.block(block, tail)
    }

    fn block(&mut self, block: &syn::Block, tail: Tail) -> Block {
        self.scopes.push(Vec::new());
        let mut out = Block::default();
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == n;
            match stmt {
                syn::Stmt::Expr(e, None) if last => self.tail(e, &tail, &mut out),
                other => {
                    if let Some(s) = self.stmt(other) {
                        out.stmts.push(s);
                    }
                }
            }
        }
        self.scopes.pop();
        out
    }

    /// The block's final expression, without a semicolon.
    fn tail(&mut self, e: &syn::Expr, tail: &Tail, out: &mut Block) {
        let line = line_of(e.span());
        match (tail, e) {
            (_, syn::Expr::If(_) | syn::Expr::Block(_)) => {
                if let Some(s) = self.stmt_expr_with_tail(e, tail) {
                    out.stmts.push(s);
                }
            }
            (Tail::Unit, e) => {
                if let Some(s) = self.stmt_expr(e) {
                    out.stmts.push(s);
                }
            }
            (Tail::Return, e) => {
                let v = self.expr(e);
                let ret = self.ret.clone();
                self.infer.unify(&v.ty, &ret);
                out.stmts.push(Stmt {
                    line,
                    kind: StmtKind::Return(Some(v)),
                });
            }
            (Tail::Assign(name), e) => {
                let v = self.expr(e);
                if let Some((_, t)) = self.lookup_cpp(name) {
                    self.infer.unify(&v.ty, &t);
                }
                out.stmts.push(Stmt {
                    line,
                    kind: StmtKind::Assign {
                        place: Expr {
                            kind: ExprKind::Local(name.clone()),
                            ty: v.ty.clone(),
                        },
                        op: None,
                        value: v,
                    },
                });
            }
        }
    }

    fn lookup_cpp(&self, cpp: &str) -> Option<(String, Ty)> {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .find(|(_, c, _)| c == cpp)
            .map(|(_, c, t)| (c.clone(), t.clone()))
    }

    fn stmt(&mut self, stmt: &syn::Stmt) -> Option<Stmt> {
        let line = line_of(stmt.span());
        match stmt {
            syn::Stmt::Local(local) => self.local(local),
            syn::Stmt::Item(item) => {
                let message = match item {
                    syn::Item::Fn(_) => "nested fns are not in the #[kernel] subset: declare it at module level as a #[device] fn and call it",
                    syn::Item::Impl(_) | syn::Item::Trait(_) => "traits and impls are not in the #[kernel] subset: write a #[device] fn for shared code, or a #[builtin] for C++ code",
                    _ => "items inside a #[kernel] body are not in the subset: declare them at module level (a constant becomes a #[constexpr] parameter or a literal)",
                };
                self.err(item.span(), message);
                None
            }
            syn::Stmt::Macro(m) => {
                self.reject_macro(&m.mac);
                None
            }
            syn::Stmt::Expr(e, _) => {
                let s = self.stmt_expr(e);
                s.map(|mut s| {
                    s.line = line;
                    s
                })
            }
        }
    }

    fn local(&mut self, local: &syn::Local) -> Option<Stmt> {
        let line = line_of(local.span());
        // `let _ = e;` evaluates `e` and keeps nothing.
        if let (syn::Pat::Wild(_), Some(init)) = (&local.pat, &local.init) {
            let value = self.expr(&init.expr);
            return Some(Stmt {
                line,
                kind: StmtKind::Expr(value),
            });
        }
        let (ident, mutable, declared) = match &local.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                (&p.ident, p.mutability.is_some(), None)
            }
            syn::Pat::Type(pt) => match &*pt.pat {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    (&p.ident, p.mutability.is_some(), Some(self.ty(&pt.ty)))
                }
                other => {
                    self.err(
                        other.span(),
                        "bind one name per `let` in a #[kernel] (no patterns or tuples)",
                    );
                    return None;
                }
            },
            other => {
                self.err(
                    other.span(),
                    "bind one name per `let` in a #[kernel] (no patterns or tuples)",
                );
                return None;
            }
        };
        let Some(init) = &local.init else {
            let Some(ty) = declared else {
                self.err(
                    local.span(),
                    "a `let` without a value needs a type in a #[kernel]: `let x: f32;`",
                );
                return None;
            };
            let name = self.declare(ident, ty.clone());
            return Some(Stmt {
                line,
                kind: StmtKind::Let {
                    name,
                    mutable,
                    ty,
                    init: None,
                },
            });
        };
        if let Some((_, diverge)) = &init.diverge {
            self.err(
                diverge.span(),
                "`let ... else` is not in the #[kernel] subset: use if/else",
            );
        }
        // `let x = if c { ..; a } else { ..; b };`: declared, then assigned in each branch.
        if let syn::Expr::If(ei) = &*init.expr {
            if !is_simple_if(ei) {
                let ty = declared.unwrap_or(Ty::Unknown);
                let cond = self.cond(&ei.cond);
                let name = self.declare(ident, ty.clone());
                let entered = self.divergence.enter(line, &[&cond]);
                let then = self.block(&ei.then_branch, Tail::Assign(name.clone()));
                let els = match &ei.else_branch {
                    Some((_, e)) => self.else_block(e, Tail::Assign(name.clone())),
                    None => {
                        self.err(ei.span(), "an `if` used as a value needs an `else`");
                        Block::default()
                    }
                };
                self.divergence.leave(entered);
                let ty = match (&ty, tail_ty(&then, &name), tail_ty(&els, &name)) {
                    (Ty::Unknown, Some(a), Some(b)) => self.infer.unify(&a, &b),
                    (Ty::Unknown, Some(a), None) | (Ty::Unknown, None, Some(a)) => a,
                    (t, _, _) => t.clone(),
                };
                self.retype(&name, &ty);
                if matches!(self.infer.shallow(&ty), Ty::Unknown) {
                    self.err(ident.span(), format!("give `{ident}` a type (`let {ident}: f32 = if ..`): the CUDA build declares it before the branches assign it"));
                }
                return Some(Stmt {
                    line,
                    kind: StmtKind::LetIf {
                        name,
                        ty,
                        cond,
                        then,
                        els,
                    },
                });
            }
        }
        if let Some(shared) = shared_call(&init.expr) {
            return self.shared(ident, shared, line);
        }
        if let syn::Expr::Repeat(r) = strip_parens(&init.expr) {
            return self.local_array(ident, mutable, r, line);
        }
        let value = self.expr(&init.expr);
        let ty = match declared {
            Some(d) => self.infer.unify(&d, &value.ty),
            None => value.ty.clone(),
        };
        if matches!(ty, Ty::Slice(..)) {
            self.err(local.span(), "a slice parameter cannot be bound to another name in a #[kernel]: index the parameter itself");
        }
        let name = self.declare(ident, ty.clone());
        self.divergence.assigned(&name, &value);
        Some(Stmt {
            line,
            kind: StmtKind::Let {
                name,
                mutable,
                ty,
                init: Some(value),
            },
        })
    }

    /// `let tile = shared::<T, N>();` (see [`StmtKind::Shared`]).
    fn shared(&mut self, ident: &syn::Ident, call: &syn::ExprCall, line: usize) -> Option<Stmt> {
        if !self.in_kernel {
            self.err(call.span(), "`shared::<T, N>()` is a kernel's: declare the array in the #[kernel] body and pass it to #[device] fns by element");
            self.declare(ident, Ty::Unknown);
            return None;
        }
        if !call.args.is_empty() {
            self.err(call.args.span(), "`shared::<T, N>()` takes no arguments: the element type and length are its generic arguments");
        }
        let generics = match &call.func.as_ref() {
            syn::Expr::Path(p) => p.path.segments.last().map(|s| s.arguments.clone()),
            _ => None,
        };
        let args: Vec<syn::GenericArgument> = match generics {
            Some(syn::PathArguments::AngleBracketed(a)) => a.args.into_iter().collect(),
            _ => Vec::new(),
        };
        if matches!(call.func.as_ref(), syn::Expr::Path(p) if is_dynamic_shared(p)) {
            return self.dynamic_shared(ident, call, &args, line);
        }
        let [syn::GenericArgument::Type(elem_ty), len] = args.as_slice() else {
            self.err(call.span(), "write a shared array as `shared::<T, N>()`: an element type and a length (`shared::<f32, 256>()`)");
            // Declared all the same, so that its uses report nothing more.
            self.declare(ident, Ty::Unknown);
            return None;
        };
        let elem = match self.ty(elem_ty) {
            Ty::Prim(t) => t,
            _ => {
                self.err(
                    elem_ty.span(),
                    "a shared array holds one of the DSL's scalar types (f32, i32, u32, ...)",
                );
                self.declare(ident, Ty::Unknown);
                return None;
            }
        };
        let len_cpp = match len {
            syn::GenericArgument::Const(syn::Expr::Block(b)) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(e, None)] => self.const_len(e),
                _ => None,
            },
            syn::GenericArgument::Const(e) => self.const_len(e),
            // `shared::<f32, BLOCK>()`: a lone name parses as a type.
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => {
                self.const_len(&syn::Expr::Path(syn::ExprPath {
                    attrs: Vec::new(),
                    qself: None,
                    path: p.path.clone(),
                }))
            }
            _ => None,
        }
        .filter(|len| len != "0u");
        let name = self.declare(ident, Ty::Slice(Elem::Prim(elem), true));
        let Some(len_cpp) = len_cpp else {
            self.err(len.span(), "a shared array's length is fixed when the kernel is compiled: a positive integer literal (`shared::<f32, 256>()`), a #[constexpr] parameter (`shared::<f32, BLOCK>()`), or literals and #[constexpr] parameters under `+ - * /` in braces (`shared::<f32, { TILE * TILE }>()`)");
            return None;
        };
        Some(Stmt {
            line,
            kind: StmtKind::Shared {
                name,
                elem,
                len: Some(len_cpp),
            },
        })
    }

    /// `let mut v = [init; N];` (see [`StmtKind::LocalArray`]): N a literal, a `#[constexpr]`
    /// param or an arithmetic of those, the element a scalar or a struct.
    fn local_array(
        &mut self,
        ident: &syn::Ident,
        mutable: bool,
        r: &syn::ExprRepeat,
        line: usize,
    ) -> Option<Stmt> {
        if let syn::Expr::Repeat(inner) = strip_parens(&r.expr) {
            self.err(inner.span(), "local arrays have one dimension in a #[kernel]: index one array of N * M elements (`v[i * M + j]`)");
            self.declare(ident, Ty::Unknown);
            return None;
        }
        let init = self.expr(&r.expr);
        let elem = self.infer.shallow(&init.ty);
        let len = match strip_parens(&r.len) {
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(e, None)] => self.const_len(e),
                _ => None,
            },
            e => self.const_len(e),
        }
        .filter(|len| len != "0u");
        let Some(len) = len else {
            self.err(r.len.span(), "a local array's length is fixed when the kernel is compiled: a positive integer literal (`[0.0f32; 8]`), a #[constexpr] parameter (`[0.0f32; N]`), or literals and #[constexpr] parameters under `+ - * /` (`[0.0f32; D / 128]`); for a length known only at launch, use shared memory or a buffer");
            self.declare(ident, Ty::Unknown);
            return None;
        };
        if matches!(elem, Ty::Unknown | Ty::Slice(..) | Ty::Array(..) | Ty::Unit) {
            self.err(r.expr.span(), "a local array's element needs a type the macro can see: a typed literal (`[0.0f32; N]`), a struct literal (`[F32x4 { x: 0.0, y: 0.0, z: 0.0, w: 0.0 }; N]`) or a typed local");
            self.declare(ident, Ty::Unknown);
            return None;
        }
        if !mutable {
            self.err(ident.span(), format!("declare the local array `let mut {ident}`: an array of copies of one value is only useful once its elements are written"));
        }
        let name = self.declare(ident, Ty::Array(Box::new(init.ty.clone()), len.clone()));
        Some(Stmt {
            line,
            kind: StmtKind::LocalArray {
                name,
                elem: init.ty.clone(),
                len,
                init,
            },
        })
    }

    /// `let buf = shared_dyn::<T>();` (see [`StmtKind::Shared`] with no length).
    fn dynamic_shared(
        &mut self,
        ident: &syn::Ident,
        call: &syn::ExprCall,
        args: &[syn::GenericArgument],
        line: usize,
    ) -> Option<Stmt> {
        let elem = match args {
            [syn::GenericArgument::Type(t)] => match self.ty(t) {
                Ty::Prim(e) => Some(e),
                _ => None,
            },
            _ => None,
        };
        let name = self.declare(
            ident,
            Ty::Slice(Elem::Prim(elem.unwrap_or(ElemType::U8)), true),
        );
        let Some(elem) = elem else {
            self.err(call.span(), "write the launch's dynamic shared memory as `shared_dyn::<T>()`, T one of the DSL's scalar types (`shared_dyn::<f32>()`); its length is the launch's `shared_mem` bytes over T's size");
            return None;
        };
        Some(Stmt {
            line,
            kind: StmtKind::Shared {
                name,
                elem,
                len: None,
            },
        })
    }

    /// A shared array's length written as `{ TILE * TILE }`: integer literals and `#[constexpr]`
    /// params under `+ - * /` and parentheses, as C++ (where the params are template constants).
    fn const_len(&self, e: &syn::Expr) -> Option<String> {
        Some(match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) => format!("{}u", n.base10_digits().parse::<u32>().ok()?),
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .filter(|n| self.constexprs.contains(n))?,
            syn::Expr::Paren(p) => format!("({})", self.const_len(&p.expr)?),
            syn::Expr::Binary(b) => {
                let op = match b.op {
                    syn::BinOp::Add(_) => "+",
                    syn::BinOp::Sub(_) => "-",
                    syn::BinOp::Mul(_) => "*",
                    syn::BinOp::Div(_) => "/",
                    _ => return None,
                };
                format!(
                    "({} {op} {})",
                    self.const_len(&b.left)?,
                    self.const_len(&b.right)?
                )
            }
            _ => return None,
        })
    }

    fn else_block(&mut self, e: &syn::Expr, tail: Tail) -> Block {
        match e {
            syn::Expr::Block(b) => self.block(&b.block, tail),
            // `else if`: one statement in a block of its own.
            other => {
                let mut b = Block::default();
                if let Some(s) = self.stmt_expr_with_tail(other, &tail) {
                    b.stmts.push(s);
                }
                b
            }
        }
    }

    fn cond(&mut self, e: &syn::Expr) -> Expr {
        if let syn::Expr::Let(l) = e {
            self.err(l.span(), "`if let` is not in the #[kernel] subset (there are no Option or enum values): compare with `==`");
        }
        let c = self.expr(e);
        self.infer.unify(&c.ty, &Ty::Prim(ElemType::Bool));
        c
    }

    fn stmt_expr(&mut self, e: &syn::Expr) -> Option<Stmt> {
        self.stmt_expr_with_tail(e, &Tail::Unit)
    }

    /// An expression in statement position.
    fn stmt_expr_with_tail(&mut self, e: &syn::Expr, tail: &Tail) -> Option<Stmt> {
        let line = line_of(e.span());
        let kind = match e {
            syn::Expr::If(ei) => {
                let cond = self.cond(&ei.cond);
                let entered = self.divergence.enter(line, &[&cond]);
                let then = self.block(&ei.then_branch, tail.clone());
                let els = ei
                    .else_branch
                    .as_ref()
                    .map(|(_, e)| self.else_block(e, tail.clone()));
                self.divergence.leave(entered);
                StmtKind::If { cond, then, els }
            }
            syn::Expr::While(w) => {
                self.no_label(w.label.as_ref());
                let cond = self.cond(&w.cond);
                let entered = self.divergence.enter(line, &[&cond]);
                let body = self.block(&w.body, Tail::Unit);
                self.divergence.leave(entered);
                StmtKind::While { cond, body }
            }
            syn::Expr::Loop(l) => {
                self.no_label(l.label.as_ref());
                StmtKind::Loop(self.block(&l.body, Tail::Unit))
            }
            syn::Expr::ForLoop(f) => return self.for_loop(f),
            syn::Expr::Block(b) => {
                if b.label.is_some() {
                    self.err(b.span(), "labeled blocks are not in the #[kernel] subset");
                }
                StmtKind::Block(self.block(&b.block, tail.clone()))
            }
            syn::Expr::Assign(a) => {
                let place = self.place(&a.left);
                let value = self.expr(&a.right);
                self.infer.unify(&place.ty, &value.ty);
                if let ExprKind::Local(name) = &place.kind {
                    self.divergence.assigned(name, &value);
                }
                StmtKind::Assign {
                    place,
                    op: None,
                    value,
                }
            }
            syn::Expr::Binary(b) if compound(&b.op).is_some() => {
                let op = compound(&b.op)?;
                let place = self.place(&b.left);
                let value = self.expr(&b.right);
                if let ExprKind::Local(name) = &place.kind {
                    self.divergence.assigned(name, &value);
                }
                if !op.is_shift() {
                    self.infer.unify(&place.ty, &value.ty);
                }
                StmtKind::Assign {
                    place,
                    op: Some(op),
                    value,
                }
            }
            syn::Expr::Break(b) => {
                if b.label.is_some() {
                    self.err(b.span(), "labels are not in the #[kernel] subset: use a flag and `break`/`continue` the inner loop");
                }
                if let Some(v) = &b.expr {
                    self.err(v.span(), "`break` with a value is not in the #[kernel] subset: assign to a `let mut` before the loop, then `break`");
                }
                StmtKind::Break
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    self.err(c.span(), "labels are not in the #[kernel] subset: use a flag and `break`/`continue` the inner loop");
                }
                StmtKind::Continue
            }
            syn::Expr::Return(r) => {
                self.divergence.returned(line);
                let v = r.expr.as_ref().map(|v| self.expr(v));
                match (&v, &self.ret) {
                    (Some(v), ret) if *ret != Ty::Unit => {
                        let ret = ret.clone();
                        self.infer.unify(&v.ty, &ret);
                    }
                    (Some(v), _) => {
                        let _ = v;
                        self.err(r.span(), "a #[kernel] returns nothing: write results to an Out<[T]> parameter, then `return;`");
                    }
                    _ => {}
                }
                StmtKind::Return(v)
            }
            syn::Expr::Macro(m) => {
                self.reject_macro(&m.mac);
                return None;
            }
            other => StmtKind::Expr(self.expr(other)),
        };
        Some(Stmt { line, kind })
    }

    fn no_label<T: Spanned>(&mut self, label: Option<&T>) {
        if let Some(l) = label {
            self.err(l.span(), "labels are not in the #[kernel] subset: use a flag and `break`/`continue` the inner loop");
        }
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Option<Stmt> {
        let line = line_of(f.span());
        self.no_label(f.label.as_ref());
        let ident = match &*f.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
            other => {
                self.err(
                    other.span(),
                    "a #[kernel] `for` binds one name: `for i in 0..n`",
                );
                return None;
            }
        };
        let (range, step) = match &*f.expr {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (strip_parens(&m.receiver), m.args.first())
            }
            other => (strip_parens(other), None),
        };
        let syn::Expr::Range(r) = range else {
            self.err(f.expr.span(), "a #[kernel] `for` runs over a range: `for i in a..b`, `a..=b`, or `(a..b).step_by(s)` (there are no iterators over slices: index them)");
            return None;
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            self.err(
                r.span(),
                "a #[kernel] range has both ends: `a..b` or `a..=b`",
            );
            return None;
        };
        let start = self.expr(start);
        let end = self.expr(end);
        let ty = self.infer.unify(&start.ty, &end.ty);
        if let Some(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        })) = step.map(strip_parens)
        {
            if n.base10_digits().bytes().all(|b| b == b'0') {
                self.err(n.span(), "`step_by(0)` panics in Rust (a step must be at least 1), and would loop forever on the GPU: give a step of 1 or more");
            }
        }
        let step = step.map(|s| self.expr(s));
        if let Some(s) = &step {
            // `step_by` takes a usize, a u64 in C++.
            self.infer.unify(&s.ty, &Ty::Prim(ElemType::U64));
        }
        self.scopes.push(Vec::new());
        let var = self.declare(ident, ty.clone());
        let mut bounds = vec![&start, &end];
        bounds.extend(step.as_ref());
        let entered = self.divergence.enter(line, &bounds);
        if entered {
            self.divergence.assigned(&var, &start);
        }
        let indexed = self.array_indexing;
        let body = self.block(&f.body, Tail::Unit);
        let constant = step.is_none()
            && [&r.start, &r.end]
                .iter()
                .all(|b| b.as_deref().is_some_and(|b| self.const_len(b).is_some()));
        let unroll = constant && self.array_indexing > indexed;
        self.divergence.leave(entered);
        self.scopes.pop();
        Some(Stmt {
            line,
            kind: StmtKind::For {
                var,
                ty,
                start,
                end,
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                step,
                body,
                unroll,
            },
        })
    }

    /// The left side of an assignment: a local, an element, or a field of either.
    fn place(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Path(_) | syn::Expr::Index(_) | syn::Expr::Field(_) => self.expr(e),
            syn::Expr::Paren(p) => self.place(&p.expr),
            other => {
                self.err(other.span(), "assign to a local (`x = ..`), an element (`y[i] = ..`) or a field (`p.x = ..`)");
                self.expr(other)
            }
        }
    }

    fn reject_macro(&mut self, mac: &syn::Macro) {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let message = match name.as_str() {
            "panic" | "assert" | "assert_eq" | "assert_ne" | "unreachable" | "todo" | "unimplemented" | "debug_assert" => format!(
                "`{name}!` is not in the #[kernel] subset: a GPU thread cannot unwind; check the condition with `if` and write an error flag to an Out<[u32]> parameter, or `return;`"
            ),
            "vec" | "format" => format!("`{name}!` allocates, and there is no allocator on the GPU: write results to an Out<[T]> parameter"),
            "println" | "print" | "eprintln" | "dbg" => format!("`{name}!` is not in the #[kernel] subset: write values to an Out<[T]> parameter and read them on the host"),
            _ => format!("macros (`{name}!`) are not in the #[kernel] subset: write the code out, or put it in a #[device] fn"),
        };
        self.err(mac.span(), message);
    }

    fn unknown(&mut self) -> Expr {
        Expr {
            kind: ExprKind::Bool(false),
            ty: Ty::Unknown,
        }
    }

    pub fn expr(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Lit(l) => self.lit(&l.lit),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Path(p) => self.path_expr(p),
            syn::Expr::Unary(u) => self.unary(u),
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Cast(c) => {
                let inner = self.expr(&c.expr);
                match self.ty(&c.ty) {
                    Ty::Prim(t) if t != ElemType::Bool => Expr {
                        kind: ExprKind::Cast(Box::new(inner), t),
                        ty: Ty::Prim(t),
                    },
                    Ty::Prim(_) => {
                        self.err(
                            c.ty.span(),
                            "`as bool` is not a Rust cast: compare instead (`x != 0`)",
                        );
                        self.unknown()
                    }
                    Ty::Unknown => self.unknown(),
                    _ => {
                        self.err(c.ty.span(), "`as` casts go between the numeric types (f32, f64, f16, bf16, i32, i64, u32, u64, i8, u8)");
                        self.unknown()
                    }
                }
            }
            syn::Expr::Index(ix) => self.index(ix),
            syn::Expr::Field(f) => {
                let base = self.expr(&f.base);
                match &f.member {
                    syn::Member::Named(name) => {
                        if matches!(base.ty, Ty::Slice(..)) {
                            self.err(
                                f.span(),
                                "a slice has no fields: index it (`x[i]`) or call `x.len()`",
                            );
                        }
                        Expr {
                            kind: ExprKind::Field(Box::new(base), name.to_string()),
                            ty: Ty::Unknown,
                        }
                    }
                    syn::Member::Unnamed(_) => {
                        self.err(f.span(), "tuples are not in the #[kernel] subset: use a #[derive(NativeType)] struct with named fields");
                        self.unknown()
                    }
                }
            }
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::MethodCall(m) => self.method(m),
            syn::Expr::If(ei) if is_simple_if(ei) => {
                let cond = self.cond(&ei.cond);
                let a = self.tail_expr(&ei.then_branch);
                let b = match ei.else_branch.as_ref().map(|(_, e)| &**e) {
                    Some(syn::Expr::Block(b)) => self.tail_expr(&b.block),
                    Some(other) => self.expr(other),
                    None => self.unknown(),
                };
                let ty = self.infer.unify(&a.ty, &b.ty);
                Expr {
                    kind: ExprKind::Select(Box::new(cond), Box::new(a), Box::new(b)),
                    ty,
                }
            }
            syn::Expr::If(ei) => {
                self.err(ei.span(), "an `if` with statements inside can be a value only as `let x = if c { ..; a } else { ..; b };`, or assign to a `let mut` in each branch");
                self.unknown()
            }
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => self.expr(e),
                _ => {
                    self.err(b.span(), "a block with statements is not a #[kernel] value: compute it in a `let` first");
                    self.unknown()
                }
            },
            syn::Expr::Struct(s) => self.struct_lit(s),
            syn::Expr::Closure(c) => {
                self.err(c.span(), "closures are not in the #[kernel] subset: declare a #[device] fn at module level and call it");
                self.unknown()
            }
            syn::Expr::Reference(r) => {
                self.err(r.span(), "references to locals are not in the #[kernel] subset: pass the value itself (slices are already views), or write through an Out<[T]> parameter");
                self.unknown()
            }
            syn::Expr::Macro(m) => {
                self.reject_macro(&m.mac);
                self.unknown()
            }
            syn::Expr::Match(m) => {
                self.err(
                    m.match_token.span(),
                    "`match` is not in the #[kernel] subset: use if / else if / else",
                );
                self.unknown()
            }
            syn::Expr::Try(t) => {
                self.err(t.question_token.span(), "`?` is not in the #[kernel] subset: kernels have no Result values; check with `if` and `return;`");
                self.unknown()
            }
            syn::Expr::Tuple(t) => {
                self.err(t.span(), "tuples are not in the #[kernel] subset: use separate locals, or a #[derive(NativeType)] struct");
                self.unknown()
            }
            syn::Expr::Array(a) => {
                self.err(a.span(), "array lists (`[a, b, c]`) are not in the #[kernel] subset: declare a local array of one value (`let mut v = [0.0f32; 3];`) and write its elements");
                self.unknown()
            }
            syn::Expr::Repeat(r) => {
                self.err(
                    r.span(),
                    "a local array is made where it is bound: `let mut v = [0.0f32; N];`",
                );
                self.unknown()
            }
            syn::Expr::Range(r) => {
                self.err(r.span(), "a range is only a `for` loop's: `for i in a..b`");
                self.unknown()
            }
            syn::Expr::Unsafe(u) => {
                self.err(
                    u.unsafe_token.span(),
                    "`unsafe` is not in the #[kernel] subset (and not needed: indexing is checked)",
                );
                self.unknown()
            }
            syn::Expr::Assign(_)
            | syn::Expr::While(_)
            | syn::Expr::Loop(_)
            | syn::Expr::ForLoop(_)
            | syn::Expr::Break(_)
            | syn::Expr::Continue(_)
            | syn::Expr::Return(_) => {
                self.err(
                    e.span(),
                    "this is a statement in a #[kernel], not a value: end it with `;`",
                );
                self.unknown()
            }
            other => {
                self.err(other.span(), "this expression is not in the #[kernel] subset (see the DSL section of opbox's README for what is)");
                self.unknown()
            }
        }
    }

    fn tail_expr(&mut self, b: &syn::Block) -> Expr {
        match b.stmts.as_slice() {
            [syn::Stmt::Expr(e, None)] => self.expr(e),
            _ => self.unknown(),
        }
    }

    fn lit(&mut self, lit: &syn::Lit) -> Expr {
        let (kind, digits, suffix) = match lit {
            syn::Lit::Int(i) => (LitKind::Int, i.base10_digits().to_string(), i.suffix()),
            syn::Lit::Float(f) => (LitKind::Float, f.base10_digits().to_string(), f.suffix()),
            syn::Lit::Bool(b) => {
                return Expr {
                    kind: ExprKind::Bool(b.value),
                    ty: Ty::Prim(ElemType::Bool),
                }
            }
            other => {
                self.err(other.span(), "only numeric and bool literals are in the #[kernel] subset (no strings, chars or bytes)");
                return self.unknown();
            }
        };
        let ty = if suffix.is_empty() {
            self.infer.fresh(kind)
        } else {
            match ElemType::from_rust_name(suffix) {
                Some(t) => Ty::Prim(t),
                None => {
                    self.err(lit.span(), format!("the literal suffix `{suffix}` is not a #[kernel] type: use one of f32, f64, i32, i64, u32, u64, i8, u8"));
                    Ty::Unknown
                }
            }
        };
        // `2f32` is a float literal written with an integer's digits.
        let kind = match &ty {
            Ty::Prim(t) if t.is_floating_point() => LitKind::Float,
            _ => kind,
        };
        Expr {
            kind: ExprKind::Lit(kind, digits),
            ty,
        }
    }

    fn path_expr(&mut self, p: &syn::ExprPath) -> Expr {
        if let Some(ident) = p.path.get_ident() {
            let name = crate::naming::unraw(ident);
            if let Some((cpp, ty @ Ty::Array(..))) = self.lookup(&name) {
                if !std::mem::take(&mut self.indexing) {
                    self.err(p.span(), format!("a local array is used by element in a #[kernel] (`{name}[j]`, `{name}[j] = ..`): C++ arrays are not values that can be copied, passed or assigned whole"));
                }
                return Expr {
                    kind: ExprKind::Local(cpp),
                    ty,
                };
            }
            if let Some((cpp, ty)) = self.lookup(&name) {
                return Expr {
                    kind: ExprKind::Local(cpp),
                    ty,
                };
            }
            self.err(p.span(), format!("`{name}` is not a local or parameter of this #[kernel]: a kernel sees only its parameters and locals; pass it as a parameter (or a #[constexpr] one)"));
            return self.unknown();
        }
        if let Some(c) = self.type_const(&p.path) {
            return c;
        }
        let shown = crate::naming::shown(&p.path);
        self.err(p.span(), format!("`{shown}` is not in the #[kernel] subset: constants and paths from outside the kernel are not visible to the GPU; pass the value as a parameter (or a #[constexpr] one), or write the literal"));
        self.unknown()
    }

    /// `u64::MAX`, `i8::MIN`, `f32::INFINITY`, `f64::EPSILON`, ...: the scalar types' constants,
    /// written in C++ as their exact value (floats by their bits).
    fn type_const(&mut self, path: &syn::Path) -> Option<Expr> {
        let [ty, name] = [path.segments.first()?, path.segments.last()?];
        if path.segments.len() != 2 {
            return None;
        }
        let t = ElemType::from_rust_name(&ty.ident.to_string())?;
        let name = name.ident.to_string();
        let int = |v: i128| {
            let text = super::cpp::prim_name(t);
            format!("(({text}){}ull)", v as u64)
        };
        macro_rules! float_const {
            ($f:ty, $bits:literal) => {{
                let v: $f = match name.as_str() {
                    "MAX" => <$f>::MAX,
                    "MIN" => <$f>::MIN,
                    "EPSILON" => <$f>::EPSILON,
                    "MIN_POSITIVE" => <$f>::MIN_POSITIVE,
                    "INFINITY" => <$f>::INFINITY,
                    "NEG_INFINITY" => <$f>::NEG_INFINITY,
                    "NAN" => <$f>::NAN,
                    _ => return None,
                };
                format!($bits, v.to_bits())
            }};
        }
        let text = match t {
            ElemType::F32 => float_const!(f32, "__uint_as_float({:#x}u)"),
            ElemType::F64 => float_const!(f64, "__longlong_as_double({:#x}ll)"),
            ElemType::I8
            | ElemType::U8
            | ElemType::I32
            | ElemType::U32
            | ElemType::I64
            | ElemType::U64 => {
                let (min, max): (i128, i128) = match t {
                    ElemType::I8 => (i8::MIN.into(), i8::MAX.into()),
                    ElemType::U8 => (0, u8::MAX.into()),
                    ElemType::I32 => (i32::MIN.into(), i32::MAX.into()),
                    ElemType::U32 => (0, u32::MAX.into()),
                    ElemType::I64 => (i64::MIN.into(), i64::MAX.into()),
                    _ => (0, u64::MAX.into()),
                };
                match name.as_str() {
                    "MAX" => int(max),
                    "MIN" => int(min),
                    "BITS" => {
                        return Some(Expr {
                            kind: ExprKind::Raw(format!("{}u", t.size() * 8)),
                            ty: Ty::Prim(ElemType::U32),
                        })
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(Expr {
            kind: ExprKind::Raw(text),
            ty: Ty::Prim(t),
        })
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Expr {
        let inner = self.expr(&u.expr);
        let op = match u.op {
            syn::UnOp::Neg(_) => UnOp::Neg,
            syn::UnOp::Not(_) => UnOp::Not,
            _ => {
                self.err(u.span(), "references are not in the #[kernel] subset, so there is nothing to dereference: use the value itself");
                return self.unknown();
            }
        };
        let ty = inner.ty.clone();
        Expr {
            kind: ExprKind::Unary(op, Box::new(inner)),
            ty,
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Expr {
        let Some(op) = bin_op(&b.op) else {
            self.err(
                b.op.span(),
                "a compound assignment is a statement in a #[kernel]: end it with `;`",
            );
            return self.unknown();
        };
        let l = self.expr(&b.left);
        let r = self.expr(&b.right);
        let ty = match op {
            BinOp::And | BinOp::Or => {
                self.infer.unify(&l.ty, &Ty::Prim(ElemType::Bool));
                self.infer.unify(&r.ty, &Ty::Prim(ElemType::Bool));
                Ty::Prim(ElemType::Bool)
            }
            op if op.is_comparison() => {
                self.infer.unify(&l.ty, &r.ty);
                Ty::Prim(ElemType::Bool)
            }
            op if op.is_shift() => l.ty.clone(),
            _ => self.infer.unify(&l.ty, &r.ty),
        };
        Expr {
            kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
            ty,
        }
    }

    fn index(&mut self, ix: &syn::ExprIndex) -> Expr {
        self.indexing = matches!(strip_parens(&ix.expr), syn::Expr::Path(_));
        let base = self.expr(&ix.expr);
        self.indexing = false;
        let index = self.expr(&ix.index);
        if let syn::Expr::Range(r) = &*ix.index {
            self.err(
                r.span(),
                "sub-slices (`x[a..b]`) are not in the #[kernel] subset: index single elements",
            );
        }
        match base.ty.clone() {
            Ty::Slice(elem, _) => Expr {
                kind: ExprKind::Index(Box::new(base), Box::new(index)),
                ty: elem.ty(),
            },
            Ty::Array(elem, _) => {
                self.array_indexing += 1;
                Expr {
                    kind: ExprKind::Index(Box::new(base), Box::new(index)),
                    ty: *elem,
                }
            }
            Ty::Unknown => self.unknown(),
            _ => {
                let shown = ix.expr.to_token_stream().to_string();
                self.err(ix.expr.span(), format!("`{shown}` is not a slice, so it cannot be indexed in a #[kernel]: only In<[T]>, Out<[T]> and InOut<[T]> parameters, shared arrays and local arrays (`let mut v = [0.0f32; N];`) are"));
                self.unknown()
            }
        }
    }

    fn call(&mut self, c: &syn::ExprCall) -> Expr {
        let syn::Expr::Path(fp) = &*c.func else {
            self.err(
                c.func.span(),
                "call a #[device] fn or #[builtin] by name in a #[kernel]",
            );
            return self.unknown();
        };
        let path = &fp.path;
        let last = path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if path.segments.len() == 1 && last == "sync_threads" {
            return self.barrier(c);
        }
        if path.segments.len() == 1 {
            if let Some(f) = dsl_warp_fn(&last) {
                return self.warp(c, f);
            }
        }
        if path.segments.len() == 1 && (last == "shared" || last == "shared_dyn") {
            self.err(c.span(), "bind a shared array to a name where it is made: `let tile = shared::<f32, 256>();`");
            return self.unknown();
        }
        if path.segments.len() == 1 {
            if let Some(f) = THREAD_INDEX_FNS.iter().find(|f| **f == last) {
                if !c.args.is_empty() {
                    self.err(c.args.span(), format!("`{last}()` takes no arguments"));
                }
                return Expr {
                    kind: ExprKind::ThreadIndex(f),
                    ty: Ty::Prim(ElemType::U32),
                };
            }
            if last == self.self_name {
                self.err(c.span(), format!("recursion (`{last}` calls itself) is not supported on the GPU: write it as a loop"));
                return self.unknown();
            }
            if matches!(
                last.as_str(),
                "Some" | "None" | "Ok" | "Err" | "Box" | "Vec"
            ) {
                self.err(c.span(), format!("`{last}(..)` is not in the #[kernel] subset: kernels have no Option, Result or heap values"));
                return self.unknown();
            }
        } else {
            // `f32::max(a, b)`, `T::new()`, `<T as Tr>::f()`: type-associated and trait fns.
            let is_module_path = fp.qself.is_none()
                && path.segments.iter().rev().skip(1).all(|s| {
                    s.ident
                        .to_string()
                        .chars()
                        .next()
                        .is_some_and(|ch| ch.is_lowercase() || ch == '_')
                        && ElemType::from_rust_name(&s.ident.to_string()).is_none()
                });
            if !is_module_path {
                let shown = crate::naming::shown(path);
                self.err(c.func.span(), format!("`{shown}` is a trait or type-associated fn, which is not in the #[kernel] subset: use the method form (`a.max(b)`) of the numeric methods ({}), or a #[device] fn", dsl_method_list()));
                return self.unknown();
            }
        }
        let slot = self.callee_slot(path);
        let args: Vec<Expr> = c
            .args
            .iter()
            .map(|a| {
                let v = self.expr(a);
                self.infer.make_flexible(&v.ty);
                v
            })
            .collect();
        Expr {
            kind: ExprKind::Call(slot, args),
            ty: Ty::Unknown,
        }
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> Expr {
        let name = m.method.to_string();
        if m.turbofish.is_some() {
            self.err(
                m.span(),
                "turbofish (`::<T>`) methods are not in the #[kernel] subset",
            );
        }
        let recv = self.expr(&m.receiver);
        if name == "len" && m.args.is_empty() {
            if !matches!(recv.ty, Ty::Slice(..) | Ty::Unknown) {
                self.err(
                    m.method.span(),
                    "`len()` is a slice's: only In/Out/InOut parameters have one",
                );
            }
            return Expr {
                kind: ExprKind::Len(Box::new(recv)),
                ty: Ty::Prim(ElemType::U32),
            };
        }
        if name == "load4" || name == "store4" {
            return self.vec4(m, &name, recv);
        }
        if let Some(atomic) = dsl_atomic(&name) {
            return self.atomic(m, atomic, recv);
        }
        if matches!(
            name.as_str(),
            "unwrap" | "expect" | "unwrap_or" | "unwrap_unchecked"
        ) {
            self.err(m.method.span(), format!("`.{name}()` is not in the #[kernel] subset: kernels have no Option or Result values, and a GPU thread cannot panic"));
            return self.unknown();
        }
        let Some(method) = dsl_method(&name) else {
            let hint = match name.as_str() {
                "wrapping_add" | "wrapping_sub" | "wrapping_mul" => {
                    " (integer arithmetic already wraps in a #[kernel]: write `+`, `-`, `*`)"
                }
                "clone" => " (values are copied: drop `.clone()`)",
                "iter" | "into_iter" | "map" | "sum" => {
                    " (there are no iterators: loop with `for i in 0..x.len()` and index)"
                }
                _ => "",
            };
            self.err(m.method.span(), format!("`.{name}()` is not a #[kernel] method{hint}: the numeric methods are {}, and slices have `len()` (f32 slices also `load4`/`store4`, written slices the atomics {}); for anything else write a #[device] fn or a #[builtin]", dsl_method_list(), dsl_atomic_list()));
            return self.unknown();
        };
        if m.args.len() != method.args {
            self.err(
                m.span(),
                format!("`.{name}()` takes {} argument(s)", method.args),
            );
        }
        let args: Vec<Expr> = m
            .args
            .iter()
            .map(|a| {
                let v = self.expr(a);
                self.infer.unify(&v.ty, &recv.ty);
                v
            })
            .collect();
        let ty = if method.returns_bool {
            Ty::Prim(ElemType::Bool)
        } else {
            recv.ty.clone()
        };
        Expr {
            kind: ExprKind::Method(method, Box::new(recv), args),
            ty,
        }
    }

    /// A warp fn (`shfl_down(v, 1)`, `ballot(p)`, `warp_reduce_sum(v)`, ...): the kernel's
    /// own, as barriers are (the CPU build runs its block's threads as coroutines).
    fn warp(&mut self, c: &syn::ExprCall, f: &'static DslWarpFn) -> Expr {
        let name = f.rust;
        if !self.in_kernel {
            self.err(c.span(), format!("`{name}()` is a kernel's: call it in the #[kernel] body, not in a #[device] fn"));
        }
        if c.args.len() != f.args {
            self.err(c.span(), format!("`{name}()` takes {} argument(s)", f.args));
            return self.unknown();
        }
        let args: Vec<Expr> = c.args.iter().map(|a| self.expr(a)).collect();
        let ty = match f.returns {
            // The votes: a predicate in, a mask (`ballot`) or a bool out.
            WarpReturns::U32 | WarpReturns::Bool => {
                for a in &args {
                    self.infer.unify(&a.ty, &Ty::Prim(ElemType::Bool));
                }
                Ty::Prim(if f.returns == WarpReturns::U32 {
                    ElemType::U32
                } else {
                    ElemType::Bool
                })
            }
            WarpReturns::Value => {
                if let Some(lane) = args.get(1) {
                    self.infer.unify(&lane.ty, &Ty::Prim(ElemType::U32));
                }
                let v = args
                    .first()
                    .map_or(Ty::Unknown, |a| self.infer.shallow(&a.ty));
                match v {
                    Ty::Prim(t) if !WARP_VALUE_TYPES.contains(&t) => {
                        let names: Vec<&str> =
                            WARP_VALUE_TYPES.iter().map(|t| t.rust_name()).collect();
                        self.err(c.args.span(), format!("`{name}()` moves {}, not {}: CUDA's warp shuffles have no {} form; cast to one of those and back", names.join(", "), t.rust_name(), t.rust_name()));
                        Ty::Unknown
                    }
                    other => other,
                }
            }
        };
        self.barriers = true;
        Expr {
            kind: ExprKind::Warp(name, args),
            ty,
        }
    }

    /// `sync_threads()`: the kernel's own, reached by every thread of the block.
    fn barrier(&mut self, c: &syn::ExprCall) -> Expr {
        if !c.args.is_empty() {
            self.err(c.args.span(), "`sync_threads()` takes no arguments");
        }
        if !self.in_kernel {
            self.err(c.span(), "`sync_threads()` is a kernel's: call it in the #[kernel] body, where the macro can see that every thread reaches it, not in a #[device] fn");
        } else if let Some(problem) = self.divergence.barrier_problem() {
            self.err(c.span(), problem);
        }
        self.barriers = true;
        Expr {
            kind: ExprKind::Barrier,
            ty: Ty::Unit,
        }
    }

    /// `x.load4(i)` and `y.store4(i, v)`: 16 bytes as one access, four elements of an f32
    /// slice (`F32x4`) or one element of a slice of a 16-byte native type (`store4` on a
    /// written slice). A native element's size is rustc's to know: the expansion asserts it.
    fn vec4(&mut self, m: &syn::ExprMethodCall, name: &str, recv: Expr) -> Expr {
        let store = name == "store4";
        let op = if store { "store4" } else { "load4" };
        if !self.in_kernel {
            self.err(m.method.span(), format!("`.{op}()` is a kernel's: call it on the #[kernel]'s own slice (whose launch checks that it is 16-byte aligned), and pass the value to the #[device] fn"));
        }
        if let ExprKind::Local(slice) = &recv.kind {
            if !self.vectors.iter().any(|(s, _)| s == slice) {
                self.vectors.push((slice.clone(), op));
            }
        }
        let want = if store { 2 } else { 1 };
        let mut value = Ty::Unknown;
        match &recv.ty {
            Ty::Slice(Elem::Prim(ElemType::F32), writable) if *writable || !store => {}
            Ty::Slice(Elem::Named(n), writable) if *writable || !store => {
                value = Ty::Named(n.clone());
            }
            Ty::Slice(Elem::Prim(ElemType::F32) | Elem::Named(_), _) => self.err(
                m.method.span(),
                "`store4` writes: only Out<[T]> and InOut<[T]> slices have it (this one is In)",
            ),
            Ty::Unknown => {}
            _ => self.err(
                m.method.span(),
                format!("`.{name}()` moves 16 bytes as one access: f32 slices have it (four elements as an F32x4), and slices of a 16-byte #[derive(NativeType)] type (one element); for other element types index the elements (`x[i]`)"),
            ),
        }
        if m.args.len() != want {
            self.err(
                m.span(),
                format!(
                    "`.{name}()` takes {want} argument(s): {}",
                    if store {
                        "the vector index and an F32x4"
                    } else {
                        "the vector index (elements 4i..4i+3)"
                    }
                ),
            );
            return self.unknown();
        }
        let mut args = m.args.iter().map(|a| self.expr(a));
        let (Some(i), v) = (args.next(), args.next()) else {
            return self.unknown();
        };
        match v {
            Some(v) => {
                self.infer.unify(&v.ty, &value);
                Expr {
                    kind: ExprKind::Store4(Box::new(recv), Box::new(i), Box::new(v)),
                    ty: Ty::Unit,
                }
            }
            None => Expr {
                kind: ExprKind::Load4(Box::new(recv), Box::new(i)),
                ty: value,
            },
        }
    }

    /// `y.atomic_add(i, v)`, `y.atomic_cas(i, compare, v)`, ...: on a written slice of a type
    /// CUDA defines the atomic for.
    fn atomic(&mut self, m: &syn::ExprMethodCall, atomic: &'static DslAtomic, recv: Expr) -> Expr {
        let name = atomic.rust;
        let types = || {
            let names: Vec<&str> = atomic.types.iter().map(|t| t.rust_name()).collect();
            names.join(", ")
        };
        let elem = match &recv.ty {
            Ty::Slice(Elem::Prim(t), true) if atomic.types.contains(t) => Ty::Prim(*t),
            Ty::Slice(_, false) => {
                self.err(m.method.span(), format!("`{name}` writes: atomics are on Out<[T]> and InOut<[T]> slices, and this one is In (declare it InOut if the kernel also reads it)"));
                Ty::Unknown
            }
            Ty::Slice(Elem::Prim(t), true) => {
                self.err(
                    m.method.span(),
                    format!(
                        "CUDA has no `{name}` for {}: it takes {}",
                        t.rust_name(),
                        types()
                    ),
                );
                Ty::Unknown
            }
            Ty::Slice(Elem::Named(_), true) => {
                self.err(
                    m.method.span(),
                    format!("`{name}` is on slices of {}, not of native types", types()),
                );
                Ty::Unknown
            }
            _ => {
                if !matches!(recv.ty, Ty::Unknown) {
                    self.err(m.method.span(), format!("`.{name}()` is a slice's: call it on an Out<[T]> or InOut<[T]> parameter"));
                }
                Ty::Unknown
            }
        };
        if m.args.len() != 1 + atomic.values {
            let what = if atomic.values == 2 {
                "the index, the value to compare with and the new value"
            } else {
                "the index and a value"
            };
            self.err(m.span(), format!("`.{name}()` takes {what}"));
            return self.unknown();
        }
        let mut args = m.args.iter();
        let Some(index) = args.next().map(|a| self.expr(a)) else {
            return self.unknown();
        };
        let values: Vec<Expr> = args
            .map(|a| {
                let v = self.expr(a);
                self.infer.unify(&v.ty, &elem);
                v
            })
            .collect();
        Expr {
            kind: ExprKind::Atomic(name, Box::new(recv), Box::new(index), values),
            ty: elem,
        }
    }

    fn struct_lit(&mut self, s: &syn::ExprStruct) -> Expr {
        if s.qself.is_some() {
            self.err(s.span(), "name the struct plainly: `Color { r, g, b }`");
        }
        if let Some(rest) = &s.rest {
            self.err(
                rest.span(),
                "`..base` is not in the #[kernel] subset: give every field",
            );
        }
        let slot = self.named_slot(&s.path);
        let mut fields = Vec::new();
        for f in &s.fields {
            let syn::Member::Named(name) = &f.member else {
                self.err(
                    f.span(),
                    "tuple structs are not in the #[kernel] subset: use named fields",
                );
                continue;
            };
            let v = self.expr(&f.expr);
            self.infer.make_flexible(&v.ty);
            fields.push((name.to_string(), v));
        }
        Expr {
            kind: ExprKind::Struct(slot, fields),
            ty: Ty::Named(s.path.to_token_stream().to_string()),
        }
    }
}

/// `shared::<..>()`, the one form a shared array is made in.
pub(crate) fn shared_call(e: &syn::Expr) -> Option<&syn::ExprCall> {
    match strip_parens(e) {
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) if is_shared_fn(p) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

/// `shared` or `shared_dyn` (with its generic arguments), the fns a shared array is made with.
pub(crate) fn is_shared_fn(p: &syn::ExprPath) -> bool {
    p.qself.is_none()
        && p.path.segments.len() == 1
        && (p.path.segments[0].ident == "shared" || is_dynamic_shared(p))
}

/// `shared_dyn::<T>()`: the launch's dynamic shared memory.
pub(crate) fn is_dynamic_shared(p: &syn::ExprPath) -> bool {
    p.path.segments.len() == 1 && p.path.segments[0].ident == "shared_dyn"
}

/// The type of the value a branch assigns to `name` last (a `let x = if ..` branch's tail).
fn tail_ty(b: &Block, name: &str) -> Option<Ty> {
    match b.stmts.last().map(|s| &s.kind) {
        Some(StmtKind::Assign { place, value, .. }) if matches!(&place.kind, ExprKind::Local(n) if n == name) => {
            Some(value.ty.clone())
        }
        Some(StmtKind::If {
            then,
            els: Some(els),
            ..
        }) => tail_ty(then, name).or_else(|| tail_ty(els, name)),
        Some(StmtKind::Block(inner)) => tail_ty(inner, name),
        _ => None,
    }
}

/// The index of `path` in `list` (by its tokens), added at the end if it is new.
fn slot(list: &mut Vec<syn::Path>, path: &syn::Path) -> usize {
    let shown = path.to_token_stream().to_string();
    match list
        .iter()
        .position(|p| p.to_token_stream().to_string() == shown)
    {
        Some(i) => i,
        None => {
            list.push(path.clone());
            list.len() - 1
        }
    }
}

/// Both branches a single expression: a C++ `?:`.
fn is_simple_if(ei: &syn::ExprIf) -> bool {
    let single = |b: &syn::Block| matches!(b.stmts.as_slice(), [syn::Stmt::Expr(e, None)] if !matches!(e, syn::Expr::If(_)));
    match ei.else_branch.as_ref().map(|(_, e)| &**e) {
        Some(syn::Expr::Block(b)) => single(&ei.then_branch) && single(&b.block),
        Some(syn::Expr::If(inner)) => single(&ei.then_branch) && is_simple_if(inner),
        _ => false,
    }
}

/// `e` without the parentheses and invisible groups around it.
pub(super) fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::Add(_) => BinOp::Add,
        syn::BinOp::Sub(_) => BinOp::Sub,
        syn::BinOp::Mul(_) => BinOp::Mul,
        syn::BinOp::Div(_) => BinOp::Div,
        syn::BinOp::Rem(_) => BinOp::Rem,
        syn::BinOp::And(_) => BinOp::And,
        syn::BinOp::Or(_) => BinOp::Or,
        syn::BinOp::BitXor(_) => BinOp::BitXor,
        syn::BinOp::BitAnd(_) => BinOp::BitAnd,
        syn::BinOp::BitOr(_) => BinOp::BitOr,
        syn::BinOp::Shl(_) => BinOp::Shl,
        syn::BinOp::Shr(_) => BinOp::Shr,
        syn::BinOp::Eq(_) => BinOp::Eq,
        syn::BinOp::Lt(_) => BinOp::Lt,
        syn::BinOp::Le(_) => BinOp::Le,
        syn::BinOp::Ne(_) => BinOp::Ne,
        syn::BinOp::Ge(_) => BinOp::Ge,
        syn::BinOp::Gt(_) => BinOp::Gt,
        _ => return None,
    })
}

/// `+=` and friends: the operator they apply.
pub(crate) fn compound(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinOp::Add,
        syn::BinOp::SubAssign(_) => BinOp::Sub,
        syn::BinOp::MulAssign(_) => BinOp::Mul,
        syn::BinOp::DivAssign(_) => BinOp::Div,
        syn::BinOp::RemAssign(_) => BinOp::Rem,
        syn::BinOp::BitXorAssign(_) => BinOp::BitXor,
        syn::BinOp::BitAndAssign(_) => BinOp::BitAnd,
        syn::BinOp::BitOrAssign(_) => BinOp::BitOr,
        syn::BinOp::ShlAssign(_) => BinOp::Shl,
        syn::BinOp::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}
