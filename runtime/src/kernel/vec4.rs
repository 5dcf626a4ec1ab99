//! `F32x4`: four f32 moved as one CUDA `float4`, what a DSL kernel's `x.load4(i)` returns and
//! `y.store4(i, v)` writes. Bandwidth-bound kernels need 16-byte accesses to reach the memory's
//! rate on a GPU (measured on the H200: 3.4–3.6 TB/s for axpy with one f32 per access, whatever
//! the grid, against 4.4 TB/s with float4), and the width is the kernel's to choose: the
//! element count a thread covers changes its indexing, which no launch helper can do for it.

use opbox_codegen::native::{
    FieldType, Initializer, NativeFieldSchema, NativeScalar, NativeSchema,
};

use crate::native::NativeField;

/// Four f32, laid out as CUDA's `float4` (16 bytes, 16-aligned). In a `#[kernel]`, build one
/// with `F32x4 { x, y, z, w }` and read its fields.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
pub struct F32x4 {
    /// Lane 0.
    pub x: f32,
    /// Lane 1.
    pub y: f32,
    /// Lane 2.
    pub z: f32,
    /// Lane 3.
    pub w: f32,
}

const F32: FieldType = FieldType::Scalar(NativeScalar::F32);

/// CUDA's own `float4`: the DSL's C++ names it, and no definition is generated for it.
static SCHEMA: NativeSchema = NativeSchema {
    rust_name: "opbox::dsl::F32x4",
    native_name: "float4",
    size: 16,
    align: 16,
    initializer: Initializer::None,
    fields: &[
        NativeFieldSchema {
            name: "x",
            ty: F32,
            offset: 0,
        },
        NativeFieldSchema {
            name: "y",
            ty: F32,
            offset: 4,
        },
        NativeFieldSchema {
            name: "z",
            ty: F32,
            offset: 8,
        },
        NativeFieldSchema {
            name: "w",
            ty: F32,
            offset: 12,
        },
    ],
};

impl NativeField for F32x4 {
    const FIELD_TYPE: FieldType = FieldType::Native(&SCHEMA);
}
