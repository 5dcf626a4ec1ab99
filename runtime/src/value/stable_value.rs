use std::ffi::c_void;
use std::fmt;

use super::list::List;
use super::live;
use super::tag::Tag;
use crate::random::Generator;
use crate::stream_value::Stream;
use crate::{DType, Device, Scalar, Tensor};

/// The payload of a [`StableValue`]: plain bits, or a pointer to an owned handle.
#[repr(C)]
#[derive(Clone, Copy)]
union Payload {
    bits: u64,
    ptr: *mut c_void,
}

/// One boxed value: a `u32` tag, a `u32` auxiliary field and a `u64` payload; 16 bytes,
/// `#[repr(C)]`, the same on both sides of the C ABI.
///
/// | tag     | aux                         | payload                                  |
/// |---------|-----------------------------|------------------------------------------|
/// | None    | 0                           | 0                                        |
/// | Bool    | 0                           | 0 or 1                                   |
/// | Int     | 0                           | the `i64`'s bits                         |
/// | Float   | 0                           | the `f64`'s bits                         |
/// | Str     | 0                           | owned `*mut String`                      |
/// | Tensor  | 0                           | one owned Tensor reference (never null when made by opbox) |
/// | List    | element tag (0 = boxed values) | owned `*mut List`                     |
/// | DType   | 0                           | `DType::code()`                          |
/// | Device  | 0                           | `Device::to_bits()`                      |
/// | Scalar  | 0 int, 1 float, 2 bool      | the number's bits                        |
///
/// Dropping a value releases what it owns (see the module docs for the ownership rule).
#[repr(C)]
pub struct StableValue {
    tag: u32,
    aux: u32,
    payload: Payload,
}

const _: () = assert!(std::mem::size_of::<StableValue>() == 16);
const _: () = assert!(std::mem::align_of::<StableValue>() == 8);

// A plain value (no handle) is its plugin ABI v1 value bit for bit: a plugin's kernel of plain
// values runs on the dispatcher's stack as it is (plugin/kernel.rs). The ABI type is frozen, so
// these hold this type to it.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};

    use crate::abi::plugin_v1::Value;
    assert!(size_of::<StableValue>() == size_of::<Value>());
    assert!(align_of::<StableValue>() == align_of::<Value>());
    assert!(offset_of!(StableValue, tag) == offset_of!(Value, tag));
    assert!(offset_of!(StableValue, aux) == offset_of!(Value, aux));
    assert!(offset_of!(StableValue, payload) == offset_of!(Value, payload));
    assert!(size_of::<Payload>() == size_of::<u64>());
};

/// `aux` of a Tensor value that borrows its handle instead of owning a reference. Only typed
/// calls make these, for a stack that is dropped before the call returns. One exact value, not a
/// flag bit: a foreign value with a stray aux is an owner, and is released, not leaked.
/// ([`StableValue::from_raw_parts`] never makes one.) Odd, as the flag bit was.
const TENSOR_BORROWED: u32 = 0x424F_5257;

const SCALAR_INT: u32 = 0;
const SCALAR_FLOAT: u32 = 1;
const SCALAR_BOOL: u32 = 2;

// SAFETY: a StableValue owns its handles outright (Tensor is Send + Sync, and the string and list
// boxes are only reachable through this value), so moving or sharing it across threads is as
// safe as moving or sharing those owners.
unsafe impl Send for StableValue {}
// SAFETY: shared access only reads the payload (see Send above).
unsafe impl Sync for StableValue {}

/// A value's `tag` and `aux` as the one 8-byte word they fill at the start of a `repr(C)`
/// value (this one, or the plugin ABI's): written as one store, so that the value is two.
#[inline]
pub(crate) const fn header_bits(tag: u32, aux: u32) -> u64 {
    let [t0, t1, t2, t3] = tag.to_ne_bytes();
    let [a0, a1, a2, a3] = aux.to_ne_bytes();
    u64::from_ne_bytes([t0, t1, t2, t3, a0, a1, a2, a3])
}

