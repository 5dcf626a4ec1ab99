//! The DSL model → readable CUDA C++. Operators go through the `opbox_dsl` helpers (Rust's
//! semantics, `opbox_codegen::cuda::dsl_prelude`), literals are written in the type Rust gives
//! them, and every statement starts with a `#line` back to the Rust file, so NVRTC's messages
//! name Rust lines.
//!
//! Names C++ can only learn at run time (a native type's C++ name, a callee's kind) are
//! placeholders, filled by `opbox_codegen::cuda::dsl::fill`.

use std::fmt::Write as _;

use opbox_codegen::cuda::dsl::{callee_macro, callee_placeholder, named_macro, named_placeholder};
use opbox_codegen::cuda::ElemType;

use super::ir::{
    BinOp, Block, Elem, Expr, ExprKind, Infer, LitKind, Resolved, Stmt, StmtKind, Ty, UnOp,
};

pub(crate) struct Cpp<'a> {
    pub infer: &'a Infer,
    /// The named types' Rust paths (token strings), by slot.
    pub named: &'a [String],
    /// The Rust file, as `#line` names it.
    pub file: &'a str,
    pub out: String,
    indent: usize,
    loops: usize,
    /// Aggregate temporaries written so far (`opbox_agg0`, ...).
    aggs: usize,
    /// Slots as C++ macros (a kernel's code, in its source) rather than placeholders (a
    /// `#[device]` fn's, filled into the preamble).
    pub macros: bool,
}

/// The C++ type of a DSL value of element type `t`.
pub(crate) fn prim_name(t: ElemType) -> &'static str {
    match t {
        ElemType::F16 => "opbox_dsl::f16",
        ElemType::BF16 => "opbox_dsl::bf16",
        other => other.c_name(),
    }
}

