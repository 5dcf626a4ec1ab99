//! The slice views of a kernel declaration: which way each buffer parameter's data flows.
//!
//! They are markers for declarations only (a launch takes a `&Tensor` for each), and the one
//! place a parameter's direction is written: the signature check, the launch checks and the
//! dependency edges a graph derives all read it from the declaration these markers build.

use std::marker::PhantomData;

/// `In<[T]>`: a read-only device buffer (`const T*`).
pub struct In<T: ?Sized>(PhantomData<T>);
/// `Out<[T]>`: a written device buffer (`T*`).
pub struct Out<T: ?Sized>(PhantomData<T>);
/// `InOut<[T]>`: a read and written device buffer (`T*`).
pub struct InOut<T: ?Sized>(PhantomData<T>);
