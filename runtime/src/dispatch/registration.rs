//! What the macros submit to `inventory`: static data only, collected once at first use.

use opbox_codegen::op_tag::OpTag;

use super::boxed_op::BoxedOp;
use super::fixed_list::FixedList;
use super::key::DispatchKey;
use super::shared_shim::{BoxedKernel, ParamList};
use crate::error::Site;
use crate::typemap::KernelReturn;

/// Implemented by the marker type `#[stable_library]` generates for each op.
pub trait OpSpec {
    /// `ns::name` or `ns::name.overload`.
    const NAME: &'static str;
    /// The op's static data, in its library's table of [`OpDef`]s: the one `BoxedOp` its
    /// registry entry and its boxed shims point at.
    const BOXED: &'static BoxedOp;
}

/// Whether a registration defines its namespace or adds to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryKind {
    /// `#[stable_library]`: the one definer of a namespace.
    Def,
    /// `#[stable_fragment]`: more ops for a namespace, any number of them.
    Fragment,
}

/// One op defined by a library or fragment, and the line of its `m.def`. The macro computes
/// everything here, so registering an op costs no allocation, formatting or parsing.
///
/// A library's table of these is written by the loader before `main` in a position-independent
/// executable (each pointer in it is relocated, each page of it copied), so the entry holds
/// only what nearly every op has: what few ops have sits behind `extras`, None for the rest.
#[derive(Debug)]
pub struct OpDef {
    /// The op: its qualified name, schema text and counts. Held here, not behind a pointer, so
    /// registering an op reads its name with one cache miss, not two.
    pub op: BoxedOp,
    /// `Schema::tensor_argument_mask`: bit `i` for each argument `i` (below 64) that dispatch
    /// looks at; those past it are in `extras`.
    pub tensor_args: u64,
    /// The fixed-size lists, tags and tensor arguments past the mask, for the ops that have any.
    pub extras: Option<&'static OpExtras>,
    /// The line of the `m.def`, in its library's file: one file name a library, not one an op.
    pub line: u32,
}

/// What an [`OpDef`] holds for the few ops that need it.
#[derive(Debug)]
pub struct OpExtras {
    /// `Schema::fixed_list_arguments`: the lists the boxed boundary checks.
    pub fixed_lists: &'static [FixedList],
    /// The tags `m.def_with_tags` gave the op.
    pub tags: &'static [OpTag],
    /// The tensor arguments from index 64 on (see `tensor_args`).
    pub more_tensor_args: &'static [usize],
}

impl OpDef {
    /// The fixed-size list arguments.
    pub fn fixed_lists(&self) -> &'static [FixedList] {
        self.extras.map_or(&[], |e| e.fixed_lists)
    }

    /// The tags `m.def_with_tags` gave the op (empty for a plain `m.def`).
    pub fn tags(&self) -> &'static [OpTag] {
        self.extras.map_or(&[], |e| e.tags)
    }

    /// The tensor arguments past the mask.
    pub fn more_tensor_args(&self) -> &'static [usize] {
        self.extras.map_or(&[], |e| e.more_tensor_args)
    }

    /// The definition of `op` made at run time, as the macro would have written it: a plugin's
    /// op, or a test's.
    pub(crate) fn at_run_time(op: BoxedOp, line: u32) -> OpDef {
        let schema = op.schema();
        let (tensor_args, more) = schema.tensor_argument_mask();
        let fixed_lists = super::fixed_list::fixed_lists(schema);
        let extras = (!fixed_lists.is_empty() || !more.is_empty()).then(|| {
            &*Box::leak(Box::new(OpExtras {
                fixed_lists,
                tags: &[],
                more_tensor_args: more.leak(),
            }))
        });
        OpDef {
            op,
            tensor_args,
            extras,
            line,
        }
    }
}

/// What `#[stable_library]` and `#[stable_fragment]` submit: one namespace's block of ops.
#[derive(Debug)]
pub struct LibraryRegistration {
    /// The namespace.
    pub namespace: &'static str,
    /// A library or a fragment.
    pub kind: LibraryKind,
    /// The Python module `m.set_python_module("pkg.ops")` named for this block's ops, where
    /// their Python-side registrations (fake kernels, autograd) live, as PyTorch's
    /// `Library::set_python_module` records it. opbox stores and reports it.
    pub python_module: Option<&'static str>,
    /// Where the library or fragment is.
    pub site: Site,
    /// Its ops.
    pub ops: &'static [OpDef],
}

impl LibraryRegistration {
    /// Where `def`, one of this block's ops, is: its line in the block's file.
    pub fn site_of(&self, def: &OpDef) -> Site {
        Site {
            file: self.site.file,
            line: def.line,
        }
    }
}

/// One kernel of one op for one dispatch key, as `#[stable_impl]` registers it: in a
/// [`KernelGroup`], which holds what its kernels share (file and origin), so that each kernel
/// is three relocated pointers (its op, its kernel and its shape's entries) and 32 bytes of static
/// data.
#[derive(Debug)]
pub struct KernelRegistration {
    /// The op, from its marker: its `BoxedOp` in its library's table, where the registry finds
    /// its entry by address, reading neither its name nor a hash map.
    pub op: &'static BoxedOp,
    /// The dispatch key it runs for.
    pub key: DispatchKey,
    /// The line of the implementing function, in its group's file.
    pub line: u32,
    /// The kernel, with the boxed and typed entries shared by the kernels of its shape, or a
    /// hand-written boxed kernel ([`BoxedKernel::raw`]).
    pub kernel: BoxedKernel,
}

impl KernelRegistration {
    /// `kernel`, a kernel of parameter list `P` returning `R`, for `op` under `key`: behind the
    /// boxed and typed entries shared by every kernel of that list and return.
    pub const fn of<P: ParamList, R: KernelReturn>(
        op: &'static BoxedOp,
        key: DispatchKey,
        line: u32,
        kernel: P::Kernel<R>,
    ) -> KernelRegistration {
        KernelRegistration {
            op,
            key,
            line,
            kernel: BoxedKernel::of::<P, R>(kernel),
        }
    }
}

/// The kernels of one `#[stable_impl]` (a module, or one fn): one inventory item for all of
/// them, so start-up work grows with impl blocks, not kernels. A hand-written kernel is a group
/// of one.
#[derive(Debug)]
pub struct KernelGroup {
    /// The file the impl is in.
    pub file: &'static str,
    /// What, with a kernel's op, names its function: the module (`module_path!()`) of an impl
    /// module, whose functions are named after their ops, or the path of a lone impl fn. Two
    /// registrations for one op and key from one origin are one function registered twice,
    /// not a clash.
    pub origin: &'static str,
    /// The impl's kernels.
    pub kernels: &'static [KernelRegistration],
}

impl KernelGroup {
    /// Where `kernel`, one of this group's, is.
    pub fn site(&self, kernel: &KernelRegistration) -> Site {
        Site {
            file: self.file,
            line: kernel.line,
        }
    }
}

inventory::collect!(LibraryRegistration);
inventory::collect!(KernelGroup);
