//! The schemas a plugin registers, parsed with a cache of signatures: the `(args) -> returns`
//! part of a schema is parsed once per distinct text and kept (leaked: a plugin's schemas live
//! as long as the process), so ops that share a signature (a plugin's unary ops, say) share one
//! parsed argument and return list, and only their names are parsed again.

use std::borrow::Cow;
use std::collections::HashMap;

use foldhash::fast::FixedState;
use opbox_codegen::cpp_ident::is_identifier;
use opbox_codegen::schema::{parse, parse_operator_name, OperatorName, Schema, SchemaError};

use crate::dispatch::foreign::Signature;

/// A parsed schema whose lists are shared with every other schema of the same signature. Its
/// name borrows the schema text where that text is the name as it stands (a plain identifier,
/// the common case), so registering a plugin's op allocates nothing for it.
#[derive(Debug)]
pub(crate) struct Parsed<'t> {
    pub(crate) namespace: Option<Cow<'t, str>>,
    pub(crate) name: Cow<'t, str>,
    /// Empty for the default overload.
    pub(crate) overload: Cow<'t, str>,
    pub(crate) signature: &'static Signature,
}

impl Parsed<'_> {
    fn named(name: OperatorName, signature: &'static Signature) -> Parsed<'static> {
        Parsed {
            namespace: name.namespace,
            name: name.name,
            overload: name.overload,
            signature,
        }
    }
}

#[derive(Default)]
pub(crate) struct SchemaCache {
    /// The text from the schema's `(` on, to its parsed lists.
    signatures: HashMap<String, &'static Signature, FixedState>,
}

impl SchemaCache {
    /// `text` parsed, as [`parse`] would (and with its error when it does not parse).
    pub(crate) fn parse<'t>(&mut self, text: &'t str) -> Result<Parsed<'t>, SchemaError> {
        // An operator name has no `(`, so the first one opens the arguments. (A byte search:
        // `str::find` costs several times more on names this short.)
        let Some(open) = text.bytes().position(|b| b == b'(') else {
            return parse(text).map(|s| self.keep(None, s));
        };
        let (name, signature) = text.split_at(open);
        if let Some(&signature) = self.signatures.get(signature) {
            // A plain name (one identifier: the schema lexer's `[A-Za-z_][A-Za-z0-9_]*`, the
            // rule `is_identifier` checks) is what parsing it would give, without the lexer.
            if is_identifier(name) {
                return Ok(Parsed {
                    namespace: None,
                    name: Cow::Borrowed(name),
                    overload: Cow::Borrowed(""),
                    signature,
                });
            }
            // A name that does not parse alone gets the whole schema's error, as before.
            if let Ok(name) = parse_operator_name(name) {
                return Ok(Parsed::named(name, signature));
            }
        }
        parse(text).map(|s| self.keep(Some(signature), s))
    }

    /// Leaks `schema`'s lists, under `signature` when it has one.
    fn keep(&mut self, text: Option<&str>, schema: Schema) -> Parsed<'static> {
        let signature: &'static Signature = Box::leak(Box::new(Signature {
            arguments: schema.arguments.into_owned().leak(),
            returns: schema.returns.into_owned().leak(),
        }));
        if let Some(text) = text {
            self.signatures.insert(text.to_string(), signature);
        }
        Parsed::named(schema.name, signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `parsed` holds, as a whole schema.
    fn whole(parsed: Result<Parsed<'_>, SchemaError>) -> Result<Schema, SchemaError> {
        parsed.map(|p| Schema {
            name: OperatorName {
                namespace: p.namespace.map(|n| Cow::Owned(n.into_owned())),
                name: Cow::Owned(p.name.into_owned()),
                overload: Cow::Owned(p.overload.into_owned()),
            },
            arguments: p.signature.arguments.into(),
            returns: p.signature.returns.into(),
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
            "op_0(Tensor x, int n=2) -> Tensor",
            "op_1(Tensor x, int n=2) -> Tensor",
            "ns::op_2.out(Tensor x, int n=2) -> Tensor",
            "op_3 (Tensor x, int n=2) -> Tensor",
            "op_4(Tensor x, int n=3) -> Tensor",
            "_5.out(Tensor x, int n=3) -> Tensor",
            "ns::op_6(Tensor x, int n=3) -> Tensor",
        ];
        let parsed: Vec<Parsed> = texts.iter().map(|t| cache.parse(t).unwrap()).collect();
        assert!(std::ptr::eq(parsed[0].signature, parsed[2].signature));
        for (text, parsed) in texts.iter().zip(parsed) {
            assert_eq!(whole(Ok(parsed)), parse(text), "{text}");
        }
        assert_eq!(cache.signatures.len(), 2, "op_4 differs in a default");
        // Errors are the parser's, in the name or in the signature.
        for bad in [
            "9op(Tensor x, int n=2) -> Tensor",
            "é(Tensor x, int n=2) -> Tensor",
            "(Tensor x, int n=2) -> Tensor",
            "op(Tensor x, int n=2) -> Tensr",
            "op",
        ] {
            assert_eq!(whole(cache.parse(bad)), parse(bad), "{bad}");
        }
    }
}
