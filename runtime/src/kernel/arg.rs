//! The kernel argument protocol (CuTe DSL's `JitArgument`, in Rust).
//!
//! [`KernelArg`] is implemented by every type that may be an `#[extern_kernel]` parameter: it
//! says how the parameter crosses ([`KernelArg::KIND`], the same [`ParamKind`] the signature
//! check and the C++ emitter read) and lowers a value into a [`LaunchArg`]. Implemented for:
//! - the slice views `In<[T]>`, `Out<[T]>`, `InOut<[T]>` (the launch takes a `&Tensor`), and
//!   `Option<..>` of them (an `Option<&Tensor>`; `None` is `nullptr`);
//! - the scalars of the type table's `scalar` rows (by value): every element type, and `usize`
//!   as `size_t`;
//! - every `#[derive(NativeType)]` type (by value; its C++ twin is the user's);
//! - `#[derive(KernelArg)]` structs: the "dataclass" default. opbox emits a C++ struct that
//!   mirrors the Rust one (same name, fields in order, `alignas` the Rust alignment) before the
//!   user's sources, the kernel takes it by value, and the native types' `static_assert`s check
//!   its layout in every translation unit.
//!
//! `#[constexpr]` params implement [`ConstexprArg`] instead: integers and bools (and floats as
//! defines), and `#[derive(ConstexprEnum)]` enums whose variants name C++ types.
//!
//! ## Foreign types: adapters, and the lookup order
//! The orphan rule forbids `impl KernelArg for ForeignType`. Typed declarations name a local
//! type instead (a `#[derive(KernelArg)]` mirror with a `From<&Foreign>`); runtime-typed
//! launches, which see values as `&dyn Any`, lower them with [`lower_any`], which looks in this
//! order, first match wins:
//! 1. **exact type**: the built-in impls (the scalars, and `Tensor` for a slice view);
//! 2. **derived**: a `#[derive(KernelArg)]` struct (each registers itself);
//! 3. **adapters**: [`register_kernel_arg_adapter::<Foreign, Adapter>()`](register_kernel_arg_adapter);
//!    registering a second adapter for one type is an error naming both (no override);
//! 4. else an error naming the type and the three routes. A value is never silently lowered to
//!    zero arguments, as CuTe's `get_c_pointers` does with `[]`.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::{OnceLock, RwLock};

use opbox_codegen::cuda::{ConstValue, EnumParam, NativeParam, ParamKind};
use opbox_codegen::native::NativeSchema;

pub use super::lowered::{LaunchArg, OwnedArg};
use super::view::{In, InOut, Out};
use crate::error::{Error, Result};
use crate::native::NativeType;
use crate::tensor::{Element, Tensor};

pub(crate) fn device_word(d: crate::tensor::Device) -> String {
    match d {
        crate::tensor::Device::Cpu => "CPU".into(),
        crate::tensor::Device::Meta => "meta".into(),
        crate::tensor::Device::Cuda(i) => format!("CUDA (cuda:{i})"),
    }
}

pub(crate) fn short_name(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// The bytes of a by-value struct argument, borrowed from the value.
#[derive(Clone, Copy)]
pub struct NativeBytes<'a> {
    /// The struct's layout.
    pub schema: &'static NativeSchema,
    ptr: *const MaybeUninit<u8>,
    len: usize,
    _borrow: PhantomData<&'a [MaybeUninit<u8>]>,
}

impl std::fmt::Debug for NativeBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NativeBytes({}, {} bytes)",
            self.schema.native_name, self.len
        )
    }
}

impl<'a> NativeBytes<'a> {
    /// The bytes of `value`, described by `schema` (padding included, possibly uninitialized:
    /// they are copied, never read as numbers).
    pub fn of<T: Copy + 'static>(schema: &'static NativeSchema, value: &'a T) -> NativeBytes<'a> {
        NativeBytes {
            schema,
            ptr: (value as *const T).cast(),
            len: std::mem::size_of::<T>(),
            _borrow: PhantomData,
        }
    }

    /// Bytes owned elsewhere (a runtime-typed launch builds them from a list).
    pub fn from_slice(
        schema: &'static NativeSchema,
        bytes: &'a [MaybeUninit<u8>],
    ) -> NativeBytes<'a> {
        NativeBytes {
            schema,
            ptr: bytes.as_ptr().cast(),
            len: bytes.len(),
            _borrow: PhantomData,
        }
    }

    /// The struct's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the struct has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, padding possibly uninitialized (for copies that never read them as numbers).
    pub fn as_uninit(&self) -> &'a [MaybeUninit<u8>] {
        // SAFETY: `ptr` points at `len` bytes borrowed for 'a (see the constructors).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Copies the bytes to `dst` (at most `dst.len()`).
    pub(crate) fn copy_to(&self, dst: &mut [MaybeUninit<u8>]) {
        let n = self.len.min(dst.len());
        // SAFETY: `ptr` points at `len` bytes borrowed for 'a (a live `T` or slice, see the
        // constructors); `dst` is a distinct, writable buffer of at least `n` bytes. Copying
        // possibly uninitialized bytes into `MaybeUninit<u8>` is sound.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr, dst.as_mut_ptr(), n) };
    }
}

