//! A graph instantiated as a CUDA graph through the driver's graph API: one kernel node per
//! launch (a group's members chained), with exactly the derived dependencies, no stream
//! capture. A replay re-binds what changed with `cuGraphExecKernelNodeSetParams` on the nodes
//! that use it, then launches; it never re-instantiates.
//!
//! On Hopper and later, the edges into a `#[kernel]` node are programmatic (programmatic
//! dependent launch): its grid is launched as its predecessors' blocks exit, and its first
//! statement waits for their completion, so the launch latency between dependent kernels
//! overlaps the predecessor's drain. Extern kernels cannot be known to wait, and keep the
//! default edges.

mod constant;
mod rebind;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{sys, CudaContext, CudaStream, DriverError};
use opbox_codegen::cuda::EntryAbi;

use super::bind::{Binder, Bindings, HoldsLaunch};
use super::record::Launch;
use super::Graph;
use crate::backend::cuda::context::device;
use crate::backend::cuda::current::cuda_stream_for;
use crate::backend::cuda::loader::LoadedKernel;
use crate::error::{Error, Result};
use crate::kernel::prepare::Chunk;
use crate::kernel::{prepare, ParamBuffer};
use crate::tensor::{Device, Tensor};

/// A launch's parameters, owned: the driver reads them through `ptrs` when a node is added or
/// its parameters are set.
struct Packed {
    /// The bytes `ptrs` point into; a heap block that stays put when `Packed` moves.
    chunks: Box<[Chunk]>,
    starts: Box<[u16]>,
    ptrs: Box<[*mut c_void]>,
}

/// Programmatic dependent launch needs compute capability 9.0 (Hopper) or later.
const PROGRAMMATIC_LAUNCH_MAJOR: u32 = 9;

/// An edge that lets its kernel start once every block of the predecessor has begun executing
/// (the launch-order port), long before the predecessor's grid has completed; the kernel's own
/// wait (`griddepcontrol.wait`) then holds it until the predecessor has completed and its
/// writes are visible. The programmatic port would wait for every block to exit or trigger,
/// and a trigger in the kernel (`griddepcontrol.launch_dependents`) slows its eager launches.
const PROGRAMMATIC_EDGE: sys::CUgraphEdgeData = sys::CUgraphEdgeData {
    from_port: sys::CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER as u8,
    to_port: 0,
    type_: sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8,
    reserved: [0; 5],
};

/// Checks `launch` as a submit would ([`prepare`]) and hands its packed chunks and their starts
/// to `f`.
fn with_packed<R>(launch: &Launch, f: impl FnOnce(&[Chunk], &[u16]) -> R) -> Result<R> {
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
    Ok(f(chunks, starts))
}

/// Checks and packs `launch`, keeping the bytes.
fn pack(launch: &Launch) -> Result<Packed> {
    with_packed(launch, Packed::new)
}

impl Packed {
    fn new(chunks: &[Chunk], starts: &[u16]) -> Packed {
        let mut chunks: Box<[Chunk]> = chunks.into();
        let base = chunks.as_mut_ptr();
        let ptrs = starts
            .iter()
            // SAFETY: `prepare` wrote each start as the index of a chunk in use, so `base +
            // start` stays inside `chunks`; the box's heap block does not move when the box does.
            .map(|&s| unsafe { base.add(s as usize) }.cast::<c_void>())
            .collect();
        Packed {
            chunks,
            starts: starts.into(),
            ptrs,
        }
    }

    /// Checks and packs `launch` again, for a re-bind: into these buffers when the layout is
    /// the same (it is, unless a by-value argument changed size), so `ptrs` stay valid and
    /// nothing is allocated.
    fn repack(&mut self, launch: &Launch) -> Result<()> {
        with_packed(launch, |chunks, starts| {
            if chunks.len() == self.chunks.len() && *starts == *self.starts {
                self.chunks.copy_from_slice(chunks);
            } else {
                *self = Packed::new(chunks, starts);
            }
        })
    }
}

struct ExecLaunch {
    node: sys::CUgraphNode,
    launch: Launch,
    function: sys::CUfunction,
    /// A specialization's loaded kernel (a plain kernel's lives in its static handle).
    _loaded: Option<Arc<LoadedKernel>>,
    packed: Packed,
    /// For an `abi = "constant_params"` kernel: the device buffer its memcpy node copies into
    /// the `params` symbol before the kernel node runs. A re-bound struct is written there, on
    /// the stream replays run on, so it lands between the replays before and after.
    constant: Option<Tensor>,
}

