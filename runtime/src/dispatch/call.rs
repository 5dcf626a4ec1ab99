//! Typed calls: tuples of Rust values in, a value, a tuple or `()` out.

use super::boxed_op::BoxedOp;
use crate::value::{Devices, StableValue, Stack, TypedKey};
use crate::{DType, Device, Error, Result, Scalar, Tensor};

/// The arguments of a typed call: a tuple of values that box (`(&x, &y, 2.0)`), or `()`.
pub trait IntoStack {
    /// The tuple of the elements' [`TypedKey`] keys: equal to a kernel's parameter key exactly
    /// when the kernel can take these values as they are.
    type Key: 'static;

    /// Boxes each element and pushes it, in order.
    fn push_onto(self, stack: &mut Stack<'_>);

    /// Records the devices of the tensors among the arguments.
    fn note_devices(&self, devices: &mut Devices);

    /// Pushes for one typed call, borrowing tensor handles.
    ///
    /// # Safety
    /// `stack` must be dropped (or cleared) before any borrow in `self` ends.
    #[doc(hidden)]
    unsafe fn push_for_call(self, stack: &mut Stack<'_>)
    where
        Self: Sized,
    {
        self.push_onto(stack)
    }
}

/// A value a typed call can return, taken out of its output slot.
pub trait FromOutput: Sized + 'static {
    /// The value, or the slot back so the error can describe it.
    fn from_output(value: StableValue) -> Result<Self, StableValue>;
}

/// The result of a typed call: one value, a tuple of values, or `()`.
pub trait FromStack: Sized + 'static {
    /// How many values the result takes off the stack.
    const COUNT: usize;
    /// Reads the result off the stack after `op`'s call, checked against its schema's returns.
    fn from_stack(op: &'static BoxedOp, stack: &mut Stack) -> Result<Self>;
}

impl IntoStack for () {
    type Key = ();
    fn push_onto(self, _: &mut Stack<'_>) {}
    fn note_devices(&self, _: &mut Devices) {}
}

macro_rules! into_stack_tuple {
    ($($name:ident),+) => {
        impl<$($name: crate::value::IntoStable),+> IntoStack for ($($name,)+) {
            type Key = ($(<$name as TypedKey>::Key,)+);
            #[allow(non_snake_case)]
            #[inline]
            fn note_devices(&self, devices: &mut Devices) {
                let ($($name,)+) = self;
                $($name.note_devices(devices);)+
            }
            #[allow(non_snake_case)]
            fn push_onto(self, stack: &mut Stack<'_>) {
                let ($($name,)+) = self;
                $(stack.push_value($name.into_stable());)+
            }
            #[allow(non_snake_case)]
            unsafe fn push_for_call(self, stack: &mut Stack<'_>) {
                let ($($name,)+) = self;
                // SAFETY: forwarded from this method's own contract.
                $(stack.push_value(unsafe { $name.into_stable_for_call() });)+
            }
        }
    };
}
into_stack_tuple!(A);
into_stack_tuple!(A, B);
into_stack_tuple!(A, B, C);
into_stack_tuple!(A, B, C, D);
into_stack_tuple!(A, B, C, D, E);
into_stack_tuple!(A, B, C, D, E, F);
into_stack_tuple!(A, B, C, D, E, F, G);
into_stack_tuple!(A, B, C, D, E, F, G, H);
into_stack_tuple!(A, B, C, D, E, F, G, H, I);
into_stack_tuple!(A, B, C, D, E, F, G, H, I, J);
into_stack_tuple!(A, B, C, D, E, F, G, H, I, J, K);
into_stack_tuple!(A, B, C, D, E, F, G, H, I, J, K, L);

/// The key of an argument list that is already boxed: no kernel's typed entry has it.
pub struct BoxedArgs;

impl IntoStack for Stack<'_> {
    type Key = BoxedArgs;
    fn note_devices(&self, _: &mut Devices) {}
    fn push_onto(self, stack: &mut Stack<'_>) {
        for value in self {
            stack.push_value(value);
        }
    }
}

impl FromOutput for Tensor {
    fn from_output(mut value: StableValue) -> Result<Self, StableValue> {
        value.take_tensor().ok_or(value)
    }
}

impl FromOutput for StableValue {
    fn from_output(value: StableValue) -> Result<Self, StableValue> {
        Ok(value)
    }
}

macro_rules! from_output_via_from_stable {
    ($($ty:ty),+) => {$(
        impl FromOutput for $ty {
            fn from_output(value: StableValue) -> Result<Self, StableValue> {
                match <$ty as crate::value::FromStable>::from_stable(&value) {
                    Ok(v) => Ok(v),
                    Err(_) => Err(value),
                }
            }
        }
    )+};
}
from_output_via_from_stable!(
    bool,
    i64,
    f64,
    String,
    DType,
    Device,
    Scalar,
    i8,
    crate::Layout,
    crate::MemoryFormat,
    crate::Generator,
    crate::Stream
);

impl<T: FromOutput> FromOutput for Option<T> {
    fn from_output(value: StableValue) -> Result<Self, StableValue> {
        if value.is_none() {
            Ok(None)
        } else {
            T::from_output(value).map(Some)
        }
    }
}

impl<T: FromOutput> FromOutput for Vec<T> {
    fn from_output(value: StableValue) -> Result<Self, StableValue> {
        let Some(list) = value.as_list() else {
            return Err(value);
        };
        let items: Option<Vec<T>> = list
            .clone()
            .into_values()
            .into_iter()
            .map(|item| T::from_output(item).ok())
            .collect();
        items.ok_or(value)
    }
}

// The error builders stay out of line so a typed call's hot path is short.
#[cold]
#[inline(never)]
fn return_type_error<T>(op: &BoxedOp, index: usize) -> Error {
    Error::ReturnType {
        op: op.name().to_string(),
        index,
        expected: op
            .schema()
            .returns
            .get(index)
            .map(|r| r.ty.to_string())
            .unwrap_or_default(),
        got: crate::error::rust_type_name::<T>(),
    }
}

#[inline]
fn check_count(op: &BoxedOp, count: usize) -> Result<()> {
    if op.num_outputs() == count {
        return Ok(());
    }
    Err(return_count_error(op, count))
}

#[cold]
#[inline(never)]
pub(crate) fn return_count_error(op: &BoxedOp, count: usize) -> Error {
    Error::ReturnCount {
        op: op.name().to_string(),
        expected: op.num_outputs(),
        got: count,
        schema: op.schema().to_string(),
    }
}

impl FromStack for () {
    const COUNT: usize = 0;
    fn from_stack(op: &'static BoxedOp, _: &mut Stack) -> Result<Self> {
        check_count(op, 0)
    }
}

impl<T: FromOutput> FromStack for T {
    const COUNT: usize = 1;
    fn from_stack(op: &'static BoxedOp, stack: &mut Stack) -> Result<Self> {
        check_count(op, 1)?;
        let value = stack.pop().unwrap_or_default();
        match T::from_output(value) {
            Ok(v) => Ok(v),
            Err(_) => Err(return_type_error::<T>(op, 0)),
        }
    }
}

macro_rules! from_stack_tuple {
    ($count:literal; $($name:ident $index:tt),+) => {
        impl<$($name: FromOutput),+> FromStack for ($($name,)+) {
            const COUNT: usize = $count;
            fn from_stack(op: &'static BoxedOp, stack: &mut Stack) -> Result<Self> {
                check_count(op, $count)?;
                Ok(($(
                    $name::from_output(stack.take($index))
                        .map_err(|_| return_type_error::<$name>(op, $index))?,
                )+))
            }
        }
    };
}
from_stack_tuple!(2; A 0, B 1);
from_stack_tuple!(3; A 0, B 1, C 2);
from_stack_tuple!(4; A 0, B 1, C 2, D 3);
from_stack_tuple!(5; A 0, B 1, C 2, D 3, E 4);
from_stack_tuple!(6; A 0, B 1, C 2, D 3, E 4, F 5);
