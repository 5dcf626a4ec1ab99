//! How long a kernel's parameter list may be for its boxing shim to be shared: the runtime's
//! `ParamList` has one impl per length up to [`SHARED_SHIM_MAX_PARAMS`], and `#[stable_impl]`
//! gives a kernel with more parameters a shim of its own. Both read the list below.

/// Calls `$then! { (P0 0 s0) (P1 1 s1) .. }`: per parameter position of the longest shared
/// list, a type parameter name, the position (a tuple index), and a name for its scratch.
#[macro_export]
macro_rules! shared_shim_params {
    ($then:ident) => {
        $then! {
            (P0 0 s0) (P1 1 s1) (P2 2 s2) (P3 3 s3) (P4 4 s4) (P5 5 s5) (P6 6 s6) (P7 7 s7)
            (P8 8 s8) (P9 9 s9) (P10 10 s10) (P11 11 s11) (P12 12 s12) (P13 13 s13)
            (P14 14 s14) (P15 15 s15)
        }
    };
}

macro_rules! count_params {
    ($(($p:ident $i:tt $s:ident))*) => {
        [$($i),*].len()
    };
}

/// The most parameters a kernel can have and share its shim.
pub const SHARED_SHIM_MAX_PARAMS: usize = shared_shim_params!(count_params);