impl HoldsLaunch for ExecLaunch {
    fn launch(&self) -> &Launch {
        &self.launch
    }
    fn launch_mut(&mut self) -> &mut Launch {
        &mut self.launch
    }
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
            // A constant_params entry takes no parameters: its struct is in the symbol.
            kernelParams: if self.packed.ptrs.is_empty() || self.constant.is_some() {
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
}

/// An instantiated CUDA graph: [`GraphExec::replay`] runs it on the thread's current stream.
pub struct GraphExec {
    name: &'static String,
    ordinal: usize,
    context: Arc<CudaContext>,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// One per member launch, node by node.
    launches: Vec<ExecLaunch>,
    /// The bindings in force, by the handles recorded (from the graph's binder, if it was
    /// bound before instantiation).
    binder: Binder,
    /// The streams replays were launched on: dropping waits for them, so that no tensor the
    /// exec holds is freed under a replay still running.
    streams: Vec<Arc<CudaStream>>,
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
    /// use) and instantiates it. An `abi = "constant_params"` kernel gets a memcpy node that
    /// writes its struct into its `params` symbol before it runs.
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
            binder: self.binder(),
            streams: Vec::new(),
        };
        // Each node's launches: `members[n].0 .. members[n].1`.
        let mut members: Vec<(usize, usize)> = Vec::with_capacity(self.nodes.len());
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for e in &self.edges {
            preds[e.to.index()].push(e.from.index());
        }
        for (n, node) in self.nodes.iter().enumerate() {
            let first = exec.launches.len();
            let mut deps: Vec<sys::CUgraphNode> = preds[n]
                .iter()
                .map(|&p| exec.launches[members[p].1 - 1].node)
                .collect();
            for m in &node.members {
                let decl = m.handle.decl();
                let specialized = if m.constexprs.is_empty() {
                    None
                } else {
                    Some(m.handle.get_specialized(ordinal, &m.constexprs)?)
                };
                let loaded: &LoadedKernel = match &specialized {
                    Some(k) => k,
                    None => m.handle.get(ordinal)?,
                };
                let mut launch = ExecLaunch {
                    node: std::ptr::null_mut(),
                    launch: m.clone(),
                    function: loaded.function.cu_function(),
                    _loaded: specialized.clone(),
                    packed: pack(m)?,
                    constant: None,
                };
                if decl.abi == EntryAbi::ConstantParams {
                    let copy = constant::params_node(&mut launch, loaded, &exec, &deps)?;
                    deps = vec![copy];
                }
                let params = launch.params();
                // Loading may have bound another context; the graph's must be current.
                dev.context
                    .bind_to_thread()
                    .map_err(|e| fail("binding the context", e))?;
                // A #[kernel] waits for its predecessors at its first statement, so on a GPU
                // with programmatic dependent launch its grid may start as theirs drain: its
                // incoming edges are programmatic (all come from kernel nodes), the rest default.
                let programmatic = decl.is_generated()
                    && dev.compute_capability.0 >= PROGRAMMATIC_LAUNCH_MAJOR
                    && !deps.is_empty();
                let added_with = if programmatic { &[][..] } else { &deps[..] };
                // SAFETY: `graph` is live; `added_with` holds nodes of this graph; `params` names
                // a function loaded in this device's context, and its kernelParams point at this
                // launch's packed parameters (checked by `prepare` against the declaration, which
                // the kernel's static_asserts tie to its C++ signature), which the driver copies.
                unsafe {
                    sys::cuGraphAddKernelNode_v2(
                        &mut launch.node,
                        exec.graph,
                        added_with.as_ptr(),
                        added_with.len(),
                        &params,
                    )
                }
                .result()
                .map_err(|e| fail(&format!("adding kernel {} (node #{n})", decl.rust_name), e))?;
                if programmatic {
                    let to = vec![launch.node; deps.len()];
                    let edges = vec![PROGRAMMATIC_EDGE; deps.len()];
                    // SAFETY: `graph` is live; `deps`, `to` and `edges` are as long as each
                    // other, and every node in them is a kernel node of this graph.
                    unsafe {
                        sys::cuGraphAddDependencies_v2(
                            exec.graph,
                            deps.as_ptr(),
                            to.as_ptr(),
                            edges.as_ptr(),
                            deps.len(),
                        )
                    }
                    .result()
                    .map_err(|e| {
                        fail(
                            &format!("adding the edges of kernel {} (node #{n})", decl.rust_name),
                            e,
                        )
                    })?;
                }
                deps = vec![launch.node];
                exec.launches.push(launch);
            }
            members.push((first, exec.launches.len()));
        }
        let mut instance: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `exec.graph` is a complete graph of this context; `instance` is an out-pointer.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut instance, exec.graph, 0) }
            .result()
            .map_err(|e| fail("instantiating the graph", e))?;
        exec.exec = instance;
        // Uploaded now, so the first replay costs what every other does.
        let stream = cuda_stream_for(ordinal)?;
        // SAFETY: `instance` is the live exec of this context's graph; the stream is this
        // device's.
        unsafe { sys::cuGraphUpload(instance, stream.cu_stream()) }
            .result()
            .map_err(|e| fail("uploading the graph", e))?;
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
    /// The graph's name, as recorded.
    pub fn name(&self) -> &str {
        self.name
    }

    fn error(&self, message: String) -> Error {
        Error::Graph {
            graph: self.name.to_string(),
            message,
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
        if !self
            .streams
            .iter()
            .any(|s| s.cu_stream() == stream.cu_stream())
        {
            self.streams.push(stream.clone());
        }
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
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // A destructor has no one to report to; a lost context frees everything anyway.
        let _ = self.context.bind_to_thread();
        for s in &self.streams {
            // A fault is reported to whoever synchronizes next; here it only ends the wait.
            let _ = s.synchronize();
        }
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
