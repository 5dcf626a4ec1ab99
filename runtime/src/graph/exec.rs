//! A graph instantiated as a CUDA graph through the driver's graph API: one kernel node per
//! launch (a group's members chained), with exactly the derived dependencies, no stream
//! capture. A replay re-binds what changed with `cuGraphExecKernelNodeSetParams` on the nodes
//! that use it, then launches; it never re-instantiates.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{sys, CudaContext, DriverError};
use opbox_codegen::cuda::{EntryAbi, KernelDecl};

use super::bind::Bindings;
use super::record::Launch;
use super::Graph;
use crate::backend::cuda::context::device;
use crate::backend::cuda::current::cuda_stream_for;
use crate::backend::cuda::loader::LoadedKernel;
use crate::error::{Error, Result};
use crate::kernel::prepare::Chunk;
use crate::kernel::{prepare, OwnedArg, ParamBuffer};
use crate::tensor::{Device, Tensor};

/// A launch's parameters, owned: the driver reads them through `ptrs` when a node is added or
/// its parameters are set.
struct Packed {
    _chunks: Box<[Chunk]>,
    ptrs: Box<[*mut c_void]>,
}

/// Checks and packs `launch` as a submit would ([`prepare`]), keeping the bytes.
fn pack(launch: &Launch) -> Result<Packed> {
    let args = launch.launch_args();
    let mut buffer = ParamBuffer::new();
    let prepared = prepare(
        launch.handle,
        &launch.cfg,
        &args,
        &launch.constexprs,
        &mut buffer,
    )?;
    let (chunks, starts) = prepared.packed();
    let mut chunks: Box<[Chunk]> = chunks.into();
    let base = chunks.as_mut_ptr();
    let ptrs = starts
        .iter()
        // SAFETY: `prepare` wrote each start as the index of a chunk in use, so `base + start`
        // stays inside `chunks`; the box's heap block does not move when the box does.
        .map(|&s| unsafe { base.add(s as usize) }.cast::<c_void>())
        .collect();
    Ok(Packed {
        _chunks: chunks,
        ptrs,
    })
}

struct ExecLaunch {
    node: sys::CUgraphNode,
    launch: Launch,
    function: sys::CUfunction,
    /// A specialization's loaded kernel (a plain kernel's lives in its static handle).
    _loaded: Option<Arc<LoadedKernel>>,
    packed: Packed,
}

impl ExecLaunch {
    fn params(&mut self) -> sys::CUDA_KERNEL_NODE_PARAMS {
        let cfg = &self.launch.cfg;
        sys::CUDA_KERNEL_NODE_PARAMS {
            func: self.function,
            gridDimX: cfg.grid.0,
            gridDimY: cfg.grid.1,
            gridDimZ: cfg.grid.2,
            blockDimX: cfg.block.0,
            blockDimY: cfg.block.1,
            blockDimZ: cfg.block.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            kernelParams: if self.packed.ptrs.is_empty() {
                std::ptr::null_mut()
            } else {
                self.packed.ptrs.as_mut_ptr()
            },
            extra: std::ptr::null_mut(),
            // Ignored when `func` is set.
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        }
    }

    fn decl(&self) -> &'static KernelDecl {
        self.launch.handle.decl()
    }

    /// The name of launch argument `index`.
    fn param_name(&self, index: usize) -> &'static str {
        self.decl()
            .params
            .iter()
            .filter(|p| p.kind.in_launch_abi())
            .nth(index)
            .map_or("?", |p| p.name.as_ref())
    }

    fn param_index(&self, name: &str) -> Option<usize> {
        self.decl()
            .params
            .iter()
            .filter(|p| p.kind.in_launch_abi())
            .position(|p| p.name == name)
    }
}

/// A tensor of the graph: the handle recorded, the one bound now, and where it is passed.
struct Buffer {
    recorded: Tensor,
    current: Tensor,
    /// (launch, argument index) of each use.
    uses: Vec<(usize, usize)>,
    /// The other buffers whose recorded memory overlaps this one's.
    overlaps: Vec<usize>,
}

