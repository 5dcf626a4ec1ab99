//! The dispatch keys, listed once: `#[stable_impl(.., KEY)]` is checked against this list, and
//! the runtime's `DispatchKey` is defined from it.

/// Defines a dispatch-key enum from the one list: the variants (in dispatch-table order), `COUNT`,
/// `ALL`, `index`, `name`, `from_name` and `Display`.
///
/// A macro rather than a type the runtime re-exports, so that the runtime's `DispatchKey` is its
/// own type and keeps its inherent `for_device` (it maps the runtime's `Device`, which this crate
/// does not know). [`DispatchKey`] here is the same list, for the macros.
#[macro_export]
macro_rules! define_dispatch_keys {
    ($(#[$meta:meta])* $vis:vis enum $name:ident) => {
        $crate::define_dispatch_keys! {
            @keys $(#[$meta])* $vis enum $name {
                /// Kernels for tensors in host memory.
                CPU,
                /// Kernels for tensors on a CUDA device.
                CUDA,
                /// Kernels that compute only shapes and dtypes, for tensors with no data.
                Meta,
                /// The fallback kernel, written in terms of other ops, for every backend.
                CompositeExplicit,
            }
        }
    };
    (@keys $(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$doc:meta])* $key:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        $vis enum $name {
            $($(#[$doc])* $key,)+
        }

        impl $name {
            /// How many keys there are.
            pub const COUNT: usize = [$(::core::stringify!($key)),+].len();
            /// Every key, in dispatch-table order ([`Self::index`]).
            pub const ALL: [$name; $name::COUNT] = [$($name::$key),+];

            /// The key's slot in a kernel table, `0..COUNT`.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The key as `#[stable_impl]` spells it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$key => ::core::stringify!($key),)+
                }
            }

            /// The key `#[stable_impl]` spells `name` (`"CPU"`, `"CUDA"`), if any.
            pub fn from_name(name: &str) -> ::core::option::Option<$name> {
                Self::ALL.into_iter().find(|k| k.name() == name)
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

define_dispatch_keys! {
    /// Which kernel of an op runs: the list `#[stable_impl]` accepts.
    pub enum DispatchKey
}

/// PyTorch dispatch-key names that opbox does not take, each with the opbox key to write
/// instead and why: `#[stable_impl]` refuses them with this text rather than guessing.
pub const PYTORCH_KEY_NAMES: &[(&str, DispatchKey, &str)] = &[
    (
        "CompositeExplicitAutograd",
        DispatchKey::CompositeExplicit,
        "opbox has no autograd, so PyTorch's explicit-autograd composite is opbox's fallback \
         kernel, run for every backend without a kernel of its own",
    ),
    (
        "CompositeImplicitAutograd",
        DispatchKey::CompositeExplicit,
        "opbox has no autograd to derive through a decomposition, so a kernel written in terms \
         of other ops is the fallback kernel, run for every backend without one of its own",
    ),
    (
        "CompositeExplicitAutogradNonFunctional",
        DispatchKey::CompositeExplicit,
        "opbox has no autograd or functionalization; the fallback kernel is CompositeExplicit",
    ),
];

/// The opbox key for a PyTorch key name opbox does not take, with the reason.
pub fn pytorch_key(name: &str) -> Option<(DispatchKey, &'static str)> {
    PYTORCH_KEY_NAMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, key, why)| (key, why))
}

#[cfg(test)]
mod tests {
    use super::{pytorch_key, DispatchKey};

    #[test]
    fn pytorch_names_point_at_opbox_keys() {
        assert_eq!(
            pytorch_key("CompositeImplicitAutograd").map(|(k, _)| k),
            Some(DispatchKey::CompositeExplicit)
        );
        assert_eq!(pytorch_key("CPU"), None);
    }

    #[test]
    fn names_round_trip_and_index_the_table() {
        for (i, key) in DispatchKey::ALL.into_iter().enumerate() {
            assert_eq!(key.index(), i);
            assert_eq!(DispatchKey::from_name(key.name()), Some(key));
        }
        assert_eq!(DispatchKey::from_name("Cuda"), None);
    }
}