impl StableValue {
    #[inline]
    const fn bits(tag: Tag, aux: u32, bits: u64) -> StableValue {
        StableValue {
            tag: tag as u32,
            aux,
            payload: Payload { bits },
        }
    }

    #[inline]
    fn owned_ptr(tag: Tag, aux: u32, ptr: *mut c_void) -> StableValue {
        StableValue {
            tag: tag as u32,
            aux,
            payload: Payload { ptr },
        }
    }

    /// `None`: an absent optional, or an output slot not written yet.
    #[inline]
    pub const fn none() -> StableValue {
        StableValue::bits(Tag::None, 0, 0)
    }
    /// A `bool`.
    #[inline]
    pub const fn bool(v: bool) -> StableValue {
        StableValue::bits(Tag::Bool, 0, v as u64)
    }
    /// An `int`.
    #[inline]
    pub const fn int(v: i64) -> StableValue {
        StableValue::bits(Tag::Int, 0, v as u64)
    }
    /// A `float`.
    #[inline]
    pub fn float(v: f64) -> StableValue {
        StableValue::bits(Tag::Float, 0, v.to_bits())
    }
    /// A `ScalarType`.
    pub fn dtype(v: DType) -> StableValue {
        StableValue::bits(Tag::DType, 0, u64::from(v.code()))
    }
    /// A `Device`.
    pub fn device(v: Device) -> StableValue {
        StableValue::bits(Tag::Device, 0, v.to_bits())
    }
    /// A `Scalar`.
    pub fn scalar(v: Scalar) -> StableValue {
        match v {
            Scalar::Int(i) => StableValue::bits(Tag::Scalar, SCALAR_INT, i as u64),
            Scalar::Float(f) => StableValue::bits(Tag::Scalar, SCALAR_FLOAT, f.to_bits()),
            Scalar::Bool(b) => StableValue::bits(Tag::Scalar, SCALAR_BOOL, b as u64),
        }
    }
    /// A `Generator`: the value owns one reference to the shared state.
    pub fn generator(v: Generator) -> StableValue {
        live::box_made();
        StableValue::owned_ptr(Tag::Generator, 0, v.into_raw().cast_mut().cast())
    }
    /// A `Stream`, by value: the device index rides in `aux`.
    pub fn stream(v: Stream) -> StableValue {
        StableValue::bits(Tag::Stream, v.device_index as u8 as u32, v.id)
    }
    /// A `str`, owned (one heap string).
    pub fn str(v: impl Into<String>) -> StableValue {
        live::box_made();
        let ptr = Box::into_raw(Box::new(v.into())).cast::<c_void>();
        StableValue::owned_ptr(Tag::Str, 0, ptr)
    }
    /// A `Tensor`, owning one reference.
    #[inline]
    pub fn tensor(v: Tensor) -> StableValue {
        StableValue::owned_ptr(Tag::Tensor, 0, v.into_raw())
    }
    /// A Tensor value that borrows `v`'s handle: no reference count changes hands, and dropping
    /// the value releases nothing.
    ///
    /// # Safety
    /// The value (and the stack holding it) must be dropped before `v`, and nothing may move it
    /// anywhere that outlives `v`: kernels only borrow their inputs, so a stack local to one call
    /// qualifies.
    #[inline]
    pub(crate) unsafe fn tensor_borrowed(v: &Tensor) -> StableValue {
        StableValue::owned_ptr(Tag::Tensor, TENSOR_BORROWED, v.as_raw())
    }

    /// A Tensor value that borrows the handle `p` (a [`Tensor::as_raw`] pointer, or a checked
    /// header of another image), as [`StableValue::tensor_borrowed`] does.
    ///
    /// # Safety
    /// As [`StableValue::tensor_borrowed`], for what `p` points at.
    #[inline]
    pub(crate) unsafe fn tensor_borrowed_raw(p: *mut c_void) -> StableValue {
        StableValue::owned_ptr(Tag::Tensor, TENSOR_BORROWED, p)
    }

