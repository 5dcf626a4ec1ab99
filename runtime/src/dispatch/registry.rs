//! Collects every registration once, checks it, and freezes it into lock-free lookup tables.

use std::any::TypeId;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::OnceLock;

use foldhash::fast::FixedState;
use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema::Schema;

use super::fixed_list::FixedList;
use super::foreign::{self, ForeignKernel};
use super::kernel::BoxedKernelFn;
use super::key::DispatchKey;
use super::registration::{KernelGroup, KernelRegistration, LibraryKind, LibraryRegistration};
use super::table::Table;
use crate::error::Site;
use crate::{Error, Result};

#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSlot {
    pub(crate) kernel: BoxedKernelFn,
    /// The typed entry's key and erased fn (see `TypedKernel`), beside the boxed one so a
    /// typed call reads nothing out of line.
    pub(crate) typed: Option<(TypeId, fn())>,
}

/// A plugin op's kernels (or, in a plugin, the host's), by dispatch key: behind another
/// image's ABI, which the dispatcher calls instead of the slots' boxed entries.
pub(crate) type ForeignSlots = [Option<&'static dyn ForeignKernel>; DispatchKey::COUNT];

/// One op with its kernels. Leaked once at collection, so handles are `&'static`.
#[derive(Debug)]
pub(crate) struct OpEntry {
    pub(crate) name: &'static str,
    pub(crate) schema: &'static Schema,
    pub(crate) site: Site,
    pub(crate) kernels: [Option<KernelSlot>; DispatchKey::COUNT],
    /// Set for an op of another image only: one pointer here rather than one in every slot
    /// keeps the table of a large library small.
    pub(crate) foreign: Option<&'static ForeignSlots>,
    /// The schema's argument and return counts, beside the kernels so a call reads no schema.
    pub(crate) num_args: usize,
    pub(crate) num_outputs: usize,
    /// Indices of the arguments whose type mentions Tensor: the only ones dispatch looks at.
    pub(crate) tensor_args: &'static [usize],
    /// The fixed-size list arguments (`int[2]`), checked at the boxed boundary; empty for
    /// nearly every op, so the call path tests one length.
    pub(crate) fixed_lists: &'static [FixedList],
    pub(crate) tags: &'static [OpTag],
    /// The defining block's `m.set_python_module`, if any.
    pub(crate) python_module: Option<&'static str>,
    /// The plugin that registered it; None for the ops linked into this image.
    pub(crate) image: Option<&'static str>,
}

impl OpEntry {
    /// The exact key's kernel slot, else the CompositeExplicit one, with its index.
    #[inline]
    pub(crate) fn slot_for(&self, key: DispatchKey) -> Option<(usize, &KernelSlot)> {
        let exact = key.index();
        if let Some(slot) = &self.kernels[exact] {
            return Some((exact, slot));
        }
        let fallback = DispatchKey::CompositeExplicit.index();
        self.kernels[fallback].as_ref().map(|slot| (fallback, slot))
    }

    pub(crate) fn available_keys(&self) -> Vec<String> {
        DispatchKey::ALL
            .into_iter()
            .filter(|k| self.kernels[k.index()].is_some())
            .map(|k| k.name().to_string())
            .collect()
    }
}

/// Names are the macros' static strings, not attacker input, so a fixed-seed fast hash will do.
type Map<K, V> = HashMap<K, V, FixedState>;

fn map_with_capacity<K, V>(capacity: usize) -> Map<K, V> {
    HashMap::with_capacity_and_hasher(capacity, FixedState::default())
}

pub(crate) struct Registry {
    /// Every op, in collection order.
    ops: &'static [OpEntry],
    /// Each op's index in `ops`, by name: the one map.
    index: Map<&'static str, usize>,
    pub(crate) error: Option<Error>,
}

impl Registry {
    pub(crate) fn get(&self, name: &str) -> Option<&'static OpEntry> {
        let ops = self.ops;
        self.index.get(name).and_then(|&i| ops.get(i))
    }

    pub(crate) fn ops(&self) -> &'static [OpEntry] {
        self.ops
    }
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The registry, collected on first use. Later reads are one atomic load.
pub(crate) fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        let libraries: Vec<&'static LibraryRegistration> =
            inventory::iter::<LibraryRegistration>.into_iter().collect();
        let kernels: Vec<&'static KernelRegistration> = inventory::iter::<KernelGroup>
            .into_iter()
            .flat_map(|group| group.kernels)
            .chain(inventory::iter::<KernelRegistration>)
            .collect();
        collect(&libraries, &kernels)
    })
}

/// Every op name, sorted: those linked in and those plugins added.
pub fn registered_ops() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = registry()
        .ops
        .iter()
        .map(|e| e.name)
        .chain(foreign::names())
        .collect();
    names.sort_unstable();
    names
}

