//! Collects every registration once, checks it, and freezes it into lock-free lookup tables.

use std::collections::HashMap;
use std::sync::OnceLock;

use opbox_codegen::schema::Schema;

use super::key::DispatchKey;
use super::kernel::BoxedKernelFn;
use super::registration::{KernelRegistration, LibraryKind, LibraryRegistration};
use crate::error::Site;
use crate::{Error, Result};

#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSlot {
    pub(crate) kernel: BoxedKernelFn,
    pub(crate) site: Site,
    pub(crate) function: &'static str,
}

/// One op with its kernels. Leaked once at collection, so handles are `&'static`.
#[derive(Debug)]
pub(crate) struct OpEntry {
    pub(crate) name: String,
    pub(crate) schema: &'static Schema,
    pub(crate) site: Site,
    pub(crate) kernels: [Option<KernelSlot>; DispatchKey::COUNT],
    /// Indices of the arguments whose type mentions Tensor: the only ones dispatch looks at.
    pub(crate) tensor_args: Vec<usize>,
}

impl OpEntry {
    /// The exact key's kernel, else the CompositeExplicit one.
    pub(crate) fn kernel_for(&self, key: DispatchKey) -> Option<BoxedKernelFn> {
        self.kernels[key.index()]
            .or(self.kernels[DispatchKey::CompositeExplicit.index()])
            .map(|slot| slot.kernel)
    }

    pub(crate) fn available_keys(&self) -> Vec<String> {
        DispatchKey::ALL
            .into_iter()
            .filter(|k| self.kernels[k.index()].is_some())
            .map(|k| k.name().to_string())
            .collect()
    }
}

pub(crate) struct Registry {
    pub(crate) ops: HashMap<String, &'static OpEntry>,
    pub(crate) error: Option<Error>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The registry, collected on first use. Later reads are one atomic load.
pub(crate) fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        let mut libraries: Vec<&'static LibraryRegistration> =
            inventory::iter::<LibraryRegistration>.into_iter().collect();
        let mut kernels: Vec<&'static KernelRegistration> =
            inventory::iter::<KernelRegistration>.into_iter().collect();
        // inventory's order is unspecified: sort so "first" and "second" in errors are stable.
        libraries.sort_by_key(|l| (l.site.file, l.site.line, l.namespace));
        kernels.sort_by_key(|k| (k.site.file, k.site.line, k.op));
        collect(&libraries, &kernels)
    })
}

/// Every op name, sorted.
pub fn registered_ops() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = registry().ops.values().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    names
}

pub(crate) fn qualified_name(namespace: &str, schema: &Schema) -> String {
    if schema.name.overload.is_empty() {
        format!("{namespace}::{}", schema.name.name)
    } else {
        format!("{namespace}::{}.{}", schema.name.name, schema.name.overload)
    }
}

fn collect(libraries: &[&'static LibraryRegistration], kernels: &[&'static KernelRegistration]) -> Registry {
    let mut errors = Vec::new();
    let mut definers: HashMap<&str, Site> = HashMap::new();
    let mut entries: HashMap<String, OpEntry> = HashMap::new();

    for lib in libraries {
        if lib.kind == LibraryKind::Def {
            if let Some(first) = definers.insert(lib.namespace, lib.site) {
                errors.push(Error::DuplicateLibrary {
                    namespace: lib.namespace.to_string(),
                    first,
                    second: lib.site,
                });
            }
        }
        for def in lib.ops {
            let name = qualified_name(lib.namespace, def.schema);
            if let Some(existing) = entries.get(&name) {
                errors.push(Error::DuplicateOp { op: name, first: existing.site, second: def.site });
                continue;
            }
            let tensor_args = def
                .schema
                .arguments
                .iter()
                .enumerate()
                .filter(|(_, a)| a.ty.mentions_tensor())
                .map(|(i, _)| i)
                .collect();
            entries.insert(
                name.clone(),
                OpEntry {
                    name,
                    schema: def.schema,
                    site: def.site,
                    kernels: [None; DispatchKey::COUNT],
                    tensor_args,
                },
            );
        }
    }

    for reg in kernels {
        let Some(entry) = entries.get_mut(reg.op) else {
            errors.push(Error::ImplWithoutDef {
                op: reg.op.to_string(),
                key: reg.key.to_string(),
                site: reg.site,
            });
            continue;
        };
        let slot = &mut entry.kernels[reg.key.index()];
        match slot {
            Some(existing) if existing.function == reg.function => {}
            Some(existing) => errors.push(Error::DuplicateImpl {
                op: reg.op.to_string(),
                key: reg.key.to_string(),
                first: existing.site,
                second: reg.site,
            }),
            None => {
                *slot = Some(KernelSlot { kernel: reg.kernel, site: reg.site, function: reg.function })
            }
        }
    }

    let ops = entries
        .into_iter()
        .map(|(name, entry)| (name, &*Box::leak(Box::new(entry))))
        .collect();
    let error = match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(Error::Registration(errors)),
    };
    Registry { ops, error }
}

/// Returns the collection's errors, if any.
pub(crate) fn check() -> Result<&'static Registry> {
    let registry = registry();
    match &registry.error {
        Some(error) => Err(error.clone()),
        None => Ok(registry),
    }
}
