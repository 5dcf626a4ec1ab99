//! The boxed boundary's check of fixed-size list arguments (`int[2] stride`): the schema's
//! length is part of its type, so a call gets it or an error naming the argument.
//!
//! As PyTorch's argument parser does, a lone value for `T[N]` is N copies of it (`stride=2` is
//! `[2, 2]`). A list must hold N elements, none (PyTorch's schemas use `[]` for "not given", as
//! in `max_pool2d(.., int[2] stride=[])`), or as many as the schema's own default (PyTorch's
//! `fft_fft2(.., int[1] dim=[-2,-1])`).

use opbox_codegen::schema::{Argument, BaseType, DefaultValue, Schema};

use super::boxed_op::BoxedOp;
use crate::value::{List, StableValue};
use crate::{Error, Result};

/// One fixed-size list argument of an op: its index and length
/// ([`Schema::fixed_list_arguments`]), computed by the library macro into the op's [`OpDef`].
///
/// [`OpDef`]: super::OpDef
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedList {
    index: usize,
    len: u32,
}

impl FixedList {
    /// Argument `index` is a list of `len` elements.
    pub const fn new(index: usize, len: u32) -> FixedList {
        FixedList { index, len }
    }
}

/// The schema's fixed-size list arguments, for an op whose schema is known only at run time
/// (a plugin's); leaked, as its entry is.
pub(crate) fn fixed_lists(schema: &Schema) -> &'static [FixedList] {
    let lists = schema.fixed_list_arguments();
    if lists.is_empty() {
        return &[];
    }
    lists
        .into_iter()
        .map(|(index, len)| FixedList::new(index, len))
        .collect::<Vec<_>>()
        .leak()
}

/// Checks (and broadcasts) every fixed-size list argument in `args`.
pub(crate) fn check(op: &BoxedOp, lists: &[FixedList], args: &mut [StableValue]) -> Result<()> {
    let schema = op.schema();
    let op = op.name();
    for list in lists {
        let (Some(arg), Some(value)) = (schema.arguments.get(list.index), args.get_mut(list.index))
        else {
            continue;
        };
        check_one(op, list, arg, value)?;
    }
    Ok(())
}

fn check_one(op: &str, list: &FixedList, arg: &Argument, value: &mut StableValue) -> Result<()> {
    let n = list.len as usize;
    if value.is_none() {
        // `T[N]?` given None; a non-optional list given None fails its own unboxing.
        return Ok(());
    }
    let base = arg.ty.base_type().concrete();
    let broadcast = match base {
        BaseType::Int => value.as_int().map(|v| List::Int(vec![v; n])),
        BaseType::Float => value.as_float().map(|v| List::Float(vec![v; n])),
        BaseType::Bool => value.as_bool().map(|v| List::Bool(vec![v; n])),
        _ => None,
    };
    if let Some(items) = broadcast {
        *value = StableValue::list(items);
        return Ok(());
    }
    let Some(items) = value.as_list() else {
        // Not a list at all: the kernel's unboxing reports the type.
        return Ok(());
    };
    let default_len = match &arg.default {
        Some(DefaultValue::IntList(v)) => Some(v.len()),
        Some(DefaultValue::FloatList(v)) => Some(v.len()),
        Some(DefaultValue::BoolList(v)) => Some(v.len()),
        _ => None,
    };
    let got = items.len();
    if got == n || got == 0 || Some(got) == default_len {
        return Ok(());
    }
    Err(Error::ArgType {
        op: op.to_string(),
        index: list.index,
        name: arg.name.to_string(),
        expected: format!("{} (a list of {n}, or one value repeated)", arg.ty),
        got: format!("a list of {got}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opbox_codegen::schema::parse;

    #[test]
    fn lone_values_broadcast_and_lengths_are_checked() {
        let schema = parse("f(int[2] stride, bool[3] mask, int[1] dim=[-2,-1], int x) -> ()")
            .expect("parses");
        let lists = fixed_lists(&schema);
        assert_eq!(lists.len(), 3);
        let op = &BoxedOp::at_run_time("f", schema);
        let mut args = vec![
            StableValue::int(3),
            StableValue::list(List::Bool(vec![true, false, true])),
            StableValue::list(List::Int(vec![-2, -1])),
            StableValue::int(0),
        ];
        check(op, lists, &mut args).expect("fits");
        assert!(matches!(args[0].as_list(), Some(List::Int(v)) if v == &[3, 3]));

        let mut short = vec![
            StableValue::list(List::Int(vec![1, 2, 3])),
            StableValue::bool(true),
            StableValue::list(List::Int(vec![])),
            StableValue::int(0),
        ];
        let err = check(op, lists, &mut short).expect_err("3 is not 2");
        assert_eq!(
            err.to_string(),
            "f expects argument #0 (stride) to be int[2] (a list of 2, or one value repeated), \
             but got a list of 3"
        );
    }
}
