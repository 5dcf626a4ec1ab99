//! The generated kernels of the DSL's differential test (`build.rs` writes them, from a fixed
//! seed, into `$OUT_DIR/kernels.rs`), and what the test compares them with: each output element
//! as its bits.

#![allow(clippy::all)]

use opbox::native::{bf16, f16};
use opbox::prelude::*;

/// An output element as bits, NaNs all alike (each side has its own NaN payloads).
pub trait Bits: Copy + opbox::Element {
    fn bits(self) -> u64;
    /// A float's value, for the inexact kernels' ulp distance.
    fn ordered(self) -> Option<i64>;
}

macro_rules! int_bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            fn bits(self) -> u64 { self as u64 }
            fn ordered(self) -> Option<i64> { None }
        }
    )*};
}
int_bits!(i8, u8, i32, u32, i64, u64);

macro_rules! float_bits {
    ($($t:ty => $nan:expr, $sign:expr),*) => {$(
        impl Bits for $t {
            fn bits(self) -> u64 {
                if self.is_nan() { $nan } else { self.to_bits() as u64 }
            }
            fn ordered(self) -> Option<i64> {
                if self.is_nan() { return None; }
                let b = self.to_bits() as i64;
                // Sign-magnitude to a line: adjacent floats differ by one.
                Some(if b & $sign != 0 { -(b & !$sign) } else { b })
            }
        }
    )*};
}
float_bits!(f32 => 0x7fc0_0000, 1 << 31, f64 => 0x7ff8_0000_0000_0000, 1 << 63, f16 => 0x7e00, 1 << 15, bf16 => 0x7fc0, 1 << 15);

/// One generated kernel: its name, whether it is bit-exact (no transcendental method), its
/// declaration (for NVRTC), and a run on a device giving its output's bits and float order.
pub struct Case {
    pub name: &'static str,
    pub exact: bool,
    pub decl: &'static opbox::cuda::codegen::KernelDecl,
    pub run: fn(Device) -> opbox::Result<Vec<(u64, Option<i64>)>>,
}

/// Inputs of type `T`: every pair of `edges`, as two tensors.
pub fn pairs<T: Bits>(edges: &[T], device: Device) -> opbox::Result<(Tensor, Tensor, usize)> {
    let n = edges.len() * edges.len();
    let a: Vec<T> = (0..n).map(|k| edges[k / edges.len()]).collect();
    let b: Vec<T> = (0..n).map(|k| edges[k % edges.len()]).collect();
    Ok((
        Tensor::from_vec(a, &[n])?.to(device)?,
        Tensor::from_vec(b, &[n])?.to(device)?,
        n,
    ))
}

pub fn read<T: Bits>(t: &Tensor) -> opbox::Result<Vec<(u64, Option<i64>)>> {
    Ok(t.to_vec::<T>()?
        .into_iter()
        .map(|v| (v.bits(), v.ordered()))
        .collect())
}

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
