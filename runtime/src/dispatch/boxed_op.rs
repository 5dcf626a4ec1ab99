//! One op's static data: its schema as text, parsed on first use.
//!
//! A library of 10,000 ops cannot afford a parsed `Schema` in static data: each is about 370
//! bytes and nine pointers, and every pointer is a relocation the dynamic loader applies, and a
//! page it copies, before `main` (issue 19 measured 5 ms at 10,000 ops). So the macro stores the
//! schema's text and its counts, and the parsed schema lives in a zeroed cell in `.bss` until an
//! error message, a default or a caller asks for it. The call path reads only the counts.

use std::sync::atomic::{AtomicPtr, Ordering};

use opbox_codegen::op_name_hash::op_name_hash;
use opbox_codegen::schema::{OperatorName, Schema};

/// Where an op's parsed schema is kept: a pointer, null until the first parse. A static one is
/// eight zero bytes in `.bss`, so it costs no file space and no start-up work (a `OnceLock`'s
/// uninitialised payload put 134 bytes an op into `.data`).
#[derive(Debug)]
pub struct SchemaCell(AtomicPtr<Schema>);

impl SchemaCell {
    /// An empty cell, for a `static`: the schema is parsed from the op's text on first use.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> SchemaCell {
        SchemaCell(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// A cell that already holds `schema` (an op built at run time, whose text is only its
    /// name).
    pub fn holding(schema: Schema) -> SchemaCell {
        SchemaCell(AtomicPtr::new(Box::into_raw(Box::new(schema))))
    }

    /// The schema, made by `parse` if the cell is empty. Two threads may both parse; the first
    /// to store wins and the other's copy is dropped, so every caller sees the same one.
    fn get_or_init(&'static self, parse: impl FnOnce() -> Schema) -> &'static Schema {
        let current = self.0.load(Ordering::Acquire);
        // SAFETY: a non-null pointer here came from Box::into_raw in `holding` or below, and is
        // never freed or replaced once stored, so it is valid for 'static.
        if let Some(schema) = unsafe { current.as_ref() } {
            return schema;
        }
        let fresh = Box::into_raw(Box::new(parse()));
        let null = std::ptr::null_mut();
        let stored = match self
            .0
            .compare_exchange(null, fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => fresh,
            Err(first) => {
                // SAFETY: `fresh` is ours, from Box::into_raw just above, and was never shared.
                drop(unsafe { Box::from_raw(fresh) });
                first
            }
        };
        // SAFETY: `stored` is the cell's pointer (non-null: either `fresh` or the first one
        // stored), valid for 'static as above.
        unsafe { &*stored }
    }
}

/// An op's static data, as `#[stable_library]` emits it once per op: the registry's entry, its
/// kernels' registrations and its boxed shims all point at the same one.
#[derive(Debug)]
pub struct BoxedOp {
    /// The schema as printed with its namespace (`ns::name.overload(args) -> returns`), which
    /// parses back to exactly the schema the macro checked; or, with a `parsed` cell that is
    /// already full, just the qualified name.
    pub text: &'static str,
    /// `text[..name_len]` is `ns::name[.overload]`.
    pub name_len: u32,
    /// `opbox_codegen::op_name_hash::op_name_hash` of the name, so that registering the op
    /// reads neither its name nor hashes it.
    pub name_hash: u32,
    /// The schema's argument count.
    pub num_args: u32,
    /// The schema's return count.
    pub num_outputs: u32,
    /// The parsed schema, once something asked for it.
    pub parsed: &'static SchemaCell,
}

impl BoxedOp {
    /// `ns::name[.overload]`.
    #[inline]
    pub fn name(&self) -> &'static str {
        let text: &'static str = self.text;
        text.get(..self.name_len as usize).unwrap_or(text)
    }

    /// [`BoxedOp::name`] as bytes, cut by length alone: a `str` cut checks that it falls
    /// between characters, which reads the text, and registration must read none of it.
    #[inline]
    pub(crate) fn name_bytes(&self) -> &'static [u8] {
        let text: &'static [u8] = self.text.as_bytes();
        text.get(..self.name_len as usize).unwrap_or(text)
    }

