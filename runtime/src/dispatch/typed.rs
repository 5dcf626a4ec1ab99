//! A kernel's typed entry: the entry shared by the kernels of its parameter and return types,
//! behind a key of those types, and the kernel it calls. A typed `OpHandle::call` whose argument
//! tuple has the same key calls it directly, as PyTorch's `typed().call()` calls the unboxed
//! kernel, so it pays for no boxing it can prove unneeded. Every other call (other argument types, defaults left out, mixed devices, an op
//! from a plugin) takes the boxed path, whose checks and messages stay the only ones.

use std::any::TypeId;

use super::shared_shim::ParamList;
use crate::typemap::KernelReturn;
use crate::Result;

/// The type-erased form of a fn pointer: a typed entry or the kernel it calls.
pub(crate) type ErasedFn = fn();

/// A typed entry, as a typed call restores it: the kernel (erased) and the call's argument tuple
/// in, the kernel's value out.
pub(crate) type TypedFn<A, R> = fn(ErasedFn, A) -> Result<R>;

/// The typed entry shared by the kernels of one parameter list and return, behind the key of
/// those types; the kernel comes with the call. The key is computed at compile time: stored as
/// data, it costs start-up neither a relocation nor a call into each kernel's code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypedEntry {
    key: TypeId,
    entry: ErasedFn,
}

/// Both sides of the erasure: every `fn` pointer has the same size and representation.
union Erase<F: Copy> {
    typed: F,
    erased: ErasedFn,
}

/// `f`, a fn pointer, erased.
///
/// # Safety
/// `F` must be a fn pointer type (the size is checked, at compile time where `f` is a const).
pub(crate) const unsafe fn erase<F: Copy>(f: F) -> ErasedFn {
    assert!(size_of::<F>() == size_of::<ErasedFn>());
    // SAFETY: the caller's contract: both are fn pointers.
    unsafe { Erase { typed: f }.erased }
}

/// `erased` back as the fn pointer type it was erased from.
///
/// # Safety
/// `erased` must come from [`erase`] of an `F`, up to lifetimes the call can meet.
#[inline(always)]
pub(crate) unsafe fn unerase<F: Copy>(erased: ErasedFn) -> F {
    // SAFETY: the caller's contract.
    unsafe { Erase::<F> { erased }.typed }
}

impl TypedEntry {
    /// The typed entry of the kernels of parameter list `P` returning `R`: keyed by `P` (the
    /// keys of the kernel's parameter types, element by element, as `IntoStack::Key` keys a
    /// call's argument tuple) and `R`'s value. `None` for a list with no typed entry.
    pub(crate) const fn of<P: ParamList, R: KernelReturn>() -> Option<TypedEntry> {
        if !P::TYPED {
            return None;
        }
        let entry: for<'x> fn(ErasedFn, P::Args<'x>) -> Result<R::Value> = typed_entry::<P, R>;
        Some(TypedEntry {
            key: TypeId::of::<(P, R::Value)>(),
            // SAFETY: a fn pointer, only ever turned back into its own type, by `restore`, whose
            // caller's key is this one.
            entry: unsafe { erase(entry) },
        })
    }

    /// The key of the kernels' parameters and return.
    #[inline]
    pub(crate) fn key(&self) -> TypeId {
        self.key
    }

    /// The erased entry.
    #[inline]
    pub(crate) fn entry(&self) -> ErasedFn {
        self.entry
    }
}

/// The typed entry of every kernel of parameter list `P` returning `R`: the kernel back from its
/// erased pointer, called with the argument tuple.
fn typed_entry<P: ParamList, R: KernelReturn>(
    kernel: ErasedFn,
    args: P::Args<'_>,
) -> Result<R::Value> {
    // SAFETY: `BoxedKernel::of::<P, R>` erased `kernel` from `P::Kernel<R>` and paired it with
    // this entry (in the shape's `ShapeEntries`), which is all that hands it here.
    let kernel = unsafe { unerase::<P::Kernel<R>>(kernel) };
    P::call_typed::<R>(kernel, args)
}

/// The key of a typed call with arguments keyed `K` and result `R`.
#[inline]
pub(crate) fn type_id<T: 'static>() -> TypeId {
    TypeId::of::<T>()
}

/// `erased`, a typed entry, as taking `A` and returning `R`.
///
/// # Safety
/// `erased` must be the entry of a [`TypedEntry`] whose key is `(A's key, R)`. Then `A` is the
/// entry's argument tuple `P::Args<'x>` up to lifetimes: `A`'s key is `P`, and each family's
/// `Of<'x>` has its family as key (`ParamFamily`'s bound). The entry is generic over `'x`, and
/// every family is covariant in it, so it accepts `A`'s at the lifetime they share for the call;
/// it keeps nothing of them past it.
#[inline]
pub(crate) unsafe fn restore<A, R>(erased: ErasedFn) -> TypedFn<A, R> {
    // SAFETY: the caller's contract: `erased` was made from this type, up to lifetimes.
    unsafe { unerase::<TypedFn<A, R>>(erased) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::BoxedKernel;
    use crate::value::TypedKey;

    fn concat(a: &str, b: i64) -> Result<String> {
        Ok(format!("{a}{b}"))
    }

    type Key = (<&'static str as TypedKey>::Key, <i64 as TypedKey>::Key);

    #[test]
    fn an_erased_entry_is_restored_at_the_callers_lifetimes_and_called() {
        let kernel = BoxedKernel::of::<Key, Result<String>>(concat);
        let (entry, kernel) = kernel.typed().unwrap();
        assert_eq!(entry.key(), type_id::<(Key, String)>());
        let local = String::from("n=");
        // SAFETY: the key matches, as asserted above.
        let f = unsafe { restore::<(&str, i64), String>(entry.entry()) };
        assert_eq!(f(kernel, (local.as_str(), 4)).ok(), Some("n=4".to_string()));
    }

    #[test]
    fn a_body_of_its_own_has_no_typed_entry() {
        fn body(
            _: &crate::dispatch::KernelArgs<'_>,
            _: &mut crate::dispatch::KernelOutputs<'_>,
        ) -> Result<()> {
            Ok(())
        }
        let kernel = BoxedKernel::of::<super::super::UnboxedBody, ()>(body);
        assert!(kernel.typed().is_none());
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