/// An instantiated CUDA graph: [`GraphExec::replay`] runs it on the thread's current stream.
pub struct GraphExec {
    name: &'static String,
    ordinal: usize,
    context: Arc<CudaContext>,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    launches: Vec<ExecLaunch>,
    /// Each node's members: launches `members[n].0 .. members[n].1`.
    members: Vec<(usize, usize)>,
    buffers: Vec<Buffer>,
    /// `Tensor::as_raw` of each recorded handle → its buffer.
    by_handle: HashMap<usize, usize>,
}

// SAFETY: the driver handles are usable from any thread (the driver API is thread-safe and each
// call binds the context first); the raw parameter pointers point into boxes this value owns,
// and every mutation goes through `&mut self`.
unsafe impl Send for GraphExec {}

/// Graph names live for the process so that `opbox::cuda::synchronize` can name the last
/// graph replayed; interned, so each distinct name is kept once.
fn intern(name: &str) -> &'static String {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static String>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static String = Box::leak(Box::new(name.to_string()));
    names.insert(name.to_string(), leaked);
    leaked
}

impl Graph {
    /// Builds a CUDA graph of the recorded launches (compiling and loading each kernel on first
    /// use) and instantiates it. `abi = "constant_params"` kernels are refused (run such a
    /// graph with [`Graph::launch`]).
    pub fn instantiate(&self) -> Result<GraphExec> {
        let Device::Cuda(ordinal) = self.device else {
            return Err(self.error(format!(
                "instantiate builds a CUDA graph, but this graph was recorded on {}; run it with launch()",
                self.device
            )));
        };
        let ordinal = ordinal as usize;
        let dev = device(ordinal)?;
        let name = intern(&self.name);
        let fail =
            |what: &str, e: DriverError| self.error(format!("{what} on cuda:{ordinal}: {e}"));
        dev.context
            .bind_to_thread()
            .map_err(|e| fail("binding the context", e))?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `graph` is a valid out-pointer; flags must be 0.
        unsafe { sys::cuGraphCreate(&mut graph, 0) }
            .result()
            .map_err(|e| fail("creating a graph", e))?;
        // From here on, Drop destroys the graph (and the exec, once there is one).
        let mut exec = GraphExec {
            name,
            ordinal,
            context: dev.context.clone(),
            graph,
            exec: std::ptr::null_mut(),
            launches: Vec::new(),
            members: Vec::new(),
            buffers: Vec::new(),
            by_handle: HashMap::new(),
        };
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for e in &self.edges {
            preds[e.to.index()].push(e.from.index());
        }
        for (n, node) in self.nodes.iter().enumerate() {
            let first = exec.launches.len();
            let mut deps: Vec<sys::CUgraphNode> = preds[n]
                .iter()
                .map(|&p| exec.launches[exec.members[p].1 - 1].node)
                .collect();
            for m in &node.members {
                let decl = m.handle.decl();
                if decl.abi == EntryAbi::ConstantParams {
                    return Err(self.error(format!(
                        "kernel {} (node #{n}) takes its parameters through a __constant__ symbol (abi = \"constant_params\"), which CUDA graphs of opbox do not write yet; run this graph with launch()",
                        decl.rust_name
                    )));
                }
                let (function, loaded) = if m.constexprs.is_empty() {
                    (m.handle.get(ordinal)?.function.cu_function(), None)
                } else {
                    let k = m.handle.get_specialized(ordinal, &m.constexprs)?;
                    (k.function.cu_function(), Some(k))
                };
                let mut launch = ExecLaunch {
                    node: std::ptr::null_mut(),
                    launch: m.clone(),
                    function,
                    _loaded: loaded,
                    packed: pack(m)?,
                };
                let params = launch.params();
                // Loading may have bound another context; the graph's must be current.
                dev.context
                    .bind_to_thread()
                    .map_err(|e| fail("binding the context", e))?;
                // SAFETY: `graph` is live; `deps` holds nodes of this graph; `params` names a
                // function loaded in this device's context, and its kernelParams point at this
                // launch's packed parameters (checked by `prepare` against the declaration, which
                // the kernel's static_asserts tie to its C++ signature), which the driver copies.
                unsafe {
                    sys::cuGraphAddKernelNode_v2(
                        &mut launch.node,
                        exec.graph,
                        deps.as_ptr(),
                        deps.len(),
                        &params,
                    )
                }
                .result()
                .map_err(|e| fail(&format!("adding kernel {} (node #{n})", decl.rust_name), e))?;
                deps = vec![launch.node];
                let index = exec.launches.len();
                for (a, arg) in launch.launch.args.iter().enumerate() {
                    if let OwnedArg::Tensor(t) = arg {
                        exec.note_use(t, (index, a));
                    }
                }
                exec.launches.push(launch);
            }
            exec.members.push((first, exec.launches.len()));
        }
        exec.note_overlaps();
        let mut instance: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `exec.graph` is a complete graph of this context; `instance` is an out-pointer.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut instance, exec.graph, 0) }
            .result()
            .map_err(|e| fail("instantiating the graph", e))?;
        exec.exec = instance;
        Ok(exec)
    }

    fn error(&self, message: String) -> Error {
        Error::Graph {
            graph: self.name.clone(),
            message,
        }
    }
}