// SAFETY: NativeBytes is a shared borrow of plain bytes (`T: Copy + 'static` values or a byte
// slice); sharing or sending such a borrow is as safe as sending `&[u8]`.
unsafe impl Send for NativeBytes<'_> {}
// SAFETY: as above.
unsafe impl Sync for NativeBytes<'_> {}

/// A type that may be an `#[extern_kernel]` parameter: it says how it crosses and lowers values.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel argument type: no `KernelArg` impl",
    label = "this parameter type cannot be passed to a kernel",
    note = "kernel parameters are In<[T]>, Out<[T]>, InOut<[T]> (device buffers, Option<..> for a nullable one), scalars by value, #[derive(NativeType)] types and #[derive(KernelArg)] structs of those",
    note = "for a type from another crate (the orphan rule forbids `impl KernelArg for` it): declare a local #[derive(KernelArg)] #[repr(C)] struct that mirrors it, or, for runtime-typed launches, register an adapter: opbox::kernel::register_kernel_arg_adapter::<Foreign, MyAdapter>()"
)]
pub trait KernelArg {
    /// The value a typed launch takes for this parameter (`&Tensor` for a slice view).
    type Value<'v>;
    /// How the parameter crosses, as the signature check and the emitter read it.
    const KIND: ParamKind;
    /// `Option<In<[T]>>` and friends: `None` is passed as `nullptr`.
    const NULLABLE: bool = false;
    /// Lowers one value.
    fn lower<'a>(value: &'a Self::Value<'_>) -> LaunchArg<'a>;
}

macro_rules! views {
    ($($view:ident => $kind:ident),*) => {$(
        impl<T: Element> KernelArg for $view<[T]> {
            type Value<'v> = &'v Tensor;
            const KIND: ParamKind = ParamKind::$kind(T::DTYPE.elem());
            #[inline]
            fn lower<'a>(value: &'a &Tensor) -> LaunchArg<'a> {
                LaunchArg::Tensor(value)
            }
        }
    )*};
}

views!(In => In, Out => Out, InOut => InOut);

/// `Option<In<[T]>>`: the kernel gets `nullptr` for `None` (how kernels take "contiguous, no
/// strides array").
macro_rules! nullable_views {
    ($($view:ident => $kind:ident),*) => {$(
        impl<T: Element> KernelArg for Option<$view<[T]>> {
            type Value<'v> = Option<&'v Tensor>;
            const KIND: ParamKind = ParamKind::$kind(T::DTYPE.elem());
            const NULLABLE: bool = true;
            #[inline]
            fn lower<'a>(value: &'a Option<&Tensor>) -> LaunchArg<'a> {
                match value {
                    Some(t) => LaunchArg::Tensor(t),
                    None => LaunchArg::Null,
                }
            }
        }
    )*};
}

nullable_views!(In => In, Out => Out, InOut => InOut);

impl<T: NativeType> KernelArg for T {
    type Value<'v> = T;
    const KIND: ParamKind = ParamKind::Native(NativeParam {
        schema: T::SCHEMA,
        generated: false,
    });
    #[inline]
    fn lower<'a>(value: &'a T) -> LaunchArg<'a> {
        LaunchArg::Native(NativeBytes::of(T::SCHEMA, value))
    }
}

/// A type a `#[constexpr]` parameter may have: its value picks the specialization.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[constexpr] parameter",
    label = "not an integer, bool or #[derive(ConstexprEnum)] enum",
    note = "#[constexpr] params become C++ template arguments or #defines: use i32, i64, u32, u64 or bool (f32/f64 only with constexpr = \"define\"), or a #[derive(ConstexprEnum)] enum whose variants name C++ types (#[cpp = \"my_ns::Relu\"])",
    note = "a value that changes per launch and that the kernel reads at run time is an ordinary parameter: remove #[constexpr]"
)]
pub trait ConstexprArg: Copy {
    /// The parameter kind the declaration records (an integer, bool or enum).
    const KIND: ParamKind;
    /// The value as the specialization key and the C++ template argument hold it.
    fn const_value(self) -> ConstValue;
}

/// What `#[derive(ConstexprEnum)]` implements: the variants' C++ types.
pub trait ConstexprEnum: Copy + 'static {
    /// The enum's name and its variants' C++ types, as the declaration records them.
    const PARAM: EnumParam;
    /// The variant's C++ type.
    fn cpp_type(self) -> &'static str;
}

/// What `#[derive(KernelArg)]` implements: the struct's layout schema (its C++ twin is
/// generated from it).
pub trait KernelArgStruct: Copy + 'static {
    /// The struct's layout, fields and C++ name.
    const SCHEMA: &'static NativeSchema;
}

