//! Censuses: what a batch of values is made of (zeros, signs, non-finite values, distinct
//! values), and what changed between two stages of the same values (clipping, masking).
//!
//! The counts are mergeable states ([`ValueCounts`], [`ChangeCounts`]: insert, combine,
//! finalize). The distinct-value count of [`value_census`] is exact and is *not* mergeable:
//! two shards' counts do not say how many values they share. It is computed on the
//! order-preserving keys ([`crate::sortkey`]): by an LSD radix sort and one scan for key changes,
//! or, for long inputs of 32-bit keys, by bucket and bitmap without a sort.

use crate::error::{Result, StatsError, check_non_empty, check_same_len};
use crate::rank::{Histogram, RADIX, RadixKey, RankSample, radix_sort_by, with_buffers};
use crate::sample::Sample;
use crate::simd::{LANES, by_lane};

/// Values per block of the counting loops: the block's counts fit in `u32` lanes, which
/// vectorise twice as wide as `u64`.
const BLOCK: usize = 4096;

/// Mergeable counts of a value census.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValueCounts {
    /// Values seen.
    pub n: u64,
    /// NaN values.
    pub n_nan: u64,
    /// `+inf` values.
    pub n_posinf: u64,
    /// `-inf` values.
    pub n_neginf: u64,
    /// Values `== 0` (either zero).
    pub n_zero: u64,
    /// Finite values with `|x| <= atol` (the zeros included).
    pub n_near_zero: u64,
    /// Finite values `> 0`.
    pub n_pos: u64,
    /// Finite values `< 0`.
    pub n_neg: u64,
}

impl ValueCounts {
    /// Count one value.
    pub fn insert(&mut self, x: f64, atol: f64) {
        let finite = x.is_finite();
        self.n += 1;
        self.n_nan += u64::from(x.is_nan());
        self.n_posinf += u64::from(x == f64::INFINITY);
        self.n_neginf += u64::from(x == f64::NEG_INFINITY);
        self.n_zero += u64::from(x == 0.0);
        self.n_near_zero += u64::from(x.abs() <= atol);
        self.n_pos += u64::from(finite && x > 0.0);
        self.n_neg += u64::from(finite && x < 0.0);
    }

    /// Count a slice (the `atol` of every part of one census must be the same).
    #[must_use]
    pub fn from_slice<T: Sample>(xs: &[T], atol: f64) -> Self {
        count_values(xs, atol)
    }

    /// The counts of two disjoint parts together.
    #[must_use]
    pub fn combine(&self, other: &Self) -> Self {
        Self {
            n: self.n + other.n,
            n_nan: self.n_nan + other.n_nan,
            n_posinf: self.n_posinf + other.n_posinf,
            n_neginf: self.n_neginf + other.n_neginf,
            n_zero: self.n_zero + other.n_zero,
            n_near_zero: self.n_near_zero + other.n_near_zero,
            n_pos: self.n_pos + other.n_pos,
            n_neg: self.n_neg + other.n_neg,
        }
    }

    /// Finite values (`n - n_nan - n_posinf - n_neginf`).
    #[must_use]
    pub fn n_finite(&self) -> u64 {
        self.n - self.n_nan - self.n_posinf - self.n_neginf
    }

    /// `count / n_finite`, or `None` when no value is finite.
    #[must_use]
    pub fn finite_frac(&self, count: u64) -> Option<f64> {
        let n = self.n_finite();
        (n > 0).then(|| count as f64 / n as f64)
    }
}

#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_values<T: Sample>(xs: &[T], atol: f64) -> ValueCounts {
    let mut total = ValueCounts::default();
    for block in xs.chunks(BLOCK) {
        // Branch-free u32 lane counters; the comparisons below are false for NaN, and
        // `|x| <= atol` (atol finite) and `0 < x < inf` exclude the non-finite values.
        let (mut nan, mut pinf, mut ninf, mut zero, mut near, mut pos, mut neg) =
            (0u32, 0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
        for &x in block {
            let x = x.to_f64();
            nan += u32::from(x.is_nan());
            pinf += u32::from(x == f64::INFINITY);
            ninf += u32::from(x == f64::NEG_INFINITY);
            zero += u32::from(x == 0.0);
            near += u32::from(x.abs() <= atol);
            pos += u32::from(x > 0.0 && x < f64::INFINITY);
            neg += u32::from(x < 0.0 && x > f64::NEG_INFINITY);
        }
        total = total.combine(&ValueCounts {
            n: block.len() as u64,
            n_nan: u64::from(nan),
            n_posinf: u64::from(pinf),
            n_neginf: u64::from(ninf),
            n_zero: u64::from(zero),
            n_near_zero: u64::from(near),
            n_pos: u64::from(pos),
            n_neg: u64::from(neg),
        });
    }
    total
}

