//! Re-binding: new tensors and by-value arguments for an instantiated graph, checked against
//! the recording (shape, dtype, device, type, and no overlap the recording did not have), then
//! set on the nodes that use them.

use super::{pack, Buffer, GraphExec};
use crate::error::{Error, Result};
use crate::graph::bind::Bindings;
use crate::kernel::OwnedArg;
use crate::tensor::Tensor;
use cudarc::driver::sys;

impl GraphExec {
    pub(super) fn note_use(&mut self, t: &Tensor, at: (usize, usize)) {
        let key = t.as_raw() as usize;
        let id = *self.by_handle.entry(key).or_insert_with(|| {
            self.buffers.push(Buffer {
                recorded: t.clone(),
                current: t.clone(),
                uses: Vec::new(),
                overlaps: Vec::new(),
            });
            self.buffers.len() - 1
        });
        self.buffers[id].uses.push(at);
    }

    pub(super) fn note_overlaps(&mut self) {
        let ranges: Vec<_> = self
            .buffers
            .iter()
            .map(|b| b.recorded.address_range())
            .collect();
        for (i, b) in self.buffers.iter_mut().enumerate() {
            b.overlaps = (0..ranges.len())
                .filter(|&j| j != i && overlap(&ranges[i], &ranges[j]))
                .collect();
        }
    }

    pub(super) fn rebind(&mut self, bindings: &Bindings<'_>) -> Result<()> {
        // Checked first, applied after: a refused binding changes nothing.
        let mut tensors: Vec<(usize, &Tensor)> = Vec::with_capacity(bindings.tensors.len());
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
            tensors.retain(|(i, _)| *i != id);
            // Bound already: nothing to check or set.
            if self.buffers[id].current.ptr_eq(new) {
                continue;
            }
            self.check_tensor(id, new)?;
            tensors.push((id, new));
        }
        for (id, new) in &tensors {
            let range = new.address_range();
            let bound = |j: usize| {
                tensors[..]
                    .iter()
                    .find(|(i, _)| *i == j)
                    .map_or(&self.buffers[j].current, |(_, t)| *t)
            };
            for j in 0..self.buffers.len() {
                if j == *id || self.buffers[*id].overlaps.contains(&j) {
                    continue;
                }
                if overlap(&range, &bound(j).address_range()) {
                    let (l, a) = self.buffers[*id].uses[0];
                    let (lj, aj) = self.buffers[j].uses[0];
                    return Err(self.error(format!(
                        "the tensor bound for {} shares memory with the one bound for {}, which the recording did not; bind tensors that do not overlap (the graph's dependencies were derived from the recorded ones)",
                        self.site(l, a),
                        self.site(lj, aj)
                    )));
                }
            }
        }
        let mut values = Vec::with_capacity(bindings.values.len());
        for (node, param, value) in &bindings.values {
            let &(first, end) = self.members.get(node.index()).ok_or_else(|| {
                self.error(format!(
                    "a binding names node #{}, but the graph has {} nodes",
                    node.index(),
                    self.members.len()
                ))
            })?;
            for l in first..end {
                let launch = &self.launches[l];
                let a = launch.param_index(param).ok_or_else(|| {
                    self.error(format!(
                        "node #{} (kernel {}) has no parameter '{param}'",
                        node.index(),
                        launch.decl().rust_name
                    ))
                })?;
                let old = &launch.launch.args[a];
                if !same_kind(old, value) {
                    return Err(self.error(format!(
                        "{} was recorded as {}, but the binding is {}; bind a value of the declared type",
                        self.site(l, a),
                        old.as_launch_arg().describe(),
                        value.as_launch_arg().describe()
                    )));
                }
                values.push((l, a, value.clone()));
            }
        }
        let mut dirty: Vec<usize> = Vec::new();
        for (id, new) in tensors {
            let b = &mut self.buffers[id];
            b.current = new.clone();
            for &(l, a) in &b.uses {
                self.launches[l].launch.args[a] = OwnedArg::Tensor(new.clone());
                dirty.push(l);
            }
        }
        for (l, a, value) in values {
            self.launches[l].launch.args[a] = value;
            dirty.push(l);
        }
        dirty.sort_unstable();
        dirty.dedup();
        self.context
            .bind_to_thread()
            .map_err(|e| self.error(format!("binding the context: {e}")))?;
        for l in dirty {
            if let Some(src) = &self.launches[l].constant {
                let [OwnedArg::Native { bytes, .. }] = self.launches[l].launch.args.as_slice()
                else {
                    continue;
                };
                super::constant::upload(self.name, src, bytes, self.ordinal)?;
                continue;
            }
            let packed = pack(&self.launches[l].launch)?;
            let launch = &mut self.launches[l];
            launch.packed = packed;
            let params = launch.params();
            // SAFETY: `exec` instantiates the graph that holds `launch.node`, a kernel node whose
            // function `params` keeps; the parameters were checked by `prepare` as at
            // instantiation and are copied by the driver.
            unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.exec, launch.node, &params) }
                .result()
                .map_err(|e| Error::Graph {
                    graph: self.name.to_string(),
                    message: format!(
                        "setting the parameters of kernel {}: {e}",
                        launch.decl().rust_name
                    ),
                })?;
        }
        Ok(())
    }

    /// "node #3 (kernel scale) parameter 'x'": where launch `l`'s argument `a` is.
    fn site(&self, l: usize, a: usize) -> String {
        let node = self
            .members
            .iter()
            .position(|&(first, end)| (first..end).contains(&l))
            .unwrap_or(0);
        let launch = &self.launches[l];
        format!(
            "node #{node} (kernel {}) parameter '{}'",
            launch.decl().rust_name,
            launch.param_name(a)
        )
    }

    fn check_tensor(&self, id: usize, new: &Tensor) -> Result<()> {
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
                "the tensor bound for {} is a {} tensor of shape {:?} on {}, but the recorded one is a {} tensor of shape {:?} on {}; a replay binds tensors like the recorded ones (record another graph for other shapes)",
                self.site(l, a),
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
                self.site(l, a),
                new.strides()
            )));
        }
        Ok(())
    }
}

fn overlap(a: &Option<std::ops::Range<u64>>, b: &Option<std::ops::Range<u64>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.start < b.end && b.start < a.end,
        _ => false,
    }
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
