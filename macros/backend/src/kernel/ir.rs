//! The model of a DSL body: the accepted subset of Rust as a small tree, each expression with a
//! type, plus the inference table that gives unsuffixed literals the type Rust gives them
//! (`a * 2.0` with `a: f32` is an `f32` multiply, never a double one).
//!
//! Inference is deliberately small: literals are variables, unified through operators,
//! assignments, `let` annotations, comparisons and method receivers; everything else has a
//! known type or is `Unknown` (fields of native types, results of helper calls), which C++ then
//! types itself (`auto`, and literal objects that convert to the type they meet). rustc checks
//! the same body for the CPU build, so the model never has to reject a type error itself.

use opbox_codegen::cuda::dsl_prelude::DslMethod;
use opbox_codegen::cuda::ElemType;

/// A value's type, as far as the macro knows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    Prim(ElemType),
    /// A slice param: its element and whether it may be written.
    Slice(Elem, bool),
    /// A native or `#[derive(KernelArg)]` struct, by its Rust path; C++ names it through a
    /// placeholder filled at run time (`Names`).
    Named(String),
    /// A local array (`let mut v = [0.0f32; N];`): its element and its length as a C++
    /// constant (a literal or `#[constexpr]` params). Used by element only: `v[j]`.
    Array(Box<Ty>, String),
    /// A literal's type variable.
    Var(usize),
    Unit,
    /// C++ decides (`auto`).
    Unknown,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Elem {
    Prim(ElemType),
    Named(String),
}

