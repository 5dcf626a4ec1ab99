//! A kernel's typed entry: the Rust function itself, behind a key of its parameter and return
//! types. A typed `OpHandle::call` whose argument tuple has the same key calls it directly, as
//! PyTorch's `typed().call()` calls the unboxed kernel, so it pays for no boxing it can prove
//! unneeded. Every other call (other argument types, defaults left out, mixed devices, an op
//! from a plugin) takes the boxed path, whose checks and messages stay the only ones.

use std::any::TypeId;

use crate::Result;

/// The type-erased form of `fn(A) -> Result<R>`.
type ErasedFn = fn();

/// A kernel's typed entry, as `#[stable_impl]` registers it. The key is computed at compile
/// time: stored as data, it costs start-up neither a relocation nor a call into each kernel's
/// code.
#[derive(Clone, Copy, Debug)]
pub struct TypedKernel {
    key: TypeId,
    erased: ErasedFn,
}

/// Both sides of the erasure: every `fn` pointer has the same size and representation.
union Erase<F: Copy> {
    typed: F,
    erased: ErasedFn,
}

impl TypedKernel {
    /// Erases `f` behind the key of its parameters `K` and its return `R`.
    ///
    /// # Safety
    /// `K` must be the [`TypedKey`](crate::value::TypedKey) key of `A`, element by element (what
    /// `IntoStack::Key` computes for a tuple `A`), and `f` must accept `A` with any lifetimes in
    /// it (a fn whose parameters' lifetimes are all its own generic ones): a typed call turns a
    /// matching key back into `fn(A) -> Result<R>` at the caller's lifetimes.
    pub const unsafe fn new<K: 'static, A, R: 'static>(f: fn(A) -> Result<R>) -> TypedKernel {
        TypedKernel {
            key: TypeId::of::<(K, R)>(),
            // SAFETY: both fields are fn pointers; the erased one is only ever turned back into
            // this type (see `restore`).
            erased: unsafe { Erase { typed: f }.erased },
        }
    }

    /// The key of the kernel's parameters and return.
    pub(crate) fn key(&self) -> TypeId {
        self.key
    }

    pub(crate) fn erased(&self) -> ErasedFn {
        self.erased
    }
}

/// The key of a typed call with arguments keyed `K` and result `R`.
#[inline]
pub(crate) fn type_id<T: 'static>() -> TypeId {
    TypeId::of::<T>()
}

/// `erased` as `fn(A) -> Result<R>`.
///
/// # Safety
/// `erased` must come from a [`TypedKernel`] whose key is `(A's key, R)`: then `A` is the
/// kernel's parameter tuple up to lifetimes, and the function (generic over every lifetime in its
/// parameters, since kernels are plain fns) accepts `A`'s.
#[inline]
pub(crate) unsafe fn restore<A, R>(erased: ErasedFn) -> fn(A) -> Result<R> {
    // SAFETY: the caller's contract: `erased` was made from exactly this type.
    unsafe { Erase::<fn(A) -> Result<R>> { erased }.typed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::TypedKey;

    fn concat((a, b): (&str, i64)) -> Result<String> {
        Ok(format!("{a}{b}"))
    }

    type Key = (<&'static str as TypedKey>::Key, <i64 as TypedKey>::Key);

    #[test]
    fn an_erased_entry_is_restored_at_the_callers_lifetimes_and_called() {
        // SAFETY: `Key` is the key of `(&str, i64)`, and `concat` is generic over the lifetime.
        let entry = unsafe { TypedKernel::new::<Key, _, String>(concat) };
        assert_eq!(entry.key(), type_id::<(Key, String)>());
        let local = String::from("n=");
        // SAFETY: the key matches, as asserted above.
        let f = unsafe { restore::<(&str, i64), String>(entry.erased()) };
        assert_eq!(f((local.as_str(), 4)).ok(), Some("n=4".to_string()));
    }

    #[test]
    fn keys_tell_borrowed_owned_and_converted_types_apart() {
        assert_ne!(
            type_id::<<&str as TypedKey>::Key>(),
            type_id::<<String as TypedKey>::Key>()
        );
        assert_ne!(
            type_id::<<&crate::Tensor as TypedKey>::Key>(),
            type_id::<<crate::Tensor as TypedKey>::Key>()
        );
        assert_ne!(
            type_id::<<&[i64] as TypedKey>::Key>(),
            type_id::<<Vec<i64> as TypedKey>::Key>()
        );
        assert_ne!(
            type_id::<<i32 as TypedKey>::Key>(),
            type_id::<<i64 as TypedKey>::Key>()
        );
    }
}
