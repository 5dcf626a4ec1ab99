//! Kernel groups (PyPTO's): kernels that take one signature and dispatch as one unit, in
//! order on one stream, and that a kernel graph records as one node. `#[kernel_group]` emits a
//! [`KernelGroupDecl`] and its `launch`; the members are all `#[extern_kernel]`s or all
//! `#[kernel]`s, and agree on their parameters (both checked at compile time).

use opbox_codegen::cuda::ConstValue;

use super::arg::LaunchArg;
use super::config::LaunchConfig;
use super::handle::KernelHandle;
use super::prepare::{prepare, ParamBuffer};
use crate::error::Result;

/// A group: its name and its members, in launch order.
pub struct KernelGroupDecl {
    /// The group's name (its Rust module).
    pub name: &'static str,
    /// The member kernels, in launch order.
    pub members: &'static [&'static KernelHandle],
}

/// Checks `args` against every member, then launches the members in order (or, while this
/// thread records a kernel graph, records them as one node).
pub fn launch_group(
    group: &'static KernelGroupDecl,
    cfg: &LaunchConfig,
    args: &[LaunchArg<'_>],
    constexprs: &[ConstValue],
) -> Result<()> {
    let mut buffers: Vec<ParamBuffer> = group.members.iter().map(|_| ParamBuffer::new()).collect();
    let mut prepared = group
        .members
        .iter()
        .zip(&mut buffers)
        .map(|(handle, buffer)| prepare(handle, cfg, args, constexprs, buffer))
        .collect::<Result<Vec<_>>>()?;
    if crate::graph::recording() {
        return crate::graph::record::record_launches(None, &prepared, Some(group.name)).map(drop);
    }
    prepared.iter_mut().try_for_each(super::launch::submit)
}
