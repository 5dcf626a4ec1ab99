//! Every `#[extern_kernel]` linked into this binary (or plugin): each expansion submits one
//! [`ExternKernelRegistration`] to `inventory`, so tools such as `opbox aot` can compile them all
//! without a list kept by hand.

use std::sync::OnceLock;

use opbox_codegen::cuda::KernelDecl;
use opbox_codegen::native::{Initializer, NativeSchema};

use crate::error::{Error, Result};

/// One `#[extern_kernel]` declaration, and the Rust module it was declared in.
#[derive(Debug)]
pub struct ExternKernelRegistration {
    /// The kernel's declaration.
    pub decl: &'static KernelDecl,
    /// `module_path!()` inside the kernel's generated module (`crate::shaders::render`): tells
    /// apart two kernels of one name.
    pub module_path: &'static str,
}

inventory::collect!(ExternKernelRegistration);

/// Every registered extern kernel, sorted by name, then module, so listings and AOT output
/// order are stable from run to run (inventory's own order is unspecified).
pub fn registered_kernels() -> &'static [&'static ExternKernelRegistration] {
    static ALL: OnceLock<Vec<&'static ExternKernelRegistration>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<_> = inventory::iter::<ExternKernelRegistration>
            .into_iter()
            .collect();
        all.sort_by(|a, b| {
            (a.decl.rust_name.as_ref(), a.module_path)
                .cmp(&(b.decl.rust_name.as_ref(), b.module_path))
        });
        all
    })
}

/// The registered kernels named in `names` (all of them when `names` is empty), in registry
/// order. An unknown name is an error that lists a close match, or the registered names.
pub fn select_kernels(names: &[String]) -> Result<Vec<&'static ExternKernelRegistration>> {
    let all = registered_kernels();
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    for name in names {
        if !all.iter().any(|k| k.decl.rust_name == name.as_str()) {
            return Err(unknown_kernel(name, all));
        }
    }
    Ok(all
        .iter()
        .copied()
        .filter(|k| names.iter().any(|n| k.decl.rust_name == n.as_str()))
        .collect())
}

#[cold]
fn unknown_kernel(name: &str, all: &[&ExternKernelRegistration]) -> Error {
    let names = || all.iter().map(|k| k.decl.rust_name.as_ref());
    let hint = match crate::dispatch::suggest::closest(name, names()) {
        Some(close) => format!("did you mean '{close}'?"),
        None if all.is_empty() => "no #[extern_kernel] is linked into this binary".into(),
        None => format!("registered: {}", names().collect::<Vec<_>>().join(", ")),
    };
    Error::InvalidArgument(format!("no extern kernel named '{name}'; {hint}"))
}

/// The `#[derive(KernelArg)]` structs (opbox-generated C++ twins) that the other registered
/// kernels of `decl`'s entry file take, sorted by C++ name. NVRTC compiles the whole file for
/// each of its kernels, so a kernel whose file also holds `void k2(Container c)` needs
/// `Container` defined even though it does not take one.
pub fn shared_structs(decl: &KernelDecl) -> Vec<&'static NativeSchema> {
    let Some(entry) = decl.sources.first() else {
        return Vec::new();
    };
    let mut out: Vec<&'static NativeSchema> = Vec::new();
    for k in registered_kernels() {
        let same_file = k
            .decl
            .sources
            .first()
            .is_some_and(|f| f.name == entry.name && f.content == entry.content);
        if !same_file || k.decl.rust_name == decl.rust_name {
            continue;
        }
        for p in k.decl.native_params() {
            let generated = p.schema.initializer == Initializer::Generated;
            if generated && !out.iter().any(|s| s.native_name == p.schema.native_name) {
                out.push(p.schema);
            }
        }
    }
    out.sort_by(|a, b| a.native_name.cmp(b.native_name));
    out
}