/// A value census: the mergeable counts and the exact number of distinct finite values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueCensus {
    /// The counts.
    pub counts: ValueCounts,
    /// Distinct finite values (`-0.0` and `+0.0` are one value).
    pub n_unique: u64,
}

fn check_atol(atol: f64) -> Result<()> {
    if atol.is_finite() && atol >= 0.0 {
        Ok(())
    } else {
        Err(StatsError::invalid("atol", format!("must be a finite non-negative number, got {atol}")))
    }
}

/// Census of `values`: non-finite counts, zeros, near-zeros (`|x| <= atol`), signs, and the
/// number of distinct finite values.
///
/// # Errors
/// Empty `values`; `atol` negative or not finite.
pub fn value_census<T: RankSample>(values: &[T], atol: f64) -> Result<ValueCensus> {
    check_non_empty("values", values.len())?;
    check_atol(atol)?;
    let counts = ValueCounts::from_slice(values, atol);
    Ok(ValueCensus { counts, n_unique: count_distinct_finite(values) })
}

#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn keys_and_histograms<T: RankSample>(values: &[T], keys: &mut [T::Key]) -> Vec<Histogram> {
    let mut hist = vec![[0usize; RADIX]; T::Key::PASSES];
    for (k, &x) in keys.iter_mut().zip(values) {
        *k = x.rank_key();
    }
    for &k in keys.iter() {
        for (pass, h) in hist.iter_mut().enumerate() {
            h[k.digit(pass)] += 1;
        }
    }
    hist
}

/// Distinct finite values: sort the keys, count key changes among finite keys. NaN and
/// infinite keys sort to the ends and are skipped. Long inputs of 32-bit keys are counted by
/// bucket instead ([`distinct_by_buckets`]).
fn count_distinct_finite<T: RankSample>(values: &[T]) -> u64 {
    if (BUCKET_MIN_LEN..=u32::MAX as usize).contains(&values.len()) && std::mem::size_of::<T::Key>() == 4 {
        distinct_by_buckets(values)
    } else {
        distinct_by_sort(values)
    }
}

/// [`count_distinct_finite`] by a radix sort of the keys.
fn distinct_by_sort<T: RankSample>(values: &[T]) -> u64 {
    with_buffers(values.len(), |keys: &mut [T::Key], scratch| {
        let hist = keys_and_histograms(values, keys);
        let (keys, _) = radix_sort_by(keys, scratch, &hist, |&k| k);
        let mut distinct = 0u64;
        let mut prev: Option<T::Key> = None;
        for &k in keys.iter() {
            if prev != Some(k) {
                prev = Some(k);
                distinct += u64::from(T::key_is_finite(k));
            }
        }
        distinct
    })
}

/// Inputs of 32-bit keys at least this long count their distinct values by bucket: below, the
/// 65,536 buckets cost more than the sort they save (at 1e5 on the Intel VM: 1.44 ms against the
/// sort's 0.86 ms; at 1e6: 7-10 ms against 22).
const BUCKET_MIN_LEN: usize = 1 << 18;
/// Buckets of [`distinct_by_buckets`]: a 32-bit key's high half chooses its bucket, its low half
/// (a `u16`) is a bit of the bucket's bitmap.
const BUCKETS: usize = 1 << 16;
/// A bucket with fewer keys than this sorts them instead of clearing and counting a bitmap (the
/// bitmap's 1,024 words cost about as much as sorting 64 keys; a few hundred keys per bucket, as
/// 1e6 normal values give, took 22 ms to sort bucket by bucket and 7 ms by bitmap).
const BITMAP_MIN: usize = 64;

