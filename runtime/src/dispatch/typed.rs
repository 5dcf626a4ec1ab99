//! A kernel's typed entry: the Rust function itself, behind a key of its parameter and return
//! types. A typed `OpHandle::call` whose argument tuple has the same key calls it directly, as
//! PyTorch's `typed().call()` calls the unboxed kernel, so it pays for no boxing it can prove
//! unneeded. Every other call (other argument types, defaults left out, mixed devices, an op
//! from a plugin) takes the boxed path, whose checks and messages stay the only ones.

use std::any::TypeId;

use super::shared_shim::ParamList;
use crate::typemap::KernelReturn;
use crate::Result;

/// The type-erased form of a fn pointer: a typed entry or the kernel it calls.
pub(crate) type ErasedFn = fn();

/// A typed entry, as a typed call restores it: the kernel (erased) and the call's argument tuple
/// in, the kernel's value out.
pub(crate) type TypedEntry<A, R> = fn(ErasedFn, A) -> Result<R>;

/// A kernel's typed entry, as `#[stable_impl]` registers it: the entry shared by every kernel of
/// the same parameter list and return ([`TypedKernel::of`]) and the kernel it calls. The key is
/// computed at compile time: stored as data, it costs start-up neither a relocation nor a call
/// into each kernel's code.
#[derive(Clone, Copy, Debug)]
pub struct TypedKernel {
    key: TypeId,
    entry: ErasedFn,
    kernel: ErasedFn,
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

impl TypedKernel {
    /// The typed entry of `kernel`, a kernel of parameter list `P` returning `R`: keyed by `P`
    /// (the keys of the kernel's parameter types, element by element, as `IntoStack::Key` keys
    /// a call's argument tuple) and `R`'s value. `None` for a list with no typed entry.
    pub const fn of<P: ParamList, R: KernelReturn>(kernel: P::Kernel<R>) -> Option<TypedKernel> {
        if !P::TYPED {
            return None;
        }
        let entry: for<'x> fn(ErasedFn, P::Args<'x>) -> Result<R::Value> = typed_entry::<P, R>;
        Some(TypedKernel {
            key: TypeId::of::<(P, R::Value)>(),
            // SAFETY: both are fn pointers (ParamList's contract for the kernel); each is only
            // ever turned back into its own type: the entry by `restore`, whose caller's key is
            // this one, and the kernel by the entry itself.
            entry: unsafe { erase(entry) },
            kernel: unsafe { erase(kernel) },
        })
    }

    /// The key of the kernel's parameters and return.
    #[inline]
    pub(crate) fn key(&self) -> TypeId {
        self.key
    }

    /// The erased entry and the kernel to hand it.
    #[inline]
    pub(crate) fn erased(&self) -> (ErasedFn, ErasedFn) {
        (self.entry, self.kernel)
    }
}

/// The typed entry of every kernel of parameter list `P` returning `R`: the kernel back from its
/// erased pointer, called with the argument tuple.
fn typed_entry<P: ParamList, R: KernelReturn>(
    kernel: ErasedFn,
    args: P::Args<'_>,
) -> Result<R::Value> {
    // SAFETY: `TypedKernel::of::<P, R>` erased `kernel` from `P::Kernel<R>` and paired it with
    // this entry, which is all that calls it.
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
/// `erased` must be the entry of a [`TypedKernel`] whose key is `(A's key, R)`. Then `A` is the
/// entry's argument tuple `P::Args<'x>` up to lifetimes: `A`'s key is `P`, and each family's
/// `Of<'x>` has its family as key (`ParamFamily`'s bound). The entry is generic over `'x`, and
/// every family is covariant in it, so it accepts `A`'s at the lifetime they share for the call;
/// it keeps nothing of them past it.
#[inline]
pub(crate) unsafe fn restore<A, R>(erased: ErasedFn) -> TypedEntry<A, R> {
    // SAFETY: the caller's contract: `erased` was made from this type, up to lifetimes.
    unsafe { unerase::<TypedEntry<A, R>>(erased) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::TypedKey;

    fn concat(a: &str, b: i64) -> Result<String> {
        Ok(format!("{a}{b}"))
    }

    type Key = (<&'static str as TypedKey>::Key, <i64 as TypedKey>::Key);

    #[test]
    fn an_erased_entry_is_restored_at_the_callers_lifetimes_and_called() {
        let entry = TypedKernel::of::<Key, Result<String>>(concat).unwrap();
        assert_eq!(entry.key(), type_id::<(Key, String)>());
        let local = String::from("n=");
        let (erased, kernel) = entry.erased();
        // SAFETY: the key matches, as asserted above.
        let f = unsafe { restore::<(&str, i64), String>(erased) };
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
        assert!(TypedKernel::of::<super::super::UnboxedBody, ()>(body).is_none());
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
