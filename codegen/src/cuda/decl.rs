//! The kernel-declaration model: what `#[extern_kernel]` knows about one body-less Rust fn and its
//! CUDA C++ source, in a form the macro can emit as `static` data and the runtime can compile from.
//!
//! Every string and list is a `Cow<'static, _>`: the macro builds them borrowed (string literals,
//! `include_str!`), tests and run-time users build them owned.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::build_options::BuildOptions;
use crate::native::NativeSchema;
use crate::types::{ElemType, ScalarType};

/// How a parameter crosses to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `In<[T]>`: read-only device buffer, `const T*`.
    In(ElemType),
    /// `Out<[T]>`: written device buffer, `T*`.
    Out(ElemType),
    /// `InOut<[T]>`: read and written device buffer, `T*`.
    InOut(ElemType),
    /// A scalar passed by value.
    Scalar(ScalarType),
    /// A `#[constexpr]` scalar: fixed per specialization, a template argument or a define, never
    /// a launch argument.
    Constexpr(ScalarType),
    /// A struct passed by value: a `#[derive(NativeType)]` type (its C++ twin is the user's) or a
    /// `#[derive(KernelArg)]` struct (opbox emits its C++ twin). Its layout is checked with the
    /// native types' `static_assert`s in every translation unit that takes it.
    Native(NativeParam),
    /// A `#[constexpr]` `#[derive(ConstexprEnum)]` enum: each variant names a C++ type, which
    /// becomes a template argument (or the text of a define); never a launch argument.
    ConstexprEnum(EnumParam),
    /// `In<[Color]>` of a `#[derive(NativeType)]` element: `const ns::Color*`; the tensor holds
    /// the elements' raw bytes (`Tensor::from_native_vec`). The element's layout is checked with
    /// the native types' `static_assert`s, as for a by-value param.
    NativeIn(NativeParam),
    /// `Out<[Pixel]>` of a native element: `ns::Pixel*`.
    NativeOut(NativeParam),
    /// `InOut<[Pixel]>` of a native element: `ns::Pixel*`.
    NativeInOut(NativeParam),
}

/// A by-value struct parameter: its layout schema, and who defines it in C++.
#[derive(Clone, Copy, Debug)]
pub struct NativeParam {
    pub schema: &'static NativeSchema,
    /// `true` for a `#[derive(KernelArg)]` struct: the translation unit defines
    /// `struct <native_name> { ... };` (fields in order) before the user's sources.
    pub generated: bool,
}

impl PartialEq for NativeParam {
    fn eq(&self, other: &NativeParam) -> bool {
        self.generated == other.generated
            && self.schema.native_name == other.schema.native_name
            && self.schema.same_contract(other.schema)
    }
}

impl Eq for NativeParam {}

impl std::hash::Hash for NativeParam {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.schema.native_name.hash(state);
        self.generated.hash(state);
    }
}

/// A `#[constexpr]` enum parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EnumParam {
    /// The enum's Rust name (`Epilogue`).
    pub rust_name: &'static str,
    /// Every variant's C++ type, in declaration order (for messages and tools).
    pub variants: &'static [&'static str],
}

impl ParamKind {
    /// Whether the value is pushed as a launch argument.
    pub const fn in_launch_abi(self) -> bool {
        !self.is_constexpr()
    }

    /// Whether the param is fixed per specialization (`#[constexpr]`).
    pub const fn is_constexpr(self) -> bool {
        matches!(self, ParamKind::Constexpr(_) | ParamKind::ConstexprEnum(_))
    }

    /// The Rust type as written in the declaration.
    pub fn rust_type(self) -> String {
        match self {
            ParamKind::In(t) => format!("In<[{t}]>"),
            ParamKind::Out(t) => format!("Out<[{t}]>"),
            ParamKind::InOut(t) => format!("InOut<[{t}]>"),
            ParamKind::Scalar(t) | ParamKind::Constexpr(t) => t.rust_name().to_string(),
            ParamKind::Native(n) => short_rust_name(n.schema.rust_name).to_string(),
            ParamKind::ConstexprEnum(e) => e.rust_name.to_string(),
            ParamKind::NativeIn(n) => format!("In<[{}]>", short_rust_name(n.schema.rust_name)),
            ParamKind::NativeOut(n) => format!("Out<[{}]>", short_rust_name(n.schema.rust_name)),
            ParamKind::NativeInOut(n) => {
                format!("InOut<[{}]>", short_rust_name(n.schema.rust_name))
            }
        }
    }