/// Checks the registrations and builds the registry. inventory's order is unspecified, and
/// the errors name a "first" and a "second" site: when there are errors, the collection runs
/// again in source order so that they read the same in every build. Only a failing
/// registration pays for the sort.
pub(crate) fn collect(
    libraries: &[&'static LibraryRegistration],
    kernels: &[&'static KernelRegistration],
) -> Registry {
    let built = build(libraries, kernels);
    if built.errors.is_empty() {
        return built.freeze();
    }
    let mut libraries = libraries.to_vec();
    let mut kernels = kernels.to_vec();
    libraries.sort_by_key(|l| (l.site.file, l.site.line, l.namespace));
    kernels.sort_by_key(|k| (k.site.file, k.site.line, k.op));
    build(&libraries, &kernels).freeze()
}

/// A registry under construction.
struct Built {
    ops: Table<OpEntry>,
    index: Map<&'static str, usize>,
    errors: Vec<Error>,
}

impl Built {
    fn freeze(mut self) -> Registry {
        let error = match self.errors.len() {
            0 => None,
            1 => self.errors.pop(),
            _ => Some(Error::Registration(self.errors)),
        };
        Registry {
            ops: self.ops.leak(),
            index: self.index,
            error,
        }
    }
}

fn build(
    libraries: &[&'static LibraryRegistration],
    kernels: &[&'static KernelRegistration],
) -> Built {
    let mut errors = Vec::new();
    let mut definers: Map<&str, Site> = map_with_capacity(libraries.len());
    let count = libraries.iter().map(|lib| lib.ops.len()).sum();
    let mut ops: Table<OpEntry> = Table::with_capacity(count);
    let mut index: Map<&'static str, usize> = map_with_capacity(count);

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
            match index.entry(def.name) {
                Entry::Occupied(existing) => {
                    if let Some(first) = ops.get(*existing.get()) {
                        errors.push(Error::DuplicateOp {
                            op: def.name.to_string(),
                            first: first.site,
                            second: def.site,
                        });
                    }
                }
                Entry::Vacant(slot) => {
                    slot.insert(ops.len());
                    ops.push(OpEntry {
                        name: def.name,
                        schema: def.schema,
                        site: def.site,
                        kernels: [None; DispatchKey::COUNT],
                        foreign: None,
                        num_args: def.num_args as usize,
                        num_outputs: def.num_outputs as usize,
                        tensor_args: def.tensor_args,
                        tags: def.tags,
                        python_module: lib.python_module,
                        fixed_lists: def.fixed_lists,
                        image: None,
                    });
                }
            }
        }
    }

    for reg in kernels {
        let Some(entry) = index.get(reg.op).and_then(|&i| ops.get_mut(i)) else {
            errors.push(Error::ImplWithoutDef {
                op: reg.op.to_string(),
                key: reg.key.to_string(),
                site: reg.site,
            });
            continue;
        };
        let slot = &mut entry.kernels[reg.key.index()];
        if slot.is_none() {
            *slot = Some(KernelSlot {
                kernel: reg.kernel,
                typed: reg.typed.map(|t| (t.key(), t.erased())),
            });
            continue;
        }
        // The slot was filled by the first registration for this op and key, in this order;
        // only a clash looks for it, so the table keeps no pointer back to it.
        let first = kernels.iter().find(|k| k.op == reg.op && k.key == reg.key);
        if let Some(first) = first.filter(|first| first.function != reg.function) {
            errors.push(Error::DuplicateImpl {
                op: reg.op.to_string(),
                key: reg.key.to_string(),
                first: first.site,
                second: reg.site,
            });
        }
    }
    Built { ops, index, errors }
}

/// Returns the collection's errors, if any.
pub(crate) fn check() -> Result<&'static Registry> {
    let registry = registry();
    match &registry.error {
        Some(error) => Err(error.clone()),
        None => Ok(registry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::registration::OpDef;
    use crate::value::StableValue;

    unsafe extern "C" fn noop(_: *mut StableValue, _: u64, _: u64) -> i32 {
        0
    }

    fn site(line: u32) -> Site {
        Site {
            file: "src/lib.rs",
            line,
        }
    }

    fn library(
        ns: &'static str,
        kind: LibraryKind,
        line: u32,
        schemas: &[&str],
    ) -> &'static LibraryRegistration {
        let ops: Vec<OpDef> = schemas
            .iter()
            .enumerate()
            .map(|(i, s)| op_def(ns, s, site(line + 1 + i as u32)))
            .collect();
        Box::leak(Box::new(LibraryRegistration {
            namespace: ns,
            kind,
            python_module: None,
            site: site(line),
            ops: Box::leak(ops.into_boxed_slice()),
        }))
    }

    /// An op as the library macro would register it.
    pub(crate) fn op_def(ns: &str, schema: &str, site: Site) -> OpDef {
        let schema: &'static Schema = Box::leak(Box::new(
            opbox_codegen::schema::parse(schema).expect("test schema parses"),
        ));
        OpDef {
            name: schema.qualified_name(ns).leak(),
            schema,
            num_args: schema.arguments.len() as u32,
            num_outputs: schema.returns.len() as u32,
            tensor_args: schema.tensor_arguments().leak(),
            fixed_lists: crate::dispatch::fixed_list::fixed_lists(schema),
            tags: &[],
            site,
        }
    }

    fn kernel(
        op: &'static str,
        key: DispatchKey,
        line: u32,
        function: &'static str,
    ) -> &'static KernelRegistration {
        Box::leak(Box::new(KernelRegistration {
            op,
            key,
            kernel: noop,
            typed: None,
            site: site(line),
            function,
        }))
    }

    #[test]
    fn a_second_definer_of_a_namespace_names_both_sites() {
        let libs = [
            library("ns", LibraryKind::Def, 10, &["a(int x) -> int"]),
            library("ns", LibraryKind::Def, 20, &["b(int x) -> int"]),
        ];
        let registry = collect(&libs, &[]);
        let error = registry.error.expect("duplicate library is an error");
        assert_eq!(
            error.to_string(),
            "only one #[stable_library] may define the namespace 'ns': first at src/lib.rs:10, again at src/lib.rs:20. Put all definitions in one #[stable_library(ns)], or use #[stable_fragment(ns)] for the others"
        );
    }

    #[test]
    fn fragments_add_ops_to_a_namespace() {
        let libs = [
            library("ns", LibraryKind::Def, 10, &["a(int x) -> int"]),
            library("ns", LibraryKind::Fragment, 20, &["b(int x) -> int"]),
            library("ns", LibraryKind::Fragment, 30, &["c(int x) -> int"]),
        ];
        let registry = collect(&libs, &[]);
        assert!(registry.error.is_none());
        assert_eq!(registry.ops().len(), 3);
    }

    #[test]
    fn an_op_defined_twice_across_fragments_is_an_error() {
        let libs = [
            library("ns", LibraryKind::Def, 10, &["a(int x) -> int"]),
            library("ns", LibraryKind::Fragment, 20, &["a(float x) -> float"]),
        ];
        let error = collect(&libs, &[]).error.expect("duplicate op");
        assert!(
            matches!(&error, Error::DuplicateOp { op, first, second } if op == "ns::a" && first.line == 11 && second.line == 21),
            "{error}"
        );
    }

    #[test]
    fn two_kernels_for_one_key_are_an_error_unless_they_are_one_function() {
        let libs = [library("ns", LibraryKind::Def, 10, &["a(int x) -> int"])];
        let same = [
            kernel("ns::a", DispatchKey::CPU, 30, "crate::cpu::a"),
            kernel("ns::a", DispatchKey::CPU, 30, "crate::cpu::a"),
        ];
        assert!(collect(&libs, &same).error.is_none());
        let different = [
            kernel("ns::a", DispatchKey::CPU, 30, "crate::cpu::a"),
            kernel("ns::a", DispatchKey::CPU, 40, "crate::other::a"),
        ];
        let error = collect(&libs, &different).error.expect("duplicate impl");
        assert_eq!(
            error.to_string(),
            "operator 'ns::a' has two different CPU kernels: first at src/lib.rs:30, again at src/lib.rs:40. Keep one of them"
        );
        // inventory's order is not source order: the message must not depend on it.
        let reversed = [different[1], different[0]];
        assert_eq!(
            collect(&libs, &reversed).error.expect("duplicate impl"),
            error
        );
        let other_keys = [
            kernel("ns::a", DispatchKey::CPU, 30, "crate::cpu::a"),
            kernel("ns::a", DispatchKey::Meta, 40, "crate::meta::a"),
        ];
        let registry = collect(&libs, &other_keys);
        assert!(registry.error.is_none());
        assert_eq!(
            registry.get("ns::a").expect("ns::a").available_keys(),
            vec!["CPU", "Meta"]
        );
    }

    #[test]
    fn a_kernel_for_an_undefined_op_and_several_errors_are_all_reported() {
        let libs = [
            library("ns", LibraryKind::Def, 10, &["a(int x) -> int"]),
            library("ns", LibraryKind::Def, 20, &[]),
        ];
        let kernels = [kernel(
            "ns::missing",
            DispatchKey::CUDA,
            50,
            "crate::cuda::missing",
        )];
        let error = collect(&libs, &kernels).error.expect("errors");
        let Error::Registration(all) = &error else {
            panic!("expected several errors, got {error}")
        };
        assert_eq!(all.len(), 2);
        assert!(error.to_string().contains("a CUDA kernel for 'ns::missing' is registered at src/lib.rs:50, but no #[stable_library] or #[stable_fragment] defines 'ns::missing'"), "{error}");
    }

    #[test]
    fn lookup_falls_back_to_composite_explicit() {
        let libs = [library("ns", LibraryKind::Def, 10, &["a(int x) -> int"])];
        let kernels = [kernel(
            "ns::a",
            DispatchKey::CompositeExplicit,
            30,
            "crate::a",
        )];
        let registry = collect(&libs, &kernels);
        let entry = registry.get("ns::a").expect("ns::a");
        assert!(entry.slot_for(DispatchKey::CUDA).is_some());
        assert!(entry.slot_for(DispatchKey::CPU).is_some());
    }
}
