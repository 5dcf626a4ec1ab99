//! Kernel graphs (PyPTO's orchestration): launches recorded without running, their order
//! derived from their data, then run now on a few streams or instantiated as a CUDA graph and
//! replayed with re-bound tensors.
//!
//! - [`record`](mod@record): [`record()`] and [`record_op`]; each launch is checked and packed
//!   as usual, each tensor's direction taken from its kernel's `In`/`Out`/`InOut` declaration.
//! - [`bind`]: [`Bindings`], the new tensors and values of a replay, and the one set of rules
//!   they are checked by.
//! - [`deps`]: edges from overlapping address ranges (RAW, WAR, WAW).
//! - `dot`: [`Graph::to_dot`] for Graphviz.
//! - [`eager`]: [`Graph::launch`], on a stream pool joined by events.
//! - `exec` (CUDA): [`Graph::instantiate`] through the driver's graph API (no stream capture),
//!   and [`GraphExec::replay`] with [`Bindings`].
//!
//! ```
//! # fn main() -> opbox_runtime::Result<()> {
//! use opbox_runtime::Device;
//! let g = opbox_runtime::graph::record(Device::Cpu, |_r| Ok(()))?;
//! assert!(g.to_dot().starts_with("digraph \"graph\""));
//! # Ok(())
//! # }
//! ```

pub mod bind;
pub mod deps;
mod dot;
pub mod eager;
#[cfg(feature = "cuda")]
mod exec;
pub mod record;

pub use bind::Bindings;
pub use deps::{Edge, Hazards, Region};
#[cfg(feature = "cuda")]
pub use exec::GraphExec;
pub use record::{record, record_named, record_op, recording, Recorder};

use crate::tensor::Device;
use bind::Binder;
use record::Node;

/// A recorded node: its index in recording order (what `k::launch_in` returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) usize);

impl NodeId {
    /// The node's position in recording order, from 0.
    pub fn index(self) -> usize {
        self.0
    }
}

/// Recorded launches and the dependencies between them.
pub struct Graph {
    name: String,
    device: Device,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    /// Made at the first [`Graph::bind`]; an instantiation starts from it.
    binder: Option<Binder>,
}

impl Graph {
    fn new(name: String, device: Device, nodes: Vec<Node>) -> Graph {
        let accesses: Vec<_> = nodes.iter().map(|n| n.accesses.clone()).collect();
        let edges = deps::derive(&accesses);
        Graph {
            name,
            device,
            nodes,
            edges,
            binder: None,
        }
    }

    /// The graph's name (`record_named`), used in its errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device every launch was recorded on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The number of nodes (a group is one).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no launch was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes, in recording order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len()).map(NodeId)
    }

    /// A node's kernel (or group) name.
    pub fn label(&self, node: NodeId) -> Option<&str> {
        self.nodes.get(node.0).map(|n| n.label.as_str())
    }

    /// The kernels of a node, in launch order (one, or a group's members).
    pub fn kernels(&self, node: NodeId) -> Vec<&str> {
        self.nodes.get(node.0).map_or_else(Vec::new, |n| {
            n.members
                .iter()
                .map(|m| m.handle.decl().rust_name.as_ref())
                .collect()
        })
    }

    /// The dependencies, ordered by their later node, then their earlier one.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Re-binds tensors and by-value arguments for the next [`Graph::launch`]es, with the rules
    /// of a replay's ([`Bindings`]); an instantiation made afterwards starts from them.
    pub fn bind(&mut self, bindings: &Bindings<'_>) -> crate::Result<()> {
        if bindings.is_empty() {
            return Ok(());
        }
        let binder = self.binder.take().unwrap_or_else(|| self.binder());
        let binder = self.binder.insert(binder);
        let mut launches: Vec<&mut record::Launch> = self
            .nodes
            .iter_mut()
            .flat_map(|n| n.members.iter_mut())
            .collect();
        binder.apply(bindings, &mut launches).map(drop)
    }

    /// The binder in force: the one of earlier bindings, else a new one.
    pub(crate) fn binder(&self) -> Binder {
        if let Some(b) = &self.binder {
            return b.clone();
        }
        let mut members = Vec::with_capacity(self.nodes.len());
        let mut at = 0;
        for n in &self.nodes {
            members.push((at, at + n.members.len()));
            at += n.members.len();
        }
        let launches: Vec<&record::Launch> =
            self.nodes.iter().flat_map(|n| n.members.iter()).collect();
        Binder::new(&self.name, &launches, members)
    }

    /// Graphviz text: `dot -Tsvg` draws it.
    pub fn to_dot(&self) -> String {
        dot::to_dot(self)
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("name", &self.name)
            .field("device", &self.device)
            .field("nodes", &self.nodes.len())
            .field("edges", &self.edges)
            .finish()
    }
}
