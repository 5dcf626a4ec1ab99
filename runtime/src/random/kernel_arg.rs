//! [`PhiloxState`] as a by-value kernel argument, as `#[derive(KernelArg)]` would make it
//! (written out here: the derive names `::opbox`, which the runtime cannot). A CUDA kernel
//! declares `opbox::PhiloxState philox` and gets the generated C++ struct
//! `struct PhiloxState { unsigned long long seed; unsigned long long offset; }` in namespace
//! `opbox`, with the usual layout `static_assert`s.

use std::any::{Any, TypeId};

use opbox_codegen::cuda::{NativeParam, ParamKind};

use super::PhiloxState;
use crate::kernel::{
    DerivedKernelArg, KernelArg, KernelArgStruct, LaunchArg, NativeBytes, OwnedArg,
};
use crate::native::{
    FieldType, Initializer, NativeField, NativeFieldSchema, NativeScalar, NativeSchema,
};

impl KernelArgStruct for PhiloxState {
    const SCHEMA: &'static NativeSchema = &NativeSchema {
        rust_name: "opbox::PhiloxState",
        native_name: "opbox::PhiloxState",
        size: std::mem::size_of::<PhiloxState>(),
        align: std::mem::align_of::<PhiloxState>(),
        initializer: Initializer::Generated,
        fields: &[
            NativeFieldSchema {
                name: "seed",
                ty: FieldType::Scalar(NativeScalar::U64),
                offset: std::mem::offset_of!(PhiloxState, seed),
            },
            NativeFieldSchema {
                name: "offset",
                ty: FieldType::Scalar(NativeScalar::U64),
                offset: std::mem::offset_of!(PhiloxState, offset),
            },
        ],
    };
}

impl KernelArg for PhiloxState {
    type Value<'v> = PhiloxState;
    const KIND: ParamKind = ParamKind::Native(NativeParam {
        schema: <PhiloxState as KernelArgStruct>::SCHEMA,
        generated: true,
    });
    #[inline]
    fn lower<'a>(value: &'a PhiloxState) -> LaunchArg<'a> {
        LaunchArg::Native(NativeBytes::of(
            <PhiloxState as KernelArgStruct>::SCHEMA,
            value,
        ))
    }
}

impl NativeField for PhiloxState {
    const FIELD_TYPE: FieldType = FieldType::Native(<PhiloxState as KernelArgStruct>::SCHEMA);
}

fn type_id() -> TypeId {
    TypeId::of::<PhiloxState>()
}

fn lower(value: &dyn Any) -> Option<OwnedArg> {
    value
        .downcast_ref::<PhiloxState>()
        .map(|v| OwnedArg::native(<PhiloxState as KernelArgStruct>::SCHEMA, v))
}

inventory::submit! {
    DerivedKernelArg {
        type_id,
        rust_name: "PhiloxState",
        lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_matches_the_rust_layout() {
        let schema = <PhiloxState as KernelArgStruct>::SCHEMA;
        assert_eq!((schema.size, schema.align), (16, 8));
        assert_eq!(schema.fields[1].offset, 8);
        let state = PhiloxState { seed: 1, offset: 2 };
        assert!(crate::kernel::lower_any(&state, "PhiloxState").is_ok());
    }
}
