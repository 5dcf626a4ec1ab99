//! Registrations that arrive after start-up, from another binary image: a plugin's ops on the
//! host, and the host's ops as a plugin sees them. This is the one write path into the
//! registry after it is frozen; it checks a batch against everything registered so far (and
//! itself) and adds all of it or none.
//!
//! The in-process registry stays a frozen, lock-free table. Foreign ops live in a second map
//! behind a lock that only `op()` takes, on a name the frozen table does not have; a resolved
//! handle is as `&'static` as any other, so calls never take the lock.
//!
//! A batch is checked in full when it is registered (every error is found then), but an op's
//! `OpEntry`, schema and kernels are built only when the op is first resolved: a plugin of
//! thousands of ops loads in a few milliseconds and keeps a compact record per op, and the
//! ops a process never calls cost no more than that record.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use opbox_codegen::schema::{Argument, Return, Schema};
use parking_lot::{Mutex, RwLock};

use super::boxed_op::{operator_name, BoxedOp};
use super::key::DispatchKey;
use super::registration::{LibraryKind, LibraryRegistration, OpDef};
use super::registry::{check, ForeignSlots, OpEntry};
use super::shared_shim::BoxedKernel;
use crate::error::Site;
use crate::value::{StableValue, Stack};
use crate::{Error, Result};