    /// The C++ parameter type of the entry, or `None` for a constexpr (not a parameter).
    pub fn c_type(self) -> Option<String> {
        match self {
            ParamKind::In(t) => Some(format!("const {}*", t.c_name())),
            ParamKind::Out(t) | ParamKind::InOut(t) => Some(format!("{}*", t.c_name())),
            ParamKind::Scalar(t) => Some(t.c_name().to_string()),
            ParamKind::Native(n) => Some(n.schema.native_name.to_string()),
            ParamKind::NativeIn(n) => Some(format!("const {}*", n.schema.native_name)),
            ParamKind::NativeOut(n) | ParamKind::NativeInOut(n) => {
                Some(format!("{}*", n.schema.native_name))
            }
            ParamKind::Constexpr(_) | ParamKind::ConstexprEnum(_) => None,
        }
    }

    /// The C++ kind of a template parameter for this constexpr (`int`, `class`).
    pub fn template_param_kind(self) -> String {
        match self {
            ParamKind::ConstexprEnum(_) => "class".to_string(),
            ParamKind::Constexpr(t) | ParamKind::Scalar(t) => t.c_name().to_string(),
            other => other.elem().map_or("?", ElemType::c_name).to_string(),
        }
    }

    fn elem(self) -> Option<ElemType> {
        match self {
            ParamKind::In(t) | ParamKind::Out(t) | ParamKind::InOut(t) => Some(t),
            ParamKind::Scalar(t) | ParamKind::Constexpr(t) => t.elem(),
            ParamKind::Native(_)
            | ParamKind::ConstexprEnum(_)
            | ParamKind::NativeIn(_)
            | ParamKind::NativeOut(_)
            | ParamKind::NativeInOut(_) => None,
        }
    }

    /// A device buffer (`In`/`Out`/`InOut` of any element).
    pub const fn is_slice(self) -> bool {
        matches!(
            self,
            ParamKind::In(_)
                | ParamKind::Out(_)
                | ParamKind::InOut(_)
                | ParamKind::NativeIn(_)
                | ParamKind::NativeOut(_)
                | ParamKind::NativeInOut(_)
        )
    }

    /// The native type this param references: by value or as a slice element.
    pub const fn native(self) -> Option<NativeParam> {
        match self {
            ParamKind::Native(n)
            | ParamKind::NativeIn(n)
            | ParamKind::NativeOut(n)
            | ParamKind::NativeInOut(n) => Some(n),
            _ => None,
        }
    }

    /// The element schema of a native slice param (`In<[Color]>`, `Out<[Pixel]>`, ...).
    pub const fn native_slice(self) -> Option<NativeParam> {
        match self {
            ParamKind::NativeIn(n) | ParamKind::NativeOut(n) | ParamKind::NativeInOut(n) => Some(n),
            _ => None,
        }
    }
}

/// The C++ type of a slice's element count under [`EntryAbi::ParamsAndLens`]: DSL buffers hold
/// at most `u32::MAX` elements, which the launch checks, so `len()` is a `u32` on both sides.
pub const LEN_C_TYPE: &str = "unsigned int";

/// The count's parameter name is the slice's with this suffix: `x__len`.
pub const LEN_SUFFIX: &str = "__len";

/// `Color` from `my_crate::color::Color`.
fn short_rust_name(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: Cow<'static, str>,
    pub kind: ParamKind,
    /// `Option<In<[T]>>` (and `Out`/`InOut`): `None` passes `nullptr`, as kernels that take
    /// "no strides array" expect.
    pub nullable: bool,
}

impl Param {
    pub const fn new(name: &'static str, kind: ParamKind) -> Param {
        Param::with_nullable(name, kind, false)
    }

    pub const fn with_nullable(name: &'static str, kind: ParamKind, nullable: bool) -> Param {
        Param {
            name: Cow::Borrowed(name),
            kind,
            nullable,
        }
    }

    /// The Rust type as written in the declaration: `Option<In<[u64]>>`.
    pub fn rust_type(&self) -> String {
        if self.nullable {
            format!("Option<{}>", self.kind.rust_type())
        } else {
            self.kind.rust_type()
        }
    }
}

/// How `#[constexpr]` values reach the C++ source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ConstexprStyle {
    /// `#define NAME value` before the user source; the entry is a plain function.
    #[default]
    Defines,
    /// The entry is a template; the constexpr params, in declaration order, are its arguments:
    /// `entry<v0, v1>`.
    TemplateArgs,
}

/// One `#include` directive of a source file that the scanner resolved to another file of the
/// closure: the emitter replaces that line by the file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IncludeEdge {
    /// 1-based line of the directive in the including file.
    pub line: u32,
    /// Index of the included file in [`KernelDecl::sources`].
    pub file: u32,
}

/// One file of a kernel's include closure.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceFile {
    /// Path relative to the entry file's dir (or to the include dir it was found in), with `/`
    /// separators. It shows in compiler logs and feeds the cache key; absolute paths never do.
    pub name: Cow<'static, str>,
    pub content: Cow<'static, str>,
    /// Resolved includes, in line order.
    pub includes: Cow<'static, [IncludeEdge]>,
}

