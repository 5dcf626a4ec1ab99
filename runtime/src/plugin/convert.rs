//! In-process [`StableValue`]s and the ABI's [`Value`]s, converted at the plugin boundary.
//!
//! The in-process layout is not the ABI's: its handles are this image's Rust objects. Plain
//! values (None, bool, int, float, ScalarType, Device, Scalar) have the same bits on both sides
//! and are copied. Lending a stack (a kernel's inputs) allocates nothing for up to 8 tensors, 4
//! strings and 4 lists and 16 values: the ABI objects live in this frame and point into the
//! values they lend. Outputs are owned ABI objects, made by the image that returns them and
//! released by the image that takes them.
//!
//! What ABI v1 carries is [`carried`]; an op whose schema needs more is refused at registration.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use opbox_codegen::schema::{BaseType, Type, TypeShape};

use super::tensor;
use crate::abi::plugin_v1::{AbiList, AbiString, TensorHeader, Value};
use crate::value::{List, StableValue, Tag};
use crate::{Error, Result};

/// True when plugin ABI v1 can carry a value of this schema type.
pub(crate) fn carried(ty: Type) -> bool {
    match ty.shape() {
        TypeShape::Optional(inner) => carried(inner),
        TypeShape::List(inner) => matches!(
            inner.shape(),
            TypeShape::Base(b) if matches!(b.concrete(), BaseType::Int | BaseType::Float | BaseType::Bool)
        ),
        TypeShape::Base(b) => matches!(
            b.concrete(),
            BaseType::Tensor
                | BaseType::Int
                | BaseType::Float
                | BaseType::Bool
                | BaseType::Str
                | BaseType::ScalarType
                | BaseType::Device
                | BaseType::Scalar
                | BaseType::Layout
                | BaseType::MemoryFormat
        ),
    }
}

pub(crate) const fn is_plain(tag: Option<Tag>) -> bool {
    matches!(
        tag,
        Some(
            Tag::None | Tag::Bool | Tag::Int | Tag::Float | Tag::DType | Tag::Device | Tag::Scalar
        )
    )
}

/// The tag numbers [`is_plain`] accepts, as a mask: bit `t` for tag number `t`.
pub(crate) const PLAIN_TAGS: u32 = {
    let mut mask = 0u32;
    let mut tag = 0;
    while tag < 32 {
        if is_plain(Tag::from_u32(tag)) {
            mask |= 1 << tag;
        }
        tag += 1;
    }
    mask
};

/// [`is_plain`] of the tag numbered `tag`, as one mask test: the plain call checks every slot
/// a kernel may have written with it.
#[inline]
pub(crate) fn is_plain_number(tag: u32) -> bool {
    tag < 32 && PLAIN_TAGS & (1 << tag) != 0
}

/// Whether a value with tag number `tag` is plain or a tensor: what an in-place kernel (ABI
/// 1.4) takes and gives, the same bits in every image.
#[inline]
pub(crate) fn is_held(tag: u32) -> bool {
    tag == Tag::Tensor as u32 || is_plain_number(tag)
}

fn not_carried(what: &str) -> Error {
    Error::Unsupported(format!(
        "plugin ABI v1 carries None, bool, int, float, str, Tensor, ScalarType, Device, Scalar \
         and int/float/bool lists, not {what}"
    ))
}

fn null(what: &str) -> Error {
    Error::InvalidArgument(format!("plugin ABI: a null {what}"))
}

fn ptr_bits<T>(p: *mut T) -> u64 {
    p.expose_provenance() as u64
}

fn bits_ptr<T>(bits: u64) -> *mut T {
    std::ptr::with_exposed_provenance_mut(bits as usize)
}

/// A list's elements as the ABI lends them.
fn list_view(list: &List) -> Result<(Tag, *const c_void, usize)> {
    Ok(match list {
        List::Int(v) => (Tag::Int, v.as_ptr().cast(), v.len()),
        List::Float(v) => (Tag::Float, v.as_ptr().cast(), v.len()),
        // bool is one byte, 0 or 1: the ABI's uint8_t elements.
        List::Bool(v) => (Tag::Bool, v.as_ptr().cast(), v.len()),
        other => return Err(not_carried(&other.describe())),
    })
}

