//! Dependencies between recorded launches, from what each one reads and writes.
//!
//! Each node touches [`Region`]s, each with an [`Access`] from its kernel's `In`/`Out`/`InOut`
//! declaration. A later node depends on an earlier one when they touch overlapping regions and
//! at least one of the two writes: read after write (RAW), write after read (WAR) or write
//! after write (WAW). Regions are address ranges, so views of one storage, and storages that
//! wrap the same memory (DLPack imports), conflict exactly where their bytes do.

use std::fmt;
use std::ops::Range;

use super::NodeId;
use crate::kernel::Access;

/// What a node touches: bytes of memory, or, for an `abi = "constant_params"` kernel, its
/// `__constant__ params` symbol, which each launch writes before it runs, and whatever memory
/// the struct's addresses point at, which the graph cannot see. That region overlaps every
/// other: such a launch is ordered after everything recorded before it that touches memory,
/// and before everything after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// The device bytes `[start, end)` a tensor's elements span.
    Memory(Range<u64>),
    /// A constant-params launch's `params` symbol and whatever its struct points at: overlaps every
    /// region.
    ConstantParams,
}

impl Region {
    fn overlaps(&self, other: &Region) -> bool {
        match (self, other) {
            (Region::Memory(a), Region::Memory(b)) => a.start < b.end && b.start < a.end,
            _ => true,
        }
    }
}

/// Why one node must run after another; an edge may have several reasons.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hazards {
    /// The later node reads what the earlier one writes.
    pub raw: bool,
    /// The later node writes what the earlier one reads.
    pub war: bool,
    /// Both write.
    pub waw: bool,
}

impl Hazards {
    fn of(earlier: Access, later: Access) -> Hazards {
        let writes = |a| matches!(a, Access::Write | Access::ReadWrite);
        let reads = |a| matches!(a, Access::Read | Access::ReadWrite);
        Hazards {
            raw: writes(earlier) && reads(later),
            war: reads(earlier) && writes(later),
            waw: writes(earlier) && writes(later),
        }
    }

    fn any(self) -> bool {
        self.raw || self.war || self.waw
    }

    fn union(self, o: Hazards) -> Hazards {
        Hazards {
            raw: self.raw || o.raw,
            war: self.war || o.war,
            waw: self.waw || o.waw,
        }
    }
}

impl fmt::Display for Hazards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [(self.raw, "RAW"), (self.war, "WAR"), (self.waw, "WAW")];
        let mut sep = "";
        for (on, name) in names {
            if on {
                write!(f, "{sep}{name}")?;
                sep = "+";
            }
        }
        Ok(())
    }
}

/// A dependency: `to` runs after `from` (`from` was recorded first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The node that runs first.
    pub from: NodeId,
    /// The node that waits for it.
    pub to: NodeId,
    /// Why: read after write, write after read, write after write.
    pub hazards: Hazards,
}

/// The edges between nodes that touch `accesses[i]`, in recording order: one edge per pair of
/// nodes with a hazard, earlier to later. Quadratic in the nodes, which is fine for the
/// hundreds of launches a graph holds and allocates nothing but the result.
pub fn derive(accesses: &[Vec<(Access, Region)>]) -> Vec<Edge> {
    let mut edges = Vec::new();
    for (to, later) in accesses.iter().enumerate() {
        for (from, earlier) in accesses[..to].iter().enumerate() {
            let mut hazards = Hazards::default();
            for (a, ra) in earlier {
                for (b, rb) in later {
                    if ra.overlaps(rb) {
                        hazards = hazards.union(Hazards::of(*a, *b));
                    }
                }
            }
            if hazards.any() {
                edges.push(Edge {
                    from: NodeId(from),
                    to: NodeId(to),
                    hazards,
                });
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Read as R, ReadWrite as RW, Write as W};

    fn mem(lo: u64, hi: u64) -> Region {
        Region::Memory(lo..hi)
    }

    fn pairs(edges: &[Edge]) -> Vec<(usize, usize, String)> {
        edges
            .iter()
            .map(|e| (e.from.index(), e.to.index(), e.hazards.to_string()))
            .collect()
    }

    #[test]
    fn chain_is_raw() {
        // a -> k0 -> t -> k1 -> b
        let g = derive(&[
            vec![(R, mem(0, 16)), (W, mem(100, 116))],
            vec![(R, mem(100, 116)), (W, mem(200, 216))],
        ]);
        assert_eq!(pairs(&g), [(0, 1, "RAW".to_string())]);
    }

    #[test]
    fn war_and_waw() {
        let g = derive(&[
            vec![(R, mem(0, 8))],
            vec![(W, mem(4, 12))],
            vec![(W, mem(2, 6))],
        ]);
        assert_eq!(
            pairs(&g),
            [
                (0, 1, "WAR".to_string()),
                (0, 2, "WAR".to_string()),
                (1, 2, "WAW".to_string())
            ]
        );
    }

    #[test]
    fn readers_and_disjoint_ranges_are_independent() {
        let g = derive(&[
            vec![(R, mem(0, 8)), (W, mem(8, 16))],
            vec![(R, mem(0, 8)), (W, mem(16, 24))],
            // Touches [24, 32): adjacent to the writes above, not overlapping.
            vec![(RW, mem(24, 32))],
        ]);
        assert!(g.is_empty(), "{g:?}");
    }

    #[test]
    fn inout_is_every_hazard() {
        let g = derive(&[vec![(RW, mem(0, 8))], vec![(RW, mem(7, 9))]]);
        assert_eq!(pairs(&g), [(0, 1, "RAW+WAR+WAW".to_string())]);
    }

    #[test]
    fn diamond() {
        // A writes x; B and C read x and write y, z; D reads y and z.
        let g = derive(&[
            vec![(W, mem(0, 8))],
            vec![(R, mem(0, 8)), (W, mem(8, 16))],
            vec![(R, mem(0, 8)), (W, mem(16, 24))],
            vec![(R, mem(8, 16)), (R, mem(16, 24)), (W, mem(24, 32))],
        ]);
        let e: Vec<(usize, usize)> = g.iter().map(|e| (e.from.index(), e.to.index())).collect();
        assert_eq!(e, [(0, 1), (0, 2), (1, 3), (2, 3)]);
    }

    #[test]
    fn constant_params_order_against_everything() {
        let g = derive(&[
            vec![(RW, Region::ConstantParams)],
            vec![(RW, Region::ConstantParams)],
            vec![(R, mem(100, 108))],
            vec![(W, mem(200, 208))],
        ]);
        assert_eq!(
            pairs(&g),
            [
                (0, 1, "RAW+WAR+WAW".to_string()),
                (0, 2, "RAW".to_string()),
                (1, 2, "RAW".to_string()),
                (0, 3, "WAR+WAW".to_string()),
                (1, 3, "WAR+WAW".to_string())
            ]
        );
    }
}
