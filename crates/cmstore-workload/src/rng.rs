//! The seeded generator behind every choice a workload makes.
//!
//! The bits come from `rand_xoshiro`'s SplitMix64; the helpers on top (`below`, `range`,
//! `chance`, `pick`) reduce them with a plain modulo. Both are fixed on purpose: the same seed
//! has given the same traffic since the generator was written, and benchmark inputs stay
//! comparable across commits only while it does.

use rand_xoshiro::rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;

/// SplitMix64's increment, mixed into the seed so that seed 0 does not start at state 0.
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A small, fast, seedable generator (SplitMix64). Not for anything secret.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::seed_from_u64(seed ^ GOLDEN_GAMMA))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            // A modulo, not rand's unbiased sampling: it keeps each seed's sequence as it was.
            self.next_u64() % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written SplitMix64 this generator replaced, kept to pin the sequence.
    fn reference(seed: u64, n: usize) -> Vec<u64> {
        let mut state = seed ^ GOLDEN_GAMMA;
        (0..n)
            .map(|_| {
                state = state.wrapping_add(GOLDEN_GAMMA);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            })
            .collect()
    }

    #[test]
    fn the_sequence_is_the_one_seeds_have_always_given() {
        for seed in [0, 1, 7, u64::MAX] {
            let mut rng = Rng::new(seed);
            let got: Vec<u64> = (0..1000).map(|_| rng.next_u64()).collect();
            assert_eq!(got, reference(seed, 1000), "seed {seed}");
        }
    }

    #[test]
    fn helpers_stay_in_bounds() {
        let mut rng = Rng::new(1);
        assert_eq!(rng.below(0), 0);
        for _ in 0..1000 {
            assert!(rng.below(7) < 7);
            assert!((3..=5).contains(&rng.range(3, 5)));
            assert_eq!(rng.range(4, 4), 4);
            assert!(!rng.chance(0));
            assert!(rng.chance(100));
            assert!([1, 2, 3].contains(rng.pick(&[1, 2, 3])));
        }
    }
}
