//! Registrations that arrive after start-up, from another binary image: a plugin's ops on the
//! host, and the host's ops as a plugin sees them. This is the one write path into the
//! registry after it is frozen; it checks a batch against everything registered so far (and
//! itself) and adds all of it or none.
//!
//! The in-process registry stays a frozen, lock-free table. Foreign ops live in a second map
//! behind a lock that only `op()` takes, on a name the frozen table does not have; a resolved
//! handle is as `&'static` as any other, so calls never take the lock.

use std::collections::HashMap;

use foldhash::fast::FixedState;
use opbox_codegen::schema::Schema;
use parking_lot::RwLock;

use super::fixed_list;
use super::key::DispatchKey;
use super::registration::{KernelRegistration, LibraryKind, LibraryRegistration};
use super::registry::{check, KernelSlot, OpEntry};
use crate::error::Site;
use crate::value::StableValue;
use crate::{Error, Result};

/// A kernel that lives behind another image's ABI.
pub(crate) trait ForeignKernel: Send + Sync + std::fmt::Debug {
    /// Runs the kernel on `stack`: the op's arguments, then its outputs, which hold None and
    /// receive owned results. On error the caller releases whatever the stack holds.
    fn call(&self, op: &'static OpEntry, stack: &mut [StableValue]) -> Result<()>;
}

/// One library or fragment of a batch.
pub(crate) struct ForeignLibrary {
    pub(crate) namespace: &'static str,
    pub(crate) kind: LibraryKind,
    pub(crate) site: Site,
    pub(crate) ops: Vec<ForeignOp>,
}

pub(crate) struct ForeignOp {
    /// `ns::name[.overload]`.
    pub(crate) name: &'static str,
    pub(crate) schema: &'static Schema,
    pub(crate) site: Site,
}

pub(crate) struct ForeignImpl {
    pub(crate) op: &'static str,
    pub(crate) key: DispatchKey,
    pub(crate) kernel: &'static dyn ForeignKernel,
    pub(crate) function: &'static str,
    pub(crate) site: Site,
}

/// What one image registers, all at once.
pub(crate) struct ForeignBatch {
    /// The image's path, reported by `OpHandle::image`.
    pub(crate) image: &'static str,
    pub(crate) libraries: Vec<ForeignLibrary>,
    pub(crate) impls: Vec<ForeignImpl>,
}

type Map<K, V> = HashMap<K, V, FixedState>;

#[derive(Default)]
struct Foreign {
    index: Map<&'static str, &'static OpEntry>,
    definers: Map<&'static str, Site>,
    ops: Vec<&'static OpEntry>,
}

static FOREIGN: RwLock<Option<Foreign>> = RwLock::new(None);

/// A foreign op by name.
pub(crate) fn get(name: &str) -> Option<&'static OpEntry> {
    FOREIGN.read().as_ref()?.index.get(name).copied()
}

/// Every foreign op, in registration order.
pub(crate) fn ops() -> Vec<&'static OpEntry> {
    FOREIGN
        .read()
        .as_ref()
        .map(|f| f.ops.clone())
        .unwrap_or_default()
}

/// What a foreign slot's boxed fn pointer is: the dispatcher calls the `ForeignKernel` instead,
/// so this only answers a caller that took the pointer out by hand.
unsafe extern "C" fn foreign_only(_: *mut StableValue, _: u64, _: u64) -> i32 {
    super::STATUS_ERROR
}