/// Runs `f` on `inputs` lent as ABI values, followed by `extra` None values. Inlined into its
/// two callers: returned through a call, `f`'s result was copied whole from the halves just
/// written, a stall on every plugin call with a tensor.
#[inline]
pub(crate) fn with_lent<R>(
    inputs: &[StableValue],
    extra: usize,
    f: impl FnOnce(&mut [Value]) -> R,
) -> Result<R> {
    let (mut tensors, mut strings, mut lists) = (0, 0, 0);
    for v in inputs {
        match v.tag() {
            Some(Tag::Tensor) => tensors += 1,
            Some(Tag::Str) => strings += 1,
            Some(Tag::List) => lists += 1,
            tag if is_plain(tag) => {}
            _ => return Err(not_carried(&v.describe())),
        }
    }
    // The ABI objects live in this frame (uninitialised until written; none has a destructor),
    // or on the heap past the inline counts. Each is reached through one raw base pointer, taken
    // once its storage is final, so the pointers lent to the callee stay valid.
    let mut header_slots: [MaybeUninit<TensorHeader>; 8] = [const { MaybeUninit::uninit() }; 8];
    let mut string_slots: [MaybeUninit<AbiString>; 4] = [const { MaybeUninit::uninit() }; 4];
    let mut list_slots: [MaybeUninit<AbiList>; 4] = [const { MaybeUninit::uninit() }; 4];
    let mut value_slots: [MaybeUninit<Value>; 16] = [const { MaybeUninit::uninit() }; 16];
    let (mut header_heap, mut string_heap, mut list_heap, mut value_heap) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let h = base(&mut header_slots, &mut header_heap, tensors);
    let s = base(&mut string_slots, &mut string_heap, strings);
    let l = base(&mut list_slots, &mut list_heap, lists);
    let n = inputs.len() + extra;
    let vals = base(&mut value_slots, &mut value_heap, n);
    let (mut hi, mut si, mut li) = (0, 0, 0);
    for (i, v) in inputs.iter().enumerate() {
        let payload = match v.tag() {
            Some(Tag::Tensor) => {
                let t = v.as_tensor().ok_or_else(|| null("tensor"))?;
                if t.foreign_header().is_some() {
                    // Another image's header (a kernel's input, passed on): lent as it is.
                    ptr_bits(t.as_raw())
                } else if let Some(h) = t.lent_header() {
                    ptr_bits(h)
                } else {
                    // SAFETY: `hi < tensors`, the number of slots behind `h` (counted above).
                    let slot = unsafe { h.add(hi) };
                    // SAFETY: as above; writing an uninitialised slot.
                    unsafe { tensor::lend_into(t, slot) }?;
                    hi += 1;
                    ptr_bits(slot)
                }
            }
            Some(Tag::Str) => {
                let text = v.as_str().ok_or_else(|| null("string"))?;
                // SAFETY: `si < strings` slots behind `s`.
                let slot = unsafe { s.add(si) };
                // SAFETY: as above.
                unsafe {
                    slot.write(AbiString {
                        data: text.as_ptr().cast(),
                        len: text.len(),
                        release: None,
                        ctx: std::ptr::null_mut(),
                    })
                };
                si += 1;
                ptr_bits(slot)
            }
            Some(Tag::List) => {
                let (tag, data, len) = list_view(v.as_list().ok_or_else(|| null("list"))?)?;
                // SAFETY: `li < lists` slots behind `l`.
                let slot = unsafe { l.add(li) };
                // SAFETY: as above.
                unsafe {
                    slot.write(AbiList {
                        elem_tag: tag as u32,
                        reserved: 0,
                        data,
                        len,
                        release: None,
                        ctx: std::ptr::null_mut(),
                    })
                };
                li += 1;
                ptr_bits(slot)
            }
            _ => v.raw_bits(),
        };
        let aux = if v.tag() == Some(Tag::Tensor) {
            0
        } else {
            v.aux()
        };
        // SAFETY: `i < inputs.len() <= n`, the number of slots behind `vals`.
        unsafe {
            vals.add(i).write(Value {
                tag: v.raw_tag(),
                aux,
                payload,
            })
        };
    }
    for i in inputs.len()..n {
        // SAFETY: `i < n` slots behind `vals`.
        unsafe { vals.add(i).write(Value::default()) };
    }
    // SAFETY: all `n` values were written just above, through the same base pointer.
    let values = unsafe { std::slice::from_raw_parts_mut(vals, n) };
    Ok(f(values))
}

