/// The argument of a `#[stable_library]` or `#[stable_fragment]` function.
///
/// The macro reads the `m.def("...")` calls at compile time, so the function never has to run.
/// It is kept as plain Rust, and calling it on a `Library` lists the schemas it defines.
#[derive(Clone, Debug, Default)]
pub struct Library {
    namespace: String,
    schemas: Vec<String>,
}

impl Library {
    pub fn new(namespace: impl Into<String>) -> Library {
        Library {
            namespace: namespace.into(),
            schemas: Vec::new(),
        }
    }

    /// Records one schema string.
    pub fn def(&mut self, schema: &str) -> &mut Library {
        self.schemas.push(schema.to_string());
        self
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn schemas(&self) -> &[String] {
        &self.schemas
    }
}
