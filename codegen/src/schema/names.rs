//! The duplicate check on argument and return names: a scan of the names so far while they are
//! few (nearly every schema), a hash set once they are many, so a schema of 100,000 arguments
//! still parses in linear time.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::collections::HashSet;

/// Names up to this count are checked by a scan, with no allocation.
const FEW: usize = 16;

pub(super) struct Names<'a> {
    few: [&'a str; FEW],
    len: usize,
    many: HashSet<&'a str>,
}

impl<'a> Names<'a> {
    pub(super) fn new() -> Names<'a> {
        Names {
            few: [""; FEW],
            len: 0,
            many: HashSet::new(),
        }
    }

    /// Adds `name`; false when it was already there.
    pub(super) fn insert(&mut self, name: &'a str) -> bool {
        if self.len < FEW {
            let seen = self.few.get(..self.len).unwrap_or(&[]);
            if seen.contains(&name) {
                return false;
            }
            if let Some(slot) = self.few.get_mut(self.len) {
                *slot = name;
            }
            self.len += 1;
            return true;
        }
        if self.many.is_empty() {
            self.many.extend(self.few.iter().copied());
        }
        self.many.insert(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_below_and_above_the_scan_limit() {
        let names: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
        let mut set = Names::new();
        for name in &names {
            assert!(set.insert(name));
        }
        assert!(!set.insert("n3"), "one of the scanned ones");
        assert!(!set.insert("n30"), "one of the hashed ones");
        assert!(set.insert("n40"));
    }
}
