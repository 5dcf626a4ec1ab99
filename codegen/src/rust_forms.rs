//! Which Rust types a kernel takes and returns for each schema type: the one table.
//!
//! The table is a macro, [`rust_forms!`](macro@crate::rust_forms), so that each reader takes it in the
//! form it needs: the runtime's `typemap` turns every row into a `RustParam` or `ReturnValue`
//! impl naming the row's marker type, and this module turns it into [`base_forms`] and
//! [`Wrapper::forms`], from which `#[stable_library]` says, per schema argument, which of those
//! marker types fit. A row can therefore not be in one and missing from the other. The README's
//! type table is [`markdown_table`]'s output, and a test keeps the two equal.
//!
//! Three kinds of row: `base` rows own their Rust types and markers; `same` rows are schema types
//! that hold another's values at run time (`SymInt` is an `int`: opbox has no symbolic shapes),
//! so they take that type's forms; `none` rows parse but have no runtime type in opbox yet, and
//! `#[stable_impl]` refuses a kernel for them with the row's reason.

use crate::schema::BaseType;

/// Calls `$then! { base { .. } same { .. } none { .. } wrap { .. } }` with the table.
///
/// `base`: per schema base type, the Rust parameter and return types, each with the marker type
/// (in the runtime's `typemap::ty`) that stands for it, and whether the runtime stores a list of
/// it typed (then a kernel can borrow the list as a slice). `same`: a schema type and the `base`
/// row whose forms it takes. `none`: a schema type with no Rust form, and why. `wrap`: the Rust
/// forms of a list and an optional, where `T` is the element's form and the marker is
/// `ty::List<..>` / `ty::Optional<..>` of the element's marker.
#[macro_export]
macro_rules! rust_forms {
    ($then:ident) => {
        $then! {
            base {
                Tensor: param [&Tensor => TensorRef, Tensor => TensorVal], ret [Tensor => TensorVal], typed_list true;
                Int: param [i64 => Int], ret [i64 => Int], typed_list true;
                Float: param [f64 => Float], ret [f64 => Float], typed_list true;
                Bool: param [bool => Bool], ret [bool => Bool], typed_list true;
                Str: param [&str => Str, String => Str], ret [String => Str], typed_list true;
                ScalarType: param [DType => ScalarType], ret [DType => ScalarType], typed_list false;
                Device: param [Device => Device], ret [Device => Device], typed_list false;
                Scalar: param [Scalar => Scalar], ret [Scalar => Scalar], typed_list false;
                Layout: param [Layout => Layout], ret [Layout => Layout], typed_list false;
                MemoryFormat: param [MemoryFormat => MemoryFormat], ret [MemoryFormat => MemoryFormat], typed_list false;
                Generator: param [Generator => Generator], ret [Generator => Generator], typed_list false;
                DeviceIndex: param [i8 => DeviceIndex], ret [i8 => DeviceIndex], typed_list false;
                Stream: param [Stream => Stream], ret [Stream => Stream], typed_list false;
            }
            same {
                SymInt: Int;
                SymFloat: Float;
                SymBool: Bool;
                Dimname: Str;
            }
            none {
                Storage: "opbox has no untyped storage object to hand a kernel";
                QScheme: "opbox has no quantized tensors";
                DimVector: "it is torchgen's C++-side dimension vector: declare the argument `int[]` and take `&[i64]`";
                GraphModule: "opbox has no FX graph modules (higher-order ops)";
                Class: "opbox has no custom classes (TorchBind objects); pass the object's state as tensors and plain values instead";
            }
            wrap {
                List: param [&[T], Vec<T>], ret [Vec<T>];
                Optional: param [Option<T>], ret [Option<T>];
            }
        }
    };
}

/// One Rust form of a schema type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RustForm {
    /// The Rust type as `stringify!` gives it: `& Tensor`, `Vec < T >`.
    tokens: &'static str,
    /// The marker type in the runtime's `typemap::ty` (for a wrapper, generic over the element's).
    pub marker: &'static str,
}

