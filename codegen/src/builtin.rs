//! External builtins (Warp's `add_builtin`): a C++ device function, defined in a preamble or a
//! header, declared in Rust by `#[builtin(native = "my_addon::scale")]` on a fn signature.
//!
//! A builtin's identity is its Rust name plus its *input contract*: each parameter's name and
//! type code, in order. Two declarations with the same name and inputs must agree on the result
//! type and the native target, or the registry refuses the second; an identical one is accepted
//! once more (idempotent). Different inputs under one name are overloads.

use crate::native::{split_native_name, FieldType, NativeFn, NativeNameError, NativeScalar};

#[derive(Clone, Copy, Debug)]
pub struct BuiltinParam {
    pub name: &'static str,
    pub ty: FieldType,
}

/// What `#[builtin]` emits as static data.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinDecl {
    /// The Rust fn's name: what kernels call.
    pub name: &'static str,
    /// The C++ function, as written: `my_addon::scale`, `::scale`.
    pub native_name: &'static str,
    pub params: &'static [BuiltinParam],
    /// `None` for a function returning nothing (`void`).
    pub ret: Option<FieldType>,
}

impl BuiltinDecl {
    /// The native name split into namespace and function (a leading `::` is kept).
    pub fn native_fn(&self) -> Result<NativeFn<'static>, NativeNameError> {
        split_native_name(self.native_name)
    }

    /// `(name, type code)` per parameter, in order: what identifies an overload.
    pub fn input_contract(&self) -> Vec<(&'static str, String)> {
        self.params
            .iter()
            .map(|p| (p.name, p.ty.type_code()))
            .collect()
    }

    /// The result's type code, or `void`.
    pub fn result_code(&self) -> String {
        self.ret
            .as_ref()
            .map_or_else(|| "void".to_string(), FieldType::type_code)
    }

    /// `name(c: my_addon::Color, s: f32) -> my_addon::Color` with Rust types, for messages.
    pub fn rust_signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty.rust_name()))
            .collect();
        let ret = self
            .ret
            .as_ref()
            .map(|t| format!(" -> {}", t.rust_name()))
            .unwrap_or_default();
        format!("{}({}){ret}", self.name, params.join(", "))
    }

    /// The canonical input list, as the conflict message shows it: `(c: nt…, s: f4)`.
    pub fn inputs_text(&self) -> String {
        let parts: Vec<String> = self
            .input_contract()
            .into_iter()
            .map(|(n, c)| format!("{n}: {c}"))
            .collect();
        format!("({})", parts.join(", "))
    }

    /// The C++ wrapper generated code calls: `opbox_builtin_<name>`, a `__device__` function
    /// forwarding to the native one. It goes after the native function's definition (in a
    /// preamble or header); overloads become C++ overloads. Array parameters are taken by const
    /// reference; an array result is an `#error` (C++ cannot return one).
    pub fn cpp_wrapper(&self) -> String {
        let ret = match &self.ret {
            None => "void".to_string(),
            Some(FieldType::Array(..)) => return self.array_result_error(),
            Some(t) => t.c_type(),
        };
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                if let Some(h) = dsl_half(&p.ty) {
                    return format!("{} {}", h.dsl, p.name);
                }
                let c = p.ty.c_type();
                match c.find('[') {
                    Some(i) => format!("const {} (&{}){}", &c[..i], p.name, &c[i..]),
                    None => format!("{c} {}", p.name),
                }
            })
            .collect();
        let args: Vec<String> = self
            .params
            .iter()
            .map(|p| match dsl_half(&p.ty) {
                Some(h) => format!("{}({}.bits)", h.from_bits, p.name),
                None => p.name.to_string(),
            })
            .collect();
        let call = format!("{}({})", self.native_name, args.join(", "));
        let ret_half = self.ret.as_ref().and_then(dsl_half);
        let ret = match ret_half {
            Some(h) => h.dsl.to_string(),
            None => ret,
        };
        let body = match (&self.ret, ret_half) {
            (None, _) => format!("{call};"),
            (Some(_), Some(h)) => format!("return {}{{{}({call})}};", h.dsl, h.to_bits),
            (Some(_), None) => format!("return {call};"),
        };
        format!(
            "__device__ inline {ret} opbox_builtin_{}({}) {{ {body} }}\n",
            self.name,
            params.join(", ")
        )
    }

    fn array_result_error(&self) -> String {
        let name = self.name;
        format!("#error \"opbox: builtin '{name}' returns an array, which C++ cannot\"\n")
    }

    /// How a registration of `other` relates to this one.
    pub fn compare(&self, other: &BuiltinDecl) -> Overload {
        if self.name != other.name || self.input_contract() != other.input_contract() {
            Overload::Distinct
        } else if self.result_code() == other.result_code()
            && self.native_fn().ok() == other.native_fn().ok()
        {
            Overload::Same
        } else {
            Overload::Conflict
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overload {
    /// Another name or other inputs: both may exist.
    Distinct,
    /// The same contract: registering again is a no-op.
    Same,
    /// The same inputs with another result type or native target.
    Conflict,
}

/// A half type as DSL code holds it (`opbox_dsl::f16`, bits only, so the prelude needs no
/// header) against the CUDA type the native function takes: the wrapper converts by bits, with
/// the intrinsics of the header that function's own declaration needs anyway.
#[derive(Clone, Copy)]
struct DslHalf {
    dsl: &'static str,
    from_bits: &'static str,
    to_bits: &'static str,
}

fn dsl_half(t: &FieldType) -> Option<DslHalf> {
    match t {
        FieldType::Scalar(NativeScalar::F16) => Some(DslHalf {
            dsl: "opbox_dsl::f16",
            from_bits: "__ushort_as_half",
            to_bits: "__half_as_ushort",
        }),
        FieldType::Scalar(NativeScalar::BF16) => Some(DslHalf {
            dsl: "opbox_dsl::bf16",
            from_bits: "__ushort_as_bfloat16",
            to_bits: "__bfloat16_as_ushort",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::NativeScalar;

    const F32: FieldType = FieldType::Scalar(NativeScalar::F32);

    fn scale() -> BuiltinDecl {
        BuiltinDecl {
            name: "scale",
            native_name: "my_addon::scale",
            params: &[
                BuiltinParam { name: "x", ty: F32 },
                BuiltinParam { name: "s", ty: F32 },
            ],
            ret: Some(F32),
        }
    }

    #[test]
    fn the_wrapper_forwards_to_the_native_function() {
        assert_eq!(
            scale().cpp_wrapper(),
            "__device__ inline float opbox_builtin_scale(float x, float s) { return my_addon::scale(x, s); }\n"
        );
        let touch = BuiltinDecl {
            name: "touch",
            native_name: "::ns::touch",
            params: &[BuiltinParam {
                name: "v",
                ty: FieldType::Array(&F32, 3),
            }],
            ret: None,
        };
        assert_eq!(
            touch.cpp_wrapper(),
            "__device__ inline void opbox_builtin_touch(const float (&v)[3]) { ::ns::touch(v); }\n"
        );
    }

    #[test]
    fn identical_is_same_and_the_native_name_splits() {
        assert_eq!(scale().compare(&scale()), Overload::Same);
        let f = scale().native_fn().unwrap();
        assert_eq!((f.namespace, f.function), ("my_addon::", "scale"));
        assert_eq!(scale().rust_signature(), "scale(x: f32, s: f32) -> f32");
        assert_eq!(scale().inputs_text(), "(x: f4, s: f4)");
    }

    #[test]
    fn other_result_or_target_with_the_same_inputs_conflicts() {
        let other_ret = BuiltinDecl {
            ret: Some(FieldType::Scalar(NativeScalar::F64)),
            ..scale()
        };
        let void = BuiltinDecl {
            ret: None,
            ..scale()
        };
        let other_ns = BuiltinDecl {
            native_name: "other::scale",
            ..scale()
        };
        let other_fn = BuiltinDecl {
            native_name: "my_addon::scale2",
            ..scale()
        };
        let leading = BuiltinDecl {
            native_name: "::my_addon::scale",
            ..scale()
        };
        for d in [other_ret, void, other_ns, other_fn, leading] {
            assert_eq!(scale().compare(&d), Overload::Conflict, "{d:?}");
        }
        assert_eq!(void.result_code(), "void");
    }

    #[test]
    fn other_inputs_or_names_are_overloads() {
        let renamed_param = BuiltinDecl {
            params: &[
                BuiltinParam { name: "v", ty: F32 },
                BuiltinParam { name: "s", ty: F32 },
            ],
            ..scale()
        };
        let fewer = BuiltinDecl {
            params: &[BuiltinParam { name: "x", ty: F32 }],
            ..scale()
        };
        let other_name = BuiltinDecl {
            name: "scale2",
            ret: None,
            ..scale()
        };
        for d in [renamed_param, fewer, other_name] {
            assert_eq!(scale().compare(&d), Overload::Distinct, "{d:?}");
        }
    }
}