/// The base of `count` slots: the inline ones when they suffice, else `heap`, sized once.
fn base<T, const N: usize>(
    inline: &mut [MaybeUninit<T>; N],
    heap: &mut Vec<MaybeUninit<T>>,
    count: usize,
) -> *mut T {
    if count <= N {
        inline.as_mut_ptr().cast()
    } else {
        heap.resize_with(count, MaybeUninit::uninit);
        heap.as_mut_ptr().cast()
    }
}

/// An owned string: the ABI struct first, so a pointer to it is a pointer to this.
#[repr(C)]
struct OwnedString {
    abi: AbiString,
    text: String,
}

unsafe extern "C" fn release_string(s: *mut AbiString) {
    if s.is_null() {
        return;
    }
    // SAFETY: made by `give` as the first field of an `OwnedString` box, released once.
    drop(unsafe { Box::from_raw(s.cast::<OwnedString>()) });
    crate::value::live_box_freed();
}

#[repr(C)]
struct OwnedList {
    abi: AbiList,
    list: List,
}

unsafe extern "C" fn release_list(l: *mut AbiList) {
    if l.is_null() {
        return;
    }
    // SAFETY: made by `give` as the first field of an `OwnedList` box, released once.
    drop(unsafe { Box::from_raw(l.cast::<OwnedList>()) });
    crate::value::live_box_freed();
}

/// `v` as an owned ABI value, whose objects this image releases when the receiver asks.
pub(crate) fn give(mut v: StableValue) -> Result<Value> {
    give_with(&mut v, tensor::owned)
}

/// [`give`] for a kernel's output, read in its slot (a tensor is taken out; the rest is copied
/// and dropped with the slot). In place, because a value the kernel just wrote in two halves
/// stalls the CPU when moved out whole.
pub(crate) fn give_in(v: &mut StableValue) -> Result<Value> {
    give_with(v, tensor::owned)
}

fn give_with(
    v: &mut StableValue,
    owned_tensor: impl FnOnce(crate::Tensor) -> Result<*mut TensorHeader>,
) -> Result<Value> {
    let (tag, aux) = (v.raw_tag(), v.aux());
    let payload = match v.tag() {
        Some(Tag::Tensor) => ptr_bits(owned_tensor(
            v.take_tensor().ok_or_else(|| null("tensor"))?,
        )?),
        Some(Tag::Str) => {
            let text = v.as_str().ok_or_else(|| null("string"))?.to_string();
            let owned = Box::new(OwnedString {
                abi: AbiString {
                    data: text.as_ptr().cast(),
                    len: text.len(),
                    release: Some(release_string),
                    ctx: std::ptr::null_mut(),
                },
                text,
            });
            crate::value::live_box_made();
            ptr_bits(Box::into_raw(owned))
        }
        Some(Tag::List) => {
            let list = v.as_list().ok_or_else(|| null("list"))?.clone();
            let (elem, data, len) = list_view(&list)?;
            let owned = Box::new(OwnedList {
                abi: AbiList {
                    elem_tag: elem as u32,
                    reserved: 0,
                    data,
                    len,
                    release: Some(release_list),
                    ctx: std::ptr::null_mut(),
                },
                list,
            });
            crate::value::live_box_made();
            ptr_bits(Box::into_raw(owned))
        }
        t if is_plain(t) => v.raw_bits(),
        _ => return Err(not_carried(&v.describe())),
    };
    let aux = if tag == Tag::Tensor as u32 { 0 } else { aux };
    Ok(Value { tag, aux, payload })
}