/// Everything the runtime needs to compile, check and launch one extern kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelDecl {
    /// The Rust fn's name (`axpby_f32`): the identity in messages and caches.
    pub rust_name: Cow<'static, str>,
    /// The C++ entry's name (`axpby`).
    pub entry: Cow<'static, str>,
    pub params: Cow<'static, [Param]>,
    pub constexpr_style: ConstexprStyle,
    /// The include closure; `sources[0]` is the entry file.
    pub sources: Cow<'static, [SourceFile]>,
    /// Extra NVRTC options from the declaration (`-DFOO=1`, `--use_fast_math`).
    pub options: Cow<'static, [Cow<'static, str>]>,
    /// Text placed after opbox's prelude and before the user source.
    pub preamble: Cow<'static, str>,
    /// Where the Rust declaration is, for messages: `src/lib.rs:12`.
    pub declared_at: Cow<'static, str>,
    /// The group's build options (`#[extern_kernel(..., build = path::to::OPTIONS)]`), resolved
    /// by the runtime when the kernel is compiled.
    pub build: Option<BuildRef>,
    /// How the entry receives its arguments.
    pub abi: EntryAbi,
}

/// How a kernel's entry receives its arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EntryAbi {
    /// As `__global__` parameters (the default).
    #[default]
    Params,
    /// `abi = "constant_params"`: an `extern "C" __global__` entry with no parameters reads its
    /// one struct parameter from `extern "C" __constant__ unsigned char params[sizeof(P)]`,
    /// which the translation unit declares before the user's sources and the host writes
    /// before each launch (Warp's `external_constant_params`, for external runtimes).
    ConstantParams,
    /// As [`EntryAbi::Params`], then one `unsigned int` element count per slice parameter, in
    /// declaration order: the entry of a `#[kernel]` (DSL) kernel, whose body reads `x.len()`
    /// and whose debug builds check every index. The launch appends the counts itself, so the
    /// declaration, `launch` and `launch_stack` take the same arguments as an extern kernel's.
    ParamsAndLens,
}

/// A `build = path::to::OPTIONS` reference: the static as written, and a function returning it.
/// Equal (and hashed) by the path as written.
#[derive(Clone, Copy)]
pub struct BuildRef {
    /// `path::to::OPTIONS`, for messages.
    pub path: &'static str,
    pub get: fn() -> &'static BuildOptions,
}

impl PartialEq for BuildRef {
    fn eq(&self, other: &BuildRef) -> bool {
        self.path == other.path
    }
}

impl Eq for BuildRef {}

impl std::hash::Hash for BuildRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.path.hash(state);
    }
}

impl std::fmt::Debug for BuildRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BuildRef({})", self.path)
    }
}

