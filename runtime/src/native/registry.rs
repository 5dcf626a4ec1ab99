//! The native-type and builtin registries: process-global, collected from inventory at first use,
//! with one write path ([`register_native_type`], [`register_builtin`]) for plugins and tests.
//! Neither is on a launch's hot path, so a mutex guards each.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use opbox_codegen::builtin::{BuiltinDecl, Overload};
use opbox_codegen::native::{type_code, NativeSchema};

use crate::error::{Error, Result, Site};

/// What `#[derive(NativeType)]` submits.
pub struct NativeTypeRegistration {
    /// The type's layout.
    pub schema: &'static NativeSchema,
    /// Where the derive is.
    pub site: Site,
}

/// What `#[builtin]` submits.
pub struct BuiltinRegistration {
    /// The builtin's declaration.
    pub decl: &'static BuiltinDecl,
    /// Where it is declared.
    pub site: Site,
}

inventory::collect!(NativeTypeRegistration);
inventory::collect!(BuiltinRegistration);

/// Native types by C++ name.
#[derive(Default)]
pub struct NativeRegistry {
    by_name: HashMap<&'static str, (&'static NativeSchema, Site)>,
}

impl NativeRegistry {
    /// An empty registry.
    pub fn new() -> NativeRegistry {
        NativeRegistry::default()
    }

    /// Adds `schema`. An equal contract under the same native name (whatever the Rust type) is
    /// accepted and changes nothing; a different one is [`Error::NativeTypeConflict`].
    pub fn register(&mut self, schema: &'static NativeSchema, site: Site) -> Result<()> {
        match self.by_name.get(schema.native_name) {
            None => {
                self.by_name.insert(schema.native_name, (schema, site));
                Ok(())
            }
            Some((first, _)) if first.same_contract(schema) => Ok(()),
            Some((first, first_site)) => Err(Error::NativeTypeConflict {
                native_name: schema.native_name.to_string(),
                first: describe_type(first, *first_site),
                second: describe_type(schema, site),
            }),
        }
    }

    /// The native type registered under the C++ name `native_name`.
    pub fn get(&self, native_name: &str) -> Option<&'static NativeSchema> {
        self.by_name.get(native_name).map(|(s, _)| *s)
    }

    /// How many native types are registered.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

fn describe_type(schema: &NativeSchema, site: Site) -> String {
    format!(
        "'{}' at {site} ({}, {})",
        schema.rust_name,
        type_code(schema),
        schema.contract_text()
    )
}

/// Builtins by name; each name may have several overloads (different inputs).
#[derive(Default)]
pub struct BuiltinRegistry {
    by_name: HashMap<&'static str, Vec<(&'static BuiltinDecl, Site)>>,
}

impl BuiltinRegistry {
    /// An empty registry.
    pub fn new() -> BuiltinRegistry {
        BuiltinRegistry::default()
    }

    /// Adds `decl` as an overload of its name. The same inputs with the same result and native
    /// function are accepted once more and change nothing; with another result or native
    /// function they are [`Error::BuiltinConflict`]; other inputs make a new overload.
    pub fn register(&mut self, decl: &'static BuiltinDecl, site: Site) -> Result<()> {
        let overloads = self.by_name.entry(decl.name).or_default();
        for (existing, existing_site) in overloads.iter() {
            match existing.compare(decl) {
                Overload::Distinct => {}
                Overload::Same => return Ok(()),
                Overload::Conflict => {
                    return Err(Error::BuiltinConflict {
                        name: decl.name.to_string(),
                        inputs: decl.inputs_text(),
                        first: describe_builtin(existing, *existing_site),
                        second: describe_builtin(decl, site),
                    })
                }
            }
        }
        overloads.push((decl, site));
        Ok(())
    }

    /// The overloads of `name`, in registration order.
    pub fn overloads(&self, name: &str) -> Vec<&'static BuiltinDecl> {
        self.by_name
            .get(name)
            .map(|v| v.iter().map(|(d, _)| *d).collect())
            .unwrap_or_default()
    }
}

fn describe_builtin(decl: &BuiltinDecl, site: Site) -> String {
    format!(
        "'{}' -> {} at {site}",
        decl.rust_signature(),
        decl.native_name
    )
}

type Collected<T> = (Mutex<T>, Option<Error>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a registry half-updated: `register` checks
    // before it inserts.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn collected_types() -> &'static Collected<NativeRegistry> {
    static TYPES: OnceLock<Collected<NativeRegistry>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut regs: Vec<&NativeTypeRegistration> = inventory::iter::<NativeTypeRegistration>
            .into_iter()
            .collect();
        // Submission order is link order; sort so that "first" is stable across builds.
        regs.sort_by_key(|r| (r.site.file, r.site.line, r.schema.rust_name));
        let mut registry = NativeRegistry::new();
        let errors: Vec<Error> = regs
            .into_iter()
            .filter_map(|r| registry.register(r.schema, r.site).err())
            .collect();
        (Mutex::new(registry), combine(errors))
    })
}

fn collected_builtins() -> &'static Collected<BuiltinRegistry> {
    static BUILTINS: OnceLock<Collected<BuiltinRegistry>> = OnceLock::new();
    BUILTINS.get_or_init(|| {
        let mut regs: Vec<&BuiltinRegistration> =
            inventory::iter::<BuiltinRegistration>.into_iter().collect();
        regs.sort_by_key(|r| (r.site.file, r.site.line, r.decl.name));
        let mut registry = BuiltinRegistry::new();
        let errors: Vec<Error> = regs
            .into_iter()
            .filter_map(|r| registry.register(r.decl, r.site).err())
            .collect();
        (Mutex::new(registry), combine(errors))
    })
}

fn combine(mut errors: Vec<Error>) -> Option<Error> {
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(Error::Registration(errors)),
    }
}

/// The native types of this process, collected once; a conflict among the compiled-in
/// registrations is returned here on every call.
pub fn native_types() -> Result<MutexGuard<'static, NativeRegistry>> {
    let (registry, error) = collected_types();
    match error {
        Some(e) => Err(e.clone()),
        None => Ok(lock(registry)),
    }
}

/// The builtins of this process, as [`native_types`].
pub fn builtins() -> Result<MutexGuard<'static, BuiltinRegistry>> {
    let (registry, error) = collected_builtins();
    match error {
        Some(e) => Err(e.clone()),
        None => Ok(lock(registry)),
    }
}

/// Registers a native type after collection (a plugin's, or a test's).
pub fn register_native_type(schema: &'static NativeSchema, site: Site) -> Result<()> {
    native_types()?.register(schema, site)
}

/// Registers a builtin after collection.
pub fn register_builtin(decl: &'static BuiltinDecl, site: Site) -> Result<()> {
    builtins()?.register(decl, site)
}

#[cfg(test)]
mod tests;
