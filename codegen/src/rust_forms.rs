//! Which Rust types a kernel takes and returns for each schema type: the one table.
//!
//! | schema      | parameter                | return          |
//! |-------------|--------------------------|-----------------|
//! | Tensor      | `&Tensor`, `Tensor`      | `Tensor`        |
//! | Tensor(a!)  | `&Tensor`                | `Tensor`        |
//! | int         | `i64`                    | `i64`           |
//! | float       | `f64`                    | `f64`           |
//! | bool        | `bool`                   | `bool`          |
//! | str         | `&str`, `String`         | `String`        |
//! | ScalarType  | `DType`                  | `DType`         |
//! | Device      | `Device`                 | `Device`        |
//! | Scalar      | `Scalar`                 | `Scalar`        |
//! | T[]         | `&[T]`, `Vec<T>`         | `Vec<T>`        |
//! | T?          | `Option<T>`              | `Option<T>`     |
//!
//! The table is a macro, [`rust_forms!`](crate::rust_forms), so that each reader takes it in the
//! form it needs: the runtime's `typemap` turns every row into a `RustParam` or `ReturnValue`
//! impl naming the row's marker type, and this module turns it into [`base_forms`] and
//! [`Wrapper::forms`], from which `#[stable_library]` says, per schema argument, which of those
//! marker types fit. A row can therefore not be in one and missing from the other.

use crate::schema::BaseType;

/// Calls `$then! { base { .. } wrap { .. } }` with the table.
///
/// `base`: per schema base type, the Rust parameter and return types, each with the marker type
/// (in the runtime's `typemap::ty`) that stands for it, and whether the runtime stores a list of
/// it typed (then a kernel can borrow the list as a slice). `wrap`: the Rust forms of a list and
/// an optional, where `T` is the element's form and the marker is `ty::List<..>` /
/// `ty::Optional<..>` of the element's marker.
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
        wrap { $($w:ident: param [$($wp:ty),+], ret [$($wr:ty),+];)+ }
    ) => {
        /// The Rust forms of a base type.
        pub const fn base_forms(base: BaseType) -> Forms {
            match base {
                $(BaseType::$base => Forms {
                    params: &[$(RustForm { tokens: stringify!($p), marker: stringify!($pm) }),+],
                    returns: &[$(RustForm { tokens: stringify!($r), marker: stringify!($rm) }),+],
                },)+
            }
        }

        /// Whether the runtime stores a list of `base` typed, so that a kernel can borrow it as
        /// a slice (`&[i64]`); other lists are only taken as a `Vec`.
        pub const fn stored_typed(base: BaseType) -> bool {
            match base {
                $(BaseType::$base => $typed,)+
            }
        }

        /// A schema type around another: `T[]`, `T?`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Wrapper {
            $($w,)+
        }

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
