//! The named values a schema default may spell: `Layout` and `MemoryFormat` names, the
//! named-constant `int` defaults (`reduction=Mean`), and the device strings a `Device` default
//! may hold. Each list is written once here; the parser, the printer and the runtime (which
//! re-exports [`Layout`] and [`MemoryFormat`] as `opbox::Layout` and `opbox::MemoryFormat`)
//! all read it.

/// Defines a `#[repr(i8)]` enum whose codes are PyTorch's (`c10::Layout`, `c10::MemoryFormat`:
/// the value that crosses PyTorch's stable ABI as an int), with the schema spelling of each.
macro_rules! schema_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$doc:meta])* $variant:ident = $code:literal, $spelling:literal;)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(i8)]
        pub enum $name {
            $($(#[$doc])* $variant = $code,)+
        }

        impl $name {
            pub const ALL: [$name; [$($spelling),+].len()] = [$($name::$variant),+];

            /// The name a schema default uses (`contiguous_format`), which is also
            /// PyTorch's Python name (`torch.contiguous_format`).
            pub const fn schema_name(self) -> &'static str {
                match self {
                    $($name::$variant => $spelling,)+
                }
            }

            pub fn from_schema_name(name: &str) -> Option<$name> {
                Self::ALL.into_iter().find(|v| v.schema_name() == name)
            }

            /// PyTorch's code for the value: what it boxes as (an `int`).
            pub const fn code(self) -> i64 {
                self as i64
            }

            pub fn from_code(code: i64) -> Option<$name> {
                Self::ALL.into_iter().find(|v| v.code() == code)
            }

            /// The variant's own name, as generated code spells it.
            pub const fn variant_name(self) -> &'static str {
                match self {
                    $($name::$variant => ::core::stringify!($variant),)+
                }
            }

            /// Every schema name, for messages: "`a`, `b` or `c`".
            pub fn names_list() -> String {
                or_list(Self::ALL.iter().map(|v| v.schema_name()))
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.schema_name())
            }
        }
    };
}

schema_enum! {
    /// How a tensor's elements are stored (`c10::Layout`). opbox's tensors are all `Strided`;
    /// the others exist so schemas that name them parse and kernels can refuse them by value.
    Layout {
        Strided = 0, "strided";
        SparseCoo = 1, "sparse_coo";
        SparseCsr = 2, "sparse_csr";
        Mkldnn = 3, "_mkldnn";
        SparseCsc = 4, "sparse_csc";
        SparseBsr = 5, "sparse_bsr";
        SparseBsc = 6, "sparse_bsc";
        Jagged = 7, "jagged";
    }
}

schema_enum! {
    /// The order of a strided tensor's dimensions in memory (`c10::MemoryFormat`).
    MemoryFormat {
        /// Row-major, last dimension fastest.
        Contiguous = 0, "contiguous_format";
        /// Keep the input's order.
        Preserve = 1, "preserve_format";
        /// NHWC for 4-d tensors.
        ChannelsLast = 2, "channels_last";
        /// NDHWC for 5-d tensors.
        ChannelsLast3d = 3, "channels_last_3d";
    }
}

/// The identifiers an `int` default may name, with the values torchgen (and the JIT's schema
/// parser) give them: `at::Reduction::Mean` is 1, `Sum` 2. `None` is not among them: in a
/// schema it always means the optional's None.
pub const NAMED_INT_CONSTANTS: [(&str, i64); 2] = [("Mean", 1), ("Sum", 2)];

/// The value of a named `int` default.
pub fn named_int(name: &str) -> Option<i64> {
    NAMED_INT_CONSTANTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
}

/// A device string as a `Device` default spells it: `cpu`, `meta`, `cuda` (device 0) or
/// `cuda:N`. The runtime's `Device::from_str` parses through this, so a default the macro
/// accepted is one the runtime reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    Cpu,
    Meta,
    Cuda(u32),
}

/// The forms [`parse_device`] accepts, for messages.
pub const DEVICE_FORMS: &str =
    "`\"cpu\"`, `\"cuda\"`, `\"cuda:N\"` (N a device index) or `\"meta\"`";

pub fn parse_device(s: &str) -> Option<DeviceSpec> {
    match s {
        "cpu" => Some(DeviceSpec::Cpu),
        "meta" => Some(DeviceSpec::Meta),
        "cuda" => Some(DeviceSpec::Cuda(0)),
        _ => {
            let index = s.strip_prefix("cuda:")?;
            if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            index.parse().ok().map(DeviceSpec::Cuda)
        }
    }
}

/// "`a`, `b` or `c`".
fn or_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_pytorchs() {
        assert_eq!(Layout::Strided.code(), 0);
        assert_eq!(Layout::Jagged.code(), 7);
        assert_eq!(MemoryFormat::ChannelsLast3d.code(), 3);
        for l in Layout::ALL {
            assert_eq!(Layout::from_code(l.code()), Some(l));
            assert_eq!(Layout::from_schema_name(l.schema_name()), Some(l));
        }
        for m in MemoryFormat::ALL {
            assert_eq!(MemoryFormat::from_code(m.code()), Some(m));
            assert_eq!(MemoryFormat::from_schema_name(m.schema_name()), Some(m));
        }
        assert_eq!(Layout::from_code(8), None);
    }

    #[test]
    fn named_ints_are_torchgens() {
        assert_eq!(named_int("Mean"), Some(1));
        assert_eq!(named_int("Sum"), Some(2));
        assert_eq!(named_int("None"), None);
    }

    #[test]
    fn devices() {
        assert_eq!(parse_device("cpu"), Some(DeviceSpec::Cpu));
        assert_eq!(parse_device("cuda"), Some(DeviceSpec::Cuda(0)));
        assert_eq!(parse_device("cuda:3"), Some(DeviceSpec::Cuda(3)));
        assert_eq!(parse_device("meta"), Some(DeviceSpec::Meta));
        for bad in [
            "gpu",
            "cuda:",
            "cuda:x",
            "cuda:-1",
            "CPU",
            "cuda:99999999999",
        ] {
            assert_eq!(parse_device(bad), None, "{bad}");
        }
        assert_eq!(
            MemoryFormat::names_list(),
            "`contiguous_format`, `preserve_format`, `channels_last` or `channels_last_3d`"
        );
    }
}