/// Writes `v` to `dst` as two 8-byte halves, which is how it was just built: a 16-byte copy
/// could not forward from those stores, and stalls.
///
/// # Safety
/// `dst` is valid for writing one value.
#[inline]
pub(crate) unsafe fn write_value(dst: *mut Value, v: &Value) {
    let header = crate::value::header_bits(v.tag, v.aux);
    // SAFETY: `dst` is writable (the caller's contract); `repr(C)` puts `tag` then `aux` in its
    // first 8 bytes (so the native-endian bytes of `header` are the two fields) and `payload` in
    // the last 8. Volatile keeps the two stores from being merged into one 16-byte store of a
    // 16-byte load.
    unsafe {
        std::ptr::write_volatile(dst.cast::<u64>(), header);
        std::ptr::write_volatile(std::ptr::addr_of_mut!((*dst).payload), v.payload);
    }
}

/// # Safety
/// `s` is a live string value for the call.
unsafe fn read_string(s: *const AbiString) -> Result<String> {
    // SAFETY: live, per the contract.
    let s = unsafe { s.as_ref() }.ok_or_else(|| null("string"))?;
    if s.len == 0 {
        return Ok(String::new());
    }
    if s.data.is_null() {
        return Err(null("string's data"));
    }
    // SAFETY: a live string's `data` holds `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.len) };
    String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::InvalidArgument("plugin ABI: a string value is not UTF-8".to_string()))
}

/// # Safety
/// `l` is a live list value for the call.
unsafe fn read_list(l: *const AbiList) -> Result<List> {
    // SAFETY: live, per the contract.
    let l = unsafe { l.as_ref() }.ok_or_else(|| null("list"))?;
    if l.len > 0 && l.data.is_null() {
        return Err(null("list's data"));
    }
    /// # Safety
    /// `l.data` holds `l.len` values of `T` (or `len` is 0).
    unsafe fn items<T: Copy>(l: &AbiList) -> Vec<T> {
        if l.len == 0 {
            return Vec::new();
        }
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(l.data.cast::<T>(), l.len) }.to_vec()
    }
    // SAFETY: the element tag says what `data` holds.
    Ok(match Tag::from_u32(l.elem_tag) {
        Some(Tag::Int) => List::Int(unsafe { items::<i64>(l) }),
        Some(Tag::Float) => List::Float(unsafe { items::<f64>(l) }),
        Some(Tag::Bool) => {
            // SAFETY: as above; bytes are read as bytes, then checked.
            let bytes = unsafe { items::<u8>(l) };
            if bytes.iter().any(|&b| b > 1) {
                return Err(Error::InvalidArgument(
                    "plugin ABI: a bool list holds a byte other than 0 or 1".to_string(),
                ));
            }
            List::Bool(bytes.into_iter().map(|b| b == 1).collect())
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "plugin ABI: a list of element tag {}, which v1 does not carry",
                l.elem_tag
            )))
        }
    })
}

/// A plain value's in-process form.
pub(crate) fn plain(v: &Value) -> StableValue {
    // SAFETY: only plain tags reach here (checked by the callers), which own no handle.
    unsafe { StableValue::from_raw_parts(v.tag, v.aux, v.payload) }
}

/// Takes an owned ABI value (an output): its object is released, on success and on error.
///
/// # Safety
/// `v` is an owned value per the ABI, whose objects are live and handed over.
pub(crate) unsafe fn take(v: Value) -> Result<StableValue> {
    match Tag::from_u32(v.tag) {
        Some(Tag::Tensor) => {
            // SAFETY: an owned header, handed over.
            Ok(StableValue::tensor(unsafe {
                tensor::take(bits_ptr::<TensorHeader>(v.payload))
            }?))
        }
        Some(Tag::Str) => {
            let p = bits_ptr::<AbiString>(v.payload);
            // SAFETY: a live, owned string; released once after reading.
            let text = unsafe { read_string(p) };
            // SAFETY: as above.
            unsafe { release_abi_string(p) };
            text.map(StableValue::str)
        }
        Some(Tag::List) => {
            let p = bits_ptr::<AbiList>(v.payload);
            // SAFETY: a live, owned list; released once after reading.
            let list = unsafe { read_list(p) };
            // SAFETY: as above.
            unsafe { release_abi_list(p) };
            list.map(StableValue::list)
        }
        t if is_plain(t) => Ok(plain(&v)),
        _ => Err(Error::InvalidArgument(format!(
            "plugin ABI: a value with tag {}, which v1 does not carry",
            v.tag
        ))),
    }
}

