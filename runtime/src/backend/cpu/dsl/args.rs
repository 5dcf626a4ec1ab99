//! The CPU build's arguments, read back from a checked [`PreparedLaunch`]: each buffer locked
//! for the launch (read for `In`, write for `Out`/`InOut`, as a `with_slice` would), scalars,
//! by-value structs and `#[constexpr]` values.

use std::mem::MaybeUninit;

use opbox_codegen::cuda::{ConstValue, ParamKind};

use crate::backend::cpu::memory::{HostRead, HostWrite};
use crate::error::{Error, Result};
use crate::kernel::view::RawSlice;
use crate::kernel::{LaunchArg, PreparedLaunch};

/// A lock held for the launch's duration.
enum Guard<'a> {
    Read(#[allow(dead_code)] HostRead<'a>),
    Write(#[allow(dead_code)] HostWrite<'a>),
}

/// Every buffer of a launch, locked, with its address and element count by launch-argument
/// index. Dropping it releases the tensors.
pub struct Buffers<'a> {
    slices: Vec<Option<RawSlice>>,
    _guards: Vec<Guard<'a>>,
}

impl<'a> Buffers<'a> {
    /// Locks each tensor argument of `prepared` (a CPU launch: every tensor is on the CPU), in
    /// the storages' lock order (`tensor/lock.rs`), so two launches on two threads whose
    /// buffers cross (`a -> b` and `b -> a`) wait for each other instead of deadlocking.
    pub fn lock(prepared: &PreparedLaunch<'a>) -> Result<Buffers<'a>> {
        let decl = prepared.decl();
        let kernel = || format!("kernel {} (CPU build)", decl.rust_name);
        let mut slices = Vec::with_capacity(prepared.args().len());
        // (launch-argument index, storage, first byte, element count, read only?)
        let mut wanted = Vec::new();
        let params = decl.params.iter().filter(|p| p.kind.in_launch_abi());
        for (param, arg) in params.zip(prepared.args()) {
            let slot = slices.len();
            slices.push(None);
            let LaunchArg::Tensor(t) = *arg else {
                continue;
            };
            let len = element_count(param.kind, t);
            let len = u32::try_from(len).map_err(|_| {
                Error::InvalidArgument(format!(
                    "{}: {} has {len} elements; DSL buffers hold at most u32::MAX",
                    kernel(),
                    param.name
                ))
            })?;
            let read = matches!(param.kind, ParamKind::In(_) | ParamKind::NativeIn(_));
            // Another image's tensor (a plugin's kernel given the host's) has no lock here: its
            // memory is read where its header says, as that image lent it for the call.
            if let Some(first) = t.foreign_host_ptr() {
                // An empty tensor may have no data: any aligned address serves no elements.
                let first = if first.is_null() {
                    std::ptr::NonNull::<u128>::dangling().as_ptr() as usize
                } else {
                    first as usize
                };
                slices[slot] = Some(RawSlice {
                    addr: first,
                    len,
                    arg: slot as u32,
                });
                continue;
            }
            let start = t.offset() * t.dtype().size();
            wanted.push((slot, t.storage(), start, len, read));
        }
        wanted.sort_by_key(|w| w.1.lock_order());
        let mut guards = Vec::with_capacity(wanted.len());
        for (slot, storage, start, len, read) in wanted {
            let addr = if read {
                let guard = storage.read(&kernel())?;
                let addr = guard.bytes()[start..].as_ptr() as usize;
                guards.push(Guard::Read(guard));
                addr
            } else {
                let mut guard = storage.write(&kernel())?;
                let addr = guard.bytes_mut()[start..].as_mut_ptr() as usize;
                guards.push(Guard::Write(guard));
                addr
            };
            slices[slot] = Some(RawSlice {
                addr,
                len,
                arg: slot as u32,
            });
        }
        Ok(Buffers {
            slices,
            _guards: guards,
        })
    }

    /// The buffer at launch-argument `index`; the generated code asks only for slice params.
    #[inline]
    pub fn raw(&self, index: usize) -> Result<RawSlice> {
        self.slices.get(index).copied().flatten().ok_or_else(|| {
            Error::InvalidArgument(format!("launch argument #{index} is not a buffer"))
        })
    }
}

/// Elements of a slice param's tensor: its numel, or for a native element (a `u8` tensor whose
/// last dimension is the element's bytes) the product of the other dimensions.
pub(crate) fn element_count(kind: ParamKind, t: &crate::Tensor) -> usize {
    match kind.native_slice() {
        Some(n) if n.schema.size > 0 => t.numel() / n.schema.size,
        _ => t.numel(),
    }
}

/// A by-value scalar launch argument.
pub trait ScalarArg: Sized {
    /// The value, when `arg` is a by-value scalar of this type.
    fn from_arg(arg: &LaunchArg<'_>) -> Option<Self>;
    /// The value of a `#[constexpr]` of this type; only the table's `constexpr` rows have one.
    fn from_const(v: &ConstValue) -> Option<Self> {
        let _ = v;
        None
    }
}

macro_rules! scalar_args {
    ($(($v:ident, $t:ty, $r:literal))*) => {$(
        impl ScalarArg for $t {
            #[inline]
            fn from_arg(arg: &LaunchArg<'_>) -> Option<$t> {
                match arg { LaunchArg::$v(v) => Some(*v), _ => None }
            }
            const_arg!($v $t);
        }
    )*};
}

/// `from_const` for a `constexpr` row, nothing (the default) for the others.
macro_rules! const_arg {
    (F16 $t:ty) => {};
    (BF16 $t:ty) => {};
    (U8 $t:ty) => {};
    (I8 $t:ty) => {};
    (I16 $t:ty) => {};
    (U16 $t:ty) => {};
    (F8E4M3 $t:ty) => {};
    (F8E5M2 $t:ty) => {};
    (Usize $t:ty) => {};
    ($v:ident $t:ty) => {
        #[inline]
        fn from_const(v: &ConstValue) -> Option<$t> {
            match v {
                ConstValue::$v(v) => Some(*v),
                _ => None,
            }
        }
    };
}
opbox_codegen::for_each_scalar_type!(scalar_args);

fn mismatch(prepared: &PreparedLaunch<'_>, index: usize, what: &str) -> Error {
    Error::InvalidArgument(format!(
        "kernel {} (CPU build): launch argument #{index} is not {what}",
        prepared.decl().rust_name
    ))
}

/// The scalar at launch-argument `index`.
#[inline]
pub fn scalar<T: ScalarArg>(prepared: &PreparedLaunch<'_>, index: usize) -> Result<T> {
    prepared
        .args()
        .get(index)
        .and_then(T::from_arg)
        .ok_or_else(|| mismatch(prepared, index, "the declared scalar"))
}

/// The `#[constexpr]` value at `index` (among the constexprs).
#[inline]
pub fn constexpr<T: ScalarArg>(prepared: &PreparedLaunch<'_>, index: usize) -> Result<T> {
    prepared
        .constexprs()
        .get(index)
        .and_then(T::from_const)
        .ok_or_else(|| mismatch(prepared, index, "the declared constexpr"))
}

/// The struct passed by value at launch-argument `index`, rebuilt from its bytes.
pub fn by_value<T: Copy + 'static>(prepared: &PreparedLaunch<'_>, index: usize) -> Result<T> {
    match prepared.args().get(index) {
        Some(LaunchArg::Native(bytes)) if bytes.len() == std::mem::size_of::<T>() => {
            let mut value = MaybeUninit::<T>::uninit();
            // SAFETY: the region is the value's own `size_of::<T>()` bytes, viewed as bytes.
            let region = unsafe {
                std::slice::from_raw_parts_mut(
                    value.as_mut_ptr().cast::<MaybeUninit<u8>>(),
                    std::mem::size_of::<T>(),
                )
            };
            bytes.copy_to(region);
            // SAFETY: `prepare` checked the bytes are a `T` (schema, contract and size), and
            // they were copied from one (`KernelArg::lower` borrows the value's bytes).
            Ok(unsafe { value.assume_init() })
        }
        _ => Err(mismatch(prepared, index, "the declared struct")),
    }
}