impl Elem {
    pub fn ty(&self) -> Ty {
        match self {
            Elem::Prim(t) => Ty::Prim(*t),
            Elem::Named(n) => Ty::Named(n.clone()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LitKind {
    Int,
    Float,
}

#[derive(Clone, Debug)]
struct VarState {
    kind: LitKind,
    parent: Option<usize>,
    resolved: Option<ElemType>,
    /// Met a value whose type only C++ knows: emitted as a converting literal if unresolved.
    flexible: bool,
}

/// The literal type variables of one body.
#[derive(Default)]
pub(crate) struct Infer {
    vars: Vec<VarState>,
}

/// What a literal variable ended up as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    Prim(ElemType),
    /// Converts to whatever it meets (`opbox_dsl::flit` / `ilit`).
    Flexible(LitKind),
}

impl Infer {
    pub fn fresh(&mut self, kind: LitKind) -> Ty {
        self.vars.push(VarState {
            kind,
            parent: None,
            resolved: None,
            flexible: false,
        });
        Ty::Var(self.vars.len() - 1)
    }

    fn root(&self, mut v: usize) -> usize {
        while let Some(p) = self.vars[v].parent {
            v = p;
        }
        v
    }

    /// The type with its variable replaced by what it is now.
    pub fn shallow(&self, t: &Ty) -> Ty {
        match t {
            Ty::Var(v) => match self.vars[self.root(*v)].resolved {
                Some(p) => Ty::Prim(p),
                None => Ty::Var(self.root(*v)),
            },
            other => other.clone(),
        }
    }

    /// Records that `a` and `b` are the same type; the result is the better known of the two.
    pub fn unify(&mut self, a: &Ty, b: &Ty) -> Ty {
        let (a, b) = (self.shallow(a), self.shallow(b));
        match (&a, &b) {
            (Ty::Var(x), Ty::Var(y)) => {
                if x != y {
                    let flexible = self.vars[*x].flexible || self.vars[*y].flexible;
                    self.vars[*y].parent = Some(*x);
                    self.vars[*x].flexible = flexible;
                    if self.vars[*y].kind == LitKind::Float {
                        self.vars[*x].kind = LitKind::Float;
                    }
                }
                a
            }
            (Ty::Var(x), Ty::Prim(p)) | (Ty::Prim(p), Ty::Var(x)) => {
                self.vars[*x].resolved = Some(*p);
                Ty::Prim(*p)
            }
            (Ty::Var(x), Ty::Unknown | Ty::Named(_)) | (Ty::Unknown | Ty::Named(_), Ty::Var(x)) => {
                self.vars[*x].flexible = true;
                a
            }
            (Ty::Unknown, other) | (other, Ty::Unknown) => other.clone(),
            _ => a,
        }
    }

    /// A literal met a place C++ types itself (a call argument, a struct field).
    pub fn make_flexible(&mut self, t: &Ty) {
        if let Ty::Var(v) = self.shallow(t) {
            self.vars[v].flexible = true;
        }
    }

    /// The final type of variable `v`: resolved, flexible, or Rust's default (`i32`, `f64`).
    pub fn resolve(&self, v: usize) -> Resolved {
        let r = &self.vars[self.root(v)];
        match (r.resolved, r.flexible, r.kind) {
            (Some(p), _, _) => Resolved::Prim(p),
            (None, true, k) => Resolved::Flexible(k),
            (None, false, LitKind::Int) => Resolved::Prim(ElemType::I32),
            (None, false, LitKind::Float) => Resolved::Prim(ElemType::F64),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// The `opbox_dsl` helper, or `None` for `&&`/`||`, which stay C++'s own.
    pub fn helper(self) -> Option<&'static str> {
        Some(match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::BitAnd => "bit_and",
            BinOp::BitOr => "bit_or",
            BinOp::BitXor => "bit_xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::And | BinOp::Or => return None,
        })
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Debug)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Debug)]
pub(crate) enum ExprKind {
    /// An integer literal's digits (no underscores, no suffix), or a float's text.
    Lit(LitKind, String),
    Bool(bool),
    /// A constant written out in C++ (`u64::MAX`, `f32::INFINITY` as its bits).
    Raw(String),
    Local(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, ElemType),
    Index(Box<Expr>, Box<Expr>),
    Field(Box<Expr>, String),
    /// A thread-index function (`global_id_x`).
    ThreadIndex(&'static str),
    /// A `#[device]` fn or `#[builtin]`, by its callee slot (a placeholder filled at run time).
    Call(usize, Vec<Expr>),
    Method(&'static DslMethod, Box<Expr>, Vec<Expr>),
    Len(Box<Expr>),
    /// `x.load4(i)`: an f32 slice's elements 4i..4i+3 as one `F32x4` (`float4`).
    Load4(Box<Expr>, Box<Expr>),
    /// `y.store4(i, v)`: the statement form; its value is `()`.
    Store4(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `y.atomic_add(i, v)` and the others: the helper (`DslAtomic::rust`), the slice, the
    /// index and the values; its value is the element's old value.
    Atomic(&'static str, Box<Expr>, Box<Expr>, Vec<Expr>),
    /// `sync_threads()`: `__syncthreads()`.
    Barrier,
    /// A warp fn (`DslWarpFn::rust`, also its C++ helper's name) and its arguments.
    Warp(&'static str, Vec<Expr>),
    /// `if c { a } else { b }` as a value (both branches a single expression).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `Color { r, g, b }`: the type's name slot and the fields in written order.
    Struct(usize, Vec<(String, Expr)>),
}

/// A block's statements; its value, where it has one, is a `return` or an assignment (the
/// lowering turns tails into those).
#[derive(Clone, Debug, Default)]
pub(crate) struct Block {
    pub stmts: Vec<Stmt>,
}

#[derive(Clone, Debug)]
pub(crate) struct Stmt {
    /// 1-based line in the Rust file, for `#line`.
    pub line: usize,
    pub kind: StmtKind,
}

#[derive(Clone, Debug)]
pub(crate) enum StmtKind {
    Let {
        name: String,
        mutable: bool,
        ty: Ty,
        init: Option<Expr>,
    },
    /// `let x = if c { ..; a } else { ..; b };`: declared first, assigned in each branch.
    LetIf {
        name: String,
        ty: Ty,
        cond: Expr,
        then: Block,
        els: Block,
    },
    Expr(Expr),
    /// `let tile = shared::<T, N>();`: a block-shared array of `len` (a C++ constant: a literal
    /// or a `#[constexpr]` param) elements, seen as a written slice; with no `len`,
    /// `shared_dyn::<T>()`: the launch's dynamic shared memory, as many `T`s as it holds.
    Shared {
        name: String,
        elem: ElemType,
        len: Option<String>,
    },
    /// `let mut v = [init; N];`: a per-thread array of `len` (a C++ constant) copies of
    /// `init`, evaluated once, as Rust's repeat expression is.
    LocalArray {
        name: String,
        elem: Ty,
        len: String,
        init: Expr,
    },
    Assign {
        place: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    While {
        cond: Expr,
        body: Block,
    },
    Loop(Block),
    For {
        var: String,
        ty: Ty,
        start: Expr,
        end: Expr,
        inclusive: bool,
        step: Option<Expr>,
        body: Block,
        /// Both bounds are compile-time constants and the body indexes a local array: fully
        /// unrolled (`#pragma unroll`), so constant indices keep the array in registers.
        unroll: bool,
    },
    Break,
    Continue,
    Return(Option<Expr>),
    Block(Block),
}