/// Takes an owned string (a host function's result), releasing it.
///
/// # Safety
/// `p` is null or a live owned string, handed over.
pub(crate) unsafe fn take_string(p: *mut AbiString) -> Result<String> {
    // SAFETY: per the contract; read, then released once.
    let text = unsafe { read_string(p) };
    // SAFETY: as above.
    unsafe { release_abi_string(p) };
    text
}

/// Reads a borrowed ABI value (an input) as a value this image owns.
///
/// # Safety
/// `v` is a value per the ABI whose objects are live for the call.
pub(crate) unsafe fn borrow(v: &Value) -> Result<StableValue> {
    // SAFETY: forwarded; `tensor::borrow` takes a live header.
    unsafe { borrow_with(v, |h| tensor::borrow(h).map(StableValue::tensor)) }
}

/// [`borrow`] for a kernel's input, valid for its call: another image's tensor is the header
/// itself, borrowed in place (see `tensor::other_image`), with nothing wrapped or retained.
///
/// # Safety
/// As [`borrow`], with `v`'s objects live until the value is dropped.
pub(crate) unsafe fn borrow_in(v: &Value) -> Result<StableValue> {
    // SAFETY: forwarded; the header is live for the call.
    unsafe { borrow_with(v, |h| tensor::lend_in(h)) }
}

/// # Safety
/// As [`borrow`]; `tensor` is called with a live header, or null.
unsafe fn borrow_with(
    v: &Value,
    tensor: impl FnOnce(*mut TensorHeader) -> Result<StableValue>,
) -> Result<StableValue> {
    match Tag::from_u32(v.tag) {
        Some(Tag::Tensor) => tensor(bits_ptr::<TensorHeader>(v.payload)),
        // SAFETY: a live string, per the contract.
        Some(Tag::Str) => {
            unsafe { read_string(bits_ptr::<AbiString>(v.payload)) }.map(StableValue::str)
        }
        // SAFETY: a live list, per the contract.
        Some(Tag::List) => {
            unsafe { read_list(bits_ptr::<AbiList>(v.payload)) }.map(StableValue::list)
        }
        t if is_plain(t) => Ok(plain(v)),
        _ => Err(Error::InvalidArgument(format!(
            "plugin ABI: a value with tag {}, which v1 does not carry",
            v.tag
        ))),
    }
}

/// Releases an owned ABI value without reading it (cleanup on an error path).
///
/// # Safety
/// As [`take`].
pub(crate) unsafe fn discard(v: Value) {
    // SAFETY: forwarded; each kind is released by its maker's function.
    unsafe {
        match Tag::from_u32(v.tag) {
            Some(Tag::Tensor) => tensor::discard(bits_ptr(v.payload)),
            Some(Tag::Str) => release_abi_string(bits_ptr(v.payload)),
            Some(Tag::List) => release_abi_list(bits_ptr(v.payload)),
            _ => {}
        }
    }
}

/// # Safety
/// `p` is null or a live owned string.
unsafe fn release_abi_string(p: *mut AbiString) {
    // SAFETY: per the contract; its maker's release, once.
    unsafe {
        if let Some(release) = p.as_ref().and_then(|s| s.release) {
            release(p);
        }
    }
}

