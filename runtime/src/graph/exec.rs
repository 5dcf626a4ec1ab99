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
    /// For an `abi = "constant_params"` kernel: the device buffer its memcpy node copies into
    /// the `params` symbol before the kernel node runs. A re-bound struct is written there, on
    /// the stream replays run on, so it lands between the replays before and after.
    constant: Option<Tensor>,
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
    /// Whether a replay was launched: dropping then waits for the device, so that no tensor the
    /// exec holds is freed under a replay still running.
    launched: bool,
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
            members: Vec::new(),
            buffers: Vec::new(),
            by_handle: HashMap::new(),
            launched: false,
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
                    let copy = constant_params_node(&mut launch, loaded, &exec, &deps)?;
                    deps = vec![copy];
                }
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
        self.launched = true;
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
            if let Some(src) = &self.launches[l].constant {
                let [OwnedArg::Native { bytes, .. }] = self.launches[l].launch.args.as_slice()
                else {
                    continue;
                };
                upload(self.name, src, bytes, self.ordinal)?;
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

/// Adds the memcpy node that writes `launch`'s struct into its module's `params` symbol (after
/// `deps`), from a device buffer filled now: a graph copies device to device, so no host buffer
/// has to outlive it. Returns the node, which the kernel node then depends on.
fn constant_params_node(
    launch: &mut ExecLaunch,
    loaded: &LoadedKernel,
    exec: &GraphExec,
    deps: &[sys::CUgraphNode],
) -> Result<sys::CUgraphNode> {
    let decl = launch.decl();
    let [OwnedArg::Native { schema, bytes }] = launch.launch.args.as_slice() else {
        return Err(exec.error(format!(
            "kernel {}: abi constant_params takes exactly one struct argument",
            decl.rust_name
        )));
    };
    let stream = cuda_stream_for(exec.ordinal)?;
    let native = crate::kernel::NativeBytes::from_slice(schema, bytes);
    let symbol =
        crate::backend::cuda::submit::params_symbol(decl, loaded, &stream, exec.ordinal, &native)?;
    let src = Tensor::zeros(
        &[bytes.len()],
        crate::tensor::DType::U8,
        Device::Cuda(exec.ordinal as u32),
    )?;
    upload(exec.name, &src, bytes, exec.ordinal)?;
    let len = bytes.len();
    let copy = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src.device_ptr()?,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: len,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: symbol,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: len,
        dstHeight: 1,
        WidthInBytes: len,
        Height: 1,
        Depth: 1,
    };
    exec.context
        .bind_to_thread()
        .map_err(|e| exec.error(format!("binding the context: {e}")))?;
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `exec.graph` is live and `deps` are its nodes; the copy reads `len` bytes of
    // `src`, a device buffer this launch keeps as long as the exec lives, and writes the
    // `params` symbol of a module the kernel's handle keeps loaded, `len` bytes long (checked by
    // `params_symbol`). Both are in the context passed.
    unsafe {
        sys::cuGraphAddMemcpyNode(
            &mut node,
            exec.graph,
            deps.as_ptr(),
            deps.len(),
            &copy,
            exec.context.cu_ctx(),
        )
    }
    .result()
    .map_err(|e| {
        exec.error(format!(
            "adding the params copy of kernel {}: {e}",
            decl.rust_name
        ))
    })?;
    launch.constant = Some(src);
    Ok(node)
}

/// Writes a struct's bytes into `src` on the thread's current stream (where replays run).
fn upload(
    graph: &str,
    src: &Tensor,
    bytes: &[std::mem::MaybeUninit<u8>],
    ordinal: usize,
) -> Result<()> {
    let stream = cuda_stream_for(ordinal)?;
    let dst = src.device_ptr()?;
    // SAFETY: `dst` is `src`'s device buffer, allocated with exactly `bytes.len()` bytes and
    // alive for the call; `bytes` is borrowed for the call, and a pageable source is staged
    // before the call returns. Possibly uninitialized padding is copied as bytes, never read.
    unsafe { cudarc::driver::result::memcpy_htod_async(dst, bytes, stream.cu_stream()) }.map_err(
        |e| Error::Graph {
            graph: graph.to_string(),
            message: format!("writing a constant_params struct on cuda:{ordinal}: {e}"),
        },
    )
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
        if self.launched {
            // A fault is reported to whoever synchronizes next; here it only ends the wait.
            let _ = self.context.synchronize();
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
