//! [`KernelHandle`]: one per kernel declaration (a `static` that `#[extern_kernel]` emits), and
//! the backends' caches of what they built from it.

use std::sync::{Arc, RwLock};

use opbox_codegen::cuda::{ConstValue, KernelDecl};

use super::plan::LaunchPlan;

/// Per-declaration state; `const`-constructible for use in a `static`. Each backend keeps its
/// loaded kernels here, so a repeat launch finds them with no hashing and no lock.
pub struct KernelHandle {
    decl: &'static KernelDecl,
    /// The CPU build of a `#[kernel]` (DSL) kernel; `None` for an `#[extern_kernel]`.
    cpu: Option<crate::backend::cpu::dsl::CpuEntry>,
    /// The slice parameters a DSL kernel's body moves as float4 (`load4`/`store4`).
    vectors: &'static [VectorParam],
    /// What a launch checks, when the declaration has the common shape.
    plan: Option<LaunchPlan>,
    #[cfg(feature = "cuda")]
    pub(crate) cuda: crate::backend::cuda::loader::CudaSlots,
}

impl KernelHandle {
    /// An `#[extern_kernel]`'s handle, with nothing loaded yet.
    pub const fn new(decl: &'static KernelDecl) -> KernelHandle {
        KernelHandle {
            decl,
            cpu: None,
            vectors: &[],
            plan: LaunchPlan::of(decl),
            #[cfg(feature = "cuda")]
            cuda: crate::backend::cuda::loader::CudaSlots::new(),
        }
    }

    /// A DSL kernel's handle: launches on CPU tensors run `cpu`, the body built as Rust; the
    /// parameters in `vectors` must start at a 16-byte boundary (checked at each launch).
    pub const fn with_cpu(
        decl: &'static KernelDecl,
        cpu: crate::backend::cpu::dsl::CpuEntry,
        vectors: &'static [VectorParam],
    ) -> KernelHandle {
        KernelHandle {
            decl,
            cpu: Some(cpu),
            vectors,
            // The plan does not check the float4 alignment that `vectors` need.
            plan: if vectors.is_empty() {
                LaunchPlan::of(decl)
            } else {
                None
            },
            #[cfg(feature = "cuda")]
            cuda: crate::backend::cuda::loader::CudaSlots::new(),
        }
    }

    /// The CPU build, for a DSL kernel.
    #[inline]
    pub fn cpu(&self) -> Option<crate::backend::cpu::dsl::CpuEntry> {
        self.cpu
    }

    /// The launch checks worked out from the declaration, if it has the common shape.
    #[inline]
    pub fn plan(&self) -> Option<&LaunchPlan> {
        self.plan.as_ref()
    }

    /// The kernel's declaration.
    pub fn decl(&self) -> &'static KernelDecl {
        self.decl
    }

    /// How the body moves parameter `index` (a declaration index) four f32 at a time, if it
    /// does: the first of `load4`/`store4` it calls on it.
    pub fn vector_method(&self, index: usize) -> Option<&'static str> {
        self.vectors
            .iter()
            .find(|v| v.index == index)
            .map(|v| v.method)
    }
}

/// A slice parameter that a `#[kernel]` moves as float4 (`x.load4(i)`, `y.store4(i, v)`): its
/// tensor must start at a 16-byte boundary, which every launch checks, so that the CUDA build
/// can issue one 16-byte access per vector (a misaligned one faults on the GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorParam {
    /// The parameter's index in the declaration (constexprs counted).
    pub index: usize,
    /// `"load4"` or `"store4"`, the first the body calls on it, for the message.
    pub method: &'static str,
}

struct Specialization<T> {
    ordinal: usize,
    values: Vec<ConstValue>,
    kernel: Arc<T>,
}

/// The specializations of one kernel: `(device, constexpr values) → T`, read-locked and scanned
/// (a kernel has few), values compared bit for bit. Generic so that its lookup can be measured
/// without a GPU (benches/kernel_args.rs).
pub struct SpecTable<T> {
    list: RwLock<Vec<Specialization<T>>>,
}

impl<T> Default for SpecTable<T> {
    fn default() -> Self {
        SpecTable::new()
    }
}

impl<T> SpecTable<T> {
    /// An empty table.
    pub const fn new() -> SpecTable<T> {
        SpecTable {
            list: RwLock::new(Vec::new()),
        }
    }

    /// The entry for `(ordinal, values)`: a read lock, a short scan and an `Arc` clone.
    #[inline]
    pub fn find(&self, ordinal: usize, values: &[ConstValue]) -> Option<Arc<T>> {
        let list = self.list.read().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .find(|s| {
                s.ordinal == ordinal
                    && s.values.len() == values.len()
                    && s.values.iter().zip(values).all(|(a, b)| a.same_bits(b))
            })
            .map(|s| Arc::clone(&s.kernel))
    }

    /// Adds the kernel compiled for `(ordinal, values)`.
    pub fn insert(&self, ordinal: usize, values: &[ConstValue], kernel: Arc<T>) {
        let mut list = self.list.write().unwrap_or_else(|p| p.into_inner());
        list.push(Specialization {
            ordinal,
            values: values.to_vec(),
            kernel,
        });
    }

    /// How many specializations are held.
    pub fn len(&self) -> usize {
        self.list.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
