//! The strings a plugin registers (op names, file and function names), copied out of its
//! temporaries into a few leaked chunks: a plugin of thousands of ops makes a handful of
//! allocations for its names instead of one each. Plugins are never unloaded, so the strings
//! live for the process.

/// The first chunk's size; each next one doubles, up to [`MAX_CHUNK`].
const FIRST_CHUNK: usize = 1024;
const MAX_CHUNK: usize = 64 * 1024;

#[derive(Default)]
pub(crate) struct StrArena {
    free: &'static mut [u8],
    next_chunk: usize,
}

impl StrArena {
    /// The concatenation of `parts`, kept for the process.
    pub(crate) fn concat(&mut self, parts: &[&str]) -> &'static str {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.free.len() {
            let size = self.next_chunk.clamp(FIRST_CHUNK, MAX_CHUNK);
            if len > size / 2 {
                // A long string gets its own allocation; the chunk keeps its room.
                return Box::leak(parts.concat().into_boxed_str());
            }
            self.next_chunk = size * 2;
            self.free = Box::leak(vec![0u8; size].into_boxed_slice());
        }
        let (out, rest) = std::mem::take(&mut self.free).split_at_mut(len);
        self.free = rest;
        let mut at = 0;
        for part in parts {
            out[at..at + part.len()].copy_from_slice(part.as_bytes());
            at += part.len();
        }
        // SAFETY: `out` is the concatenation of `&str`s, so it is UTF-8.
        unsafe { std::str::from_utf8_unchecked(out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the arena leaks its chunks, as plugins' names live for the process"
    )]
    fn strings_are_copied_whole_across_chunks_and_long_ones_alone() {
        let mut arena = StrArena::default();
        let mut kept = Vec::new();
        for i in 0..2000 {
            let n = i.to_string();
            kept.push((format!("ns::op_{n}"), arena.concat(&["ns::op_", &n])));
        }
        let long = "x".repeat(5000);
        kept.push((long.clone(), arena.concat(&[&long])));
        kept.push(("é::ü".to_string(), arena.concat(&["é", "::", "ü"])));
        kept.push((String::new(), arena.concat(&[])));
        for (want, got) in &kept {
            assert_eq!(want, got);
        }
    }
}
