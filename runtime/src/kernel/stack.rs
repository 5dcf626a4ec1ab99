//! Runtime-typed launches: an extern kernel called from a [`StableValue`] stack, as boxed ops,
//! plugins and a CLI do. The stack holds one value per declared parameter, `#[constexpr]` ones
//! included, in declaration order.
//!
//! Each value is checked against its parameter, and converted as CuTe DSL converts Python values:
//! - `int` → `i32`/`i64`/`u32`/`u64` with a range check (overflow is an error, never a wrap);
//!   `int` → `f32`/`f64` too (CuTe's implicit cast to a Numeric annotation);
//! - `float` → `f32`/`f64` (a finite value that overflows `f32` is an error);
//! - `bool` → `bool` only;
//! - a `Scalar` value converts by its kind;
//! - a list (of scalars, or nested lists) → a by-value struct parameter, field by field in
//!   declaration order, recursively: a nested struct or a fixed array is a nested list. CuTe's
//!   tuples and lists are lists here (a StableValue has no tuple);
//! - a `#[constexpr]` enum takes the variant's index (`int`) or its C++ type as a `str`, in full
//!   (`"my_ns::Relu"`) or by its last name (`"Relu"`).
//!
//! A mismatch reads like the typed ones: "kernel axpy expects argument #2 (y) to be f32 CUDA
//! tensor, but got f16 CPU tensor". `#N` counts every declared parameter from 0.

use std::mem::MaybeUninit;

use opbox_codegen::cuda::{ConstValue, EnumParam, KernelDecl, ParamKind, ScalarType};
use opbox_codegen::native::{FieldType, NativeScalar, NativeSchema};
use smallvec::SmallVec;

use super::arg::{LaunchArg, NativeBytes};
use super::config::LaunchConfig;
use super::handle::KernelHandle;
use super::launch::launch;
use super::prepare::{elem_matches, elem_name};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::tensor::{Device, Element};
use crate::value::{List, StableValue, Tag};

/// The launch arguments and constexpr values a stack lowers to.
pub type StackArgs<'s> = (SmallVec<[LaunchArg<'s>; 16]>, SmallVec<[ConstValue; 4]>);

/// Bytes of by-value struct params built from lists, one per struct param.
pub type StructBytes = SmallVec<[Vec<MaybeUninit<u8>>; 2]>;

/// Launches `handle`'s kernel with the values on `stack` (every declared param, in order).
pub fn launch_stack(
    handle: &'static KernelHandle,
    cfg: &LaunchConfig,
    stack: &[StableValue],
) -> Result<()> {
    let decl = handle.decl();
    let structs = struct_bytes(decl, stack)?;
    let (args, constexprs) = lower_stack(decl, stack, &structs)?;
    launch(handle, cfg, &args, &constexprs)
}

fn count_error(decl: &KernelDecl, got: usize) -> Error {
    // A kernel's parameters have no defaults.
    Error::ArgCount {
        op: format!("kernel {}", decl.rust_name),
        min: decl.params.len(),
        expected: decl.params.len(),
        got,
        schema: decl.rust_signature(),
        defaulted: Vec::new(),
    }
}

struct At<'d> {
    decl: &'d KernelDecl,
    index: usize,
}

impl At<'_> {
    fn bad(&self, expected: impl Into<String>, got: impl Into<String>) -> Error {
        Error::ArgType {
            op: format!("kernel {}", self.decl.rust_name),
            index: self.index,
            name: self.decl.params[self.index].name.to_string(),
            expected: expected.into(),
            got: got.into(),
        }
    }
}

/// First pass: builds the bytes of every by-value struct param from its list.
pub fn struct_bytes(decl: &KernelDecl, stack: &[StableValue]) -> Result<StructBytes> {
    if stack.len() != decl.params.len() {
        return Err(count_error(decl, stack.len()));
    }
    let mut out = StructBytes::new();
    for (index, (p, v)) in decl.params.iter().zip(stack).enumerate() {
        if let ParamKind::Native(n) = p.kind {
            let at = At { decl, index };
            let mut bytes = vec![0u8; n.schema.size];
            write_struct(&at, n.schema, v, &mut bytes)?;
            out.push(bytes.into_iter().map(MaybeUninit::new).collect());
        }
    }
    Ok(out)
}