    /// Moves the value at `src` to `dst` as two 8-byte halves. A kernel has just written `src`
    /// that way; a plain move reads it back as one 16-byte load, which the CPU cannot forward
    /// from two smaller stores still in flight (a stall of several ns on every call's result).
    ///
    /// # Safety
    /// `src` must point to an initialised value, which is moved out (the caller must not drop
    /// it again), and `dst` to writable space for one value that holds nothing to release.
    #[inline]
    pub(crate) unsafe fn move_by_halves(src: *const StableValue, dst: *mut StableValue) {
        // SAFETY: both pointers are valid and aligned for a StableValue (the caller's contract),
        // whose `repr(C)` layout puts `tag` and `aux` in its first 8 bytes (two u32s, no
        // pointer) and `payload` in the last 8. The payload is copied as the union it is, so a
        // pointer in it keeps its provenance. Volatile keeps the two loads from being merged
        // back into one 16-byte load.
        unsafe {
            let header = std::ptr::read_volatile(std::ptr::addr_of!((*src).tag).cast::<u64>());
            let payload = std::ptr::read_volatile(std::ptr::addr_of!((*src).payload));
            std::ptr::addr_of_mut!((*dst).tag)
                .cast::<u64>()
                .write(header);
            std::ptr::addr_of_mut!((*dst).payload).write(payload);
        }
    }

    /// Replaces this value (released as any drop would) with `value`, stored as two 8-byte
    /// halves: a value built just before is still two stores in flight, which a 16-byte copy
    /// could not forward from (see [`move_by_halves`](Self::move_by_halves)).
    #[inline]
    pub(crate) fn set(&mut self, value: StableValue) {
        let value = std::mem::ManuallyDrop::new(value);
        let this: *mut StableValue = self;
        // SAFETY: `this` is live: dropped once, then written without being read; `value` is
        // moved into it exactly once (ManuallyDrop keeps it from being dropped here).
        unsafe {
            std::ptr::drop_in_place(this);
            StableValue::move_by_halves(&*value, this);
        }
    }

    /// Replaces this value (released as any drop would) with the plain value `(tag, aux,
    /// payload)`, written in place as two 8-byte stores: building the value first and moving it
    /// in would read it back as one 16-byte load, which the CPU cannot forward from the smaller
    /// stores that built it (the stall `move_by_halves` avoids).
    ///
    /// # Safety
    /// `tag` is a plain tag, one whose value owns no handle (not Str, Tensor, List or
    /// Generator), as for [`StableValue::from_raw_parts`].
    #[inline]
    pub(crate) unsafe fn overwrite_plain(&mut self, tag: u32, aux: u32, payload: u64) {
        let this: *mut StableValue = self;
        let header = header_bits(tag, aux);
        // SAFETY: `this` is a live, aligned value: it is dropped once and then overwritten
        // without being read. `repr(C)` puts `tag` then `aux` in the first 8 bytes (so the
        // native-endian bytes of `header` are the two fields) and `payload` in the last 8. The
        // new value owns nothing, per the contract, so no handle is made from `payload`.
        unsafe {
            std::ptr::drop_in_place(this);
            std::ptr::addr_of_mut!((*this).tag)
                .cast::<u64>()
                .write(header);
            std::ptr::addr_of_mut!((*this).payload).write(Payload { bits: payload });
        }
    }

    /// The same value, owning its handle: a borrowed tensor becomes a counted reference.
    pub(crate) fn into_owned(self) -> StableValue {
        if self.is_borrowed_tensor() {
            self.clone()
        } else {
            self
        }
    }

    fn is_borrowed_tensor(&self) -> bool {
        self.tag == Tag::Tensor as u32 && self.aux == TENSOR_BORROWED
    }

    /// A list, owned (one heap box).
    pub fn list(v: List) -> StableValue {
        let aux = v.element_tag() as u32;
        live::box_made();
        let ptr = Box::into_raw(Box::new(v)).cast::<c_void>();
        StableValue::owned_ptr(Tag::List, aux, ptr)
    }