impl GraphExec {
    pub fn name(&self) -> &str {
        self.name
    }

    fn error(&self, message: String) -> Error {
        Error::Graph {
            graph: self.name.to_string(),
            message,
        }
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
            self.buffers.len() - 1
        });
        self.buffers[id].uses.push(at);
    }

    fn note_overlaps(&mut self) {
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

    /// Re-binds `bindings` (in force for later replays too) and launches the graph on the
    /// thread's current stream. Nothing is re-instantiated: each node whose arguments changed
    /// gets its new parameters with `cuGraphExecKernelNodeSetParams`. Every binding is checked
    /// before any is applied. A fault inside the graph surfaces at the next synchronization
    /// ([`GraphExec::synchronize`] names this graph).
    pub fn replay(&mut self, bindings: &Bindings<'_>) -> Result<()> {
        self.bind(bindings)?;
        self.launch()
    }

    /// Re-binds `bindings` without launching (what [`GraphExec::replay`] does first).
    pub fn bind(&mut self, bindings: &Bindings<'_>) -> Result<()> {
        if bindings.is_empty() {
            return Ok(());
        }
        self.rebind(bindings)
    }

    /// Launches the graph with its current bindings.
    pub fn launch(&mut self) -> Result<()> {
        let stream = cuda_stream_for(self.ordinal)?;
        let fail = |e: DriverError| {
            self.error(format!("launching the graph on cuda:{}: {e}", self.ordinal))
        };
        self.context.bind_to_thread().map_err(fail)?;
        crate::backend::cuda::submit::note_graph(self.ordinal, self.name);
        // SAFETY: `exec` is the live instantiation of this context's graph; the stream belongs
        // to the same device. Every tensor it reads or writes is held by `self`.
        unsafe { sys::cuGraphLaunch(self.exec, stream.cu_stream()) }
            .result()
            .map_err(fail)
    }

    /// Waits for the device and names this graph if a kernel faulted (the driver does not say
    /// which node). After a fault the device's context is unusable, as CUDA's rule is.
    pub fn synchronize(&self) -> Result<()> {
        self.context.synchronize().map_err(|e| {
            self.error(format!(
                "a kernel failed during a replay on cuda:{} (reported at synchronization): {e}",
                self.ordinal
            ))
        })
    }

    fn rebind(&mut self, bindings: &Bindings<'_>) -> Result<()> {
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

impl Drop for GraphExec {
    fn drop(&mut self) {
        // A destructor has no one to report to; a lost context frees everything anyway.
        let _ = self.context.bind_to_thread();
        if !self.exec.is_null() {
            // SAFETY: `exec` came from cuGraphInstantiateWithFlags and is destroyed once, here.
            let _ = unsafe { sys::cuGraphExecDestroy(self.exec) };
        }
        if !self.graph.is_null() {
            // SAFETY: `graph` came from cuGraphCreate and is destroyed once, here.
            let _ = unsafe { sys::cuGraphDestroy(self.graph) };
        }
    }
}
