//! Collects every registration once, checks it, and freezes it into lock-free lookup tables.

use std::collections::HashMap;
use std::sync::OnceLock;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use opbox_codegen::op_name_hash::op_name_hash;
use opbox_codegen::op_tag::OpTag;
use opbox_codegen::schema::Schema;

use super::boxed_op::BoxedOp;
use super::fixed_list::FixedList;
use super::foreign::{self, ForeignKernel};
use super::key::DispatchKey;
use super::registration::{
    KernelGroup, KernelRegistration, LibraryKind, LibraryRegistration, OpDef,
};
use super::shared_shim::BoxedKernel;
use super::table::Table;
use crate::error::Site;
use crate::{Error, Result};

/// A plugin op's kernels (or, in a plugin, the host's), by dispatch key: behind another
/// image's ABI, which the dispatcher calls instead of the slots' boxed entries.
pub(crate) type ForeignSlots = [Option<&'static dyn ForeignKernel>; DispatchKey::COUNT];

/// One op with its kernels. Leaked once at collection, so handles are `&'static`.
///
/// Two cache lines, so that a call made right after a driver call (which evicts them) misses
/// as few as it can: the first is the kernel slots, all that a typed call reads; the second
/// what a boxed call reads besides (counts, tensor arguments, fixed-size lists, foreign slots,
/// the definition). 128 bytes, so 10,000 ops still fit one 2 MiB huge page; the rest (name,
/// schema, site, tags, Python module) is behind the static pointers.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct OpEntry {
    /// Per key, the kernel and its shape's boxed and typed entries, behind one pointer: 16
    /// bytes a slot. The kernels of an op with fixed-size lists have no typed entry here
    /// ([`BoxedKernel::without_typed`]), so typed calls of it take the boxed path, which checks
    /// the lists' lengths.
    pub(crate) kernels: [Option<BoxedKernel>; DispatchKey::COUNT],
    /// The schema's argument and return counts, beside the kernels so a call reads no schema.
    pub(crate) num_args: u32,
    pub(crate) num_outputs: u32,
    /// The arguments whose type mentions Tensor, the only ones dispatch looks at: bit `i` for
    /// argument `i` (the rest, of an op of more than 64 arguments, are in `def`).
    pub(crate) tensor_args: u64,
    /// The fixed-size list arguments (`int[2]`), checked at the boxed boundary; empty for
    /// nearly every op, so the call path tests one length.
    pub(crate) fixed_lists: &'static [FixedList],
    /// Set for an op of another image only: one pointer here rather than one in every slot
    /// keeps the table of a large library small.
    pub(crate) foreign: Option<&'static ForeignSlots>,
    /// Its definition: the op's static data (name, schema text, counts), tags and line.
    pub(crate) def: &'static OpDef,
    /// The library or fragment that defined it: file and Python module.
    pub(crate) library: &'static LibraryRegistration,
    /// The plugin that registered it; None for the ops linked into this image.
    pub(crate) image: Option<&'static &'static str>,
}

impl OpEntry {
    /// An op defined by `def` in `library`, with no kernels yet.
    pub(crate) fn new(
        library: &'static LibraryRegistration,
        def: &'static OpDef,
        image: Option<&'static &'static str>,
    ) -> OpEntry {
        OpEntry {
            kernels: [None; DispatchKey::COUNT],
            foreign: None,
            def,
            library,
            image,
            num_args: def.op.num_args,
            num_outputs: def.op.num_outputs,
            tensor_args: def.tensor_args,
            fixed_lists: def.fixed_lists(),
        }
    }

    #[inline]
    pub(crate) fn num_args(&self) -> usize {
        self.num_args as usize
    }

    #[inline]
    pub(crate) fn num_outputs(&self) -> usize {
        self.num_outputs as usize
    }