    /// Builds a value from its three fields, as a C caller would.
    ///
    /// # Safety
    /// For the Str, Tensor, List and Generator tags the payload must be null (Tensor only) or a handle that
    /// opbox made and whose ownership passes to the new value: the value releases it on drop,
    /// whatever `aux` says (a Tensor value built here is never a borrowed one).
    pub unsafe fn from_raw_parts(tag: u32, aux: u32, payload: u64) -> StableValue {
        let aux = if tag == Tag::Tensor as u32 && aux == TENSOR_BORROWED {
            0
        } else {
            aux
        };
        StableValue {
            tag,
            aux,
            payload: Payload { bits: payload },
        }
    }

    /// The raw tag, which may be out of range when a foreign caller made the value.
    #[inline]
    pub fn raw_tag(&self) -> u32 {
        self.tag
    }

    /// The tag, or `None` for a number no [`Tag`] has.
    #[inline]
    pub fn tag(&self) -> Option<Tag> {
        Tag::from_u32(self.tag)
    }

    /// The header's second word: what a tag needs beside the payload (a `Scalar`'s kind, a
    /// `Stream`'s device index, the borrowed-tensor flag).
    pub fn aux(&self) -> u32 {
        self.aux
    }

    #[inline]
    pub(crate) fn raw_bits(&self) -> u64 {
        // SAFETY: every variant of the union is 8 plain bytes on 64-bit targets, and `bits` is
        // valid for any bit pattern.
        unsafe { self.payload.bits }
    }

    #[inline]
    fn raw_ptr(&self) -> *mut c_void {
        // SAFETY: pointer-tagged values were made with `ptr` written; for any other tag the
        // caller below never dereferences the result.
        unsafe { self.payload.ptr }
    }

    /// Whether this is `None`.
    #[inline]
    pub fn is_none(&self) -> bool {
        self.tag == Tag::None as u32
    }