/// Second pass: checks every value and lowers it, borrowing tensors from the stack and struct
/// bytes from `structs` (from [`struct_bytes`]).
pub fn lower_stack<'s>(
    decl: &KernelDecl,
    stack: &'s [StableValue],
    structs: &'s StructBytes,
) -> Result<StackArgs<'s>> {
    if stack.len() != decl.params.len() {
        return Err(count_error(decl, stack.len()));
    }
    let mut args = SmallVec::new();
    let mut constexprs = SmallVec::new();
    let mut next_struct = structs.iter();
    for (index, (p, v)) in decl.params.iter().zip(stack).enumerate() {
        let at = At { decl, index };
        match p.kind {
            ParamKind::In(_)
            | ParamKind::Out(_)
            | ParamKind::InOut(_)
            | ParamKind::NativeIn(_)
            | ParamKind::NativeOut(_)
            | ParamKind::NativeInOut(_) => {
                // A #[kernel] (DSL, the only ParamsAndLens entries) also runs on CPU tensors.
                let dsl = decl.abi == opbox_codegen::cuda::EntryAbi::ParamsAndLens;
                let devices = if dsl { "CPU or CUDA" } else { "CUDA" };
                let expected = || format!("{} {devices} tensor", elem_name(p.kind));
                if p.nullable && v.is_none() {
                    args.push(LaunchArg::Null);
                    continue;
                }
                let Some(x) = v.as_tensor() else {
                    return Err(at.bad(expected(), v.describe()));
                };
                let on_device =
                    matches!(x.device(), Device::Cuda(_)) || (dsl && x.device() == Device::Cpu);
                if !elem_matches(p.kind, x) || !on_device {
                    return Err(at.bad(expected(), LaunchArg::Tensor(x).describe()));
                }
                args.push(LaunchArg::Tensor(x));
            }
            ParamKind::Scalar(t) if t.can_be_constexpr() => {
                args.push(launch_scalar(convert(&at, t, v)?))
            }
            ParamKind::Scalar(t) => {
                let Some(s) = number(v) else {
                    return Err(at.bad(t.rust_name(), v.describe()));
                };
                let arg = LaunchArg::from_number(t, s)
                    .map_err(|e| at.bad(t.rust_name(), format!("{}: {e}", scalar_word(s))))?;
                args.push(arg);
            }
            ParamKind::Constexpr(t) => constexprs.push(convert(&at, t, v)?),
            ParamKind::ConstexprEnum(e) => constexprs.push(enum_value(&at, e, v)?),
            ParamKind::Native(n) => {
                let Some(bytes) = next_struct.next() else {
                    return Err(at.bad(
                        short(n.schema.rust_name),
                        "no struct bytes (call struct_bytes first)",
                    ));
                };
                args.push(LaunchArg::Native(NativeBytes::from_slice(n.schema, bytes)));
            }
        }
    }
    Ok((args, constexprs))
}

fn short(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

fn launch_scalar(v: ConstValue) -> LaunchArg<'static> {
    match v {
        ConstValue::I32(x) => LaunchArg::I32(x),
        ConstValue::I64(x) => LaunchArg::I64(x),
        ConstValue::U32(x) => LaunchArg::U32(x),
        ConstValue::U64(x) => LaunchArg::U64(x),
        ConstValue::F32(x) => LaunchArg::F32(x),
        ConstValue::F64(x) => LaunchArg::F64(x),
        ConstValue::Bool(x) => LaunchArg::Bool(x),
        // `convert` makes scalars only; an enum's C++ type is never a launch argument.
        ConstValue::Type { .. } => LaunchArg::Bool(false),
    }
}

/// A number from a value: int, float, bool, or a Scalar of one of those.
fn number(v: &StableValue) -> Option<Scalar> {
    match v.tag()? {
        Tag::Int => v.as_int().map(Scalar::Int),
        Tag::Float => v.as_float().map(Scalar::Float),
        Tag::Bool => v.as_bool().map(Scalar::Bool),
        Tag::Scalar => v.as_scalar(),
        _ => None,
    }
}

fn scalar_word(s: Scalar) -> String {
    match s {
        Scalar::Int(i) => format!("int {i}"),
        Scalar::Float(f) => format!("float {f:?}"),
        Scalar::Bool(b) => format!("bool {b}"),
    }
}