    /// The op's static data, inside its definition.
    #[inline]
    pub(crate) fn op(&self) -> &'static BoxedOp {
        let def: &'static OpDef = self.def;
        &def.op
    }

    #[inline]
    pub(crate) fn name(&self) -> &'static str {
        self.op().name()
    }

    pub(crate) fn schema(&self) -> &'static Schema {
        self.op().schema()
    }

    pub(crate) fn site(&self) -> Site {
        self.library.site_of(self.def)
    }

    pub(crate) fn tags(&self) -> &'static [OpTag] {
        self.def.tags()
    }

    pub(crate) fn python_module(&self) -> Option<&'static str> {
        self.library.python_module
    }

    pub(crate) fn image(&self) -> Option<&'static str> {
        self.image.copied()
    }

    /// The exact key's kernel slot, else the CompositeExplicit one, with its index.
    #[inline]
    pub(crate) fn slot_for(&self, key: DispatchKey) -> Option<(usize, &BoxedKernel)> {
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

/// A kernel and the group that registered it.
pub(crate) type Kernel = (&'static KernelGroup, &'static KernelRegistration);

/// Names are the macros' static strings, not attacker input, so a fixed-seed fast hash will do.
type Map<K, V> = HashMap<K, V, FixedState>;

fn map_with_capacity<K, V>(capacity: usize) -> Map<K, V> {
    HashMap::with_capacity_and_hasher(capacity, FixedState::default())
}

/// Each op's index in the registry's table, found by name: the one map. It is keyed by the
/// name hash the macro stored in each op's definition, so filling it hashes nothing and reads
/// no name (only a hash that matches leads to comparing names: a duplicate, or a 1 in 2^32
/// chance). A slot holds the name itself beside the hash and the index, so a lookup compares
/// names without reading the op's entry.
struct NameIndex(HashTable<Slot>);

struct Slot {
    name: &'static [u8],
    hash: u32,
    index: u32,
}

impl NameIndex {
    fn with_capacity(capacity: usize) -> NameIndex {
        NameIndex(HashTable::with_capacity(capacity))
    }

    /// The table's hash: the stored 32 bits spread over 64 by an odd multiplier, since the
    /// table probes by the low bits and tags each slot with the top seven.
    fn spread(hash: u32) -> u64 {
        u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// The index of the op named `name`, whose hash is `hash`.
    fn find(&self, name: &[u8], hash: u32) -> Option<usize> {
        self.0
            .find(NameIndex::spread(hash), |slot| {
                slot.hash == hash && slot.name == name
            })
            .map(|slot| slot.index as usize)
    }

    /// The index of the op named as `op` is.
    fn find_op(&self, op: &'static BoxedOp) -> Option<usize> {
        self.find(op.name_bytes(), op.name_hash)
    }

    /// Adds `index` for `op`, whose name is not in the table yet (a table is smaller than
    /// 2^32 ops: an op's index fits the slot's).
    fn insert(&mut self, op: &'static BoxedOp, index: usize) {
        let slot = Slot {
            name: op.name_bytes(),
            hash: op.name_hash,
            index: u32::try_from(index).unwrap_or(u32::MAX),
        };
        self.0
            .insert_unique(NameIndex::spread(slot.hash), slot, |slot| {
                NameIndex::spread(slot.hash)
            });
    }
}

pub(crate) struct Registry {
    /// Every op, in collection order.
    ops: &'static [OpEntry],
    index: NameIndex,
    pub(crate) error: Option<Error>,
}

impl Registry {
    pub(crate) fn get(&self, name: &str) -> Option<&'static OpEntry> {
        let ops = self.ops;
        self.index
            .find(name.as_bytes(), op_name_hash(name))
            .and_then(|i| ops.get(i))
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
        let kernels: Vec<Kernel> = inventory::iter::<KernelGroup>
            .into_iter()
            .flat_map(|group| group.kernels.iter().map(move |kernel| (group, kernel)))
            .collect();
        collect(&libraries, &kernels)
    })
}

/// Every op name, sorted: those linked in and those plugins added.
pub fn registered_ops() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = registry()
        .ops
        .iter()
        .map(|e| e.name())
        .chain(foreign::names())
        .collect();
    names.sort_unstable();
    names
}

