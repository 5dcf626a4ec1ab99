//! [`ConstValue`]: the value one specialization gives a `#[constexpr]` parameter. Its scalar
//! variants are the type table's `scalar` rows.

use std::fmt;

use super::ScalarType;

macro_rules! define_const_value {
    ($(($v:ident, $t:ty, $r:literal))*) => {
        /// The value of one `#[constexpr]` parameter, as one specialization of a kernel fixes it.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum ConstValue {
            $($v($t),)*
            /// A variant of a `#[derive(ConstexprEnum)]` enum: the C++ type it names, used as a
            /// template argument (or as the text of a define).
            Type {
                /// The enum's Rust name (`Epilogue`), for messages and the check against the
                /// parameter.
                enum_name: &'static str,
                /// The C++ type (`opbox_epilogue::Relu`).
                cpp: &'static str,
            },
        }

        impl ConstValue {
            /// The scalar types a `#[constexpr]` may have (the table's `constexpr` rows).
            pub const TYPES: &'static [ScalarType] = &[$(ScalarType::$v),*];

            /// The scalar type, or `None` for an enum's C++ type.
            pub const fn scalar_type(self) -> Option<ScalarType> {
                match self {
                    $(ConstValue::$v(_) => Some(ScalarType::$v),)*
                    ConstValue::Type { .. } => None,
                }
            }
        }
    };
}

crate::for_each_constexpr_type!(define_const_value);

impl ConstValue {
    /// What the value is, as messages name it: `i32`, or the enum's name.
    pub fn type_name(&self) -> &'static str {
        match self {
            ConstValue::Type { enum_name, .. } => enum_name,
            other => other.scalar_type().map_or("?", ScalarType::rust_name),
        }
    }

    /// Equality by bits, so a specialization cache never confuses `0.0` with `-0.0` and always
    /// finds a NaN it stored (plain `==` does neither).
    pub fn same_bits(&self, other: &ConstValue) -> bool {
        match (self, other) {
            (ConstValue::F32(a), ConstValue::F32(b)) => a.to_bits() == b.to_bits(),
            (ConstValue::F64(a), ConstValue::F64(b)) => a.to_bits() == b.to_bits(),
            // The derive's strings are 'static literals: equal pointers settle most compares.
            (
                ConstValue::Type {
                    enum_name: e1,
                    cpp: c1,
                },
                ConstValue::Type {
                    enum_name: e2,
                    cpp: c2,
                },
            ) => (std::ptr::eq(*c1, *c2) || c1 == c2) && (std::ptr::eq(*e1, *e2) || e1 == e2),
            _ => self == other,
        }
    }

    /// A stable text form for cache keys and messages: type and exact bits, never lossy.
    pub fn key_text(&self) -> String {
        match self {
            ConstValue::I32(v) => format!("i32:{v}"),
            ConstValue::I64(v) => format!("i64:{v}"),
            ConstValue::U32(v) => format!("u32:{v}"),
            ConstValue::U64(v) => format!("u64:{v}"),
            ConstValue::F32(v) => format!("f32:{:#010x}", v.to_bits()),
            ConstValue::F64(v) => format!("f64:{:#018x}", v.to_bits()),
            ConstValue::Bool(v) => format!("bool:{v}"),
            ConstValue::Type { enum_name, cpp } => format!("type:{enum_name}:{cpp}"),
        }
    }

    /// The C++ literal with the exact type of the parameter, or `None` for a non-finite float,
    /// which has no portable literal.
    pub fn cpp_literal(&self) -> Option<String> {
        Some(match self {
            // `-2147483648` is `-(2147483648)`, a long; spell the minimum so it stays an int.
            ConstValue::I32(i32::MIN) => "(-2147483647 - 1)".to_string(),
            ConstValue::I32(v) => format!("{v}"),
            ConstValue::I64(i64::MIN) => "(-9223372036854775807LL - 1)".to_string(),
            ConstValue::I64(v) => format!("{v}LL"),
            ConstValue::U32(v) => format!("{v}u"),
            ConstValue::U64(v) => format!("{v}ull"),
            ConstValue::F32(v) if v.is_finite() => format!("{}f", float_text(format!("{v:?}"))),
            ConstValue::F64(v) if v.is_finite() => float_text(format!("{v:?}")),
            ConstValue::F32(_) | ConstValue::F64(_) => return None,
            ConstValue::Bool(v) => format!("{v}"),
            ConstValue::Type { cpp, .. } => cpp.to_string(),
        })
    }
}

/// Rust's shortest round-trip text (`{:?}`), always with a decimal point or exponent so C++
/// reads a float; the shortest text of an f32 read back as a `float` literal is that f32 exactly.
fn float_text(s: String) -> String {
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::I32(v) => write!(f, "{v}"),
            ConstValue::I64(v) => write!(f, "{v}"),
            ConstValue::U32(v) => write!(f, "{v}"),
            ConstValue::U64(v) => write!(f, "{v}"),
            ConstValue::F32(v) => write!(f, "{v:?}"),
            ConstValue::F64(v) => write!(f, "{v:?}"),
            ConstValue::Bool(v) => write!(f, "{v}"),
            ConstValue::Type { enum_name, cpp } => write!(f, "{enum_name} ({cpp})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ElemType;

    #[test]
    fn every_rust_name_round_trips() {
        for t in ElemType::ALL {
            assert_eq!(ElemType::from_rust_name(t.rust_name()), Some(t));
        }
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_rust_name(t.rust_name()), Some(t));
        }
        assert_eq!(ElemType::from_rust_name("usize"), None);
        assert_eq!(ScalarType::from_rust_name("usize"), Some(ScalarType::Usize));
        assert!(!ScalarType::F16.can_be_constexpr());
        assert!(ScalarType::I32.can_be_constexpr());
    }

    #[test]
    fn literals_keep_their_type() {
        assert_eq!(ConstValue::I32(-3).cpp_literal().as_deref(), Some("-3"));
        assert_eq!(
            ConstValue::I32(i32::MIN).cpp_literal().as_deref(),
            Some("(-2147483647 - 1)")
        );
        assert_eq!(ConstValue::I64(7).cpp_literal().as_deref(), Some("7LL"));
        assert_eq!(ConstValue::U32(7).cpp_literal().as_deref(), Some("7u"));
        assert_eq!(ConstValue::U64(7).cpp_literal().as_deref(), Some("7ull"));
        assert_eq!(ConstValue::F32(2.0).cpp_literal().as_deref(), Some("2.0f"));
        assert_eq!(ConstValue::F32(0.1).cpp_literal().as_deref(), Some("0.1f"));
        assert_eq!(
            ConstValue::F64(1e300).cpp_literal().as_deref(),
            Some("1e300")
        );
        assert_eq!(ConstValue::F64(f64::NAN).cpp_literal(), None);
        assert_eq!(
            ConstValue::Bool(true).cpp_literal().as_deref(),
            Some("true")
        );
    }

    #[test]
    fn float_values_compare_by_bits() {
        assert!(!ConstValue::F32(0.0).same_bits(&ConstValue::F32(-0.0)));
        assert!(ConstValue::F64(f64::NAN).same_bits(&ConstValue::F64(f64::NAN)));
        assert!(!ConstValue::I32(1).same_bits(&ConstValue::U32(1)));
        assert_ne!(
            ConstValue::F32(0.0).key_text(),
            ConstValue::F32(-0.0).key_text()
        );
    }
}
