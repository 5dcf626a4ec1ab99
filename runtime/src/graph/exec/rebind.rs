//! Re-binding an instantiated graph: the [`Binder`](crate::graph::bind::Binder) checks and
//! applies the bindings, then each launch whose arguments changed gets its new parameters
//! (`cuGraphExecKernelNodeSetParams`), or its new struct for a constant_params kernel.

use cudarc::driver::sys;

use super::GraphExec;
use crate::error::{Error, Result};
use crate::graph::bind::Bindings;
use crate::kernel::OwnedArg;

impl GraphExec {
    pub(super) fn rebind(&mut self, bindings: &Bindings<'_>) -> Result<()> {
        let dirty = self.binder.apply(bindings, &mut self.launches)?;
        if dirty.is_empty() {
            return Ok(());
        }
        self.context
            .bind_to_thread()
            .map_err(|e| self.error(format!("binding the context: {e}")))?;
        for l in dirty {
            if let Some(src) = &self.launches[l].constant {
                let [OwnedArg::Native { bytes, .. }] = self.launches[l].launch.args.as_slice()
                else {
                    continue;
                };
                super::constant::upload(self.name, src, bytes, self.ordinal)?;
                continue;
            }
            let launch = &mut self.launches[l];
            launch.packed.repack(&launch.launch)?;
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
                        launch.launch.decl().rust_name
                    ),
                })?;
        }
        Ok(())
    }
}
