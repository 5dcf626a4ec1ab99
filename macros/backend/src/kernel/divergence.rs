//! Which values differ between a block's threads, so that a barrier the macro can see is under
//! thread-dependent control flow is a compile error (CUDA leaves it undefined; the CPU build
//! finds the rest at run time). Conservative in one direction only: a value is *varying* when it
//! is read from the thread's index (`thread_id_*`, `global_id_*`), from a varying local, from a
//! slice at a varying index, or from an atomic; block ids, dims, params and constants are the
//! same for every thread of a block. A call is varying when an argument is, so a `#[device]` fn
//! that reads the thread index itself escapes the check and meets the run-time one.

use super::ir::{Expr, ExprKind};

/// What a body's lowering knows about divergence so far.
#[derive(Default)]
pub(crate) struct Divergence {
    /// C++ names of the locals that may differ between threads.
    varying: Vec<String>,
    /// Lines of the enclosing conditions (if/while/for) that may differ between threads.
    conditions: Vec<usize>,
    /// The line of a `return` some threads may take and others not.
    early_return: Option<usize>,
}

impl Divergence {
    pub fn varies(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::ThreadIndex(f) => f.starts_with("thread_id") || f.starts_with("global_id"),
            ExprKind::Local(name) => self.varying.iter().any(|v| v == name),
            ExprKind::Index(base, i) => self.varies(base) || self.varies(i),
            ExprKind::Atomic(..) | ExprKind::Load4(..) | ExprKind::Warp(..) => true,
            ExprKind::Lit(..) | ExprKind::Bool(_) | ExprKind::Raw(_) | ExprKind::Barrier => false,
            ExprKind::Unary(_, x) | ExprKind::Cast(x, _) | ExprKind::Field(x, _) => self.varies(x),
            ExprKind::Len(x) => self.varies(x),
            ExprKind::Binary(_, a, b) => self.varies(a) || self.varies(b),
            ExprKind::Select(c, a, b) => self.varies(c) || self.varies(a) || self.varies(b),
            ExprKind::Store4(x, i, v) => self.varies(x) || self.varies(i) || self.varies(v),
            ExprKind::Call(_, args) => args.iter().any(|a| self.varies(a)),
            ExprKind::Method(_, r, args) => self.varies(r) || args.iter().any(|a| self.varies(a)),
            ExprKind::Struct(_, fields) => fields.iter().any(|(_, v)| self.varies(v)),
        }
    }

    /// A local was given `value`: it varies from then on if the value does, or if the
    /// assignment is under a varying condition (some threads make it, others not).
    pub fn assigned(&mut self, name: &str, value: &Expr) {
        if (self.varies(value) || !self.conditions.is_empty())
            && !self.varying.iter().any(|v| v == name)
        {
            self.varying.push(name.to_string());
        }
    }

    /// Enters the body of a condition on `line`; returns whether it varies (then the caller
    /// leaves it with [`Divergence::leave`]).
    pub fn enter(&mut self, line: usize, cond: &[&Expr]) -> bool {
        let varies = cond.iter().any(|c| self.varies(c));
        if varies {
            self.conditions.push(line);
        }
        varies
    }

    pub fn leave(&mut self, entered: bool) {
        if entered {
            self.conditions.pop();
        }
    }

    /// A `return` at `line`.
    pub fn returned(&mut self, line: usize) {
        if !self.conditions.is_empty() && self.early_return.is_none() {
            self.early_return = Some(line);
        }
    }

    /// Why a barrier here is divergent, if the macro can see that it is.
    pub fn barrier_problem(&self) -> Option<String> {
        if let Some(line) = self.conditions.last() {
            return Some(format!("`sync_threads()` is under a condition that differs between a block's threads (line {line}: it reads the thread index, or a value computed from it): every thread of a block must reach each barrier; move it out of the `if`/loop, or make the condition the same for the whole block"));
        }
        self.early_return.map(|line| format!("some threads may have returned (line {line}) before this `sync_threads()`, which every thread of a block must reach: guard the work instead of returning (`if i < n {{ .. }}`), and keep the barrier outside"))
    }
}