/// The distinct finite values of `values` (32-bit keys, fewer than 2^32): one pass counts the keys
/// by their high 16 bits, one scatters each key's low 16 bits into its bucket, and each bucket counts
/// its distinct low halves in a 65,536-bit bitmap (8 KiB, in L1) or, when small, by sorting them. No
/// full sort: two passes over memory instead of the four of an 8-bit radix sort. A bucket whose
/// range of keys holds a non-finite one (the finite keys are one contiguous range) is counted key
/// by key.
fn distinct_by_buckets<T: RankSample>(values: &[T]) -> u64 {
    let n = values.len();
    with_buffers(n, |keys: &mut [u32], scratch: &mut [u32]| {
        let counts = bucket_keys(values, keys);
        let mut starts = vec![0usize; counts.len() + 1];
        for (b, &c) in counts.iter().enumerate() {
            starts[b + 1] = starts[b] + c as usize;
        }
        let lows: &mut [u16] = &mut bytemuck::cast_slice_mut(scratch)[..n];
        let mut next = starts[..counts.len()].to_vec();
        scatter_lows(keys, lows, &mut next);
        let mut bitmap = vec![0u64; (1 << 16) / 64];
        let mut distinct = 0u64;
        for b in 0..counts.len() {
            let bucket = &mut lows[starts[b]..starts[b + 1]];
            if bucket.is_empty() {
                continue;
            }
            let high = (b as u64) << 16;
            let finite = |low: u64| T::key_is_finite(T::Key::from_u64(high | low));
            if !(finite(0) && finite(0xFFFF)) {
                bucket.sort_unstable();
                let mut prev = None;
                for &low in bucket.iter() {
                    if prev != Some(low) {
                        prev = Some(low);
                        distinct += u64::from(finite(u64::from(low)));
                    }
                }
            } else if bucket.len() < BITMAP_MIN {
                bucket.sort_unstable();
                distinct += 1 + bucket.windows(2).filter(|w| w[0] != w[1]).count() as u64;
            } else {
                distinct += count_bits(bucket, &mut bitmap);
            }
        }
        distinct
    })
}

/// Each value's 32-bit key into `keys`, and the count of keys per bucket (high 16 bits).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn bucket_keys<T: RankSample>(values: &[T], keys: &mut [u32]) -> Vec<u32> {
    let mut counts = vec![0u32; BUCKETS];
    for (k, &x) in keys.iter_mut().zip(values) {
        // a 32-bit key (the caller checked its width): lossless
        *k = x.rank_key().to_u64() as u32;
        counts[(*k >> 16) as usize] += 1;
    }
    counts
}

/// The low 16 bits of each key into its bucket of `lows`; `next` holds each bucket's next slot.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter_lows(keys: &[u32], lows: &mut [u16], next: &mut [usize]) {
    for &k in keys {
        let slot = &mut next[(k >> 16) as usize];
        lows[*slot] = k as u16;
        *slot += 1;
    }
}

/// The distinct values among `lows`, by setting their bits in `bitmap` (all clear on entry and on
/// return).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_bits(lows: &[u16], bitmap: &mut [u64]) -> u64 {
    for &low in lows {
        bitmap[usize::from(low >> 6)] |= 1u64 << (low & 63);
    }
    let mut distinct = 0u64;
    for word in bitmap.iter_mut() {
        distinct += u64::from(word.count_ones());
        *word = 0;
    }
    distinct
}

/// Mergeable state of a change census between two stages of the same values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChangeCounts {
    /// Pairs seen.
    pub n: u64,
    /// Pairs that changed (see [`change_census`] for the rule).
    pub n_changed: u64,
    /// Pairs where both values are finite.
    pub n_finite_pairs: u64,
    /// Sum of `|after - before|` over the finite pairs.
    pub sum_abs_change: f64,
    /// Largest `|after - before|` over the finite pairs (0 when there is none).
    pub max_abs_change: f64,
}

impl ChangeCounts {
    /// Count one pair.
    pub fn insert(&mut self, before: f64, after: f64, atol: f64) {
        let d = (after - before).abs();
        let finite = before.is_finite() && after.is_finite();
        self.n += 1;
        self.n_changed += u64::from(changed(before, after, d, atol));
        if finite {
            self.n_finite_pairs += 1;
            self.sum_abs_change += d;
            self.max_abs_change = self.max_abs_change.max(d);
        }
    }

    /// The counts of two disjoint parts together.
    #[must_use]
    pub fn combine(&self, other: &Self) -> Self {
        Self {
            n: self.n + other.n,
            n_changed: self.n_changed + other.n_changed,
            n_finite_pairs: self.n_finite_pairs + other.n_finite_pairs,
            sum_abs_change: self.sum_abs_change + other.sum_abs_change,
            max_abs_change: self.max_abs_change.max(other.max_abs_change),
        }
    }

    /// `n_changed / n`, or `None` for the empty state.
    #[must_use]
    pub fn changed_frac(&self) -> Option<f64> {
        (self.n > 0).then(|| self.n_changed as f64 / self.n as f64)
    }

