//! The hash of a qualified op name (`ns::name[.overload]`), computed by `#[stable_library]` at
//! compile time and stored in each op's static definition, and by the registry at run time for
//! a name it is asked to resolve. Registering an op then reads no name and hashes nothing: the
//! registry's table is filled from the stored hashes.
//!
//! Not a defence against chosen collisions (names come from the program's own macros; a caller
//! that resolves a colliding name costs one extra comparison, nothing more).

/// The hash of `name`: eight bytes at a time, each folded in by a full 64 x 64 -> 128-bit
/// multiply whose halves are xored (foldhash's and wyhash's mixing step, which carries every bit
/// both up and down; a plain multiply carries them only up, and names that differ in two
/// neighbouring words then collide), then MurmurHash3's 64-bit finalizer. A `const fn`, so
/// that a hand-written static definition can call it.
pub const fn op_name_hash(name: &str) -> u32 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    const fn folded_mul(a: u64, b: u64) -> u64 {
        let full = (a as u128) * (b as u128);
        (full as u64) ^ ((full >> 64) as u64)
    }
    let bytes = name.as_bytes();
    let mut h = (bytes.len() as u64) ^ 0x243F_6A88_85A3_08D3;
    let mut rest = bytes;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        h = folded_mul(h ^ u64::from_le_bytes(*word), K);
        rest = tail;
    }
    // The last 1 to 7 bytes, little-endian in the low bytes of one more word (the length is in
    // the seed, so trailing zero bytes still count).
    if !rest.is_empty() {
        let (mut word, mut shift) = (0u64, 0);
        if let Some((four, tail)) = rest.split_first_chunk::<4>() {
            word = u32::from_le_bytes(*four) as u64;
            (rest, shift) = (tail, 32);
        }
        if let Some((two, tail)) = rest.split_first_chunk::<2>() {
            word |= (u16::from_le_bytes(*two) as u64) << shift;
            (rest, shift) = (tail, shift + 16);
        }
        if let Some((one, _)) = rest.split_first() {
            word |= (*one as u64) << shift;
        }
        h = folded_mul(h ^ word, K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^= h >> 33;
    h as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_that_differ_anywhere_hash_apart() {
        // The names a large library has: one namespace, numbered ops, overloads, lengths
        // either side of each 8-byte word.
        let mut names = Vec::new();
        for ns in ["aten", "vllm", "ns", "a_rather_long_namespace"] {
            for i in 0..5000 {
                names.push(format!("{ns}::op{i}"));
                names.push(format!("{ns}::op{i}.out"));
                names.push(format!("{ns}::op{i}_"));
            }
        }
        let hashes: HashSet<u32> = names.iter().map(|n| op_name_hash(n)).collect();
        // 60,000 names in 2^32 values: a collision or two is chance, more is a weak hash.
        assert!(
            names.len() - hashes.len() <= 2,
            "{} collisions among {} names",
            names.len() - hashes.len(),
            names.len()
        );
    }

    #[test]
    fn a_trailing_zero_byte_or_a_moved_byte_changes_the_hash() {
        assert_ne!(op_name_hash("ns::a"), op_name_hash("ns::a\0"));
        assert_ne!(op_name_hash("ns::ab"), op_name_hash("ns::ba"));
        assert_ne!(op_name_hash(""), op_name_hash("\0"));
    }

    #[test]
    fn is_usable_in_a_const() {
        const H: u32 = op_name_hash("aten::add.Tensor");
        assert_eq!(H, op_name_hash(&String::from("aten::add.Tensor")));
    }
}
