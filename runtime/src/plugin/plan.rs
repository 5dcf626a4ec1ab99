//! What a call of a plugin's kernel checks, worked out once from its op's schema: the tag each
//! argument and return must carry, and whether every one of them is a plain value (no tensor,
//! string or list), whose bits are the same on both sides of the ABI so the call needs no
//! conversion at all.

use opbox_codegen::schema::{BaseType, Schema, Type, TypeShape};

use super::convert::PLAIN_TAGS;
use crate::abi::plugin_v1::Value;
use crate::value::{StableValue, Tag};

/// The tags a value of one schema type may carry (`None` too when the type is optional), as a
/// mask of tag numbers: a call tests one bit, with no branch on the type's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Expect {
    /// Bit `t` set when tag number `t` is admitted; empty for a type plugin ABI v1 does not
    /// carry (the registrar refuses those, so no call sees one).
    admitted: u32,
}

/// The bit of `tag`.
const fn bit(tag: Tag) -> u32 {
    1 << tag as u32
}

impl Expect {
    pub(crate) const fn of(ty: Type) -> Expect {
        match ty.shape() {
            TypeShape::Optional(inner) => Expect {
                admitted: Expect::of(inner).admitted | bit(Tag::None),
            },
            TypeShape::List(_) => Expect::exactly(Tag::List),
            TypeShape::Base(b) => match b.concrete() {
                BaseType::Tensor => Expect::exactly(Tag::Tensor),
                // Layout and MemoryFormat box as their codes, as PyTorch's do.
                BaseType::Int | BaseType::Layout | BaseType::MemoryFormat => {
                    Expect::exactly(Tag::Int)
                }
                BaseType::Float => Expect::exactly(Tag::Float),
                BaseType::Bool => Expect::exactly(Tag::Bool),
                BaseType::Str => Expect::exactly(Tag::Str),
                BaseType::ScalarType => Expect::exactly(Tag::DType),
                BaseType::Device => Expect::exactly(Tag::Device),
                BaseType::Scalar => Expect::exactly(Tag::Scalar),
                _ => Expect { admitted: 0 },
            },
        }
    }

    const fn exactly(tag: Tag) -> Expect {
        Expect { admitted: bit(tag) }
    }

    /// Whether a value with tag number `tag` is one of this type.
    #[inline]
    pub(crate) fn admits(self, tag: u32) -> bool {
        tag < 32 && self.admitted & (1 << tag) != 0
    }

    /// Whether every value of this type is plain: no handle, the same bits in both images.
    const fn is_plain(self) -> bool {
        self.admitted != 0 && self.admitted & !PLAIN_TAGS == 0
    }

    /// Whether every value of this type is plain or a tensor, which an in-place kernel takes.
    const fn is_held(self) -> bool {
        self.admitted != 0 && self.admitted & !(PLAIN_TAGS | bit(Tag::Tensor)) == 0
    }
}

/// One op's checks, as a plugin's kernel for it is called.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) args: Box<[Expect]>,
    pub(crate) returns: Box<[Expect]>,
    /// Every argument and return is plain: the call copies bits both ways.
    pub(crate) plain: bool,
}

impl Plan {
    /// The index of the first of `values` (one an argument) whose tag its argument refuses.
    #[inline]
    pub(crate) fn first_refused(&self, values: &[StableValue]) -> Option<usize> {
        values
            .iter()
            .zip(self.args.iter())
            .position(|(v, expect)| !expect.admits(v.raw_tag()))
    }

    /// For a kernel that runs in place: the index of the first of `values` (one an argument)
    /// whose tag its argument refuses, else whether each tensor among them is a header as it is
    /// (this image's, described, or another's), as the in-place kernel takes them; one that is
    /// not (a meta tensor) is lent instead. One pass, as the call's only look at its arguments.
    #[inline]
    pub(crate) fn held_args(&self, values: &[StableValue]) -> Result<bool, usize> {
        let mut headers = true;
        for (i, (v, expect)) in values.iter().zip(self.args.iter()).enumerate() {
            if !expect.admits(v.raw_tag()) {
                return Err(i);
            }
            headers &= v.as_tensor().is_none_or(crate::Tensor::is_a_header);
        }
        Ok(headers)
    }

    /// Whether each of the first `returns.len()` values of `written` is of its return's type.
    #[inline]
    pub(crate) fn returns_admit(&self, written: &[Value]) -> bool {
        written
            .iter()
            .zip(self.returns.iter())
            .all(|(v, expect)| expect.admits(v.tag))
    }

    pub(crate) fn of(schema: &Schema) -> Plan {
        let args: Box<[Expect]> = schema.arguments.iter().map(|a| Expect::of(a.ty)).collect();
        let returns: Box<[Expect]> = schema.returns.iter().map(|r| Expect::of(r.ty)).collect();
        let plain = args.iter().chain(returns.iter()).all(|e| e.is_plain());
        Plan {
            args,
            returns,
            plain,
        }
    }

    /// Every argument and return is plain or a tensor: an in-place kernel (ABI 1.4) can run on
    /// the stack as it is.
    pub(crate) fn held(&self) -> bool {
        self.args
            .iter()
            .chain(self.returns.iter())
            .all(|e| e.is_held())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ops_and_the_others() {
        let plan = |s: &str| Plan::of(&opbox_codegen::schema::parse(s).unwrap());
        assert!(
            plan("f(int x, float? y, Scalar s, ScalarType t, Device d) -> (bool, Layout)").plain
        );
        assert!(!plan("f(int x) -> Tensor").plain);
        assert!(!plan("f(str s) -> int").plain);
        assert!(!plan("f(int[] xs) -> int").plain);
        assert!(plan("f(Tensor x, Tensor? y, float s) -> (Tensor, int)").held());
        assert!(!plan("f(Tensor x, str s) -> Tensor").held());
        assert!(!plan("f(Tensor x) -> int[]").held());
        let p = plan("f(int? x, Tensor t) -> ()");
        assert!(p.args[0].admits(Tag::None as u32) && p.args[0].admits(Tag::Int as u32));
        assert!(!p.args[0].admits(Tag::Float as u32));
        assert!(!p.args[1].admits(Tag::None as u32));
        let list = StableValue::list(crate::value::List::Int(vec![]));
        assert!(Expect::of(Type::INT.list().unwrap()).admits(list.raw_tag()));
    }
}
