/// What a [`StableValue`](super::StableValue) holds. The numbers are ABI: never renumber.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// No value: an absent optional, or an unwritten output slot.
    None = 0,
    /// A `bool` in the payload.
    Bool = 1,
    /// An `int` (`i64`) in the payload.
    Int = 2,
    /// A `float` (`f64`) in the payload.
    Float = 3,
    /// An owned `str` handle.
    Str = 4,
    /// An owned (or, on a call's stack, borrowed) `Tensor` handle.
    Tensor = 5,
    /// An owned list handle.
    List = 6,
    /// A `ScalarType` code in the payload.
    DType = 7,
    /// A `Device` in the payload.
    Device = 8,
    /// A `Scalar`: its kind in `aux`, its value in the payload.
    Scalar = 9,
    /// A shared `Generator` handle (owned: one reference).
    Generator = 10,
    /// A `Stream` by value: the device index in `aux`, the raw id in the payload.
    Stream = 11,
}

impl Tag {
    /// The tag numbered `v`, or `None` for a number no tag has.
    pub const fn from_u32(v: u32) -> Option<Tag> {
        Some(match v {
            0 => Tag::None,
            1 => Tag::Bool,
            2 => Tag::Int,
            3 => Tag::Float,
            4 => Tag::Str,
            5 => Tag::Tensor,
            6 => Tag::List,
            7 => Tag::DType,
            8 => Tag::Device,
            9 => Tag::Scalar,
            10 => Tag::Generator,
            11 => Tag::Stream,
            _ => return None,
        })
    }

    /// The schema spelling of the tag, as error messages show it.
    pub const fn schema_name(self) -> &'static str {
        match self {
            Tag::None => "None",
            Tag::Bool => "bool",
            Tag::Int => "int",
            Tag::Float => "float",
            Tag::Str => "str",
            Tag::Tensor => "Tensor",
            Tag::List => "list",
            Tag::DType => "ScalarType",
            Tag::Device => "Device",
            Tag::Scalar => "Scalar",
            Tag::Generator => "Generator",
            Tag::Stream => "Stream",
        }
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.schema_name())
    }
}