/// A `#[derive(KernelArg)]` struct: registered for [`lower_any`] (the "derived" step).
pub struct DerivedKernelArg {
    /// The struct's `TypeId`.
    pub type_id: fn() -> TypeId,
    /// The struct's Rust name, for errors.
    pub rust_name: &'static str,
    /// Lowers a value of the struct (`None` for a value of another type).
    pub lower: fn(&dyn Any) -> Option<OwnedArg>,
}

inventory::collect!(DerivedKernelArg);

impl OwnedArg {
    /// A `#[derive(KernelArg)]` or native value, by value (its padding bytes stay unread).
    pub fn native<T: Copy + 'static>(schema: &'static NativeSchema, value: &T) -> OwnedArg {
        let mut bytes = vec![MaybeUninit::<u8>::uninit(); std::mem::size_of::<T>()];
        NativeBytes::of(schema, value).copy_to(&mut bytes);
        OwnedArg::Native { schema, bytes }
    }

    /// A struct built field by field (fully initialized bytes).
    pub fn native_from_bytes(schema: &'static NativeSchema, bytes: Vec<u8>) -> OwnedArg {
        OwnedArg::Native {
            schema,
            bytes: bytes.into_iter().map(MaybeUninit::new).collect(),
        }
    }
}

/// Brings a foreign type into kernels for runtime-typed launches.
pub trait KernelArgAdapter<F: 'static>: 'static {
    /// Lowers `value` to a launch argument, or says why it cannot.
    fn adapt(value: &F) -> Result<OwnedArg>;
}

struct AdapterEntry {
    type_id: TypeId,
    foreign: &'static str,
    adapter: &'static str,
    adapt: fn(&dyn Any) -> Option<Result<OwnedArg>>,
}

fn adapters() -> &'static RwLock<Vec<AdapterEntry>> {
    static ADAPTERS: OnceLock<RwLock<Vec<AdapterEntry>>> = OnceLock::new();
    ADAPTERS.get_or_init(|| RwLock::new(Vec::new()))
}

fn adapt_with<F: 'static, A: KernelArgAdapter<F>>(value: &dyn Any) -> Option<Result<OwnedArg>> {
    value.downcast_ref::<F>().map(A::adapt)
}

/// Registers `A` as the way to lower a `F` in runtime-typed launches. A second adapter for the
/// same `F` is an error naming both; there is no override.
pub fn register_kernel_arg_adapter<F: 'static, A: KernelArgAdapter<F>>() -> Result<()> {
    let mut list = adapters().write().unwrap_or_else(|p| p.into_inner());
    let foreign = std::any::type_name::<F>();
    let adapter = std::any::type_name::<A>();
    if let Some(e) = list.iter().find(|e| e.type_id == TypeId::of::<F>()) {
        return Err(Error::InvalidArgument(format!(
            "a kernel argument adapter for `{foreign}` is already registered: registered adapter `{}`, adapter to be registered `{adapter}`",
            e.adapter
        )));
    }
    list.push(AdapterEntry {
        type_id: TypeId::of::<F>(),
        foreign,
        adapter,
        adapt: adapt_with::<F, A>,
    });
    Ok(())
}

/// The adapters registered so far: `(foreign type, adapter type)`.
pub fn kernel_arg_adapters() -> Vec<(&'static str, &'static str)> {
    let list = adapters().read().unwrap_or_else(|p| p.into_inner());
    list.iter().map(|e| (e.foreign, e.adapter)).collect()
}

/// Lowers a value seen as `&dyn Any`, in the documented order: exact type, derived, adapters,
/// else an error. `type_name` names the value's type in that error (`std::any::type_name`).
pub fn lower_any(value: &dyn Any, type_name: &str) -> Result<OwnedArg> {
    macro_rules! exact {
        ($($t:ty => $v:ident),*) => {$(
            if let Some(v) = value.downcast_ref::<$t>() {
                return Ok(OwnedArg::$v(v.clone()));
            }
        )*};
    }
    exact!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64, bool => Bool, Tensor => Tensor);
    if let Some(v) = value.downcast_ref::<&Tensor>() {
        return Ok(OwnedArg::Tensor((*v).clone()));
    }
    let id = value.type_id();
    for d in inventory::iter::<DerivedKernelArg> {
        if (d.type_id)() == id {
            if let Some(arg) = (d.lower)(value) {
                return Ok(arg);
            }
        }
    }
    let adapt = {
        let list = adapters().read().unwrap_or_else(|p| p.into_inner());
        list.iter().find(|e| e.type_id == id).map(|e| e.adapt)
    };
    if let Some(adapt) = adapt {
        if let Some(result) = adapt(value) {
            return result;
        }
    }
    Err(Error::InvalidArgument(format!(
        "cannot pass a value of type `{type_name}` to a kernel: it is not a built-in kernel argument (a scalar or a Tensor), not a #[derive(KernelArg)] struct, and no adapter is registered for it; implement one with opbox::kernel::register_kernel_arg_adapter::<{type_name}, YourAdapter>()"
    )))
}

/// [`lower_any`] for a typed value (the type name comes along).
pub fn lower_value<T: Any>(value: &T) -> Result<OwnedArg> {
    lower_any(value, std::any::type_name::<T>())
}