    /// The `bool`, or `None` for another tag.
    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        (self.tag == Tag::Bool as u32).then(|| self.raw_bits() != 0)
    }
    /// The `int`, or `None` for another tag.
    #[inline]
    pub fn as_int(&self) -> Option<i64> {
        (self.tag == Tag::Int as u32).then(|| self.raw_bits() as i64)
    }
    /// The `float`, or `None` for another tag (an `int` is not converted here).
    #[inline]
    pub fn as_float(&self) -> Option<f64> {
        (self.tag == Tag::Float as u32).then(|| f64::from_bits(self.raw_bits()))
    }
    /// The `ScalarType`, or `None` for another tag or an unknown code.
    pub fn as_dtype(&self) -> Option<DType> {
        if self.tag != Tag::DType as u32 {
            return None;
        }
        u32::try_from(self.raw_bits())
            .ok()
            .and_then(DType::from_code)
    }
    /// The `Device`, or `None` for another tag or bits no device has.
    pub fn as_device(&self) -> Option<Device> {
        (self.tag == Tag::Device as u32)
            .then(|| Device::from_bits(self.raw_bits()))
            .flatten()
    }
    /// The `Scalar`, or `None` for another tag or an unknown kind.
    pub fn as_scalar(&self) -> Option<Scalar> {
        if self.tag != Tag::Scalar as u32 {
            return None;
        }
        let bits = self.raw_bits();
        match self.aux {
            SCALAR_INT => Some(Scalar::Int(bits as i64)),
            SCALAR_FLOAT => Some(Scalar::Float(f64::from_bits(bits))),
            SCALAR_BOOL => Some(Scalar::Bool(bits != 0)),
            _ => None,
        }
    }

    /// A new handle to the generator this value holds.
    pub fn as_generator(&self) -> Option<Generator> {
        let ptr = self.raw_ptr();
        if self.tag != Tag::Generator as u32 || ptr.is_null() {
            return None;
        }
        // SAFETY: a Generator value holds one live reference made by `Generator::into_raw`
        // (see `generator`), released only when the value drops.
        Some(unsafe { Generator::clone_raw(ptr.cast_const().cast()) })
    }
    /// The `Stream`, or `None` for another tag.
    pub fn as_stream(&self) -> Option<Stream> {
        // The device index is the low byte of `aux`; anything above it is not a Stream we made.
        let index = u8::try_from(self.aux).ok()? as i8;
        (self.tag == Tag::Stream as u32).then(|| Stream::new(index, self.raw_bits()))
    }

    /// The `str`, borrowed, or `None` for another tag or a null handle.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        let ptr = self.raw_ptr();
        if self.tag != Tag::Str as u32 || ptr.is_null() {
            return None;
        }
        // SAFETY: a non-null Str payload is an owned `Box<String>` made by `StableValue::str`
        // (or handed over under `from_raw_parts`' contract); it lives as long as `self`.
        Some(unsafe { &*ptr.cast::<String>() }.as_str())
    }

    /// The tensor this value holds, borrowed; `None` for another tag or a null handle.
    #[inline]
    pub fn as_tensor(&self) -> Option<&Tensor> {
        if self.tag != Tag::Tensor as u32 || self.raw_ptr().is_null() {
            return None;
        }
        // SAFETY: the payload slot holds one owned, non-null Tensor reference (checked above),
        // and `borrow_raw` reinterprets the slot itself, so the borrow is tied to `self`.
        Some(unsafe { Tensor::borrow_raw(&self.payload.ptr) })
    }

    /// The list, borrowed, or `None` for another tag or a null handle.
    #[inline]
    pub fn as_list(&self) -> Option<&List> {
        let ptr = self.raw_ptr();
        if self.tag != Tag::List as u32 || ptr.is_null() {
            return None;
        }
        // SAFETY: a non-null List payload is an owned `Box<List>` made by `StableValue::list`.
        Some(unsafe { &*ptr.cast::<List>() })
    }

    /// Takes the tensor out, leaving None behind.
    pub fn take_tensor(&mut self) -> Option<Tensor> {
        if self.is_borrowed_tensor() {
            let owned = self.as_tensor().cloned();
            *self = StableValue::none();
            return owned;
        }
        self.as_tensor()?;
        let ptr = self.raw_ptr();
        // Plain field writes: the old payload's ownership moves to the Tensor below, so the old
        // value must not be dropped.
        self.tag = Tag::None as u32;
        self.aux = 0;
        self.payload = Payload { bits: 0 };
        // SAFETY: `ptr` was this value's owned, non-null Tensor reference; `self` no longer
        // refers to it, so ownership moves to the returned Tensor exactly once.
        Some(unsafe { Tensor::from_raw(ptr) })
    }

    /// What this value is, for error messages: `int`, `Tensor`, `int[]`, `a null Tensor handle`,
    /// `an invalid ScalarType (code 99)`: a value whose tag is right but whose payload does not
    /// decode says so, so the message never reads "expects X, but got X".
    pub fn describe(&self) -> String {
        match self.tag() {
            None => format!("an invalid tag {}", self.tag),
            Some(Tag::Tensor) if self.raw_ptr().is_null() => "a null Tensor handle".to_string(),
            Some(Tag::Str) if self.raw_ptr().is_null() => "a null str handle".to_string(),
            Some(tag @ Tag::DType) if self.as_dtype().is_none() => {
                format!(
                    "an invalid {} (code {})",
                    tag.schema_name(),
                    self.raw_bits()
                )
            }
            Some(tag @ Tag::Device) if self.as_device().is_none() => {
                format!(
                    "an invalid {} (bits {:#x})",
                    tag.schema_name(),
                    self.raw_bits()
                )
            }
            Some(Tag::Generator) if self.raw_ptr().is_null() => {
                "a null Generator handle".to_string()
            }
            Some(tag @ Tag::Scalar) if self.as_scalar().is_none() => {
                format!("an invalid {} (kind {})", tag.schema_name(), self.aux)
            }
            Some(Tag::List) => match self.as_list() {
                Some(list) => list.describe(),
                None => "a null list handle".to_string(),
            },
            Some(tag) => tag.schema_name().to_string(),
        }
    }
}