/// Converts one number to the declared scalar type, CuTe's way (see the module docs).
fn convert_number(at: &At<'_>, t: ScalarType, s: Scalar) -> Result<ConstValue> {
    let overflow = || {
        at.bad(
            t.rust_name(),
            format!("{}, which does not fit in {t}", scalar_word(s)),
        )
    };
    let wrong = || at.bad(t.rust_name(), scalar_word(s));
    Ok(match (t, s) {
        (ScalarType::I32, Scalar::Int(i)) => {
            ConstValue::I32(i32::try_from(i).map_err(|_| overflow())?)
        }
        (ScalarType::I64, Scalar::Int(i)) => ConstValue::I64(i),
        (ScalarType::U32, Scalar::Int(i)) => {
            ConstValue::U32(u32::try_from(i).map_err(|_| overflow())?)
        }
        (ScalarType::U64, Scalar::Int(i)) => {
            ConstValue::U64(u64::try_from(i).map_err(|_| overflow())?)
        }
        (ScalarType::F32, Scalar::Int(i)) => ConstValue::F32(i as f32),
        (ScalarType::F64, Scalar::Int(i)) => ConstValue::F64(i as f64),
        (ScalarType::F32, Scalar::Float(f)) => {
            let x = f as f32;
            if f.is_finite() && !x.is_finite() {
                return Err(overflow());
            }
            ConstValue::F32(x)
        }
        (ScalarType::F64, Scalar::Float(f)) => ConstValue::F64(f),
        (ScalarType::Bool, Scalar::Bool(b)) => ConstValue::Bool(b),
        _ => return Err(wrong()),
    })
}

fn convert(at: &At<'_>, t: ScalarType, v: &StableValue) -> Result<ConstValue> {
    match number(v) {
        Some(s) => convert_number(at, t, s),
        None => Err(at.bad(t.rust_name(), v.describe())),
    }
}

fn enum_value(at: &At<'_>, e: EnumParam, v: &StableValue) -> Result<ConstValue> {
    let names = e.variants.join(", ");
    let expected = || {
        format!(
            "{} (a variant index 0..{} or one of: {names})",
            e.rust_name,
            e.variants.len()
        )
    };
    let found = match (v.as_int(), v.as_str()) {
        (Some(i), _) => usize::try_from(i).ok().and_then(|i| e.variants.get(i)),
        (None, Some(s)) => e
            .variants
            .iter()
            .find(|c| **c == s || c.rsplit("::").next() == Some(s)),
        _ => None,
    };
    match found {
        Some(cpp) => Ok(ConstValue::Type {
            enum_name: e.rust_name,
            cpp,
        }),
        None => {
            let got = match (v.as_int(), v.as_str()) {
                (Some(i), _) => format!("int {i}"),
                (None, Some(s)) => format!("str '{s}'"),
                _ => v.describe(),
            };
            Err(at.bad(expected(), got))
        }
    }
}

/// Item `i` of a list: borrowed from a boxed list, made (no allocation) for a typed one.
enum Item<'a> {
    Made(StableValue),
    Borrowed(&'a StableValue),
}

impl std::ops::Deref for Item<'_> {
    type Target = StableValue;
    fn deref(&self) -> &StableValue {
        match self {
            Item::Made(v) => v,
            Item::Borrowed(v) => v,
        }
    }
}

fn list_item(list: &List, i: usize) -> Item<'_> {
    match list {
        List::Int(v) => Item::Made(
            v.get(i)
                .map_or_else(StableValue::none, |&x| StableValue::int(x)),
        ),
        List::Float(v) => Item::Made(
            v.get(i)
                .map_or_else(StableValue::none, |&x| StableValue::float(x)),
        ),
        List::Bool(v) => Item::Made(
            v.get(i)
                .map_or_else(StableValue::none, |&x| StableValue::bool(x)),
        ),
        List::Values(v) => v
            .get(i)
            .map_or(Item::Made(StableValue::none()), Item::Borrowed),
        // Strings and tensors are not numbers: the conversion names what it got.
        List::Str(_) => Item::Made(StableValue::str("")),
        List::Tensor(_) => Item::Made(StableValue::none()),
    }
}

