//! [`Bindings`]: what a replay changes, tensors by their recorded handle and by-value
//! arguments by node and parameter name. A binding stays in force for later replays until
//! bound again.

use std::collections::HashMap;

use foldhash::fast::FixedState;
use smallvec::SmallVec;

use super::record::Launch;
use super::NodeId;
use crate::error::{Error, Result};
use crate::kernel::{KernelArg, OwnedArg};
use crate::tensor::Tensor;

/// A tensor binding about to be applied: its buffer, the new tensor and its addresses.
type PlannedTensor<'t> = (usize, &'t Tensor, Span);

/// The launches a binding changed, in order.
pub(crate) type Dirty = SmallVec<[usize; 8]>;

/// A slot holding one recorded launch: the graph's own list, or an instantiated graph's nodes.
pub(crate) trait HoldsLaunch {
    fn launch(&self) -> &Launch;
    fn launch_mut(&mut self) -> &mut Launch;
}

impl HoldsLaunch for &mut Launch {
    fn launch(&self) -> &Launch {
        self
    }
    fn launch_mut(&mut self) -> &mut Launch {
        self
    }
}

/// New tensors and values for a replay (`GraphExec::replay`) or an eager graph
/// ([`Graph::bind`](super::Graph::bind)).
///
/// A tensor is named by the handle that was recorded (or a clone of it): every launch that
/// used it reads the new tensor instead, which must have its shape and dtype, be on the same
/// device and be contiguous, and must not share memory with another tensor of the graph unless
/// the recorded ones did (that would change the dependencies).
#[derive(Default)]
pub struct Bindings<'a> {
    /// Inline up to 4, so the usual replay (an input and an output) allocates nothing.
    pub(crate) tensors: SmallVec<[(&'a Tensor, &'a Tensor); 4]>,
    pub(crate) values: Vec<(NodeId, &'a str, OwnedArg)>,
}

impl<'a> Bindings<'a> {
    /// No bindings: a replay with it launches what was recorded.
    pub fn new() -> Bindings<'a> {
        Bindings::default()
    }

    /// Every use of `recorded` reads (and writes) `tensor` from now on.
    pub fn tensor(mut self, recorded: &'a Tensor, tensor: &'a Tensor) -> Bindings<'a> {
        self.tensors.push((recorded, tensor));
        self
    }

    /// `node`'s by-value parameter `param` (a scalar, or a `#[derive(NativeType)]` struct) is
    /// `value` from now on; it must have the declared type (for a group: in every member).
    pub fn scalar<T>(mut self, node: NodeId, param: &'a str, value: T) -> Bindings<'a>
    where
        T: for<'v> KernelArg<Value<'v> = T>,
    {
        self.values
            .push((node, param, T::lower(&value).to_owned_arg()));
        self
    }

    /// Whether nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty() && self.values.is_empty()
    }
}

/// A tensor of a graph: the handle recorded, the one bound now, and where it is passed.
#[derive(Clone)]
struct Buffer {
    recorded: Tensor,
    current: Tensor,
    /// (launch, argument index) of each use.
    uses: Vec<(usize, usize)>,
    /// The other buffers whose recorded memory overlaps this one's.
    overlaps: Vec<usize>,
}

/// What re-binding needs to know of a graph's launches, listed node by node and member by
/// member ("launch `l`"): which tensors each passes where, and which node each belongs to.
/// The one set of binding rules, for eager graphs ([`Graph::bind`](super::Graph::bind)) and
/// instantiated ones alike.
#[derive(Clone)]
pub(crate) struct Binder {
    graph: String,
    buffers: Vec<Buffer>,
    /// `Tensor::as_raw` of each recorded handle → its buffer (foldhash: a replay's re-binding
    /// looks each one up, and SipHash would be a good part of its cost).
    by_handle: HashMap<usize, usize, FixedState>,
    /// Each node's launches: `members[n].0 .. members[n].1`.
    members: Vec<(usize, usize)>,
    /// Each buffer's current memory (`current`'s addresses), kept so that a re-binding compares
    /// spans without recomputing every buffer's: a flat array, one pair of compares a buffer.
    spans: Vec<Span>,
}