/// Checks the registrations and builds the registry. inventory's order is unspecified, and
/// the errors name a "first" and a "second" site: when there are errors, the collection runs
/// again in source order so that they read the same in every build. Only a failing
/// registration pays for the sort.
pub(crate) fn collect(libraries: &[&'static LibraryRegistration], kernels: &[Kernel]) -> Registry {
    let built = build(libraries, kernels);
    if built.errors.is_empty() {
        return built.freeze();
    }
    let mut libraries = libraries.to_vec();
    let mut kernels = kernels.to_vec();
    libraries.sort_by_key(|l| (l.site.file, l.site.line, l.namespace));
    kernels.sort_by_key(|(group, k)| (group.file, k.line, k.op.name()));
    build(&libraries, &kernels).freeze()
}

/// A registry under construction.
struct Built {
    ops: Table<OpEntry>,
    index: NameIndex,
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

fn build(libraries: &[&'static LibraryRegistration], kernels: &[Kernel]) -> Built {
    let mut errors = Vec::new();
    let mut definers: Map<&str, Site> = map_with_capacity(libraries.len());
    let count = libraries.iter().map(|lib| lib.ops.len()).sum();
    let mut ops: Table<OpEntry> = Table::with_capacity(count);
    let mut index = NameIndex::with_capacity(count);
    let mut tables = Tables::with_capacity(libraries.len(), count);

    for lib in libraries {
        tables.add_library(lib);
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
            match index.find_op(&def.op) {
                Some(existing) => {
                    tables.no_entry();
                    if let Some(first) = ops.get(existing) {
                        errors.push(Error::DuplicateOp {
                            op: def.op.name().to_string(),
                            first: first.site(),
                            second: lib.site_of(def),
                        });
                    }
                }
                None => {
                    index.insert(&def.op, ops.len());
                    tables.entry(ops.len());
                    ops.push(OpEntry::new(lib, def, None));
                }
            }
        }
    }

    tables.freeze();
    for &(group, reg) in kernels {
        let found = tables.find(reg.op);
        let found = found.or_else(|| index.find_op(reg.op));
        let Some(entry) = found.and_then(|i| ops.get_mut(i)) else {
            let op = reg.op.name();
            errors.push(Error::ImplWithoutDef {
                op: op.to_string(),
                key: reg.key.to_string(),
                site: group.site(reg),
            });
            continue;
        };
        let slot = &mut entry.kernels[reg.key.index()];
        if slot.is_none() {
            *slot = Some(match entry.fixed_lists {
                [] => reg.kernel,
                _ => reg.kernel.without_typed(),
            });
            continue;
        }
        // The slot was filled by the first registration for this op and key, in this order;
        // only a clash looks for it, so the table keeps no pointer back to it.
        let op = reg.op.name();
        let first = kernels
            .iter()
            .find(|(_, k)| k.op.name() == op && k.key == reg.key);
        // From one origin, it is one function registered twice.
        if let Some((first_group, first)) = first.filter(|(g, _)| g.origin != group.origin) {
            errors.push(Error::DuplicateImpl {
                op: op.to_string(),
                key: reg.key.to_string(),
                first: first_group.site(first),
                second: group.site(reg),
            });
        }
    }
    Built { ops, index, errors }
}

/// Where each library's table of [`OpDef`]s lies in memory, and the entry each of its defs
/// became. A kernel's `BoxedOp` is inside its op's def, so its entry is found from its address
/// with a binary search over the libraries: at 10,000 ops, hashing each kernel's op name and
/// probing the name map cost three cache misses a kernel, most of the registry's build.
struct Tables {
    /// (first byte, past the last byte, the library's first def in `entries`), sorted by
    /// address once every library is in.
    ranges: Vec<(usize, usize, usize)>,
    /// Each def's entry index, or `u32::MAX` for a def refused as a duplicate.
    entries: Vec<u32>,
    /// The range the last search ended in: an impl module's kernels are the ops of one
    /// library, one after another, so most searches end where the last one did.
    last: std::cell::Cell<usize>,
}

impl Tables {
    fn with_capacity(libraries: usize, defs: usize) -> Tables {
        Tables {
            ranges: Vec::with_capacity(libraries),
            entries: Vec::with_capacity(defs),
            last: std::cell::Cell::new(0),
        }
    }

    fn add_library(&mut self, lib: &'static LibraryRegistration) {
        let start = lib.ops.as_ptr() as usize;
        let end = start + std::mem::size_of_val(lib.ops);
        self.ranges.push((start, end, self.entries.len()));
    }

    /// The current library's next def became entry `index`.
    fn entry(&mut self, index: usize) {
        self.entries.push(u32::try_from(index).unwrap_or(u32::MAX));
    }

    /// The current library's next def became no entry.
    fn no_entry(&mut self) {
        self.entries.push(u32::MAX);
    }

    fn freeze(&mut self) {
        self.ranges.sort_unstable_by_key(|&(start, _, _)| start);
    }

    /// The entry of the op whose `BoxedOp` is `op`, if `op` lies in a library's table (a
    /// `BoxedOp` made by hand is found by name instead).
    fn find(&self, op: &'static BoxedOp) -> Option<usize> {
        let address = op as *const BoxedOp as usize;
        let within_last = |i: usize| {
            self.ranges
                .get(i)
                .is_some_and(|&(start, end, _)| start <= address && address < end)
        };
        let range = if within_last(self.last.get()) {
            self.last.get()
        } else {
            let after = self
                .ranges
                .partition_point(|&(start, _, _)| start <= address);
            let range = after.checked_sub(1)?;
            self.last.set(range);
            range
        };
        let &(start, end, first) = self.ranges.get(range)?;
        let within = address.checked_sub(start + std::mem::offset_of!(OpDef, op))?;
        let size = std::mem::size_of::<OpDef>();
        if address >= end || within % size != 0 {
            return None;
        }
        let entry = *self.entries.get(first + within / size)?;
        (entry != u32::MAX).then_some(entry as usize)
    }
}

/// `kernel` in a leaked group of its own, as a hand-written kernel registers: for tests that
/// build a registry from made-up registrations.
#[cfg(test)]
pub(crate) fn lone_kernel(
    file: &'static str,
    origin: &'static str,
    kernel: KernelRegistration,
) -> Kernel {
    let kernels: &'static [KernelRegistration; 1] = Box::leak(Box::new([kernel]));
    let group = Box::leak(Box::new(KernelGroup {
        file,
        origin,
        kernels,
    }));
    (group, &kernels[0])
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
        let schema = opbox_codegen::schema::parse(schema).expect("test schema parses");
        let name = schema.qualified_name(ns).leak();
        OpDef::at_run_time(BoxedOp::at_run_time(name, schema), site.line)
    }

    /// A kernel's op as a hand-written registration names it: a `BoxedOp` of its own, outside
    /// every library's table, which the registry finds by name.
    fn named(op: &'static str) -> &'static BoxedOp {
        let schema = opbox_codegen::schema::parse(&format!("{op}() -> ()")).expect("a name");
        Box::leak(Box::new(BoxedOp::at_run_time(op, schema)))
    }

    fn kernel(op: &'static str, key: DispatchKey, line: u32, origin: &'static str) -> Kernel {
        kernel_of(named(op), key, line, origin)
    }

    /// A kernel in a group of its own, from `origin`.
    fn kernel_of(
        op: &'static BoxedOp,
        key: DispatchKey,
        line: u32,
        origin: &'static str,
    ) -> Kernel {
        let kernel = KernelRegistration {
            op,
            key,
            line,
            kernel: BoxedKernel::raw(noop),
        };
        lone_kernel("src/lib.rs", origin, kernel)
    }

    #[test]
    fn kernels_find_their_op_where_its_boxed_op_lies_in_a_librarys_table() {
        let defs = library(
            "ns",
            LibraryKind::Def,
            10,
            &["a(int x) -> int", "b(int x) -> int"],
        );
        let more = library("ns", LibraryKind::Fragment, 20, &["c(int x) -> int"]);
        // A second `a`, refused: a kernel pointing at its def finds the first `a` by name.
        let again = library("ns", LibraryKind::Fragment, 30, &["a(int x) -> int"]);
        let kernels = [
            kernel_of(&defs.ops[1].op, DispatchKey::CPU, 40, "cpu::b"),
            kernel_of(&more.ops[0].op, DispatchKey::Meta, 41, "meta::c"),
            kernel_of(&again.ops[0].op, DispatchKey::CPU, 42, "cpu::a"),
        ];
        let registry = collect(&[defs, more, again], &kernels);
        assert!(
            matches!(&registry.error, Some(Error::DuplicateOp { op, .. }) if op == "ns::a"),
            "{:?}",
            registry.error
        );
        let keys = |name| registry.get(name).expect("defined").available_keys();
        assert_eq!(keys("ns::a"), vec!["CPU"]);
        assert_eq!(keys("ns::b"), vec!["CPU"]);
        assert_eq!(keys("ns::c"), vec!["Meta"]);

        let mut tables = Tables::with_capacity(2, 3);
        tables.add_library(defs);
        tables.entry(7);
        tables.no_entry();
        tables.add_library(more);
        tables.entry(9);
        tables.freeze();
        assert_eq!(tables.find(&defs.ops[0].op), Some(7));
        assert_eq!(
            tables.find(&defs.ops[1].op),
            None,
            "a refused def has no entry"
        );
        assert_eq!(tables.find(&more.ops[0].op), Some(9));
        assert_eq!(
            tables.find(&again.ops[0].op),
            None,
            "not in any table given"
        );
        assert_eq!(tables.find(named("ns::b")), None, "a BoxedOp made by hand");
    }

    #[test]
    fn names_whose_stored_hashes_collide_are_told_apart() {
        // Two names with the same 32-bit hash (found by search): the registry keys its index by
        // hash, so only the names can tell these ops apart, at registration and at lookup.
        let (first, second) = ("t::op51680", "t::op111361");
        assert_eq!(
            op_name_hash(first),
            op_name_hash(second),
            "the hash changed: find two names that collide again"
        );
        let libs = [library(
            "t",
            LibraryKind::Def,
            10,
            &["op51680(int x) -> int", "op111361(Tensor x) -> Tensor"],
        )];
        let kernels = [kernel("t::op111361", DispatchKey::CPU, 20, "cpu::b")];
        let registry = collect(&libs, &kernels);
        assert!(registry.error.is_none(), "{:?}", registry.error);
        let a = registry.get(first).expect("the first is registered");
        let b = registry.get(second).expect("the second is registered");
        assert_eq!((a.name(), b.name()), (first, second));
        assert_eq!(
            (a.num_args(), b.available_keys()),
            (1, vec!["CPU".to_string()])
        );
        assert!(registry.get("t::op51681").is_none());
    }

    #[test]
    fn an_op_definition_stays_64_bytes() {
        // Each byte of a library's table is copied by the loader before main in a
        // position-independent executable (see OpDef); the README gives this size.
        let size = std::mem::size_of::<OpDef>();
        assert!(size <= 64, "an OpDef is {size} bytes, more than 64");
    }

    #[test]
    fn a_kernel_registration_is_three_pointers_and_its_key_and_line() {
        let size = std::mem::size_of::<KernelRegistration>();
        assert!(
            size <= 32,
            "a KernelRegistration is {size} bytes, more than 32"
        );
    }

    #[test]
    fn a_typed_call_reads_one_line_of_its_op_entry() {
        let slots = std::mem::size_of::<[Option<BoxedKernel>; DispatchKey::COUNT]>();
        assert_eq!(std::mem::offset_of!(OpEntry, kernels), 0);
        assert!(
            slots <= 64,
            "the kernel slots take {slots} bytes, more than a cache line"
        );
        assert_eq!(std::mem::align_of::<OpEntry>(), 64);
        assert!(std::mem::size_of::<OpEntry>() <= 128);
    }

    #[test]
    fn ten_thousand_entries_fit_one_huge_page() {
        // A 2 MiB huge page (`huge_pages::HUGE_PAGE`, which miri builds leave out).
        let huge_page = 2 << 20;
        let size = std::mem::size_of::<OpEntry>();
        assert!(
            10_000 * size <= huge_page,
            "an OpEntry is {size} bytes: 10,000 of them no longer fit one 2 MiB huge page"
        );
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