/// # Safety
/// `p` is null or a live owned list.
unsafe fn release_abi_list(p: *mut AbiList) {
    // SAFETY: per the contract; its maker's release, once.
    unsafe {
        if let Some(release) = p.as_ref().and_then(|l| l.release) {
            release(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::tests::balance;
    use crate::{DType, Device, Scalar, Tensor};

    #[test]
    fn lent_values_read_back_and_owned_ones_release_once() {
        // Boxes and this thread's tensors, so tests running in parallel cannot move the count.
        let balance = balance();
        let t = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
        let inputs = [
            StableValue::tensor(t.clone()),
            StableValue::str("hé"),
            StableValue::list(List::Bool(vec![true, false])),
            StableValue::int(-7),
            StableValue::float(0.5),
            StableValue::dtype(DType::F16),
            StableValue::device(Device::Cuda(3)),
            StableValue::scalar(Scalar::Float(2.5)),
            StableValue::none(),
        ];
        let back = with_lent(&inputs, 2, |values| {
            assert_eq!(values.len(), 11);
            assert_eq!(values[10], Value::default());
            values[..9]
                .iter()
                // SAFETY: lent for this closure.
                .map(|v| unsafe { borrow(v) }.unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap();
        assert!(back[0].as_tensor().unwrap().ptr_eq(&t));
        assert_eq!(back[1].as_str(), Some("hé"));
        assert_eq!(format!("{:?}", back[2]), format!("{:?}", inputs[2]));
        for i in 3..9 {
            assert_eq!(format!("{:?}", back[i]), format!("{:?}", inputs[i]));
        }
        drop(back);

        let given = [
            give(StableValue::str("out")).unwrap(),
            give(StableValue::list(List::Int(vec![4, 5]))).unwrap(),
            give(StableValue::tensor(t.clone())).unwrap(),
            give(StableValue::int(9)).unwrap(),
        ];
        // SAFETY: owned values this image made, taken once each.
        let taken: Vec<StableValue> = given
            .into_iter()
            .map(|v| unsafe { take(v) }.unwrap())
            .collect();
        assert_eq!(taken[0].as_str(), Some("out"));
        assert_eq!(format!("{:?}", taken[1]), "List(Some(Int([4, 5])))");
        assert!(taken[2].as_tensor().unwrap().ptr_eq(&t));
        assert_eq!(taken[3].as_int(), Some(9));
        drop(taken);
        // SAFETY: an owned value, discarded once.
        unsafe { discard(give(StableValue::str("dropped")).unwrap()) };
        drop(inputs);
        drop(t);
        balance.assert_balanced();
    }

    #[test]
    fn the_plain_mask_is_is_plain() {
        for tag in 0..40 {
            assert_eq!(
                is_plain_number(tag),
                is_plain(Tag::from_u32(tag)),
                "tag {tag}"
            );
        }
        assert!(is_plain_number(Tag::Int as u32) && !is_plain_number(Tag::Tensor as u32));
    }

    #[test]
    fn what_v1_does_not_carry_is_refused() {
        let inputs = [StableValue::list(List::Str(vec!["a".into()]))];
        let e = with_lent(&inputs, 0, |_| ()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "plugin ABI v1 carries None, bool, int, float, str, Tensor, ScalarType, Device, \
             Scalar and int/float/bool lists, not str[]"
        );
        let bad = AbiList {
            elem_tag: Tag::Bool as u32,
            reserved: 0,
            data: [2u8].as_ptr().cast(),
            len: 1,
            release: None,
            ctx: std::ptr::null_mut(),
        };
        let v = Value {
            tag: Tag::List as u32,
            aux: 0,
            payload: ptr_bits(std::ptr::addr_of!(bad).cast_mut()),
        };
        // SAFETY: `bad` is live for the call.
        let e = unsafe { borrow(&v) }.unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument: plugin ABI: a bool list holds a byte other than 0 or 1"
        );
        let schema =
            opbox_codegen::schema::parse("f(Tensor? x, int[] y, Tensor[] z) -> ()").unwrap();
        let carried: Vec<bool> = schema.arguments.iter().map(|a| carried(a.ty)).collect();
        assert_eq!(carried, [true, true, false]);
    }
}
