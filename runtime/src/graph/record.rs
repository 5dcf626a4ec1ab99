//! Recording: launches are checked and packed as usual ([`prepare()`]) but kept instead of
//! submitted, each with the regions its tensors span and the direction its kernel declares.
//!
//! While [`record`]'s closure runs, this thread records: the explicit form
//! (`k::launch_in(r, cfg, ..)`, which returns the node), and every ordinary launch
//! (`k::launch(cfg, ..)`, a group's `launch`, a runtime-typed launch, an op's CUDA impl), so
//! [`record_op`] captures whatever an op launches. Recordings nest: a launch goes to the
//! innermost one (an explicit `launch_in` to its own recorder).
//!
//! Only kernel launches are recorded. Allocations and copies made while recording
//! (`Tensor::empty`, `copy_from`, `to_vec`) happen then, once, and are not part of the graph.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use opbox_codegen::cuda::{ConstValue, EntryAbi, KernelDecl};
use smallvec::SmallVec;

use super::deps::Region;
use super::{Graph, NodeId};
use crate::dispatch::OpHandle;
use crate::dispatch::{FromStack, IntoStack};
use crate::error::{Error, Result};
use crate::kernel::{
    prepare, Access, KernelGroupDecl, KernelHandle, LaunchArg, LaunchConfig, OwnedArg, ParamBuffer,
    PreparedLaunch,
};
use crate::tensor::Device;

/// One recorded kernel launch, owning its arguments (tensors are cloned handles, so the graph
/// keeps every tensor it launches on alive: a binding cannot be freed under a replay).
#[derive(Clone)]
pub(crate) struct Launch {
    pub(crate) handle: &'static KernelHandle,
    /// The recorded config, without its stream: a graph picks its own.
    pub(crate) cfg: LaunchConfig,
    pub(crate) args: Vec<OwnedArg>,
    pub(crate) constexprs: Vec<ConstValue>,
}

impl Launch {
    /// The recorded arguments as a launch takes them, on the stack for any kernel of up to 16.
    pub(crate) fn launch_args(&self) -> SmallVec<[LaunchArg<'_>; 16]> {
        self.args.iter().map(OwnedArg::as_launch_arg).collect()
    }

    pub(crate) fn decl(&self) -> &'static KernelDecl {
        self.handle.decl()
    }

    /// The name of launch argument `index`.
    pub(crate) fn param_name(&self, index: usize) -> &'static str {
        self.decl()
            .params
            .iter()
            .filter(|p| p.kind.in_launch_abi())
            .nth(index)
            .map_or("?", |p| p.name.as_ref())
    }

    /// The launch argument of parameter `name`.
    pub(crate) fn param_index(&self, name: &str) -> Option<usize> {
        self.decl()
            .params
            .iter()
            .filter(|p| p.kind.in_launch_abi())
            .position(|p| p.name == name)
    }
}

/// One node of the DAG: a kernel, or a group's members in order.
pub(crate) struct Node {
    pub(crate) label: String,
    pub(crate) members: Vec<Launch>,
    pub(crate) accesses: Vec<(Access, Region)>,
}

struct State {
    name: String,
    device: Option<Device>,
    nodes: Vec<Node>,
}