impl Default for StableValue {
    fn default() -> StableValue {
        StableValue::none()
    }
}

impl Drop for StableValue {
    #[inline]
    fn drop(&mut self) {
        // Plain values own nothing: keep their drop to one inlined range compare. The owning
        // tags are Str, Tensor and List, consecutive ABI numbers (tag_numbers_round_trip).
        // Generator (a later ABI number) is the one owning tag outside the range.
        const FIRST_OWNING: u32 = Tag::Str as u32;
        if (self.tag.wrapping_sub(FIRST_OWNING) < 3 && !self.is_borrowed_tensor())
            || self.tag == Tag::Generator as u32
        {
            self.release();
        }
    }
}

impl StableValue {
    #[cold]
    #[inline(never)]
    fn release(&mut self) {
        let ptr = self.raw_ptr();
        if ptr.is_null() {
            return;
        }
        match self.tag() {
            Some(Tag::Str) => {
                // SAFETY: an owned `Box<String>` (see `as_str`); this value is its only owner and
                // is being dropped, so it is freed exactly once.
                drop(unsafe { Box::from_raw(ptr.cast::<String>()) });
                live::box_freed();
            }
            Some(Tag::List) => {
                // SAFETY: an owned `Box<List>` (see `as_list`), freed exactly once as above.
                drop(unsafe { Box::from_raw(ptr.cast::<List>()) });
                live::box_freed();
            }
            Some(Tag::Tensor) => {
                // SAFETY: one owned Tensor reference (see `as_tensor`), released exactly once.
                drop(unsafe { Tensor::from_raw(ptr) });
            }
            Some(Tag::Generator) => {
                // SAFETY: the one reference `generator` stored, released exactly once.
                unsafe { Generator::release_raw(ptr.cast_const().cast()) };
                live::box_freed();
            }
            _ => {}
        }
    }
}

impl Clone for StableValue {
    fn clone(&self) -> StableValue {
        match self.tag() {
            Some(Tag::Str) => match self.as_str() {
                Some(s) => StableValue::str(s),
                None => StableValue::none(),
            },
            Some(Tag::Tensor) => match self.as_tensor() {
                Some(t) => StableValue::tensor(t.clone()),
                None => StableValue::none(),
            },
            Some(Tag::List) => match self.as_list() {
                Some(l) => StableValue::list(l.clone()),
                None => StableValue::none(),
            },
            Some(Tag::Generator) => match self.as_generator() {
                Some(g) => StableValue::generator(g),
                None => StableValue::none(),
            },
            _ => StableValue {
                tag: self.tag,
                aux: self.aux,
                payload: self.payload,
            },
        }
    }
}

impl fmt::Debug for StableValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tag() {
            Some(Tag::None) => f.write_str("None"),
            Some(Tag::Bool) => write!(f, "Bool({:?})", self.as_bool()),
            Some(Tag::Int) => write!(f, "Int({})", self.raw_bits() as i64),
            Some(Tag::Float) => write!(f, "Float({:?})", f64::from_bits(self.raw_bits())),
            Some(Tag::Str) => write!(f, "Str({:?})", self.as_str()),
            Some(Tag::Tensor) => match self.as_tensor() {
                Some(t) => write!(f, "Tensor({t:?})"),
                None => f.write_str("Tensor(null)"),
            },
            Some(Tag::List) => write!(f, "List({:?})", self.as_list()),
            Some(Tag::DType) => write!(f, "DType({:?})", self.as_dtype()),
            Some(Tag::Device) => write!(f, "Device({:?})", self.as_device()),
            Some(Tag::Scalar) => write!(f, "Scalar({:?})", self.as_scalar()),
            Some(Tag::Generator) => write!(f, "Generator({:?})", self.as_generator()),
            Some(Tag::Stream) => write!(f, "Stream({:?})", self.as_stream()),
            None => write!(
                f,
                "Invalid(tag={}, aux={}, bits={:#x})",
                self.tag,
                self.aux,
                self.raw_bits()
            ),
        }
    }
}
