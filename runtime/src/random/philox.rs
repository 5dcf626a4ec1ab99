//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
//! counter-based generator PyTorch's CUDA kernels use, so a block depends only on (seed,
//! counter) and any thread can compute its own numbers without shared state.

/// A reserved range of Philox counters: what [`Generator::philox`](super::Generator::philox)
/// hands a kernel. `#[repr(C)]`, so a CUDA kernel takes it by value as
/// `struct { unsigned long long seed, offset; }` and runs the same rounds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhiloxState {
    /// The Philox key.
    pub seed: u64,
    /// The first counter of the range.
    pub offset: u64,
}

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

impl PhiloxState {
    /// Block `index` of the range: four uniformly distributed `u32`s. The 128-bit counter is
    /// `(offset + index, 0)` as two 64-bit halves, the key is the seed.
    pub fn block(&self, index: u64) -> [u32; 4] {
        let counter = self.offset.wrapping_add(index);
        let mut c = [counter as u32, (counter >> 32) as u32, 0, 0];
        let mut k = [self.seed as u32, (self.seed >> 32) as u32];
        for _ in 0..10 {
            c = round(c, k);
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        c
    }

    /// Four floats uniform in `[0, 1)` from block `index`, each from the top 24 bits of a word
    /// (so every value is exact in `f32`).
    pub fn uniform(&self, index: u64) -> [f32; 4] {
        self.block(index)
            .map(|w| (w >> 8) as f32 * (1.0 / (1u32 << 24) as f32))
    }
}

fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let product = u64::from(a) * u64::from(b);
    ((product >> 32) as u32, product as u32)
}

fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
    let (hi0, lo0) = mulhilo(M0, c[0]);
    let (hi1, lo1) = mulhilo(M1, c[2]);
    [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Random123 known-answer vectors for philox4x32-10 (kat_vectors): counter and key all
    /// zeros, and all ones.
    #[test]
    fn known_answers() {
        let zeros = philox(&[0, 0, 0, 0], &[0, 0]);
        assert_eq!(zeros, [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        let ones = philox(&[u32::MAX; 4], &[u32::MAX; 2]);
        assert_eq!(ones, [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
    }

    fn philox(counter: &[u32; 4], key: &[u32; 2]) -> [u32; 4] {
        let (mut c, mut k) = (*counter, *key);
        for _ in 0..10 {
            c = round(c, k);
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        c
    }

    #[test]
    fn blocks_depend_on_seed_and_counter_only() {
        let a = PhiloxState {
            seed: 42,
            offset: 5,
        };
        let b = PhiloxState {
            seed: 42,
            offset: 3,
        };
        assert_eq!(a.block(0), b.block(2));
        assert_ne!(a.block(0), a.block(1));
        assert_ne!(
            a.block(0),
            PhiloxState {
                seed: 43,
                offset: 5
            }
            .block(0)
        );
        for x in a.uniform(0) {
            assert!((0.0..1.0).contains(&x));
        }
        assert_eq!(std::mem::size_of::<PhiloxState>(), 16);
    }
}
