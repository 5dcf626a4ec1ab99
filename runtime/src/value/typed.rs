//! Typed pops and peeks: a boxed call's results read off the [`Stack`] as Rust values, through
//! the same unboxing as a typed call's results ([`FromOutput`]) and arguments ([`FromStable`]).

use super::convert::FromStable;
use super::stack::Stack;
use crate::dispatch::FromOutput;
use crate::error::rust_type_name;
use crate::{Error, Result, Tensor};

impl<'a> Stack<'a> {
    /// Pops the top value as a `T`: any type a typed call can return (`Tensor`, `i64`, `f64`,
    /// `bool`, `String`, `DType`, `Device`, `Scalar`, `Vec<T>`, `Option<T>`, ...), read as a
    /// typed call reads it. A value of another type stays on the stack, and the error names
    /// both: "the stack's top value is int, which cannot be read as `Tensor`"; an empty stack
    /// is an error too ([`Error::StackValue`]).
    ///
    /// ```
    /// # use opbox_runtime::{Stack, Tensor};
    /// let mut stack = Stack::new();
    /// stack.push(2i64).push(Tensor::from_vec(vec![1.0f32], &[1])?);
    /// let t: Tensor = stack.pop_as()?;
    /// assert_eq!(stack.pop_as::<i64>()?, 2);
    /// assert!(stack.pop_as::<i64>().is_err(), "the stack is empty");
    /// # let _ = t; Ok::<(), opbox_runtime::Error>(())
    /// ```
    pub fn pop_as<T: FromOutput>(&mut self) -> Result<T> {
        let Some(value) = self.pop() else {
            return Err(stack_error::<T>(None));
        };
        T::from_output(value).map_err(|value| {
            let error = stack_error::<T>(Some(value.describe()));
            self.push_value(value);
            error
        })
    }

    /// Reads the top value as a `T` without popping it, borrowing where the type allows
    /// (`&Tensor`, `&str`, `&[i64]`), as a kernel reads its arguments. Errors as
    /// [`pop_as`](Stack::pop_as) does.
    pub fn peek_as<'s, T: FromStable<'s>>(&'s self) -> Result<T> {
        let Some(value) = self.as_slice().last() else {
            return Err(stack_error::<T>(None));
        };
        T::from_stable(value).map_err(|_| stack_error::<T>(Some(value.describe())))
    }

    /// Pops the top value as a [`Tensor`]: `pop_as::<Tensor>()`.
    pub fn pop_tensor(&mut self) -> Result<Tensor> {
        self.pop_as()
    }

    /// Pops the top value as an `int`: `pop_as::<i64>()`.
    pub fn pop_int(&mut self) -> Result<i64> {
        self.pop_as()
    }

    /// Pops the top value as a `float` (an `int` converts, as for a `float` argument):
    /// `pop_as::<f64>()`.
    pub fn pop_float(&mut self) -> Result<f64> {
        self.pop_as()
    }

    /// Pops the top value as a `bool`: `pop_as::<bool>()`.
    pub fn pop_bool(&mut self) -> Result<bool> {
        self.pop_as()
    }

    /// Pops the top value as a `str`: `pop_as::<String>()`.
    pub fn pop_str(&mut self) -> Result<String> {
        self.pop_as()
    }

    /// Borrows the top value as a [`Tensor`]: `peek_as::<&Tensor>()`.
    pub fn peek_tensor(&self) -> Result<&Tensor> {
        self.peek_as()
    }
}

#[cold]
#[inline(never)]
fn stack_error<T>(got: Option<String>) -> Error {
    Error::StackValue {
        expected: rust_type_name::<T>(),
        got,
    }
}

#[cfg(test)]
mod tests;