impl KernelDecl {
    /// The Rust declaration as the user wrote it, modulo whitespace:
    /// `fn axpby_f32(x: In<[f32]>, n: i64)`.
    pub fn rust_signature(&self) -> String {
        let mut s = format!("fn {}(", self.rust_name);
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            if p.kind.is_constexpr() {
                s.push_str("#[constexpr] ");
            }
            let _ = write!(s, "{}: {}", p.name, p.rust_type());
        }
        s.push(')');
        s
    }

    /// The entry's C++ parameter types, in order (none for `abi = "constant_params"`).
    pub fn c_param_types(&self) -> Vec<String> {
        if self.abi == EntryAbi::ConstantParams {
            return Vec::new();
        }
        let mut types: Vec<String> = self.params.iter().filter_map(|p| p.kind.c_type()).collect();
        types.extend(self.slice_lens().map(|_| LEN_C_TYPE.to_string()));
        types
    }

    /// A `#[kernel]` (DSL) kernel's: its C++ entry was written by opbox from the same Rust
    /// signature as this declaration, not by a user (the DSL's entry ABI is its mark).
    pub fn is_generated(&self) -> bool {
        self.abi == EntryAbi::ParamsAndLens
    }

    /// The slice params whose element counts follow the params under
    /// [`EntryAbi::ParamsAndLens`] (none under another ABI), in order.
    pub fn slice_lens(&self) -> impl Iterator<Item = &Param> {
        let lens = self.abi == EntryAbi::ParamsAndLens;
        self.params
            .iter()
            .filter(move |p| lens && p.kind.is_slice())
    }

    /// The C++ declaration the Rust one implies, with parameter names, for messages:
    /// `__global__ void axpby(const float* x, float* out, long long n)`; a template entry shows
    /// its template parameter list first.
    pub fn c_signature(&self) -> String {
        let mut s = String::new();
        if self.constexpr_style == ConstexprStyle::TemplateArgs {
            let tparams: Vec<String> = self
                .constexpr_params()
                .map(|p| format!("{} {}", p.kind.template_param_kind(), p.name))
                .collect();
            if !tparams.is_empty() {
                let _ = write!(s, "template <{}> ", tparams.join(", "));
            }
        }
        if self.abi == EntryAbi::ConstantParams {
            s.push_str("extern \"C\" ");
        }
        let _ = write!(s, "__global__ void {}(", self.entry);
        let params: Vec<String> = if self.abi == EntryAbi::ConstantParams {
            Vec::new()
        } else {
            self.params
                .iter()
                .filter_map(|p| p.kind.c_type().map(|t| format!("{t} {}", p.name)))
                .chain(
                    self.slice_lens()
                        .map(|p| format!("{LEN_C_TYPE} {}{LEN_SUFFIX}", p.name)),
                )
                .collect()
        };
        s.push_str(&params.join(", "));
        s.push(')');
        s
    }

    pub fn constexpr_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind.is_constexpr())
    }

    /// The native types the params reference (by value or as slice elements), in order.
    pub fn native_params(&self) -> impl Iterator<Item = NativeParam> + '_ {
        self.params.iter().filter_map(|p| p.kind.native())
    }

    /// Whether a parameter, by value, as an element or in a native struct's fields, is `t`.
    pub fn uses_elem(&self, t: ElemType) -> bool {
        self.params.iter().any(|p| p.kind.elem() == Some(t))
            || self
                .native_params()
                .any(|n| n.schema.uses_scalar(t.primitive()))
    }

    /// The entry file's relative name, or `<none>` for a declaration without sources.
    pub fn entry_file(&self) -> &str {
        self.sources
            .first()
            .map(|f| f.name.as_ref())
            .unwrap_or("<none>")
    }

    /// The `#include`s the scanner resolved to no file of the closure (its
    /// `Closure::unresolved`, read back from the embedded sources: every include line without an
    /// edge), which NVRTC resolves on its own include path: CUDA's headers and opbox's standard
    /// headers, or nothing.
    pub fn unresolved_includes(&self) -> Vec<super::scan::Unresolved> {
        let mut out = Vec::new();
        for file in self.sources.iter() {
            for d in super::directive::directives(&file.content) {
                let super::directive::DirectiveKind::Include { spelling, angled } = d.kind else {
                    continue;
                };
                if !file.includes.iter().any(|e| e.line == d.line) {
                    out.push(super::scan::Unresolved {
                        file: file.name.to_string(),
                        line: d.line,
                        spelling,
                        angled,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64)`.
    pub(crate) fn axpby_decl(source: &'static str) -> KernelDecl {
        const PARAMS: &[Param] = &[
            Param::new("x", ParamKind::In(ElemType::F32)),
            Param::new("y", ParamKind::In(ElemType::F32)),
            Param::new("out", ParamKind::Out(ElemType::F32)),
            Param::new("a", ParamKind::Scalar(ScalarType::F32)),
            Param::new("b", ParamKind::Scalar(ScalarType::F32)),
            Param::new("n", ParamKind::Scalar(ScalarType::I64)),
        ];
        KernelDecl {
            rust_name: Cow::Borrowed("axpby_f32"),
            entry: Cow::Borrowed("axpby"),
            params: Cow::Borrowed(PARAMS),
            constexpr_style: ConstexprStyle::Defines,
            sources: Cow::Owned(vec![SourceFile {
                name: Cow::Borrowed("axpby.cu"),
                content: Cow::Borrowed(source),
                includes: Cow::Borrowed(&[]),
            }]),
            options: Cow::Borrowed(&[]),
            preamble: Cow::Borrowed(""),
            declared_at: Cow::Borrowed("src/lib.rs:7"),
            build: None,
            abi: EntryAbi::Params,
        }
    }

    #[test]
    fn signatures_read_like_the_declarations() {
        let d = axpby_decl("");
        assert_eq!(
            d.rust_signature(),
            "fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64)"
        );
        assert_eq!(
            d.c_signature(),
            "__global__ void axpby(const float* x, const float* y, float* out, float a, float b, long long n)"
        );
    }

    #[test]
    fn constexpr_params_leave_the_launch_abi() {
        let mut d = axpby_decl("");
        d.params
            .to_mut()
            .push(Param::new("block", ParamKind::Constexpr(ScalarType::U32)));
        d.constexpr_style = ConstexprStyle::TemplateArgs;
        assert_eq!(d.c_param_types().len(), 6);
        assert!(d
            .rust_signature()
            .ends_with("n: i64, #[constexpr] block: u32)"));
        assert!(d
            .c_signature()
            .starts_with("template <unsigned int block> __global__ void axpby("));
    }
}