/// A kernel that lives behind another image's ABI.
pub(crate) trait ForeignKernel: Send + Sync + std::fmt::Debug {
    /// Runs the kernel on `stack`, which holds exactly the op's arguments (checked by the
    /// dispatcher); on success it holds the op's outputs instead, as after an in-process
    /// kernel. On error the caller releases whatever the stack holds, so the kernel leaves only
    /// values the host may release. A kernel that works on a slice lays it out with
    /// [`with_outputs`]; one that works on the stack itself keeps the whole call in one frame.
    fn call(&self, op: &'static OpEntry, stack: &mut Stack) -> Result<()>;
}

/// Runs `f` on the stack's arguments, then the op's outputs, which hold None and receive owned
/// results, then one more None (a guard, which a kernel that writes one output too many hits
/// instead of memory past the stack); then leaves only the outputs on the stack.
#[inline]
pub(crate) fn with_outputs(
    op: &'static OpEntry,
    stack: &mut Stack,
    f: impl FnOnce(&mut [StableValue]) -> Result<()>,
) -> Result<()> {
    let (num_args, num_outputs) = (op.num_args(), op.num_outputs());
    stack.reserve_outputs(num_outputs + 1);
    f(stack.as_mut_slice())?;
    stack.truncate(num_args + num_outputs);
    stack.release_front(num_args);
    Ok(())
}

/// The kernels of a batch's impls, made when their op is first resolved.
pub(crate) trait ForeignKernels: Send + Sync {
    /// The kernel of the batch's impl `index`, for an op with `schema`.
    fn kernel(&self, index: usize, schema: &'static Schema) -> &'static dyn ForeignKernel;
}

/// One library or fragment of a batch.
pub(crate) struct ForeignLibrary {
    pub(crate) namespace: &'static str,
    pub(crate) kind: LibraryKind,
    pub(crate) site: Site,
    /// Its ops' places in `ForeignBatch::ops`.
    pub(crate) ops: Range<usize>,
}

/// An op's argument and return lists, shared by every op of the same signature.
#[derive(Debug)]
pub(crate) struct Signature {
    pub(crate) arguments: &'static [Argument],
    pub(crate) returns: &'static [Return],
}

/// One op of a batch, compact: a batch may hold thousands.
pub(crate) struct ForeignOp {
    /// `ns::name[.overload]`, of identifiers (as the schema parser gives them).
    pub(crate) name: &'static str,
    pub(crate) signature: &'static Signature,
    /// Its library's place in `ForeignBatch::libraries`, whose file it is in.
    pub(crate) library: u32,
    pub(crate) line: u32,
}

/// One impl of a batch; its kernel is the batch's `kernels.kernel(index)`, `index` being its
/// place in `ForeignBatch::impls`. Compact, as `ForeignOp` is: its strings are numbers in
/// `ForeignBatch::names` (24 bytes in all, where `&str`s made it 64: for a plugin of 10,000
/// ops, 100 fresh pages fewer to fault in as it loads).
pub(crate) struct ForeignImpl {
    pub(crate) op: ImplOp,
    pub(crate) key: DispatchKey,
    /// The kernel's function name.
    pub(crate) function: u32,
    pub(crate) file: u32,
    pub(crate) line: u32,
}

/// The op of an impl.
#[derive(Clone, Copy)]
pub(crate) enum ImplOp {
    /// The batch op at this place, which the impl followed (the usual order).
    Def(u32),
    /// The op named at this place in `ForeignBatch::names`.
    Named(u32),
}

/// What one image registers, all at once.
pub(crate) struct ForeignBatch {
    /// The image's path, reported by `OpHandle::image`.
    pub(crate) image: &'static str,
    pub(crate) libraries: Vec<ForeignLibrary>,
    /// Every library's ops, in order.
    pub(crate) ops: Vec<ForeignOp>,
    pub(crate) impls: Vec<ForeignImpl>,
    /// The strings `impls` name by number.
    pub(crate) names: Vec<&'static str>,
    pub(crate) kernels: Box<dyn ForeignKernels>,
}

impl ForeignImpl {
    /// Its op's name, in its batch of `ops` and `names`.
    fn op_name(&self, ops: &[ForeignOp], names: &[&'static str]) -> &'static str {
        match self.op {
            ImplOp::Def(i) => ops[i as usize].name,
            ImplOp::Named(n) => names[n as usize],
        }
    }

    fn site(&self, names: &[&'static str]) -> Site {
        Site {
            file: names[self.file as usize],
            line: self.line,
        }
    }
}

type Map<K, V> = HashMap<K, V, FixedState>;

/// An accepted batch, kept for the process.
struct Batch {
    image: &'static str,
    libraries: Vec<ForeignLibrary>,
    ops: Vec<ForeignOp>,
    /// Beside `ops`, one each.
    states: Vec<OpState>,
    /// The entries of the ops resolved so far, by op: built on first use, usually for a few of
    /// a batch's ops, so kept apart from `states` (a cell per op made every op's record twice
    /// as large, and a plugin of 10,000 ops fault in 160 KB more as it loads).
    entries: Mutex<HashMap<u32, &'static OpEntry, FixedState>>,
    /// How many impls it had: what they said beyond their kernels is in `states`, or was
    /// for messages while it was checked.
    impls: usize,
    kernels: Box<dyn ForeignKernels>,
}

/// `OpState::kernels` of a key with no impl.
const NO_IMPL: u32 = u32::MAX;

/// What registration found for one op of a batch.
struct OpState {
    /// Its impl for each key: an index into the batch's `impls`, or [`NO_IMPL`].
    kernels: [u32; DispatchKey::COUNT],
}

impl ForeignLibrary {
    fn site_of(&self, op: &ForeignOp) -> Site {
        Site {
            file: self.site.file,
            line: op.line,
        }
    }
}

fn site_of(libraries: &[ForeignLibrary], op: &ForeignOp) -> Site {
    libraries[op.library as usize].site_of(op)
}

/// A foreign op's place: its item in `Foreign::listed` (the batch being checked has the next
/// place), and within a batch its op (0 for an adopted op). The index holds these and finds
/// names through them: 8 bytes a slot, where a `&str` key beside a pointer took 32, so a
/// plugin of 10,000 ops faults in 140 KB of index instead of 540.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot {
    listed: u32,
    op: u32,
}

/// What `names()` lists, in registration order: one adopted op, or a whole batch.
#[derive(Clone, Copy)]
enum Listed {
    Op(&'static OpEntry),
    Batch(&'static Batch),
}

impl Listed {
    fn name(self, op: u32) -> &'static str {
        match self {
            Listed::Op(entry) => entry.name(),
            Listed::Batch(batch) => batch.ops[op as usize].name,
        }
    }

    fn site(self, op: u32) -> Site {
        match self {
            Listed::Op(entry) => entry.site(),
            Listed::Batch(batch) => site_of(&batch.libraries, &batch.ops[op as usize]),
        }
    }

    fn entry(self, op: u32) -> &'static OpEntry {
        match self {
            Listed::Op(entry) => entry,
            Listed::Batch(batch) => batch.entry(op as usize),
        }
    }
}

/// The name at `slot`, with `pending` the ops of the batch being checked (empty otherwise).
fn slot_name(listed: &[Listed], pending: &[ForeignOp], slot: Slot) -> &'static str {
    match listed.get(slot.listed as usize) {
        Some(item) => item.name(slot.op),
        None => pending[slot.op as usize].name,
    }
}

fn name_hash(name: &str) -> u64 {
    FixedState::default().hash_one(name)
}

/// `name`'s slot in `index`.
fn find(
    index: &HashTable<Slot>,
    listed: &[Listed],
    pending: &[ForeignOp],
    name: &str,
) -> Option<Slot> {
    index
        .find(name_hash(name), |&s| slot_name(listed, pending, s) == name)
        .copied()
}

#[derive(Default)]
struct Foreign {
    index: HashTable<Slot>,
    definers: Map<&'static str, Site>,
    listed: Vec<Listed>,
}

static FOREIGN: RwLock<Option<Foreign>> = RwLock::new(None);

/// A foreign op by name.
pub(crate) fn get(name: &str) -> Option<&'static OpEntry> {
    let (item, op) = {
        let guard = FOREIGN.read();
        let foreign = guard.as_ref()?;
        let slot = find(&foreign.index, &foreign.listed, &[], name)?;
        (foreign.listed[slot.listed as usize], slot.op)
    };
    // Built outside the lock: building takes no lock of this map.
    Some(item.entry(op))
}

/// Every foreign op's name, in registration order.
pub(crate) fn names() -> Vec<&'static str> {
    let listed = listed();
    let mut names = Vec::new();
    for item in listed {
        match item {
            Listed::Op(entry) => names.push(entry.name()),
            Listed::Batch(batch) => names.extend(batch.op_names()),
        }
    }
    names
}

fn listed() -> Vec<Listed> {
    FOREIGN
        .read()
        .as_ref()
        .map(|f| f.listed.clone())
        .unwrap_or_default()
}

/// What a foreign slot's boxed fn pointer is: the dispatcher calls the `ForeignKernel` instead,
/// so this only answers a caller that took the pointer out by hand.
unsafe extern "C" fn foreign_only(_: *mut StableValue, _: u64, _: u64) -> i32 {
    super::STATUS_ERROR
}

/// A registered batch, for the names of its ops.
#[derive(Clone, Copy)]
pub(crate) struct Registered(&'static Batch);

impl Registered {
    /// The batch's op names, in registration order. Made on each ask rather than kept: for a
    /// plugin of 10,000 ops a kept copy is 40 fresh pages, a tenth of its load.
    pub(crate) fn op_names(self) -> Vec<&'static str> {
        self.0.op_names().collect()
    }
}

/// Checks `batch` against the in-process registry, the foreign ops so far and itself; adds all
/// of it, or returns every problem and adds nothing.
pub(crate) fn register(batch: ForeignBatch) -> Result<Registered> {
    let host = check()?;
    let mut guard = FOREIGN.write();
    let foreign = guard.get_or_insert_with(Foreign::default);
    let mut errors = Vec::new();

    let mut definers: Map<&'static str, Site> = Map::default();
    // Every in-process op's name starts with its library's namespace: an op in another
    // namespace needs no look-up there.
    let mut host_namespaces: Map<&'static str, ()> = Map::default();
    for lib in inventory::iter::<LibraryRegistration> {
        host_namespaces.insert(lib.namespace, ());
        if lib.kind == LibraryKind::Def {
            definers.entry(lib.namespace).or_insert(lib.site);
        }
    }
    let mut new_definers: Map<&'static str, Site> = Map::default();
    let count = batch.ops.len();
    let Foreign {
        index,
        definers: foreign_definers,
        listed,
    } = foreign;
    // The batch's ops go into the index as they are checked, so each name is hashed once,
    // under the place the batch takes in `listed` if all of them pass.
    let pending = listed.len() as u32;
    let ours = |slot: Slot| (slot.listed == pending).then_some(slot.op as usize);
    index.reserve(count, |&s| name_hash(slot_name(listed, &[], s)));
    let mut states: Vec<OpState> = Vec::with_capacity(count);
    let ForeignBatch {
        image,
        libraries,
        ops,
        impls,
        names,
        kernels,
    } = batch;
    // A fragment may come before its library within one image.
    let defined_here: Vec<&'static str> = libraries
        .iter()
        .filter(|l| l.kind == LibraryKind::Def)
        .map(|l| l.namespace)
        .collect();
    for lib in &libraries {
        let defined = definers
            .get(lib.namespace)
            .or_else(|| foreign_definers.get(lib.namespace))
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
                if defined.is_none() && !defined_here.contains(&lib.namespace) {
                    errors.push(Error::FragmentWithoutLibrary {
                        namespace: lib.namespace.to_string(),
                        site: lib.site,
                    });
                }
            }
        }
        let in_host = host_namespaces.contains_key(lib.namespace);
        for (op_index, def) in lib.ops.clone().zip(&ops[lib.ops.clone()]) {
            // Every op has a state, so an op's index is its place in `ops`; an op refused
            // here refuses the batch.
            states.push(OpState {
                kernels: [NO_IMPL; DispatchKey::COUNT],
            });
            let in_process = if in_host { host.get(def.name) } else { None };
            if let Some(first) = in_process {
                errors.push(Error::DuplicateOp {
                    op: def.name.to_string(),
                    first: first.site(),
                    second: lib.site_of(def),
                });
                continue;
            }
            let hash = name_hash(def.name);
            let same = |&s: &Slot| slot_name(listed, &ops, s) == def.name;
            match index.find(hash, same) {
                Some(&earlier) => {
                    let first = match ours(earlier) {
                        Some(i) => site_of(&libraries, &ops[i]),
                        None => listed[earlier.listed as usize].site(earlier.op),
                    };
                    errors.push(Error::DuplicateOp {
                        op: def.name.to_string(),
                        first,
                        second: lib.site_of(def),
                    });
                }
                None => {
                    // Room was reserved for every op, so the table does not grow here.
                    index.insert_unique(
                        hash,
                        Slot {
                            listed: pending,
                            op: op_index as u32,
                        },
                        |&s| name_hash(slot_name(listed, &ops, s)),
                    );
                }
            }
        }
    }

    for (impl_index, imp) in impls.iter().enumerate() {
        let op_name = imp.op_name(&ops, &names);
        let found = find(index, listed, &ops, op_name);
        let Some(op) = found.and_then(ours) else {
            let elsewhere = host
                .get(op_name)
                .map(|e| e.site())
                .or_else(|| found.map(|s| listed[s.listed as usize].site(s.op)));
            let site = imp.site(&names);
            errors.push(match elsewhere {
                Some(defined) => Error::Unsupported(format!(
                    "a {} kernel for '{op_name}' is registered at {site}, but '{op_name}' is \
                     defined at {defined}, outside this plugin: plugin ABI v1 lets a plugin \
                     implement only the ops it defines",
                    imp.key
                )),
                None => Error::ImplWithoutDef {
                    op: op_name.to_string(),
                    key: imp.key.to_string(),
                    site,
                },
            });
            continue;
        };
        let slot = &mut states[op].kernels[imp.key.index()];
        match *slot {
            NO_IMPL => *slot = impl_index as u32,
            existing => {
                let existing = &impls[existing as usize];
                if existing.function != imp.function {
                    errors.push(Error::DuplicateImpl {
                        op: op_name.to_string(),
                        key: imp.key.to_string(),
                        first: existing.site(&names),
                        second: imp.site(&names),
                    });
                }
            }
        }
    }

    if !errors.is_empty() {
        index.retain(|s| s.listed != pending);
        return Err(match errors.len() {
            1 => errors.remove(0),
            _ => Error::Registration(errors),
        });
    }
    let batch: &'static Batch = Box::leak(Box::new(Batch {
        image,
        libraries,
        ops,
        states,
        entries: Mutex::default(),
        impls: impls.len(),
        kernels,
    }));
    listed.push(Listed::Batch(batch));
    foreign_definers.extend(new_definers);
    Ok(Registered(batch))
}