    /// Mean `|after - before|` over the finite pairs, or `None` when there is none.
    #[must_use]
    pub fn mean_abs_change(&self) -> Option<f64> {
        (self.n_finite_pairs > 0).then(|| self.sum_abs_change / self.n_finite_pairs as f64)
    }

    /// Largest `|after - before|` over the finite pairs, or `None` when there is none.
    #[must_use]
    pub fn max_abs_change(&self) -> Option<f64> {
        (self.n_finite_pairs > 0).then_some(self.max_abs_change)
    }
}

/// The change rule. `d = |after - before|` is NaN exactly when a NaN is involved or both are
/// the same infinity, and `d > atol` is then false: so NaN→NaN and inf→inf are unchanged, and
/// only NaN↔number needs its own term.
#[inline]
fn changed(before: f64, after: f64, d: f64, atol: f64) -> bool {
    (before.is_nan() != after.is_nan()) || d > atol
}

#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_changes<A: Sample, B: Sample>(before: &[A], after: &[B], atol: f64) -> ChangeCounts {
    let mut total = ChangeCounts::default();
    for (bs, as_) in before.chunks(BLOCK).zip(after.chunks(BLOCK)) {
        // Block sums keep the rounding of the running total to O((BLOCK + n / BLOCK) eps).
        let (mut n_changed, mut n_finite) = ([0u32; LANES], [0u32; LANES]);
        let (mut sum, mut max) = ([0.0f64; LANES], [0.0f64; LANES]);
        let lane = |k: usize, b: &A, a: &B| {
            let (b, a) = (b.to_f64(), a.to_f64());
            let d = (a - b).abs();
            let finite = b.is_finite() & a.is_finite();
            n_changed[k] += u32::from(changed(b, a, d, atol));
            n_finite[k] += u32::from(finite);
            let kept = if finite { d } else { 0.0 };
            sum[k] += kept;
            max[k] = max[k].max(kept);
        };
        by_lane(bs, as_, lane);
        total = total.combine(&ChangeCounts {
            n: bs.len() as u64,
            n_changed: n_changed.iter().map(|&c| u64::from(c)).sum(),
            n_finite_pairs: n_finite.iter().map(|&c| u64::from(c)).sum(),
            sum_abs_change: sum.iter().sum(),
            max_abs_change: max.iter().fold(0.0, |m, &v| m.max(v)),
        });
    }
    total
}

