use super::stable_value::StableValue;
use super::tag::Tag;
use crate::Tensor;

/// The heap body of a List value. Homogeneous lists of plain types are stored typed, so a
/// kernel can borrow `&[i64]` or `&[Tensor]` without copying; anything else (optional elements,
/// nested lists) is a list of boxed values.
#[derive(Clone, Debug)]
pub enum List {
    /// `bool[]`.
    Bool(Vec<bool>),
    /// `int[]`.
    Int(Vec<i64>),
    /// `float[]`.
    Float(Vec<f64>),
    /// `str[]`.
    Str(Vec<String>),
    /// `Tensor[]`.
    Tensor(Vec<Tensor>),
    /// Any other element type, each element boxed (`Tensor?[]`, `Scalar[]`, ...).
    Values(Vec<StableValue>),
}

impl List {
    /// The element tag stored in a List value's `aux` field (None for boxed values).
    pub fn element_tag(&self) -> Tag {
        match self {
            List::Bool(_) => Tag::Bool,
            List::Int(_) => Tag::Int,
            List::Float(_) => Tag::Float,
            List::Str(_) => Tag::Str,
            List::Tensor(_) => Tag::Tensor,
            List::Values(_) => Tag::None,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Bool(v) => v.len(),
            List::Int(v) => v.len(),
            List::Float(v) => v.len(),
            List::Str(v) => v.len(),
            List::Tensor(v) => v.len(),
            List::Values(v) => v.len(),
        }
    }

    /// Whether the list has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `int[]`, `Tensor[]`, or `list` for boxed values.
    pub fn describe(&self) -> String {
        match self {
            List::Values(_) => "list".to_string(),
            typed => format!("{}[]", typed.element_tag().schema_name()),
        }
    }

    /// The elements as boxed values, whatever the storage.
    pub fn into_values(self) -> Vec<StableValue> {
        match self {
            List::Bool(v) => v.into_iter().map(StableValue::bool).collect(),
            List::Int(v) => v.into_iter().map(StableValue::int).collect(),
            List::Float(v) => v.into_iter().map(StableValue::float).collect(),
            List::Str(v) => v.into_iter().map(StableValue::str).collect(),
            List::Tensor(v) => v.into_iter().map(StableValue::tensor).collect(),
            List::Values(v) => v,
        }
    }

    /// Every tensor in the list, for dispatch-key extraction.
    pub fn tensors(&self) -> impl Iterator<Item = &Tensor> {
        let (typed, boxed): (&[Tensor], &[StableValue]) = match self {
            List::Tensor(v) => (v.as_slice(), &[]),
            List::Values(v) => (&[], v.as_slice()),
            _ => (&[], &[]),
        };
        typed
            .iter()
            .chain(boxed.iter().filter_map(StableValue::as_tensor))
    }
}