/// A tensor's memory as `(start, end)`; `(0, 0)` for a tensor without addresses, which
/// overlaps nothing.
type Span = (u64, u64);

fn span(t: &Tensor) -> Span {
    t.address_range().map_or((0, 0), |r| (r.start, r.end))
}

fn overlap(a: Span, b: Span) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Whether `new` may replace `old` as a by-value argument: the same scalar type, or the same
/// native struct.
fn same_kind(old: &OwnedArg, new: &OwnedArg) -> bool {
    match (old, new) {
        (OwnedArg::Native { schema: a, .. }, OwnedArg::Native { schema: b, .. }) => {
            a.native_name == b.native_name && a.same_contract(b)
        }
        (OwnedArg::Tensor(_) | OwnedArg::Null, _) | (_, OwnedArg::Tensor(_) | OwnedArg::Null) => {
            false
        }
        _ => {
            old.as_launch_arg().scalar().map(|(t, _)| t)
                == new.as_launch_arg().scalar().map(|(t, _)| t)
        }
    }
}

impl Binder {
    /// The binder of `launches` (listed node by node), `members` giving each node's.
    pub(crate) fn new(graph: &str, launches: &[&Launch], members: Vec<(usize, usize)>) -> Binder {
        let mut b = Binder {
            graph: graph.to_string(),
            buffers: Vec::new(),
            by_handle: HashMap::default(),
            members,
            spans: Vec::new(),
        };
        for (l, launch) in launches.iter().enumerate() {
            for (a, arg) in launch.args.iter().enumerate() {
                if let OwnedArg::Tensor(t) = arg {
                    b.note_use(t, (l, a));
                }
            }
        }
        for (i, x) in b.buffers.iter_mut().enumerate() {
            x.overlaps = (0..b.spans.len())
                .filter(|&j| j != i && overlap(b.spans[i], b.spans[j]))
                .collect();
        }
        b
    }

    fn note_use(&mut self, t: &Tensor, at: (usize, usize)) {
        let key = t.as_raw() as usize;
        let id = *self.by_handle.entry(key).or_insert_with(|| {
            self.buffers.push(Buffer {
                recorded: t.clone(),
                current: t.clone(),
                uses: Vec::new(),
                overlaps: Vec::new(),
            });
            self.spans.push(span(t));
            self.buffers.len() - 1
        });
        self.buffers[id].uses.push(at);
    }

    fn error(&self, message: String) -> Error {
        Error::Graph {
            graph: self.graph.clone(),
            message,
        }
    }

