//! [`TypedKey`]: the lifetime-free identity of a Rust type that a typed call passes, and the
//! devices its tensors are on. A typed `OpHandle::call` compares the key of its argument tuple
//! with the key the kernel's own parameters were registered under; when they are equal, the
//! caller's values are exactly the kernel's parameter types (up to lifetimes), so the kernel can
//! be called directly, with nothing boxed.

use std::marker::PhantomData;

use crate::{DType, Device, Generator, Layout, MemoryFormat, Scalar, Stream, Tensor};

/// A Rust type's typed-call key, and the devices of the tensors in a value of it.
///
/// Distinct types (ignoring lifetimes) have distinct keys: that is what makes a matching key a
/// proof that a call's argument tuple is the kernel's parameter list.
pub trait TypedKey {
    /// `Self` with every lifetime erased, as a `'static` type whose `TypeId` can be compared.
    type Key: 'static;

    /// Records the device of every tensor in this value, as dispatch does for a boxed call.
    #[inline]
    fn note_devices(&self, _devices: &mut Devices) {}
}

/// The devices of a call's tensors, gathered without boxing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Devices {
    first: Option<Device>,
    mixed: bool,
}

impl Devices {
    /// Records one tensor's device.
    #[inline]
    pub fn note(&mut self, device: Device) {
        match self.first {
            None => self.first = Some(device),
            Some(d) if d == device => {}
            Some(_) => self.mixed = true,
        }
    }

    /// The one device of all tensors (None: the call has none), or None when they differ: the
    /// boxed path then builds the error that names both arguments.
    #[inline]
    pub fn single(&self) -> Option<Option<Device>> {
        (!self.mixed).then_some(self.first)
    }
}

/// The key of `str`, which has no `'static` sized form of its own.
pub struct StrKey;
/// The key of `&T`.
pub struct RefKey<K>(PhantomData<K>);
/// The key of `[T]`.
pub struct SliceKey<K>(PhantomData<K>);

macro_rules! keyed_as_self {
    ($($ty:ty),+ $(,)?) => {$(
        impl TypedKey for $ty {
            type Key = $ty;
        }
    )+};
}
keyed_as_self!(
    i64,
    f64,
    bool,
    String,
    DType,
    Device,
    Scalar,
    i8,
    i16,
    i32,
    u8,
    u16,
    u32,
    u64,
    usize,
    isize,
    f32,
    char,
    Layout,
    MemoryFormat,
    Generator,
    Stream
);

impl TypedKey for crate::value::StableValue {
    type Key = crate::value::StableValue;
}

impl TypedKey for Tensor {
    type Key = Tensor;
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        devices.note(self.device());
    }
}

impl TypedKey for str {
    type Key = StrKey;
}

impl<T: TypedKey + ?Sized> TypedKey for &T {
    type Key = RefKey<T::Key>;
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        (**self).note_devices(devices);
    }
}

impl<T: TypedKey> TypedKey for [T] {
    type Key = SliceKey<T::Key>;
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        for item in self {
            item.note_devices(devices);
        }
    }
}

impl<T: TypedKey, const N: usize> TypedKey for [T; N] {
    type Key = [T::Key; N];
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        self.as_slice().note_devices(devices);
    }
}

impl<T: TypedKey> TypedKey for Vec<T> {
    type Key = Vec<T::Key>;
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        self.as_slice().note_devices(devices);
    }
}

impl<T: TypedKey> TypedKey for Option<T> {
    type Key = Option<T::Key>;
    #[inline]
    fn note_devices(&self, devices: &mut Devices) {
        if let Some(value) = self {
            value.note_devices(devices);
        }
    }
}
