use opbox_codegen::op_tag::OpTag;

/// The argument of a `#[stable_library]` or `#[stable_fragment]` function.
///
/// The macro reads the `m.def("...")` calls at compile time, so the function never has to run.
/// It is kept as plain Rust, and calling it on a `Library` lists the schemas it defines.
#[derive(Clone, Debug, Default)]
pub struct Library {
    namespace: String,
    schemas: Vec<String>,
    tags: Vec<(usize, Vec<OpTag>)>,
    python_module: Option<String>,
}

impl Library {
    /// An empty library (or fragment) of `namespace`: what `#[stable_library]` hands its function.
    pub fn new(namespace: impl Into<String>) -> Library {
        Library {
            namespace: namespace.into(),
            schemas: Vec::new(),
            tags: Vec::new(),
            python_module: None,
        }
    }

    /// Records one schema string.
    pub fn def(&mut self, schema: &str) -> &mut Library {
        self.schemas.push(schema.to_string());
        self
    }

    /// Records one schema string with PyTorch's tags for the op (`&[OpTag::Pt2Compliant]`);
    /// the macro registers the tags, and `OpHandle::tags` reads them back.
    pub fn def_with_tags(&mut self, schema: &str, tags: &[OpTag]) -> &mut Library {
        self.tags.push((self.schemas.len(), tags.to_vec()));
        self.def(schema)
    }

    /// Names the Python module that holds this block's Python-side registrations, as PyTorch's
    /// `Library::set_python_module` does; `OpHandle::python_module` reads it back.
    pub fn set_python_module(&mut self, module: &str) -> &mut Library {
        self.python_module = Some(module.to_string());
        self
    }

    /// The Python module `set_python_module` named, if any.
    pub fn python_module(&self) -> Option<&str> {
        self.python_module.as_deref()
    }

    /// The tags given with each tagged schema, by its index in [`schemas`](Self::schemas).
    pub fn tags(&self) -> &[(usize, Vec<OpTag>)] {
        &self.tags
    }

    /// The library's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The schemas defined so far, in order.
    pub fn schemas(&self) -> &[String] {
        &self.schemas
    }
}
