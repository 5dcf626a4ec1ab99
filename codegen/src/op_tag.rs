//! PyTorch's operator tags (`aten/src/ATen/native/tags.yaml`), listed once: `m.def_with_tags`
//! is checked against this list at compile time, and `OpHandle::tags` reads them back.

macro_rules! op_tags {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)+) => {
        /// A tag on an op's definition, as PyTorch's `at::Tag`: what the op promises beyond its
        /// schema (PT2 compliance, determinism, being a view). opbox stores and reports tags; it
        /// does not act on them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpTag {
            $($(#[$doc])* $variant,)+
        }

        impl OpTag {
            pub const ALL: [OpTag; [$($name),+].len()] = [$(OpTag::$variant),+];

            /// PyTorch's name for the tag (`pt2_compliant_tag`).
            pub const fn torch_name(self) -> &'static str {
                match self {
                    $(OpTag::$variant => $name,)+
                }
            }

            /// The variant's name, as `m.def_with_tags(.., &[OpTag::Core])` spells it.
            pub const fn variant_name(self) -> &'static str {
                match self {
                    $(OpTag::$variant => ::core::stringify!($variant),)+
                }
            }

            pub fn from_variant_name(name: &str) -> Option<OpTag> {
                Self::ALL.into_iter().find(|t| t.variant_name() == name)
            }
        }

        impl ::core::fmt::Display for OpTag {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.torch_name())
            }
        }
    };
}

op_tags! {
    InplaceView = "inplace_view",
    /// The op is tested to work with torch.compile (PT2).
    Pt2Compliant = "pt2_compliant_tag",
    ViewCopy = "view_copy",
    DynamicOutputShape = "dynamic_output_shape",
    DataDependentOutput = "data_dependent_output",
    Generated = "generated",
    /// The op draws random numbers (usually from a `Generator` argument).
    NondeterministicSeeded = "nondeterministic_seeded",
    NondeterministicBitwise = "nondeterministic_bitwise",
    NeedsExactStrides = "needs_exact_strides",
    NeedsContiguousStrides = "needs_contiguous_strides",
    NeedsFixedStrideOrder = "needs_fixed_stride_order",
    FlexibleLayout = "flexible_layout",
    Core = "core",
    Pointwise = "pointwise",
    MaybeAliasingOrMutating = "maybe_aliasing_or_mutating",
    CudagraphUnsafe = "cudagraph_unsafe",
    Reduction = "reduction",
    OutVariant = "out_variant",
}

#[cfg(test)]
mod tests {
    use super::OpTag;

    #[test]
    fn names_round_trip() {
        for t in OpTag::ALL {
            assert_eq!(OpTag::from_variant_name(t.variant_name()), Some(t));
        }
        assert_eq!(OpTag::Pt2Compliant.to_string(), "pt2_compliant_tag");
        assert_eq!(OpTag::from_variant_name("pt2_compliant_tag"), None);
    }
}
