//! What the macros submit to `inventory`: static data only, collected once at first use.

use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema::Schema;

use super::fixed_list::FixedList;
use super::kernel::{BoxedKernelFn, BoxedOp};
use super::key::DispatchKey;
use super::typed::TypedKernel;
use crate::error::Site;

/// Implemented by the marker type `#[stable_library]` generates for each op.
pub trait OpSpec {
    /// `ns::name` or `ns::name.overload`.
    const NAME: &'static str;
    /// The op's parsed schema, built at compile time.
    const SCHEMA: &'static Schema;
    /// Both, as the boxed shims hand them to the shared code behind the ABI.
    const BOXED: &'static BoxedOp = &BoxedOp {
        name: Self::NAME,
        schema: Self::SCHEMA,
    };
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
/// everything here, so registering an op costs no allocation or formatting.
#[derive(Debug)]
pub struct OpDef {
    /// `ns::name[.overload]`: the schema's qualified name in its library's namespace.
    pub name: &'static str,
    /// Its parsed schema.
    pub schema: &'static Schema,
    /// Its schema's argument count. This and `num_outputs` are here so that registering an
    /// op reads none of its schema.
    pub num_args: u32,
    /// Its schema's return count.
    pub num_outputs: u32,
    /// [`Schema::tensor_arguments`]: the only arguments dispatch looks at.
    pub tensor_args: &'static [usize],
    /// [`Schema::fixed_list_arguments`]: the lists the boxed boundary checks.
    pub fixed_lists: &'static [FixedList],
    /// The tags `m.def_with_tags` gave the op (empty for a plain `m.def`).
    pub tags: &'static [OpTag],
    /// Where the `m.def` is.
    pub site: Site,
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

/// One kernel of one op for one dispatch key, as `#[stable_impl]` registers it.
#[derive(Debug)]
pub struct KernelRegistration {
    /// `ns::name[.overload]`, from the op's marker.
    pub op: &'static str,
    /// The dispatch key it runs for.
    pub key: DispatchKey,
    /// The boxed entry the dispatcher calls.
    pub kernel: BoxedKernelFn,
    /// The Rust function itself, for typed calls of exactly its parameter types; None for a
    /// hand-written boxed kernel.
    pub typed: Option<TypedKernel>,
    /// Where the impl is.
    pub site: Site,
    /// The implementing function's path, which tells a repeated registration of one function
    /// from two different functions.
    pub function: &'static str,
}

/// The kernels of one `#[stable_impl]` (a module, or one fn): one inventory item for all of
/// them, so start-up work grows with impl blocks, not kernels. A hand-written kernel can
/// still submit a lone [`KernelRegistration`].
#[derive(Debug)]
pub struct KernelGroup {
    /// The impl's kernels.
    pub kernels: &'static [KernelRegistration],
}

inventory::collect!(LibraryRegistration);
inventory::collect!(KernelRegistration);
inventory::collect!(KernelGroup);