impl RustForm {
    /// The Rust type as a kernel writes it: `&Tensor`, `Vec<T>` (a space stays only between two
    /// words, as in `&'a str`).
    pub fn spelling(&self) -> String {
        let chars: Vec<char> = self.tokens.chars().collect();
        (0..chars.len())
            .filter(|&i| !chars[i].is_whitespace() || between_words(&chars, i))
            .map(|i| chars[i])
            .collect()
    }

    /// Whether the kernel borrows the value (`&Tensor`, `&[T]`): an in-place argument
    /// (`Tensor(a!)`) takes only these, so that the caller's value is the one written.
    pub fn borrows(&self) -> bool {
        self.tokens.starts_with('&')
    }

    /// A wrapper's form with the element spelled out: `Vec<T>` of `i64` is `Vec<i64>`.
    pub fn wrap(&self, element: &str) -> String {
        let chars: Vec<char> = self.spelling().chars().collect();
        let mut out = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if c == 'T' && !word_at(&chars, i.checked_sub(1)) && !word_at(&chars, Some(i + 1)) {
                out.push_str(element);
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// Whether `chars[i]` stands between two word characters.
fn between_words(chars: &[char], i: usize) -> bool {
    word_at(chars, i.checked_sub(1)) && word_at(chars, Some(i + 1))
}

/// Whether there is a word character (part of an identifier) at `i`.
fn word_at(chars: &[char], i: Option<usize>) -> bool {
    i.and_then(|i| chars.get(i))
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// The Rust forms of one schema type, in the order messages list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forms {
    pub params: &'static [RustForm],
    pub returns: &'static [RustForm],
}

macro_rules! tables {
    (
        base { $($base:ident: param [$($p:ty => $pm:ident),+], ret [$($r:ty => $rm:ident),+], typed_list $typed:literal;)+ }
        same { $($same:ident: $target:ident;)+ }
        none { $($none:ident: $why:literal;)+ }
        wrap { $($w:ident: param [$($wp:ty),+], ret [$($wr:ty),+];)+ }
    ) => {
        /// The Rust forms of a base type (none for a type opbox cannot pass yet: see
        /// [`unsupported`]).
        pub const fn base_forms(base: BaseType) -> Forms {
            match base {
                $(BaseType::$base => Forms {
                    params: &[$(RustForm { tokens: stringify!($p), marker: stringify!($pm) }),+],
                    returns: &[$(RustForm { tokens: stringify!($r), marker: stringify!($rm) }),+],
                },)+
                $(BaseType::$same => base_forms(BaseType::$target),)+
                $(BaseType::$none => Forms { params: &[], returns: &[] },)+
            }
        }

        /// Whether the runtime stores a list of `base` typed, so that a kernel can borrow it as
        /// a slice (`&[i64]`); other lists are only taken as a `Vec`.
        pub const fn stored_typed(base: BaseType) -> bool {
            match base {
                $(BaseType::$base => $typed,)+
                $(BaseType::$same => stored_typed(BaseType::$target),)+
                $(BaseType::$none => false,)+
            }
        }

        /// Why a schema type has no Rust form in opbox, or `None` when it has some.
        pub const fn unsupported(base: BaseType) -> Option<&'static str> {
            match base {
                $(BaseType::$none => Some($why),)+
                _ => None,
            }
        }

        /// Every base row's markers, parameters then returns, in table order: a marker's
        /// [`form_code`] is its first place here.
        const BASE_MARKERS: &[&str] = &[$($(stringify!($pm),)+ $(stringify!($rm),)+)+];

        /// A schema type around another: `T[]`, `T?`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Wrapper {
            $($w,)+
        }

        /// How many wrappers there are: the form codes of base markers start past theirs.
        const WRAPPERS: u64 = [$(Wrapper::$w),+].len() as u64;

        impl Wrapper {
            /// The wrapper's Rust forms; `T` stands for the element's (see [`RustForm::wrap`]).
            pub const fn forms(self) -> Forms {
                match self {
                    $(Wrapper::$w => Forms {
                        params: &[$(RustForm { tokens: stringify!($wp), marker: stringify!($w) }),+],
                        returns: &[$(RustForm { tokens: stringify!($wr), marker: stringify!($w) }),+],
                    },)+
                }
            }
        }
    };
}

crate::rust_forms!(tables);

/// The base of a form code's digits (see [`form_code`]).
const CODE_RADIX: u64 = 64;
const _: () = assert!(1 + WRAPPERS + (BASE_MARKERS.len() as u64) < CODE_RADIX);

/// The form code of a Rust type with no schema type (`f32`): no schema argument lists it, so it
/// fits nothing, and no marker's code is 0.
pub const NO_SCHEMA_FORM: u64 = 0;

/// The code of a base marker (`"Int"`, `"TensorRef"`): a number that `#[stable_library]` lists
/// per argument among the forms that fit, and that the runtime's `RustParam::FORM` gives for
/// each Rust type, so that a kernel's signature is checked by comparing numbers at compile
/// time. A wrapper's form is [`wrapped_form_code`]; a Rust type with no schema type is
/// [`NO_SCHEMA_FORM`]. Panics (at compile time, in a const) for a name not in the table.
pub const fn form_code(marker: &str) -> u64 {
    let mut i = 0;
    while i < BASE_MARKERS.len() {
        if str_eq(BASE_MARKERS[i], marker) {
            return 1 + WRAPPERS + i as u64;
        }
        i += 1;
    }
    panic!("not a marker of the rust_forms table")
}

/// The code of `wrapper` around a form whose code is `element`: the element's digits shifted
/// up by one, and the wrapper's in the lowest (base markers' digits are past the wrappers', so
/// no two forms share a code up to ten levels of nesting, far past any schema's).
pub const fn wrapped_form_code(wrapper: Wrapper, element: u64) -> u64 {
    element.wrapping_mul(CODE_RADIX) + 1 + wrapper as u64
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What the README's type table says beside a row, where a row needs more than its forms.
fn note(base: BaseType) -> Option<String> {
    if let Some(why) = unsupported(base) {
        return Some(format!(
            "parses and round-trips; `#[stable_impl]` refuses a kernel taking it: {why}"
        ));
    }
    let concrete = base.concrete();
    if concrete != base {
        return Some(format!(
            "held as `{}` at run time: opbox has no symbolic shapes",
            concrete.schema_name()
        ));
    }
    Some(
        match base {
            BaseType::Str => {
                "a list (`str[]`) also as `&[&str]`: the kernel borrows the stack's strings \
                 through a slice the shim builds for the call (no allocation up to 8); \
                 `&[String]`, `Vec<&str>` and `Vec<String>` work too"
            }
            BaseType::Dimname => "a dimension name, as a string; `Dimname[]` takes `str[]`'s forms",
            BaseType::Layout => "`opbox::Layout`, boxed as PyTorch's `c10::Layout` code",
            BaseType::MemoryFormat => {
                "`opbox::MemoryFormat`, boxed as PyTorch's `c10::MemoryFormat` code"
            }
            BaseType::Generator => {
                "`opbox::Generator`: a shared Philox seed and offset; `philox(n)` reserves `n` \
                 counters and hands back a by-value `PhiloxState` for CPU or CUDA kernels"
            }
            BaseType::DeviceIndex => "a CUDA device index (-1: the current device)",
            BaseType::Stream => "`opbox::Stream`: device index and raw stream id, by value",
            BaseType::ScalarType => "`opbox::DType`",
            _ => return None,
        }
        .to_string(),
    )
}

fn spell(forms: &[RustForm]) -> String {
    if forms.is_empty() {
        return "—".to_string();
    }
    forms
        .iter()
        .map(|f| format!("`{}`", f.spelling()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema-type-to-Rust table as Markdown, one row per base type and wrapper: the README
/// holds exactly this text (a test checks it), so the documentation cannot drift from the
/// table rustc checks kernels against.
pub fn markdown_table() -> String {
    let mut out = String::from("| schema | parameter | return | notes |\n|---|---|---|---|\n");
    for base in BaseType::ALL {
        let forms = base_forms(base);
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            base.written(),
            spell(forms.params),
            spell(forms.returns),
            note(base).unwrap_or_default()
        ));
    }
    let list = Wrapper::List.forms();
    let optional = Wrapper::Optional.forms();
    let rows = [
        (
            "`Tensor(a!)`".to_string(),
            "`&Tensor`".to_string(),
            "`Tensor`".to_string(),
            "written in place, so borrowed; alias sets (`a\\|b`, `a -> *`) are kept in the \
             model"
                .to_string(),
        ),
        (
            "`T[]`".to_string(),
            spell(list.params),
            spell(list.returns),
            "`&[T]` only where the runtime stores the list typed (Tensor, int, float, bool, \
             str and the types that hold them)"
                .to_string(),
        ),
        (
            "`T[N]`".to_string(),
            spell(list.params),
            spell(list.returns),
            "a fixed-size list: N elements at the boxed boundary (or none, or the default's \
             count); a lone value is N copies, as a default (`int[2] stride=1`) and as an \
             argument"
                .to_string(),
        ),
        (
            "`T?`".to_string(),
            spell(optional.params),
            spell(optional.returns),
            String::new(),
        ),
    ];
    for (schema, params, returns, notes) in rows {
        out.push_str(&format!("| {schema} | {params} | {returns} | {notes} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_are_the_types_as_a_kernel_writes_them() {
        let tensor = base_forms(BaseType::Tensor);
        let spelled: Vec<_> = tensor
            .params
            .iter()
            .map(|f| (f.spelling(), f.marker))
            .collect();
        assert_eq!(
            spelled,
            [
                ("&Tensor".to_string(), "TensorRef"),
                ("Tensor".to_string(), "TensorVal")
            ]
        );
        assert_eq!(base_forms(BaseType::Str).params[0].spelling(), "&str");
        let list = Wrapper::List.forms();
        assert_eq!(list.params[0].spelling(), "&[T]");
        assert_eq!(list.params[1].marker, "List");
    }

    #[test]
    fn the_readme_holds_the_generated_table() {
        let readme = include_str!("../../README.md");
        let table = markdown_table();
        assert!(
            readme.contains(&table),
            "README.md's type table is out of date; replace it with:\n{table}"
        );
    }

    #[test]
    fn same_rows_take_their_targets_forms() {
        assert_eq!(base_forms(BaseType::SymInt), base_forms(BaseType::Int));
        assert_eq!(base_forms(BaseType::Dimname), base_forms(BaseType::Str));
        assert!(stored_typed(BaseType::SymInt));
        assert!(base_forms(BaseType::Storage).params.is_empty());
        assert!(unsupported(BaseType::QScheme).is_some());
        assert_eq!(unsupported(BaseType::Generator), None);
    }

    #[test]
    fn only_references_borrow() {
        let tensor = base_forms(BaseType::Tensor).params;
        assert!(tensor[0].borrows());
        assert!(!tensor[1].borrows());
        assert!(Wrapper::List.forms().params[0].borrows());
    }

    #[test]
    fn wrap_replaces_the_element_placeholder_only() {
        let vec = Wrapper::List.forms().returns[0];
        assert_eq!(vec.wrap("Tensor"), "Vec<Tensor>");
        assert_eq!(Wrapper::List.forms().params[0].wrap("&str"), "&[&str]");
        assert_eq!(
            Wrapper::Optional.forms().params[0].wrap("Vec<i64>"),
            "Option<Vec<i64>>"
        );
    }
}
