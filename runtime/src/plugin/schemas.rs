//! The schemas a plugin registers, parsed with a cache of signatures: the `(args) -> returns`
//! part of a schema is parsed once per distinct text and kept (leaked: a plugin's schemas live
//! as long as the process), so ops that share a signature (a plugin's unary ops, say) share one
//! parsed argument and return list, and only their names are parsed again.

use std::collections::HashMap;

use foldhash::fast::FixedState;
use opbox_codegen::schema::{parse, parse_operator_name, Argument, OperatorName, Return};
use opbox_codegen::schema::{Schema, SchemaError};

type Signature = (&'static [Argument], &'static [Return]);

/// A parsed schema whose lists are shared with every other schema of the same signature.
#[derive(Debug, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) name: OperatorName,
    pub(crate) arguments: &'static [Argument],
    pub(crate) returns: &'static [Return],
}

#[derive(Default)]
pub(crate) struct SchemaCache {
    /// The text from the schema's `(` on, to its parsed lists.
    signatures: HashMap<String, Signature, FixedState>,
}

impl SchemaCache {
    /// `text` parsed, as [`parse`] would (and with its error when it does not parse).
    pub(crate) fn parse(&mut self, text: &str) -> Result<Parsed, SchemaError> {
        // An operator name has no `(`, so the first one opens the arguments.
        let Some(open) = text.find('(') else {
            return parse(text).map(|s| self.keep(None, s));
        };
        let (name, signature) = text.split_at(open);
        if let Some(&(arguments, returns)) = self.signatures.get(signature) {
            // A name that does not parse alone gets the whole schema's error, as before.
            if let Ok(name) = parse_operator_name(name) {
                return Ok(Parsed {
                    name,
                    arguments,
                    returns,
                });
            }
        }
        parse(text).map(|s| self.keep(Some(signature), s))
    }

    /// Leaks `schema`'s lists, under `signature` when it has one.
    fn keep(&mut self, signature: Option<&str>, schema: Schema) -> Parsed {
        let arguments: &'static [Argument] = schema.arguments.into_owned().leak();
        let returns: &'static [Return] = schema.returns.into_owned().leak();
        if let Some(signature) = signature {
            self.signatures
                .insert(signature.to_string(), (arguments, returns));
        }
        Parsed {
            name: schema.name,
            arguments,
            returns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Parsed, SchemaError> {
        parse(text).map(|s| Parsed {
            name: s.name,
            arguments: s.arguments.into_owned().leak(),
            returns: s.returns.into_owned().leak(),
        })
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the cache leaks what it parses, as plugins' schemas live for the process"
    )]
    fn a_shared_signature_is_parsed_once_and_the_results_are_parses() {
        let mut cache = SchemaCache::default();
        let texts = [
            "op_1(Tensor x, int n=2) -> Tensor",
            "ns::op_2.out(Tensor x, int n=2) -> Tensor",
            "op_3 (Tensor x, int n=2) -> Tensor",
            "op_4(Tensor x, int n=3) -> Tensor",
        ];
        let schemas: Vec<Parsed> = texts.iter().map(|t| cache.parse(t).unwrap()).collect();
        for (text, schema) in texts.iter().zip(&schemas) {
            assert_eq!(schema, &parsed(text).unwrap(), "{text}");
        }
        assert!(std::ptr::eq(schemas[0].arguments, schemas[1].arguments));
        assert_eq!(cache.signatures.len(), 2, "op_4 differs in a default");
        // Errors are the parser's, in the name or in the signature.
        for bad in [
            "9op(Tensor x, int n=2) -> Tensor",
            "op(Tensor x, int n=2) -> Tensr",
            "op",
        ] {
            assert_eq!(cache.parse(bad), parsed(bad), "{bad}");
        }
    }
}
