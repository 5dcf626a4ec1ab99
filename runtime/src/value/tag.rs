/// What a [`StableValue`](super::StableValue) holds. The numbers are ABI: never renumber.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    None = 0,
    Bool = 1,
    Int = 2,
    Float = 3,
    Str = 4,
    Tensor = 5,
    List = 6,
    DType = 7,
    Device = 8,
    Scalar = 9,
    /// A shared `Generator` handle (owned: one reference).
    Generator = 10,
    /// A `Stream` by value: the device index in `aux`, the raw id in the payload.
    Stream = 11,
}

impl Tag {
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