fn field_list_text(schema: &NativeSchema) -> String {
    schema
        .fields
        .iter()
        .map(|f| format!("{}: {}", f.name, f.ty.rust_name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes a struct from a list into `out` (its `size` bytes).
fn write_struct(at: &At<'_>, schema: &NativeSchema, v: &StableValue, out: &mut [u8]) -> Result<()> {
    let expected = || {
        format!(
            "{} (a list of {} values: {})",
            short(schema.rust_name),
            schema.fields.len(),
            field_list_text(schema)
        )
    };
    if schema.fields.is_empty() {
        return Err(at.bad(
            expected(),
            format!(
                "{}; an opaque struct cannot be built from a list",
                v.describe()
            ),
        ));
    }
    let Some(list) = v.as_list() else {
        return Err(at.bad(expected(), v.describe()));
    };
    if list.len() != schema.fields.len() {
        return Err(at.bad(expected(), format!("a list of {}", list.len())));
    }
    for (i, f) in schema.fields.iter().enumerate() {
        let item = list_item(list, i);
        let dst = out
            .get_mut(f.offset..f.offset + f.ty.size())
            .ok_or_else(|| at.bad(expected(), "a schema whose field lies outside the struct"))?;
        write_field(at, &f.ty, &item, dst).map_err(|e| in_field(e, f.name))?;
    }
    Ok(())
}

/// Names the field in a nested error: "... to be f32 (field alpha), but got ...".
fn in_field(e: Error, field: &str) -> Error {
    match e {
        Error::ArgType {
            op,
            index,
            name,
            expected,
            got,
        } => Error::ArgType {
            op,
            index,
            // Errors unwind from the innermost field out, so each outer field goes right after
            // the parameter's name: `t` + `flag`, then + `inner` → `t.inner.flag`.
            name: match name.split_once('.') {
                Some((param, inner)) => format!("{param}.{field}.{inner}"),
                None => format!("{name}.{field}"),
            },
            expected,
            got,
        },
        other => other,
    }
}

fn write_field(at: &At<'_>, ty: &FieldType, v: &StableValue, dst: &mut [u8]) -> Result<()> {
    match ty {
        FieldType::Native(schema) => write_struct(at, schema, v, dst),
        FieldType::Array(elem, n) => {
            let expected = || format!("{} (a list of {n})", ty.rust_name());
            let Some(list) = v.as_list() else {
                return Err(at.bad(expected(), v.describe()));
            };
            if list.len() != *n {
                return Err(at.bad(expected(), format!("a list of {}", list.len())));
            }
            let size = elem.size();
            for i in 0..*n {
                write_field(
                    at,
                    elem,
                    &list_item(list, i),
                    &mut dst[i * size..(i + 1) * size],
                )?;
            }
            Ok(())
        }
        FieldType::Scalar(s) => {
            let Some(num) = number(v) else {
                return Err(at.bad(s.rust_name(), v.describe()));
            };
            write_scalar(at, *s, num, dst)
        }
    }
}

fn write_scalar(at: &At<'_>, s: NativeScalar, num: Scalar, dst: &mut [u8]) -> Result<()> {
    let overflow = || {
        at.bad(
            s.rust_name(),
            format!(
                "{}, which does not fit in {}",
                scalar_word(num),
                s.rust_name()
            ),
        )
    };
    let wrong = || at.bad(s.rust_name(), scalar_word(num));
    let mut buf = [0u8; 8];
    let mut put = |b: &[u8]| {
        buf[..b.len()].copy_from_slice(b);
        b.len()
    };
    macro_rules! int {
        ($t:ty) => {
            match num {
                Scalar::Int(i) => put(&<$t>::try_from(i).map_err(|_| overflow())?.to_ne_bytes()),
                _ => return Err(wrong()),
            }
        };
    }
    let float = |num: Scalar| -> Result<f64> {
        match num {
            Scalar::Int(i) => Ok(i as f64),
            Scalar::Float(f) => Ok(f),
            Scalar::Bool(_) => Err(wrong()),
        }
    };
    // The element type's own conversion: a finite value that would become infinite (or NaN,
    // for e4m3fn) is an overflow.
    macro_rules! float {
        ($t:ty) => {{
            let x =
                <$t as Element>::from_scalar(Scalar::Float(float(num)?)).map_err(|_| overflow())?;
            put(bytemuck::bytes_of(&x))
        }};
    }
    let len: usize = match s {
        NativeScalar::Bool => match num {
            Scalar::Bool(b) => put(&[u8::from(b)]),
            _ => return Err(wrong()),
        },
        NativeScalar::I8 => int!(i8),
        NativeScalar::I16 => int!(i16),
        NativeScalar::I32 => int!(i32),
        NativeScalar::I64 => int!(i64),
        NativeScalar::U8 => int!(u8),
        NativeScalar::U16 => int!(u16),
        NativeScalar::U32 => int!(u32),
        NativeScalar::U64 => int!(u64),
        NativeScalar::F32 => float!(f32),
        NativeScalar::F64 => float!(f64),
        NativeScalar::F16 => float!(half::f16),
        NativeScalar::BF16 => float!(half::bf16),
        NativeScalar::F8E4M3 => float!(float8::F8E4M3),
        NativeScalar::F8E5M2 => float!(float8::F8E5M2),
        NativeScalar::Usize => int!(usize),
        // `Scalar` holds no complex value, so a stack cannot give one.
        NativeScalar::Complex32 | NativeScalar::Complex64 => return Err(wrong()),
    };
    dst.copy_from_slice(&buf[..len]);
    Ok(())
}