impl<'a> Cpp<'a> {
    pub fn new(infer: &'a Infer, named: &'a [String], file: &'a str) -> Cpp<'a> {
        Cpp {
            infer,
            named,
            file,
            out: String::new(),
            indent: 1,
            loops: 0,
            aggs: 0,
            macros: false,
        }
    }

    fn named_ref(&self, path: &str) -> String {
        match self.named.iter().position(|n| n == path) {
            Some(i) => self.named_slot(i),
            None => "auto".into(),
        }
    }

    fn named_slot(&self, i: usize) -> String {
        if self.macros {
            named_macro(i)
        } else {
            named_placeholder(i)
        }
    }

    fn callee_slot(&self, i: usize) -> String {
        if self.macros {
            callee_macro(i)
        } else {
            callee_placeholder(i)
        }
    }

    /// The C++ type of `ty`, `auto` where C++ decides.
    pub fn ty(&self, ty: &Ty) -> String {
        match self.infer.shallow(ty) {
            Ty::Prim(t) => prim_name(t).into(),
            // A literal that only met values C++ types (call arguments) still declares a
            // variable of Rust's default type: `let k = 0; f(k)` is an `int` C++ converts.
            Ty::Var(v) => match self.infer.resolve(v) {
                Resolved::Prim(t) => prim_name(t).into(),
                Resolved::Flexible(LitKind::Int) => "int".into(),
                Resolved::Flexible(LitKind::Float) => "double".into(),
            },
            Ty::Named(n) => self.named_ref(&n),
            Ty::Slice(elem, writable) => {
                let e = self.elem(&elem);
                if writable {
                    format!("opbox_dsl::Slice<{e}>")
                } else {
                    format!("opbox_dsl::Slice<const {e}>")
                }
            }
            Ty::Unit => "void".into(),
            // Declared by its own statement (`T v[N]`), never through its type.
            Ty::Array(..) | Ty::Unknown => "auto".into(),
        }
    }

    pub fn elem(&self, e: &Elem) -> String {
        match e {
            Elem::Prim(t) => prim_name(*t).into(),
            Elem::Named(n) => self.named_ref(n),
        }
    }

    fn line(&mut self, line: usize) {
        if line > 0 {
            let _ = writeln!(self.out, "#line {line} \"{}\"", self.file);
        }
    }

    fn push(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub fn block_body(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn braced(&mut self, b: &Block) {
        self.indent += 1;
        self.block_body(b);
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        self.line(s.line);
        match &s.kind {
            StmtKind::Let {
                name,
                ty,
                init,
                mutable,
            } => {
                let t = self.ty(ty);
                let c = if *mutable { "" } else { "const " };
                match init {
                    Some(v) => {
                        let v = self.value(v);
                        self.push(&format!("{c}{t} {name} = {v};"));
                    }
                    None => self.push(&format!("{t} {name};")),
                }
            }
            StmtKind::LetIf {
                name,
                ty,
                cond,
                then,
                els,
            } => {
                let t = self.ty(ty);
                let c = self.expr(cond);
                self.push(&format!("{t} {name};"));
                self.push(&format!("if ({c}) {{"));
                self.braced(then);
                self.push("} else {");
                self.braced(els);
                self.push("}");
            }
            StmtKind::Expr(e) => {
                let e = self.expr(e);
                self.push(&format!("{e};"));
            }
            StmtKind::Shared {
                name,
                elem,
                len: Some(len),
            } => {
                let t = prim_name(*elem);
                // 16-byte aligned, so `load4`/`store4` may move it as float4.
                self.push(&format!("__shared__ __align__(16) {t} {name}__s[{len}];"));
                self.push(&format!(
                    "const opbox_dsl::Slice<{t}> {name}{{{name}__s, (unsigned int)({len})}};"
                ));
            }
            // Every `extern __shared__` array of a kernel starts at the dynamic region; its size
            // is the launch's, which PTX reads from %dynamic_smem_size.
            StmtKind::Shared {
                name,
                elem,
                len: None,
            } => {
                let t = prim_name(*elem);
                self.push(&format!(
                    "extern __shared__ __align__(16) unsigned char {name}__d[];"
                ));
                self.push(&format!("unsigned int {name}__bytes;"));
                self.push(&format!(
                    "asm(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"({name}__bytes));"
                ));
                self.push(&format!(
                    "const opbox_dsl::Slice<{t}> {name}{{reinterpret_cast<{t}*>({name}__d), {name}__bytes / (unsigned int)sizeof({t})}};"
                ));
            }
            // The value once, then copied into each element by a loop NVRTC unrolls, so the
            // array can live in registers.
            StmtKind::LocalArray {
                name,
                elem,
                len,
                init,
            } => {
                let t = self.ty(elem);
                let v = self.value(init);
                let n = self.loops;
                self.loops += 1;
                self.push(&format!("const {t} {name}__v = {v};"));
                self.push(&format!("{t} {name}[{len}];"));
                self.push("#pragma unroll");
                self.push(&format!(
                    "for (unsigned int opbox_k{n} = 0u; opbox_k{n} < {len}; ++opbox_k{n}) {name}[opbox_k{n}] = {name}__v;"
                ));
            }
            StmtKind::Assign { place, op, value } => {
                let p = self.expr(place);
                let v = self.expr(value);
                match op.and_then(BinOp::helper) {
                    Some(h) => self.push(&format!("{p} = opbox_dsl::{h}({p}, {v});")),
                    None => self.push(&format!("{p} = {v};")),
                }
            }
            StmtKind::If { cond, then, els } => {
                let c = self.expr(cond);
                self.push(&format!("if ({c}) {{"));
                self.braced(then);
                if let Some(els) = els {
                    self.push("} else {");
                    self.braced(els);
                }
                self.push("}");
            }
            StmtKind::While { cond, body } => {
                let c = self.expr(cond);
                self.push(&format!("while ({c}) {{"));
                self.braced(body);
                self.push("}");
            }
            StmtKind::Loop(body) => {
                self.push("for (;;) {");
                self.braced(body);
                self.push("}");
            }
            StmtKind::For {
                var,
                ty,
                start,
                end,
                inclusive,
                step,
                body,
                unroll,
            } => {
                let n = self.loops;
                self.loops += 1;
                let t = self.ty(ty);
                let (a, b) = (self.expr(start), self.expr(end));
                // The step is a u64 (Rust's usize), which step_next takes.
                let (i, e) = (format!("opbox_i{n}"), format!("opbox_e{n}"));
                self.push("{");
                self.indent += 1;
                self.push(&format!("{t} {i} = {a};"));
                self.push(&format!("const {t} {e} = {b};"));
                // Evaluated once, after the range, as Rust's `step_by` is; a zero step panics
                // there (the CPU build's launch error), so it traps here rather than spin.
                let s = match step {
                    Some(s) => {
                        let name = format!("opbox_s{n}");
                        let v = self.expr(s);
                        self.push(&format!("const unsigned long long {name} = {v};"));
                        self.push(&format!("if ({name} == 0ull) __trap();"));
                        name
                    }
                    None => "1ull".into(),
                };
                if *inclusive {
                    let more = format!("opbox_more{n}");
                    self.push(&format!("bool {more} = {i} <= {e};"));
                    self.push(&format!("while ({more}) {{"));
                    self.indent += 1;
                    self.push(&format!("{t} {var} = {i};"));
                    self.push(&format!("opbox_dsl::step_incl({i}, {e}, {s}, {more});"));
                } else if step.is_none() {
                    // `i < e` before the increment, so `++i` cannot overflow; the canonical
                    // form is the one NVRTC counts trips of and unrolls (a tile's inner loop).
                    if *unroll {
                        self.push("#pragma unroll");
                    }
                    self.push(&format!("for (; {i} < {e}; ++{i}) {{"));
                    self.indent += 1;
                    self.push(&format!("{t} {var} = {i};"));
                } else {
                    self.push(&format!("while ({i} < {e}) {{"));
                    self.indent += 1;
                    self.push(&format!("{t} {var} = {i};"));
                    self.push(&format!("{i} = opbox_dsl::step_next({i}, {e}, {s});"));
                }
                self.block_body(body);
                self.indent -= 1;
                self.push("}");
                self.indent -= 1;
                self.push("}");
            }
            StmtKind::Break => self.push("break;"),
            StmtKind::Continue => self.push("continue;"),
            StmtKind::Return(None) => self.push("return;"),
            StmtKind::Return(Some(v)) => {
                let v = self.expr(v);
                self.push(&format!("return {v};"));
            }
            StmtKind::Block(b) => {
                self.push("{");
                self.braced(b);
                self.push("}");
            }
        }
    }

    /// `e` as an initializer: a struct literal field by field into a temporary, not through
    /// the expression's lambda (NVRTC's front end takes measurably longer over a lambda, issue
    /// 12's compile-time goal; the temporary keeps a shadowed name readable in the fields).
    fn value(&mut self, e: &Expr) -> String {
        let ExprKind::Struct(slot, fields) = &e.kind else {
            return self.expr(e);
        };
        let st = self.named_slot(*slot);
        let tmp = format!("opbox_agg{}", self.aggs);
        self.aggs += 1;
        self.push(&format!("{st} {tmp}{{}};"));
        for (f, v) in fields {
            let v = self.expr(v);
            self.push(&format!("{tmp}.{f} = {v};"));
        }
        tmp
    }

    pub fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Lit(kind, text) => self.lit(*kind, text, &e.ty),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Raw(text) => text.clone(),
            ExprKind::Local(name) => name.clone(),
            ExprKind::Unary(UnOp::Neg, x) => format!("opbox_dsl::neg({})", self.expr(x)),
            ExprKind::Unary(UnOp::Not, x) => format!("opbox_dsl::bit_not({})", self.expr(x)),
            ExprKind::Binary(op, l, r) => {
                let (l, r) = (self.expr(l), self.expr(r));
                match op {
                    BinOp::And => format!("({l} && {r})"),
                    BinOp::Or => format!("({l} || {r})"),
                    op => format!("opbox_dsl::{}({l}, {r})", op.helper().unwrap_or("add")),
                }
            }
            ExprKind::Cast(x, t) => format!("opbox_dsl::cast<{}>({})", prim_name(*t), self.expr(x)),
            ExprKind::Index(base, i) => format!("{}[{}]", self.expr(base), self.expr(i)),
            ExprKind::Field(base, f) => format!("{}.{f}", self.expr(base)),
            ExprKind::ThreadIndex(f) => format!("opbox_dsl::{f}()"),
            ExprKind::Call(slot, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("{}({})", self.callee_slot(*slot), args.join(", "))
            }
            ExprKind::Method(m, recv, args) => {
                let mut all = vec![self.expr(recv)];
                all.extend(args.iter().map(|a| self.expr(a)));
                format!("opbox_dsl::{}({})", m.cpp, all.join(", "))
            }
            ExprKind::Len(x) => format!("{}.len()", self.expr(x)),
            ExprKind::Barrier => "__syncthreads()".into(),
            ExprKind::Warp(f, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("opbox_dsl::{f}({})", args.join(", "))
            }
            ExprKind::Load4(x, i) => {
                format!("opbox_dsl::load4({}, {})", self.expr(x), self.expr(i))
            }
            ExprKind::Atomic(f, x, i, vs) => {
                let mut all = vec![self.expr(x), self.expr(i)];
                all.extend(vs.iter().map(|v| self.expr(v)));
                format!("opbox_dsl::{f}({})", all.join(", "))
            }
            ExprKind::Store4(x, i, v) => format!(
                "opbox_dsl::store4({}, {}, {})",
                self.expr(x),
                self.expr(i),
                self.expr(v)
            ),
            ExprKind::Select(c, a, b) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(a), self.expr(b))
            }
            ExprKind::Struct(slot, fields) => {
                // Assigned in the order written (Rust's evaluation order), whatever the
                // declaration order; the type's own initializer rules do not apply.
                let t = self.named_slot(*slot);
                let mut s = format!("[&]() {{ {t} opbox_v{{}};");
                for (f, v) in fields {
                    let _ = write!(s, " opbox_v.{f} = {};", self.expr(v));
                }
                s.push_str(" return opbox_v; }()");
                s
            }
        }
    }

    fn lit(&self, kind: LitKind, text: &str, ty: &Ty) -> String {
        let resolved = match self.infer.shallow(ty) {
            Ty::Prim(t) => Resolved::Prim(t),
            Ty::Var(v) => self.infer.resolve(v),
            _ => Resolved::Flexible(kind),
        };
        let float_text = || {
            if text.contains(['.', 'e', 'E']) {
                text.to_string()
            } else {
                format!("{text}.0")
            }
        };
        match resolved {
            Resolved::Prim(ElemType::F32) => format!("{}f", float_text()),
            Resolved::Prim(ElemType::F64) => float_text(),
            Resolved::Prim(t @ (ElemType::F16 | ElemType::BF16)) => {
                format!("opbox_dsl::from_f32<{}>({}f)", prim_name(t), float_text())
            }
            // `-2147483648` is `-(2147483648)`: the digits alone are past int's range.
            Resolved::Prim(ElemType::I32) if text.parse::<i32>().is_err() => {
                format!("((int){text}u)")
            }
            Resolved::Prim(ElemType::I32) => text.to_string(),
            Resolved::Prim(ElemType::U32) => format!("{text}u"),
            Resolved::Prim(ElemType::Bool) => (text != "0").to_string(),
            Resolved::Prim(t) => format!("(({}){text}ull)", prim_name(t)),
            Resolved::Flexible(LitKind::Float) => {
                let t = float_text();
                format!("opbox_dsl::flit{{{t}, {t}f}}")
            }
            Resolved::Flexible(LitKind::Int) => format!("opbox_dsl::ilit{{{text}ull}}"),
        }
    }
}
