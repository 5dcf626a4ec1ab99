use std::ops::Range;

/// A schema that does not parse or does not make sense. `range` is the byte range in the schema
/// string that the message is about, so the macros can point inside the string literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub range: Range<usize>,
    pub message: String,
}

impl SchemaError {
    pub fn new(range: Range<usize>, message: impl Into<String>) -> SchemaError {
        SchemaError {
            range,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (at bytes {}..{})",
            self.message, self.range.start, self.range.end
        )
    }
}

impl std::error::Error for SchemaError {}