/// Change census between `before` and `after` (two stages of the same values).
///
/// A pair counts as changed when `|after - before| > atol` (in `f64`), when exactly one of
/// the two is NaN, or when they are different infinities; NaN→NaN and equal infinities are
/// unchanged. Absolute changes are summarised over the pairs where both values are finite.
///
/// # Errors
/// `after` of another length than `before`; empty `before`; `atol` negative or not finite.
pub fn change_census<A: Sample, B: Sample>(before: &[A], after: &[B], atol: f64) -> Result<ChangeCounts> {
    check_same_len("before", before.len(), "after", after.len())?;
    check_non_empty("before", before.len())?;
    check_atol(atol)?;
    Ok(count_changes(before, after, atol))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    #[test]
    fn value_census_counts() {
        let xs = [0.0f32, -0.0, 1e-9, -2.0, 3.0, 3.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1e-9];
        let c = value_census(&xs, 1e-8).unwrap();
        let k = c.counts;
        assert_eq!((k.n, k.n_nan, k.n_posinf, k.n_neginf), (10, 1, 1, 1));
        assert_eq!((k.n_zero, k.n_near_zero, k.n_pos, k.n_neg), (2, 4, 3, 2));
        assert_eq!(k.n_finite(), 7);
        assert_eq!(c.n_unique, 5); // 0, 1e-9, -2, 3, -1e-9
        assert_eq!(value_census(&[1.0f64], -1.0).unwrap_err().arg(), "atol");
        let empty: [f64; 0] = [];
        assert_eq!(value_census(&empty, 0.0).unwrap_err().arg(), "values");
    }

    #[test]
    fn distinct_count_on_the_radix_path() {
        let xs: Vec<f64> = (0..50_000).map(|i| f64::from(i % 997) * 0.25 - 100.0).collect();
        assert_eq!(value_census(&xs, 0.0).unwrap().n_unique, 997);
        let ys: Vec<f32> = (0..50_000).map(|i| i as f32).collect();
        assert_eq!(value_census(&ys, 0.0).unwrap().n_unique, 50_000);
    }

    #[test]
    fn change_rule() {
        let before = [1.0, NAN, NAN, 1.0, INF, INF, -0.0, 2.0, 5.0];
        let after = [1.0f32, f32::NAN, 1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, 2.5, 4.0];
        let c = change_census(&before, &after, 0.0).unwrap();
        assert_eq!((c.n, c.n_changed, c.n_finite_pairs), (9, 5, 4));
        assert_eq!(c.max_abs_change(), Some(1.0));
        assert_eq!(c.mean_abs_change(), Some(1.5 / 4.0));
        assert_eq!(change_census(&before, &after, 0.6).unwrap().n_changed, 4);
        assert_eq!(change_census(&before[..2], &after, 0.0).unwrap_err().arg(), "after");
        let none = change_census(&[NAN], &[1.0], 0.0).unwrap();
        assert_eq!((none.max_abs_change(), none.mean_abs_change()), (None, None));
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![8 => (-50i32..50).prop_map(|v| f64::from(v) * 0.125), 1 => Just(NAN), 1 => Just(INF), 1 => Just(-INF)]
    }

    #[test]
    fn distinct_by_buckets_counts_a_crowded_bucket_by_its_bitmap() {
        // 300,000 values in one bucket (1.0 plus up to 4,999 ulps: one high half of the key), 5,000
        // distinct, beside a few in other buckets, -0.0 and +0.0 as one, and non-finite values
        let mut xs: Vec<f32> = (0..300_000u32).map(|i| f32::from_bits(1.0f32.to_bits() + i % 5000)).collect();
        xs.extend([0.0, -0.0, 2.5, -2.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
        assert!(xs.len() >= BUCKET_MIN_LEN);
        assert_eq!(distinct_by_buckets(&xs), 5000 + 3);
        assert_eq!(distinct_by_sort(&xs), 5000 + 3);
        assert_eq!(value_census(&xs, 0.0).unwrap().n_unique, 5003);
    }

    proptest! {
        #[test]
        fn distinct_by_buckets_equals_the_sort_and_a_hash_set(
            xs in prop::collection::vec(prop_oneof![
                (-3000i32..3000).prop_map(|v| v as f32 / 7.0),
                any::<u32>().prop_map(f32::from_bits),
                Just(0.0f32), Just(-0.0f32), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(f32::NAN),
                Just(f32::MIN_POSITIVE / 2.0), Just(f32::MAX), Just(-f32::MAX),
            ], 1..6000),
        ) {
            // every bucket path: tiny buckets (sorted), the bitmap (a few thousand values near 0 share
            // buckets), and the buckets holding infinities and NaN keys
            let oracle: std::collections::HashSet<u32> =
                xs.iter().filter(|x| x.is_finite()).map(|&x| if x == 0.0 { 0 } else { x.to_bits() }).collect();
            prop_assert_eq!(distinct_by_sort(&xs), oracle.len() as u64);
            prop_assert_eq!(distinct_by_buckets(&xs), oracle.len() as u64);
        }
    }

    proptest! {
        #[test]
        fn states_merge_and_agree_with_insert(
            a in prop::collection::vec((value(), value()), 0..300),
            b in prop::collection::vec((value(), value()), 0..300),
        ) {
            let atol = 0.2;
            let split = |v: &[(f64, f64)]| -> (Vec<f64>, Vec<f64>) { v.iter().copied().unzip() };
            let (ab, aa) = split(&a);
            let (bb, ba) = split(&b);
            let (mut vi, mut ci) = (ValueCounts::default(), ChangeCounts::default());
            for &(x, y) in a.iter().chain(&b) {
                vi.insert(x, atol);
                ci.insert(x, y, atol);
            }
            let v = ValueCounts::from_slice(&ab, atol).combine(&ValueCounts::from_slice(&bb, atol));
            prop_assert_eq!(v, vi);
            prop_assert_eq!(v.n_pos + v.n_neg + v.n_zero, v.n_finite());
            let c = count_changes(&ab, &aa, atol).combine(&count_changes(&bb, &ba, atol));
            prop_assert_eq!((c.n, c.n_changed, c.n_finite_pairs), (ci.n, ci.n_changed, ci.n_finite_pairs));
            prop_assert!((c.sum_abs_change - ci.sum_abs_change).abs() <= 1e-9);
            prop_assert_eq!(c.max_abs_change, ci.max_abs_change);
        }
    }
}
