//! Warp operations in the CPU build: `shfl_down`, `shfl_xor`, `shfl_idx`, `ballot`, `any`,
//! `all` over the full mask, emulated over the 32 lanes of each warp of a block (lane = linear
//! thread index % 32, as on CUDA). A lane that reaches one deposits its value and suspends (the
//! block runs as coroutines, [`super::coop`]); when every live lane of its warp is there, the
//! results of all lanes are computed at once, then the lanes resume and read their own. So the
//! results are CUDA's, bit for bit.

use super::ops::{Arith, Num};

/// Lanes a warp has: CUDA's `warpSize` on every GPU opbox targets.
pub const WARP_SIZE: u32 = 32;

/// Which exchange a lane asks for, with its argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WarpOp {
    /// From lane `lane + delta`, or the lane's own value past the warp's end.
    Down(u32),
    /// From lane `lane ^ mask`.
    Xor(u32),
    /// From lane `src % 32`.
    Idx(u32),
    /// The mask of lanes whose predicate (the value, 0 or 1) is set.
    Ballot,
    Any,
    All,
    /// `warp_reduce_sum`/`max`: the five `shfl_xor` rounds (16, 8, 4, 2, 1) of a butterfly,
    /// each lane combining its value with its partner's by this function of their bits. Done
    /// in one exchange, it gives every lane what the five shuffles would, bit for bit.
    Butterfly(Combine),
}

/// How a butterfly combines two lanes' values (the DSL's `+` or `max` of their type).
#[derive(Clone, Copy)]
pub(crate) struct Combine(pub fn(u64, u64) -> u64);

impl Combine {
    /// `warp_reduce_sum`'s: the DSL's `+` of `T`.
    pub fn sum<T: WarpValue + Arith>() -> Combine {
        fn add<T: WarpValue + Arith>(a: u64, b: u64) -> u64 {
            T::from_bits64(a).add(T::from_bits64(b)).to_bits64()
        }
        Combine(add::<T>)
    }

    /// `warp_reduce_max`'s: the DSL's `max` of `T`.
    pub fn max<T: WarpValue + Num>() -> Combine {
        fn max<T: WarpValue + Num>(a: u64, b: u64) -> u64 {
            T::from_bits64(a).max(T::from_bits64(b)).to_bits64()
        }
        Combine(max::<T>)
    }
}

impl std::fmt::Debug for Combine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("warp reduction")
    }
}

impl WarpOp {
    fn same_kind(self, other: WarpOp) -> bool {
        std::mem::discriminant(&self) == std::mem::discriminant(&other)
    }
}

/// One warp's deposits and results, by lane.
#[derive(Clone, Default)]
pub(crate) struct WarpExchange {
    deposits: [Option<(WarpOp, u64)>; WARP_SIZE as usize],
    results: [u64; WARP_SIZE as usize],
}

impl WarpExchange {
    pub fn deposit(&mut self, lane: usize, op: WarpOp, bits: u64) {
        self.deposits[lane] = Some((op, bits));
    }

    pub fn result(&self, lane: usize) -> u64 {
        self.results[lane]
    }

    /// Computes every waiting lane's result and clears the deposits; a lane with no deposit
    /// (past the block's end, or returned) gives its reader the reader's own value. Fails when
    /// the lanes asked for different operations.
    pub fn complete(&mut self) -> Result<(), String> {
        let first = self.deposits.iter().flatten().next().map(|d| d.0);
        let Some(first) = first else {
            return Ok(());
        };
        if let Some((lane, (op, _))) = self
            .deposits
            .iter()
            .enumerate()
            .find_map(|(l, d)| d.filter(|d| !d.0.same_kind(first)).map(|d| (l, d)))
        {
            return Err(format!(
                "lane {lane} of a warp asks for {op:?} while another asks for {first:?}"
            ));
        }
        let value = |l: usize| self.deposits[l].map(|d| d.1);
        let mask = (0..WARP_SIZE as usize)
            .filter(|l| value(*l).is_some_and(|v| v != 0))
            .fold(0u32, |m, l| m | (1 << l));
        let live = (0..WARP_SIZE as usize)
            .filter(|l| self.deposits[*l].is_some())
            .fold(0u32, |m, l| m | (1 << l));
        if let WarpOp::Butterfly(Combine(combine)) = first {
            // A full warp: every lane ends with the same value, since lanes `l` and `l ^ o`
            // combine the same two values in each round and `+`/`max` are commutative (but for
            // which of two NaN payloads survives, where the CPU's NaNs already differ from
            // CUDA's canonical one). So lane 0's 31 combines give every lane's result.
            if live == u32::MAX {
                let mut v: [u64; WARP_SIZE as usize] =
                    std::array::from_fn(|l| value(l).unwrap_or_default());
                for o in [16, 8, 4, 2, 1] {
                    for l in 0..o {
                        v[l] = combine(v[l], v[l + o]);
                    }
                }
                self.results = [v[0]; WARP_SIZE as usize];
                self.deposits = [None; WARP_SIZE as usize];
                return Ok(());
            }
            let mut v: [Option<u64>; WARP_SIZE as usize] = std::array::from_fn(value);
            for o in [16, 8, 4, 2, 1] {
                let before = v;
                for (lane, slot) in v.iter_mut().enumerate() {
                    if let Some(own) = *slot {
                        // A missing partner gives the reader its own value, as a shuffle does.
                        *slot = Some(combine(own, before[lane ^ o].unwrap_or(own)));
                    }
                }
            }
            for (lane, r) in v.iter().enumerate() {
                if let Some(r) = r {
                    self.results[lane] = *r;
                }
            }
            self.deposits = [None; WARP_SIZE as usize];
            return Ok(());
        }
        for lane in 0..WARP_SIZE as usize {
            let Some((op, own)) = self.deposits[lane] else {
                continue;
            };
            let from = |src: usize| value(src).unwrap_or(own);
            self.results[lane] = match op {
                WarpOp::Down(d) => {
                    let src = lane + d as usize;
                    if src < WARP_SIZE as usize {
                        from(src)
                    } else {
                        own
                    }
                }
                WarpOp::Xor(m) => {
                    let src = lane ^ (m as usize);
                    if src < WARP_SIZE as usize {
                        from(src)
                    } else {
                        own
                    }
                }
                WarpOp::Idx(src) => from(src as usize % WARP_SIZE as usize),
                WarpOp::Ballot => u64::from(mask),
                WarpOp::Any => u64::from(mask != 0),
                WarpOp::All => u64::from(mask == live),
                WarpOp::Butterfly(_) => own,
            };
        }
        self.deposits = [None; WARP_SIZE as usize];
        Ok(())
    }
}