    /// The schema as text, qualified: `text` itself for a macro's op, printed for one made at
    /// run time.
    pub fn schema_text(&self) -> std::borrow::Cow<'static, str> {
        let text: &'static str = self.text;
        if text.len() > self.name_len as usize {
            text.into()
        } else {
            self.schema().to_string().into()
        }
    }

    /// The parsed schema: parsed from `text` the first time it is asked for.
    pub fn schema(&self) -> &'static Schema {
        let parsed: &'static SchemaCell = self.parsed;
        parsed.get_or_init(|| self.parse())
    }

    /// The schema's argument count.
    #[inline]
    pub fn num_args(&self) -> usize {
        self.num_args as usize
    }

    /// The schema's return count.
    #[inline]
    pub fn num_outputs(&self) -> usize {
        self.num_outputs as usize
    }

    /// A `BoxedOp` made at run time (a plugin's op, the host's seen from a plugin, a test's):
    /// its text is its name, and its cell (leaked, like the statics the macro makes) already
    /// holds `schema`.
    pub(crate) fn at_run_time(name: &'static str, schema: Schema) -> BoxedOp {
        BoxedOp {
            text: name,
            name_len: u32::try_from(name.len()).unwrap_or(u32::MAX),
            name_hash: op_name_hash(name),
            num_args: u32::try_from(schema.arguments.len()).unwrap_or(u32::MAX),
            num_outputs: u32::try_from(schema.returns.len()).unwrap_or(u32::MAX),
            parsed: Box::leak(Box::new(SchemaCell::holding(schema))),
        }
    }

    /// The macro printed `text` from a schema it had parsed, and checked that it parses back to
    /// the same one, so this cannot fail for a generated op. A hand-made `BoxedOp` whose text is
    /// not a schema gets one with its name and no arguments, rather than a panic in whatever
    /// error message asked for it.
    #[cold]
    fn parse(&self) -> Schema {
        opbox_codegen::schema::parse(self.text).unwrap_or_else(|_| Schema {
            name: operator_name(self.name()),
            arguments: Default::default(),
            returns: Default::default(),
        })
    }
}

/// `ns::name.overload` as an [`OperatorName`].
pub(crate) fn operator_name(qualified: &'static str) -> OperatorName {
    let (namespace, rest) = qualified.split_once("::").unwrap_or(("", qualified));
    let (name, overload) = rest.split_once('.').unwrap_or((rest, ""));
    OperatorName {
        namespace: Some(namespace.into()),
        name: name.into(),
        overload: overload.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CELL: SchemaCell = SchemaCell::new();
    static ADD: BoxedOp = BoxedOp {
        text: "t::add.Tensor(Tensor x, int? dim=None, *, float alpha=1.0) -> Tensor",
        name_len: 13,
        name_hash: op_name_hash("t::add.Tensor"),
        num_args: 3,
        num_outputs: 1,
        parsed: &CELL,
    };

    #[test]
    fn the_name_is_the_front_of_the_text() {
        assert_eq!(ADD.name(), "t::add.Tensor");
        assert_eq!(ADD.name_bytes(), ADD.name().as_bytes());
    }

    #[test]
    fn the_schema_is_parsed_once_and_kept() {
        let schema = ADD.schema();
        assert_eq!(schema.arguments.len(), ADD.num_args());
        assert_eq!(schema.returns.len(), ADD.num_outputs());
        assert_eq!(schema.to_string(), ADD.text);
        assert!(std::ptr::eq(schema, ADD.schema()));
    }

    #[test]
    fn threads_that_race_to_parse_all_get_the_one_schema() {
        static CELL: SchemaCell = SchemaCell::new();
        static OP: BoxedOp = BoxedOp {
            text: "t::race(int x) -> int",
            name_len: 7,
            name_hash: op_name_hash("t::race"),
            num_args: 1,
            num_outputs: 1,
            parsed: &CELL,
        };
        let seen: Vec<usize> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| s.spawn(|| OP.schema() as *const Schema as usize))
                .collect();
            threads.into_iter().filter_map(|t| t.join().ok()).collect()
        });
        assert_eq!(seen.len(), 4);
        assert!(seen.iter().all(|&p| p == seen[0]));
    }

    #[test]
    fn text_that_is_not_a_schema_gives_the_name_and_no_arguments() {
        static EMPTY: SchemaCell = SchemaCell::new();
        static BAD: BoxedOp = BoxedOp {
            text: "t::odd",
            name_len: 99,
            name_hash: op_name_hash("t::odd"),
            num_args: 0,
            num_outputs: 0,
            parsed: &EMPTY,
        };
        assert_eq!(BAD.name(), "t::odd");
        assert_eq!(BAD.name_bytes(), b"t::odd");
        let schema = BAD.schema();
        assert_eq!(schema.name.to_string(), "t::odd");
        assert!(schema.arguments.is_empty() && schema.returns.is_empty());
    }

    #[test]
    fn an_op_made_at_run_time_is_named_and_holds_its_schema() {
        let schema = opbox_codegen::schema::parse("t::f(int x) -> int").expect("parses");
        let op = BoxedOp::at_run_time("t::f", schema);
        assert_eq!((op.name(), op.num_args(), op.num_outputs()), ("t::f", 1, 1));
        assert_eq!(op.schema().to_string(), "t::f(int x) -> int");
        assert_eq!(op.schema_text(), "t::f(int x) -> int");
        assert_eq!(ADD.schema_text(), ADD.text);
    }
}