/// Checks `batch` against the in-process registry, the foreign ops so far and itself; adds all
/// of it, or returns every problem and adds nothing.
pub(crate) fn register(batch: ForeignBatch) -> Result<Vec<&'static OpEntry>> {
    let host = check()?;
    let mut guard = FOREIGN.write();
    let foreign = guard.get_or_insert_with(Foreign::default);
    let mut errors = Vec::new();

    let mut definers: Map<&'static str, Site> = Map::default();
    for lib in inventory::iter::<LibraryRegistration> {
        if lib.kind == LibraryKind::Def {
            definers.entry(lib.namespace).or_insert(lib.site);
        }
    }
    let mut new_definers: Map<&'static str, Site> = Map::default();
    let count: usize = batch.libraries.iter().map(|l| l.ops.len()).sum();
    // Each new op's index in `entries`.
    let mut new_ops: Map<&'static str, usize> =
        HashMap::with_capacity_and_hasher(count, FixedState::default());
    // The batch's entries, built in place and leaked as one block once the batch is accepted.
    let mut entries: Vec<OpEntry> = Vec::with_capacity(count);
    for lib in &batch.libraries {
        let defined = definers
            .get(lib.namespace)
            .or_else(|| foreign.definers.get(lib.namespace))
            .copied();
        match lib.kind {
            LibraryKind::Def => {
                let earlier = defined.or_else(|| new_definers.get(lib.namespace).copied());
                match earlier {
                    Some(first) => errors.push(Error::DuplicateLibrary {
                        namespace: lib.namespace.to_string(),
                        first,
                        second: lib.site,
                    }),
                    None => {
                        new_definers.insert(lib.namespace, lib.site);
                    }
                }
            }
            LibraryKind::Fragment => {
                // A fragment may come before its library within one image.
                let later = batch
                    .libraries
                    .iter()
                    .any(|l| l.kind == LibraryKind::Def && l.namespace == lib.namespace);
                if defined.is_none() && !later {
                    errors.push(Error::FragmentWithoutLibrary {
                        namespace: lib.namespace.to_string(),
                        site: lib.site,
                    });
                }
            }
        }
        for def in &lib.ops {
            let first = host
                .get(def.name)
                .or_else(|| foreign.index.get(def.name).copied())
                .map(|e| e.site)
                .or_else(|| new_ops.get(def.name).map(|&i| entries[i].site));
            match first {
                Some(first) => errors.push(Error::DuplicateOp {
                    op: def.name.to_string(),
                    first,
                    second: def.site,
                }),
                None => {
                    new_ops.insert(def.name, entries.len());
                    entries.push(entry(
                        def.name,
                        def.schema,
                        def.site,
                        [None; DispatchKey::COUNT],
                        Some(batch.image),
                    ));
                }
            }
        }
    }

    for imp in &batch.impls {
        let Some(&index) = new_ops.get(imp.op) else {
            let elsewhere = host
                .get(imp.op)
                .or_else(|| foreign.index.get(imp.op).copied());
            errors.push(match elsewhere {
                Some(entry) => Error::Unsupported(format!(
                    "a {} kernel for '{}' is registered at {}, but '{}' is defined at {}, outside \
                     this plugin: plugin ABI v1 lets a plugin implement only the ops it defines",
                    imp.key, imp.op, imp.site, imp.op, entry.site
                )),
                None => Error::ImplWithoutDef {
                    op: imp.op.to_string(),
                    key: imp.key.to_string(),
                    site: imp.site,
                },
            });
            continue;
        };
        let slot = &mut entries[index].kernels[imp.key.index()];
        match slot {
            Some(existing) if existing.registration.function == imp.function => {}
            Some(existing) => errors.push(Error::DuplicateImpl {
                op: imp.op.to_string(),
                key: imp.key.to_string(),
                first: existing.registration.site,
                second: imp.site,
            }),
            None => {
                let registration: &'static KernelRegistration =
                    Box::leak(Box::new(KernelRegistration {
                        op: imp.op,
                        key: imp.key,
                        kernel: foreign_only,
                        typed: None,
                        site: imp.site,
                        function: imp.function,
                    }));
                *slot = Some(KernelSlot {
                    kernel: foreign_only,
                    typed: None,
                    foreign: Some(imp.kernel),
                    registration,
                });
            }
        }
    }

    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0)),
        _ => return Err(Error::Registration(errors)),
    }
    let entries: &'static [OpEntry] = entries.leak();
    let mut added = Vec::with_capacity(entries.len());
    foreign.index.reserve(entries.len());
    foreign.ops.reserve(entries.len());
    for entry in entries {
        foreign.index.insert(entry.name, entry);
        foreign.ops.push(entry);
        added.push(entry);
    }
    foreign.definers.extend(new_definers);
    Ok(added)
}

/// Adds an op whose every dispatch key runs `kernel` (the host's ops, seen from a plugin), or
/// returns the one already added under `name`.
pub(crate) fn adopt(
    name: &'static str,
    schema: &'static Schema,
    kernel: &'static dyn ForeignKernel,
    image: &'static str,
) -> &'static OpEntry {
    let mut guard = FOREIGN.write();
    let foreign = guard.get_or_insert_with(Foreign::default);
    if let Some(entry) = foreign.index.get(name) {
        return entry;
    }
    let site = Site {
        file: image,
        line: 0,
    };
    let registration: &'static KernelRegistration = Box::leak(Box::new(KernelRegistration {
        op: name,
        key: DispatchKey::CompositeExplicit,
        kernel: foreign_only,
        typed: None,
        site,
        function: name,
    }));
    let mut kernels = [None; DispatchKey::COUNT];
    kernels[DispatchKey::CompositeExplicit.index()] = Some(KernelSlot {
        kernel: foreign_only,
        typed: None,
        foreign: Some(kernel),
        registration,
    });
    let entry: &'static OpEntry =
        Box::leak(Box::new(entry(name, schema, site, kernels, Some(image))));
    foreign.index.insert(name, entry);
    foreign.ops.push(entry);
    entry
}

fn entry(
    name: &'static str,
    schema: &'static Schema,
    site: Site,
    kernels: [Option<KernelSlot>; DispatchKey::COUNT],
    image: Option<&'static str>,
) -> OpEntry {
    OpEntry {
        name,
        schema,
        site,
        kernels,
        num_args: schema.arguments.len(),
        num_outputs: schema.returns.len(),
        tensor_args: schema.tensor_arguments().leak(),
        fixed_lists: fixed_list::fixed_lists(schema),
        tags: &[],
        python_module: None,
        image,
    }
}
