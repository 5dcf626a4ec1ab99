//! Which kernels share one NVRTC compile: a *module* is every kernel declared over the same
//! source file with the same build inputs. NVRTC compiles the file once for all of them, as the
//! library's own build (nvcc, one object per `.cu`) would, and each kernel is a function of the
//! one image.

use super::decl::{EntryAbi, KernelDecl};
use crate::types::ConstValue;

/// One kernel of a module: a declaration and its `#[constexpr]` values.
#[derive(Clone, Copy, Debug)]
pub struct ModuleMember<'a> {
    pub decl: &'a KernelDecl,
    pub constexprs: &'a [ConstValue],
}

/// Whether `a` and `b` compile in one unit: the same closure (names, contents, includes), the
/// same preamble, NVRTC options and build options. A `constant_params` kernel declares the
/// `params` symbol of its unit, so it is always a module of its own. (`#[constexpr]` defines
/// must agree too: [`emit_module`](super::emit_module) checks that with the values.)
pub fn shares_module(a: &KernelDecl, b: &KernelDecl) -> bool {
    a.abi != EntryAbi::ConstantParams
        && b.abi != EntryAbi::ConstantParams
        && a.sources == b.sources
        && a.preamble == b.preamble
        && a.options == b.options
        && a.build == b.build
}