thread_local! {
    static ACTIVE: RefCell<Vec<State>> = const { RefCell::new(Vec::new()) };
    /// `ACTIVE`'s length, read by every launch: one `Cell` read when nothing records.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread is recording a kernel graph (every launch asks, so it is one read).
#[inline]
pub fn recording() -> bool {
    DEPTH.try_with(Cell::get).unwrap_or(0) > 0
}

/// The handle [`record`]'s closure gets: launches through it (`k::launch_in(r, ..)`) are
/// recorded into its graph and return their node.
pub struct Recorder {
    depth: usize,
    // Recording state is per thread.
    _not_send: PhantomData<*const ()>,
}

impl Recorder {
    /// Checks and records one launch of `handle`'s kernel (what `k::launch_in` calls).
    pub fn launch(
        &mut self,
        handle: &'static KernelHandle,
        cfg: &LaunchConfig,
        args: &[LaunchArg<'_>],
        constexprs: &[ConstValue],
    ) -> Result<NodeId> {
        let mut buffer = ParamBuffer::new();
        let prepared = prepare(handle, cfg, args, constexprs, &mut buffer)?;
        record_launches(Some(self.depth), std::slice::from_ref(&prepared), None)
    }

    /// Checks `args` against each member of `group` and records the group as one node.
    pub fn launch_group(
        &mut self,
        group: &'static KernelGroupDecl,
        cfg: &LaunchConfig,
        args: &[LaunchArg<'_>],
        constexprs: &[ConstValue],
    ) -> Result<NodeId> {
        let mut buffers: Vec<ParamBuffer> =
            group.members.iter().map(|_| ParamBuffer::new()).collect();
        let prepared = group
            .members
            .iter()
            .zip(&mut buffers)
            .map(|(handle, buffer)| prepare(handle, cfg, args, constexprs, buffer))
            .collect::<Result<Vec<_>>>()?;
        record_launches(Some(self.depth), &prepared, Some(group.name))
    }

    /// Nodes recorded so far.
    pub fn len(&self) -> usize {
        ACTIVE.with(|a| a.borrow().get(self.depth).map_or(0, |s| s.nodes.len()))
    }

    /// Whether no launch has been recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Records the launches `f` makes on `device` as a graph named "graph", without running them.
///
/// ```
/// # fn main() -> opbox_runtime::Result<()> {
/// use opbox_runtime::Device;
/// let g = opbox_runtime::graph::record(Device::Cpu, |_r| Ok(()))?;
/// assert!(g.is_empty() && g.edges().is_empty());
/// # Ok(())
/// # }
/// ```
pub fn record(device: Device, f: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<Graph> {
    record_named("graph", device, f)
}

/// [`record`], naming the graph (errors and fault reports name it).
pub fn record_named(
    name: &str,
    device: Device,
    f: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<Graph> {
    record_with(name, Some(device), f).map(|(g, ())| g)
}

/// Records every launch `op`'s impl makes for `args` (on their device), as a graph named after
/// the op, and returns it with the op's result: the outputs the op allocated, which a replay
/// writes again.
pub fn record_op<A: IntoStack, R: FromStack>(op: &OpHandle, args: A) -> Result<(Graph, R)> {
    let mut devices = crate::value::Devices::default();
    args.note_devices(&mut devices);
    let Some(Some(device)) = devices.single() else {
        return Err(Error::Graph {
            graph: op.name().to_string(),
            message:
                "record_op needs tensor arguments, all on one device: the graph's device is theirs"
                    .into(),
        });
    };
    record_with(op.name(), Some(device), |_| op.call(args))
}

fn record_with<R>(
    name: &str,
    device: Option<Device>,
    f: impl FnOnce(&mut Recorder) -> Result<R>,
) -> Result<(Graph, R)> {
    /// Ends the recording when `f` unwinds (or, disarmed, only keeps the depth in step).
    struct Pop {
        armed: bool,
    }
    impl Drop for Pop {
        fn drop(&mut self) {
            if self.armed {
                let _ = ACTIVE.try_with(|a| a.borrow_mut().pop());
            }
            let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    let depth = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        a.push(State {
            name: name.to_string(),
            device,
            nodes: Vec::new(),
        });
        a.len() - 1
    });
    DEPTH.with(|d| d.set(depth + 1));
    let mut pop = Pop { armed: true };
    let mut recorder = Recorder {
        depth,
        _not_send: PhantomData,
    };
    let out = f(&mut recorder);
    // Inner recordings popped themselves, so this one is on top.
    let state = ACTIVE.with(|a| a.borrow_mut().pop());
    pop.armed = false;
    drop(pop);
    let value = out?;
    let state = state.ok_or_else(|| Error::Graph {
        graph: name.to_string(),
        message: "the recording ended early (a nested recording was not closed)".into(),
    })?;
    let device = state.device.unwrap_or(Device::Cpu);
    Ok((Graph::new(state.name, device, state.nodes), value))
}

/// Records `prepared` (one kernel, or a group's members) as one node of the recording at
/// `depth`, else the innermost one.
pub(crate) fn record_launches(
    depth: Option<usize>,
    prepared: &[PreparedLaunch<'_>],
    group: Option<&str>,
) -> Result<NodeId> {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let top = a.len().checked_sub(1);
        let state = depth
            .or(top)
            .and_then(|d| a.get_mut(d))
            .ok_or_else(|| Error::Graph {
                graph: String::new(),
                message: "a launch was recorded outside opbox::graph::record".into(),
            })?;
        if prepared.is_empty() {
            return Err(Error::Graph {
                graph: state.name.clone(),
                message: format!(
                    "group {} has no members to record",
                    group.unwrap_or("?")
                ),
            });
        }
        let mut node = Node {
            label: String::new(),
            members: Vec::with_capacity(prepared.len()),
            accesses: Vec::new(),
        };
        for p in prepared {
            let decl = p.decl();
            match state.device {
                Some(d) if d != p.device() => {
                    return Err(Error::Graph {
                        graph: state.name.clone(),
                        message: format!(
                            "kernel {} launches on {}, but the graph records on {d}; record each device's launches in a graph of its own",
                            decl.rust_name,
                            p.device()
                        ),
                    })
                }
                Some(_) => {}
                None => state.device = Some(p.device()),
            }
            for (access, t) in p.tensors() {
                if let Some(range) = t.address_range() {
                    node.accesses.push((access, Region::Memory(range)));
                }
            }
            if decl.abi == EntryAbi::ConstantParams {
                node.accesses
                    .push((Access::ReadWrite, Region::ConstantParams));
            }
            let mut cfg = p.config().clone();
            cfg.stream = None;
            node.members.push(Launch {
                handle: p.handle(),
                cfg,
                args: p.args().iter().map(LaunchArg::to_owned_arg).collect(),
                constexprs: p.constexprs().to_vec(),
            });
        }
        node.label = match (group, prepared.first()) {
            (Some(g), _) => g.to_string(),
            (None, Some(p)) => p.decl().rust_name.to_string(),
            (None, None) => String::new(),
        };
        state.nodes.push(node);
        Ok(NodeId(state.nodes.len() - 1))
    })
}