/// A value a shuffle moves: CUDA's `__shfl_*_sync` types the DSL has.
pub trait WarpValue: Copy {
    #[doc(hidden)]
    fn to_bits64(self) -> u64;
    #[doc(hidden)]
    fn from_bits64(bits: u64) -> Self;
}

macro_rules! warp_values {
    ($($t:ty => |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl WarpValue for $t {
            #[inline]
            fn to_bits64(self) -> u64 {
                let $v = self;
                $to
            }
            #[inline]
            fn from_bits64($b: u64) -> $t {
                $from
            }
        }
    )*};
}
warp_values! {
    i32 => |v| v as u32 as u64, |b| b as u32 as i32;
    u32 => |v| u64::from(v), |b| b as u32;
    i64 => |v| v as u64, |b| b as i64;
    u64 => |v| v, |b| b;
    f32 => |v| u64::from(v.to_bits()), |b| f32::from_bits(b as u32);
    f64 => |v| v.to_bits(), |b| f64::from_bits(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ops: &[(WarpOp, u64)]) -> Vec<u64> {
        let mut x = WarpExchange::default();
        for (lane, (op, v)) in ops.iter().enumerate() {
            x.deposit(lane, *op, *v);
        }
        x.complete().expect("one kind of op");
        (0..ops.len()).map(|l| x.result(l)).collect()
    }

    #[test]
    fn shuffles_follow_cuda() {
        let down: Vec<(WarpOp, u64)> = (0..32).map(|l| (WarpOp::Down(3), l)).collect();
        let got = run(&down);
        assert_eq!(got[0], 3);
        assert_eq!(got[28], 31);
        assert_eq!(got[29], 29, "past the end: the lane's own value");
        let xor: Vec<(WarpOp, u64)> = (0..32).map(|l| (WarpOp::Xor(1), l)).collect();
        assert_eq!(&run(&xor)[..4], &[1, 0, 3, 2]);
        let idx: Vec<(WarpOp, u64)> = (0..32).map(|l| (WarpOp::Idx(37), l * 10)).collect();
        assert!(run(&idx).iter().all(|v| *v == 50), "37 % 32 = lane 5");
    }

    #[test]
    fn votes_over_the_live_lanes() {
        let ballot: Vec<(WarpOp, u64)> = (0..32).map(|l| (WarpOp::Ballot, l % 2)).collect();
        assert_eq!(run(&ballot)[0], 0xaaaa_aaaa);
        let all: Vec<(WarpOp, u64)> = (0..20).map(|_| (WarpOp::All, 1)).collect();
        assert_eq!(run(&all)[0], 1, "lanes past a 20-thread block do not vote");
        let any: Vec<(WarpOp, u64)> = (0..32).map(|_| (WarpOp::Any, 0)).collect();
        assert_eq!(run(&any)[7], 0);
    }

    /// One butterfly exchange gives what five `shfl_xor` exchanges give, with the lanes past a
    /// partial warp's end reading their own values.
    #[test]
    fn a_butterfly_is_five_xor_shuffles() {
        fn add(a: u64, b: u64) -> u64 {
            u64::from((f32::from_bits(a as u32) + f32::from_bits(b as u32)).to_bits())
        }
        for lanes in [32usize, 20] {
            let start: Vec<u64> = (0..lanes)
                .map(|l| u64::from((l as f32 * 0.1 + 1e7 * (l % 3) as f32).to_bits()))
                .collect();
            let mut shuffled = start.clone();
            for o in [16, 8, 4, 2, 1] {
                let ops: Vec<(WarpOp, u64)> =
                    shuffled.iter().map(|v| (WarpOp::Xor(o), *v)).collect();
                let partner = run(&ops);
                shuffled = shuffled
                    .iter()
                    .zip(&partner)
                    .map(|(a, b)| add(*a, *b))
                    .collect();
            }
            let ops: Vec<(WarpOp, u64)> = start
                .iter()
                .map(|v| (WarpOp::Butterfly(Combine(add)), *v))
                .collect();
            assert_eq!(run(&ops), shuffled, "{lanes} lanes");
        }
    }

    #[test]
    fn mixed_operations_are_refused() {
        let mut x = WarpExchange::default();
        x.deposit(0, WarpOp::Down(1), 0);
        x.deposit(1, WarpOp::Ballot, 0);
        assert!(x.complete().unwrap_err().contains("lane 1"));
    }
}