impl Batch {
    /// Its ops' names, in registration order.
    fn op_names(&'static self) -> impl Iterator<Item = &'static str> {
        self.ops.iter().map(|op| op.name)
    }

    /// Op `i`'s entry, built on first use.
    fn entry(&'static self, i: usize) -> &'static OpEntry {
        // Built under the lock, so an op has one entry however many threads resolve it at once.
        let mut entries = self.entries.lock();
        if let Some(&entry) = entries.get(&(i as u32)) {
            return entry;
        }
        let entry = self.build(i);
        entries.insert(i as u32, entry);
        entry
    }

    fn build(&'static self, i: usize) -> &'static OpEntry {
        let op = &self.ops[i];
        let boxed = BoxedOp::at_run_time(
            op.name,
            Schema {
                name: operator_name(op.name),
                arguments: Cow::Borrowed(op.signature.arguments),
                returns: Cow::Borrowed(op.signature.returns),
            },
        );
        let mut foreign: ForeignSlots = [None; DispatchKey::COUNT];
        for (kernel, &index) in foreign.iter_mut().zip(&self.states[i].kernels) {
            // NO_IMPL, for a key with no kernel, is past every impl.
            if (index as usize) < self.impls {
                *kernel = Some(self.kernels.kernel(index as usize, boxed.schema()));
            }
        }
        Box::leak(Box::new(entry(
            boxed,
            site_of(&self.libraries, op),
            Box::leak(Box::new(foreign)),
            &self.image,
        )))
    }
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
    if let Some(slot) = find(&foreign.index, &foreign.listed, &[], name) {
        return foreign.listed[slot.listed as usize].entry(slot.op);
    }
    let site = Site {
        file: image,
        line: 0,
    };
    let mut kernels: ForeignSlots = [None; DispatchKey::COUNT];
    kernels[DispatchKey::CompositeExplicit.index()] = Some(kernel);
    let entry: &'static OpEntry = Box::leak(Box::new(entry(
        BoxedOp::at_run_time(name, schema.clone()),
        site,
        Box::leak(Box::new(kernels)),
        Box::leak(Box::new(image)),
    )));
    let slot = Slot {
        listed: foreign.listed.len() as u32,
        op: 0,
    };
    foreign.listed.push(Listed::Op(entry));
    let listed = &foreign.listed;
    foreign.index.insert_unique(name_hash(name), slot, |&s| {
        name_hash(slot_name(listed, &[], s))
    });
    entry
}

/// The entry of another image's op: a slot that runs `foreign_only` wherever `foreign` has a
/// kernel, which the dispatcher calls instead. Its definition and library are leaked once, when
/// the op is first resolved, as the macros' statics are for a linked-in op.
fn entry(
    op: BoxedOp,
    site: Site,
    foreign: &'static ForeignSlots,
    image: &'static &'static str,
) -> OpEntry {
    let namespace = op.name().split_once("::").map_or("", |(ns, _)| ns);
    let library: &'static LibraryRegistration = Box::leak(Box::new(LibraryRegistration {
        namespace,
        kind: LibraryKind::Fragment,
        python_module: None,
        site,
        ops: &[],
    }));
    let def: &'static OpDef = Box::leak(Box::new(OpDef::at_run_time(op, site.line)));
    let slot = BoxedKernel::raw(foreign_only);
    let mut entry = OpEntry::new(library, def, Some(image));
    entry.kernels = foreign.map(|k| k.map(|_| slot));
    entry.foreign = Some(foreign);
    entry
}