    /// Checks every binding against the recording, then applies them all to `launches`; returns
    /// the launches whose arguments changed, in order. A refused binding changes nothing.
    pub(crate) fn apply<L: HoldsLaunch>(
        &mut self,
        bindings: &Bindings<'_>,
        launches: &mut [L],
    ) -> Result<Dirty> {
        // (buffer, new tensor, its addresses)
        let mut tensors: SmallVec<[PlannedTensor<'_>; 4]> = SmallVec::new();
        for (recorded, new) in &bindings.tensors {
            let id = *self
                .by_handle
                .get(&(recorded.as_raw() as usize))
                .ok_or_else(|| {
                    self.error(format!(
                        "a binding names a tensor (shape {:?}, {}) that no launch of this graph recorded; bind the handle that was passed to the launch",
                        recorded.shape(),
                        recorded.dtype()
                    ))
                })?;
            tensors.retain(|(i, _, _)| *i != id);
            // Bound already: nothing to check or set.
            if self.buffers[id].current.ptr_eq(new) {
                continue;
            }
            self.check_tensor(id, new, launches)?;
            tensors.push((id, new, span(new)));
        }
        // Each new tensor against every buffer's memory: the current one of a buffer this
        // binding leaves alone, the new one of a buffer it re-binds too. Memory the recording
        // shared (views of one allocation) may stay shared.
        for (k, &(id, _, new)) in tensors.iter().enumerate() {
            let recorded = &self.buffers[id].overlaps;
            let rebound = |j: usize| tensors.iter().any(|(i, _, _)| *i == j);
            let clash = self
                .spans
                .iter()
                .enumerate()
                .position(|(j, &current)| {
                    overlap(new, current) && j != id && !rebound(j) && !recorded.contains(&j)
                })
                .or_else(|| {
                    tensors[k + 1..]
                        .iter()
                        .find(|&&(j, _, other)| overlap(new, other) && !recorded.contains(&j))
                        .map(|(j, _, _)| *j)
                });
            if let Some(j) = clash {
                let (l, a) = self.buffers[id].uses[0];
                let (lj, aj) = self.buffers[j].uses[0];
                return Err(self.error(format!(
                    "the tensor bound for {} shares memory with the one bound for {}, which the recording did not; bind tensors that do not overlap (the graph's dependencies were derived from the recorded ones)",
                    self.site(l, a, launches),
                    self.site(lj, aj, launches)
                )));
            }
        }
        let mut values: SmallVec<[(usize, usize, OwnedArg); 4]> = SmallVec::new();
        for (node, param, value) in &bindings.values {
            let &(first, end) = self.members.get(node.index()).ok_or_else(|| {
                self.error(format!(
                    "a binding names node #{}, but the graph has {} nodes",
                    node.index(),
                    self.members.len()
                ))
            })?;
            for l in first..end {
                let launch = launches[l].launch();
                let a = launch.param_index(param).ok_or_else(|| {
                    self.error(format!(
                        "node #{} (kernel {}) has no parameter '{param}'",
                        node.index(),
                        launch.decl().rust_name
                    ))
                })?;
                let old = &launch.args[a];
                if !same_kind(old, value) {
                    return Err(self.error(format!(
                        "{} was recorded as {}, but the binding is {}; bind a value of the declared type",
                        self.site(l, a, launches),
                        old.as_launch_arg().describe(),
                        value.as_launch_arg().describe()
                    )));
                }
                values.push((l, a, value.clone()));
            }
        }
        let mut dirty = Dirty::new();
        for (id, new, new_span) in tensors {
            let b = &mut self.buffers[id];
            b.current = new.clone();
            self.spans[id] = new_span;
            for &(l, a) in &b.uses {
                launches[l].launch_mut().args[a] = OwnedArg::Tensor(new.clone());
                dirty.push(l);
            }
        }
        for (l, a, value) in values {
            launches[l].launch_mut().args[a] = value;
            dirty.push(l);
        }
        dirty.sort_unstable();
        dirty.dedup();
        Ok(dirty)
    }

    /// "node #3 (kernel scale) parameter 'x'": where launch `l`'s argument `a` is.
    fn site<L: HoldsLaunch>(&self, l: usize, a: usize, launches: &[L]) -> String {
        let node = self
            .members
            .iter()
            .position(|&(first, end)| (first..end).contains(&l))
            .unwrap_or(0);
        let (kernel, param) = launches.get(l).map_or(("?", "?"), |x| {
            let x = x.launch();
            (x.decl().rust_name.as_ref(), x.param_name(a))
        });
        format!("node #{node} (kernel {kernel}) parameter '{param}'")
    }

    fn check_tensor<L: HoldsLaunch>(&self, id: usize, new: &Tensor, launches: &[L]) -> Result<()> {
        let b = &self.buffers[id];
        let r = &b.recorded;
        let (l, a) = b.uses[0];
        if new.shape() != r.shape()
            || new.dtype() != r.dtype()
            || new.device() != r.device()
            || new.native_schema().map(|s| s.native_name)
                != r.native_schema().map(|s| s.native_name)
        {
            return Err(self.error(format!(
                "the tensor bound for {} is a {} tensor of shape {:?} on {}, but the recorded one is a {} tensor of shape {:?} on {}; bind tensors like the recorded ones (record another graph for other shapes)",
                self.site(l, a, launches),
                new.dtype(),
                new.shape(),
                new.device(),
                r.dtype(),
                r.shape(),
                r.device()
            )));
        }
        if !new.is_contiguous() {
            return Err(self.error(format!(
                "the tensor bound for {} is a non-contiguous view (strides {:?}); call .contiguous() first",
                self.site(l, a, launches),
                new.strides()
            )));
        }
        Ok(())
    }
}
