//! Spearman's rank correlation, over a whole batch and within each group.
//!
//! Spearman's rho is Pearson's correlation of the ranks, with tied values given the average of
//! the ranks they span (Spearman 1904; Kendall & Gibbons, *Rank Correlation Methods*, 1990,
//! ch. 3), which is what `scipy.stats.spearmanr` computes.
//!
//! Algorithm. Each pair `(x_i, y_i)` becomes a pair of order-preserving unsigned keys
//! ([`crate::sortkey`]). The pairs are sorted by the x key (LSD radix sort, 8-bit digits,
//! Herf 2001; a comparison sort for small inputs), and each run of equal x keys has its x key
//! overwritten by the *doubled, centred* average rank `2 r - (n + 1) = start + end - n`, an
//! integer. The same pairs are then sorted by the untouched y key and, run by run of equal y,
//! `Σ dx·dy` is accumulated. Sorting the pairs themselves (instead of an index permutation)
//! keeps every memory access sequential or a radix scatter: no random gather of ranks.
//! All sums are exact integers (`i128`), so the only rounding is the final division. On large
//! inputs without NaN, three passes over memory are fused away (`fused_rank_sums`): one read of
//! both inputs counts every digit histogram, the sort by x starts from the inputs, and the pass that
//! writes the x ranks is the first pass of the sort by y.
//!
//! A side with at most [`TABLE_MAX_DISTINCT`] distinct values (binary or rounded rewards) is
//! ranked without sorting: a small hash table counts each distinct key, the sorted distinct
//! keys give each its average rank, and a second pass writes the ranks. Only the other side
//! is then sorted.
//!
//! Ranks are not mergeable: the rank of a sample depends on every other sample, so no partial
//! state of one shard combines with another's. Shards must be concatenated first.

use crate::error::{Result, StatsError, check_non_empty, check_same_len};
use crate::groups::{GroupIndex, Groups};
use crate::sample::{NanPolicy, raise_on_nan};
use crate::sortkey::SortKey;
use bytemuck::Pod;
use memmap2::{Advice, MmapMut};
use std::cell::RefCell;

/// Bits per radix digit. 256 buckets keep the scatter's write streams in L1; 11-bit digits
/// (three passes for `f32`) measured slower on the dev machine despite the pass fewer.
const DIGIT_BITS: u32 = 8;
/// Buckets per radix pass.
pub(crate) const RADIX: usize = 1 << DIGIT_BITS;
/// Below this many elements a comparison sort beats the radix sort's per-pass bucket overhead.
const RADIX_MIN_LEN: usize = 1 << 12;

/// An unsigned sort key the radix sort can take apart in [`DIGIT_BITS`]-bit digits.
pub trait RadixKey: Pod + Ord + Default + Send + Sync + std::fmt::Debug {
    /// Number of digits covering the key.
    const PASSES: usize;
    /// The wider of this key and `K` (both are `u32` or `u64`): a pair of the two is stored as
    /// `[Join<K>; 2]`, a plain-old-data array the sort buffers can hold.
    type Join<K: RadixKey>: RadixKey;
    /// The key widened to `u64`.
    fn to_u64(self) -> u64;
    /// The key of `v`, truncated to the key's width (lossless for a key widened by `to_u64`).
    fn from_u64(v: u64) -> Self;
    /// Digit `pass` (0 = least significant).
    #[inline]
    fn digit(self, pass: usize) -> usize {
        ((self.to_u64() >> (pass as u32 * DIGIT_BITS)) & (RADIX as u64 - 1)) as usize
    }
    /// Store a signed rank (`|r| < 2^31`) in a key slot, as a bit pattern.
    fn from_rank(r: i64) -> Self;
    /// Read back a rank stored by [`RadixKey::from_rank`].
    fn to_rank(self) -> i64;
    /// A key no non-NaN float maps to (the key of a NaN): marks an empty hash-table slot.
    const EMPTY: Self;
}

impl RadixKey for u32 {
    const EMPTY: Self = u32::MAX;
    const PASSES: usize = 32usize.div_ceil(DIGIT_BITS as usize);
    type Join<K: RadixKey> = K;
    #[inline]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    #[inline]
    fn from_rank(r: i64) -> Self {
        r as i32 as u32
    }
    #[inline]
    fn to_rank(self) -> i64 {
        i64::from(self as i32)
    }
}

impl RadixKey for u64 {
    const EMPTY: Self = u64::MAX;
    const PASSES: usize = 64usize.div_ceil(DIGIT_BITS as usize);
    type Join<K: RadixKey> = u64;
    #[inline]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline]
    fn from_rank(r: i64) -> Self {
        r as u64
    }
    #[inline]
    fn to_rank(self) -> i64 {
        self as i64
    }
}

/// A float that can be ranked: its order-preserving key is a [`RadixKey`].
pub trait RankSample: crate::sample::Sample {
    /// The key type (`u32` for `f32`, `u64` for `f64`).
    type Key: RadixKey;
    /// The order-preserving key ([`SortKey::sort_key`]): `-0.0` and `+0.0` share it.
    fn rank_key(self) -> Self::Key;
    /// True when `key` is the key of a finite value.
    fn key_is_finite(key: Self::Key) -> bool;
    /// The value whose key `key` is, widened to `f64` (`-0.0` reads as `+0.0`, as in the
    /// selection kernels).
    fn key_value(key: Self::Key) -> f64;
}

impl RankSample for f32 {
    type Key = u32;
    #[inline]
    fn rank_key(self) -> u32 {
        self.sort_key()
    }
    #[inline]
    fn key_is_finite(key: u32) -> bool {
        f32::from_key(key).is_finite()
    }
    #[inline]
    fn key_value(key: u32) -> f64 {
        f64::from(f32::from_key(key))
    }
}

impl RankSample for f64 {
    type Key = u64;
    #[inline]
    fn rank_key(self) -> u64 {
        self.sort_key()
    }
    #[inline]
    fn key_is_finite(key: u64) -> bool {
        f64::from_key(key).is_finite()
    }
    #[inline]
    fn key_value(key: u64) -> f64 {
        f64::from_key(key)
    }
}

/// Per-pass digit counts of a set of keys.
pub(crate) type Histogram = [usize; RADIX];

/// LSD radix sort of `items` by `key`, given the digit histograms of every pass
/// (`hist[pass][digit]`); `scratch` is at least as long as `items`. Passes whose digit is the
/// same for every item are skipped. Returns `(sorted, spare)`: the sorted items (in `items`'
/// or `scratch`'s memory, by the parity of the passes run) and the other buffer, whose
/// contents are garbage.
pub(crate) fn radix_sort_by<'a, I: Copy, K: RadixKey>(
    items: &'a mut [I],
    scratch: &'a mut [I],
    hist: &[Histogram],
    key: impl Fn(&I) -> K + Copy,
) -> (&'a mut [I], &'a mut [I]) {
    radix_sort_from(items, scratch, hist, 0, key)
}

/// [`radix_sort_by`] from pass `first` on: `items` are already ordered by the digits of the
/// passes before.
fn radix_sort_from<'a, I: Copy, K: RadixKey>(
    items: &'a mut [I],
    scratch: &'a mut [I],
    hist: &[Histogram],
    first: usize,
    key: impl Fn(&I) -> K + Copy,
) -> (&'a mut [I], &'a mut [I]) {
    let n = items.len();
    let passes = if n < 2 { Vec::new() } else { live_passes(&[(hist, n)], first) };
    radix_passes(items, &mut scratch[..n], hist, &passes, key)
}

#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter<I: Copy, K: RadixKey>(
    src: &[I],
    dst: &mut [I],
    offsets: &mut Histogram,
    pass: usize,
    key: impl Fn(&I) -> K,
) {
    for it in src {
        let slot = &mut offsets[key(it).digit(pass)];
        dst[*slot] = *it;
        *slot += 1;
    }
}

/// A pair of keys, `[x, y]`, both widened to the wider key type. After ranking by x, the x
/// slot holds x's doubled, centred rank.
type Pair<W> = [W; 2];
/// The pair type of samples `A` and `B`.
type PairOf<A, B> = Pair<<<A as RankSample>::Key as RadixKey>::Join<<B as RankSample>::Key>>;

/// The pair of two raw keys, widened.
#[inline]
fn pair<W: RadixKey>(x: impl RadixKey, y: impl RadixKey) -> Pair<W> {
    [W::from_u64(x.to_u64()), W::from_u64(y.to_u64())]
}

/// Exact sums of the doubled, centred ranks `dx = 2 r_x - (n + 1)`, `dy` likewise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RankSums {
    sxy: i128,
    sxx: i128,
    syy: i128,
}

impl RankSums {
    /// Pearson's r of the ranks; `None` when x or y is constant (or there are fewer than 2 pairs).
    fn rho(self) -> Option<f64> {
        if self.sxx == 0 || self.syy == 0 {
            return None;
        }
        // One rounding in the product and one in sqrt: identical rankings give exactly ±1.
        let r = self.sxy as f64 / (self.sxx as f64 * self.syy as f64).sqrt();
        Some(r.clamp(-1.0, 1.0))
    }
}

/// Digit histograms of the keys `key` picks from `items`.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
pub(crate) fn histograms<I, K: RadixKey>(items: &[I], key: impl Fn(&I) -> K) -> Vec<Histogram> {
    let mut hist = vec![[0usize; RADIX]; K::PASSES];
    for it in items {
        let k = key(it);
        for (pass, h) in hist.iter_mut().enumerate() {
            h[k.digit(pass)] += 1;
        }
    }
    hist
}

/// Sort `pairs` by x and overwrite each x key by its doubled, centred average rank; returns
/// `Σ dx²` and `(sorted, spare)` as [`radix_sort_by`].
fn rank_x<'a, W: RadixKey>(
    pairs: &'a mut [Pair<W>],
    scratch: &'a mut [Pair<W>],
) -> (i128, &'a mut [Pair<W>], &'a mut [Pair<W>]) {
    let n = pairs.len();
    let (pairs, spare) = if n < RADIX_MIN_LEN {
        pairs.sort_unstable_by_key(|p| p[0]);
        (pairs, scratch)
    } else {
        let hist = histograms(pairs, |p| p[0]);
        radix_sort_by(pairs, scratch, &hist, |p| p[0])
    };
    let mut sxx = 0i128;
    let mut start = 0;
    while start < n {
        let key = pairs[start][0];
        let end = start + pairs[start..].iter().take_while(|p| p[0] == key).count();
        let d = (start + end) as i64 - n as i64;
        for p in &mut pairs[start..end] {
            p[0] = W::from_rank(d);
        }
        sxx += (end - start) as i128 * i128::from(d * d);
        start = end;
    }
    (sxx, pairs, spare)
}

/// Sort `pairs` by y; returns `(Σ dx·dy, Σ dy²)` where `dx = rank_of(x slot)`.
fn rank_y<W: RadixKey>(pairs: &mut [Pair<W>], scratch: &mut [Pair<W>], rank_of: impl Fn(W) -> i64) -> (i128, i128) {
    let n = pairs.len();
    let pairs = if n < RADIX_MIN_LEN {
        pairs.sort_unstable_by_key(|p| p[1]);
        pairs
    } else {
        let hist = histograms(pairs, |p| p[1]);
        radix_sort_by(pairs, scratch, &hist, |p| p[1]).0
    };
    y_runs(pairs, rank_of)
}

/// `(Σ dx·dy, Σ dy²)` of `pairs` sorted by y, where `dx = rank_of(x slot)`.
fn y_runs<W: RadixKey>(pairs: &[Pair<W>], rank_of: impl Fn(W) -> i64) -> (i128, i128) {
    y_runs_from(pairs, 0, pairs.len(), rank_of)
}

/// [`y_runs`] of `pairs` at global positions `at..` of `n` pairs sorted by y.
fn y_runs_from<W: RadixKey>(pairs: &[Pair<W>], at: usize, n: usize, rank_of: impl Fn(W) -> i64) -> (i128, i128) {
    let len = pairs.len();
    // Σ dx·dy = Σ over runs of equal y of dy · Σ dx (|Σ dx| < 2^62 within one run; a single
    // product |dx · dy| < 2^62 too).
    let (mut sxy, mut syy) = (0i128, 0i128);
    let mut start = 0;
    while start < len {
        let key = pairs[start][1];
        if start + 1 == len || pairs[start + 1][1] != key {
            // a value of its own, the common case of continuous data
            let d = (2 * (at + start) + 1) as i64 - n as i64;
            sxy += i128::from(rank_of(pairs[start][0]) * d);
            syy += i128::from(d * d);
            start += 1;
            continue;
        }
        let mut sum_dx = 0i64;
        let mut end = start;
        while end < len && pairs[end][1] == key {
            sum_dx += rank_of(pairs[end][0]);
            end += 1;
        }
        let d = (2 * at + start + end) as i64 - n as i64;
        sxy += i128::from(sum_dx) * i128::from(d);
        syy += (end - start) as i128 * i128::from(d * d);
        start = end;
    }
    (sxy, syy)
}

/// The digit histograms of x's and of y's keys, in one read of both inputs; `None` when some pair
/// holds NaN (the caller packs and compacts instead).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn input_histograms<A: RankSample, B: RankSample>(x: &[A], y: &[B]) -> Option<(Vec<Histogram>, Vec<Histogram>)> {
    let (mut hx, mut hy) = (vec![[0usize; RADIX]; A::Key::PASSES], vec![[0usize; RADIX]; B::Key::PASSES]);
    let mut nan = false;
    for (&a, &b) in x.iter().zip(y) {
        nan |= a.is_nan() | b.is_nan();
        let (xk, yk) = (a.rank_key(), b.rank_key());
        for (pass, h) in hx.iter_mut().enumerate() {
            h[xk.digit(pass)] += 1;
        }
        for (pass, h) in hy.iter_mut().enumerate() {
            h[yk.digit(pass)] += 1;
        }
    }
    (!nan).then_some((hx, hy))
}

/// The first radix pass by x, reading the inputs: the pairs of raw keys scattered to `out` by x's
/// lowest digit (no packed copy is written and read again). `offsets` are the bucket starts.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter_inputs<A: RankSample, B: RankSample>(x: &[A], y: &[B], out: &mut [PairOf<A, B>], offsets: &mut Histogram) {
    for (&a, &b) in x.iter().zip(y) {
        let xk = a.rank_key();
        let o = &mut offsets[xk.digit(0)];
        out[*o] = pair(xk, b.rank_key());
        *o += 1;
    }
}

/// The bucket starts of a digit histogram.
fn starts(counts: &Histogram) -> Histogram {
    let mut offsets = [0usize; RADIX];
    let mut total = 0;
    for (o, &c) in offsets.iter_mut().zip(counts) {
        *o = total;
        total += c;
    }
    offsets
}

/// Rank `sorted` (ordered by x) and, in the same read, scatter each pair with its doubled, centred
/// x rank to `out` by y's lowest digit (the first pass of the sort by y); returns `Σ dx²`.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn rank_x_into<W: RadixKey>(sorted: &[Pair<W>], out: &mut [Pair<W>], offsets: &mut Histogram) -> i128 {
    let n = sorted.len();
    let mut sxx = 0i128;
    let mut start = 0;
    while start < n {
        let key = sorted[start][0];
        if start + 1 == n || sorted[start + 1][0] != key {
            // a value of its own, the common case of continuous data: no run to average
            let d = (2 * start + 1) as i64 - n as i64;
            let y = sorted[start][1];
            let o = &mut offsets[y.digit(0)];
            out[*o] = [W::from_rank(d), y];
            *o += 1;
            sxx += i128::from(d * d);
            start += 1;
            continue;
        }
        let mut end = start + 2;
        while end < n && sorted[end][0] == key {
            end += 1;
        }
        let d = (start + end) as i64 - n as i64;
        let rank = W::from_rank(d);
        for p in &sorted[start..end] {
            let o = &mut offsets[p[1].digit(0)];
            out[*o] = [rank, p[1]];
            *o += 1;
        }
        sxx += (end - start) as i128 * i128::from(d * d);
        start = end;
    }
    sxx
}

/// Rank sums of two inputs with many distinct values on both sides and no NaN, by the two radix
/// sorts of [`rank_sums`] with three passes fused away: both sides' histograms come from one read of
/// the inputs, the sort by x starts from the inputs, and the ranking pass is the sort by y's first
/// pass. `None` when some pair holds NaN.
fn fused_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B]) -> Option<RankSums> {
    let (hx, hy) = input_histograms(x, y)?;
    Some(with_buffers(x.len(), |pairs: &mut [PairOf<A, B>], scratch| {
        scatter_inputs::<A, B>(x, y, pairs, &mut starts(&hx[0]));
        let (sorted, spare) = radix_sort_from(pairs, scratch, &hx, 1, |p| p[0]);
        let sxx = rank_x_into(sorted, spare, &mut starts(&hy[0]));
        let (by_y, _) = radix_sort_from(spare, sorted, &hy, 1, |p| p[1]);
        let (sxy, syy) = y_runs(by_y, RadixKey::to_rank);
        RankSums { sxy, sxx, syy }
    }))
}

/// From this many pairs, [`spearman`] ranks on two threads ([`parallel_rank_sums`]) when two are available.
const PARALLEL_MIN: usize = 1 << 20;

/// Bits of the key prefix on which the two-thread path splits the pairs into a low and a high side.
const SPLIT_BITS: u32 = 16;
/// Key prefixes.
const SPLIT: usize = 1 << SPLIT_BITS;
/// The split prefixes are chosen from every this-many-th pair.
const SPLIT_STRIDE: usize = 509;

/// The top [`SPLIT_BITS`] bits of a key `bits` wide held in `key` (a narrower key widened to a pair's type).
#[inline]
fn prefix_of(key: impl RadixKey, bits: u32) -> usize {
    (key.to_u64() >> (bits - SPLIT_BITS)) as usize
}

/// The side of a key `bits` wide: 0 below the split prefix `split`, else 1, times [`RADIX`] (a side's first counter).
#[inline]
fn side_of(key: impl RadixKey, bits: u32, split: usize) -> usize {
    usize::from(prefix_of(key, bits) >= split) * RADIX
}

/// Write `item` to the next place of the bucket of (the side of `key`, its first digit) in `out`
/// ([`bucket_writers`]).
#[inline]
fn put<T>(out: &mut [std::slice::IterMut<'_, T>], key: impl RadixKey, (bits, split): (u32, usize), item: T) {
    let bucket = &mut out[side_of(key, bits, split) + key.digit(0)];
    *bucket.next().expect("a bucket holds what was counted for it") = item;
}

/// The bit width of a sample type's key.
const fn key_bits<T: RankSample>() -> u32 {
    T::Key::PASSES as u32 * DIGIT_BITS
}

/// The prefix below which about half of the key prefixes `key_prefix` gives for every [`SPLIT_STRIDE`]-th
/// of `n` pairs lie (a sample: the sides it makes are counted exactly afterwards).
fn split_prefix(n: usize, key_prefix: impl Fn(usize) -> usize) -> usize {
    let mut counts = vec![0u32; SPLIT];
    let mut sampled = 0usize;
    for i in (0..n).step_by(SPLIT_STRIDE) {
        counts[key_prefix(i)] += 1;
        sampled += 1;
    }
    let mut below = 0usize;
    for (p, &c) in counts.iter().enumerate() {
        let with = below + c as usize;
        if 2 * with >= sampled {
            return if sampled - 2 * below <= 2 * with - sampled { p } else { p + 1 };
        }
        below = with;
    }
    SPLIT
}

/// What one half of the inputs holds, by side (low: key prefix below the split): the x digit histograms
/// of each x side, the y digit histograms of each y side, and the y first-digit histogram of each
/// (x side, y side).
struct HalfCounts {
    x: [Vec<Histogram>; 2],
    y: [Vec<Histogram>; 2],
    y_first: [[Histogram; 2]; 2],
}

/// The number of items a part's digit histograms count.
fn counted(hist: &[Histogram]) -> usize {
    hist.first().map_or(0, |h| h.iter().sum())
}

/// The passes from `first` on whose digit is not the same for every item of every part (its histograms and
/// item count): the ones a sort of those parts side by side must run (parts sorted with the same passes end
/// in the same buffer).
fn live_passes(parts: &[(&[Histogram], usize)], first: usize) -> Vec<usize> {
    let len = parts.first().map_or(0, |(hist, _)| hist.len());
    (first..len).filter(|&q| !parts.iter().all(|(hist, n)| hist[q].contains(n))).collect()
}

/// The most digits a key has (`u64`).
const MAX_PASSES: usize = 8;

/// [`HalfCounts`] of one half of the inputs, in one read; `None` when some pair holds NaN. The counters are
/// flat (`side * RADIX + digit`, 32-bit) while counting: a few KiB that stay in L1.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn half_counts<A: RankSample, B: RankSample>(x: &[A], y: &[B], (bx, by): (usize, usize)) -> Option<HalfCounts> {
    let (px, py) = (A::Key::PASSES, B::Key::PASSES);
    let mut cx = [[0u32; 2 * RADIX]; MAX_PASSES];
    let mut cy = [[0u32; 2 * RADIX]; MAX_PASSES];
    let mut first = [0u32; 4 * RADIX];
    let mut nan = false;
    for (&a, &b) in x.iter().zip(y) {
        nan |= a.is_nan() | b.is_nan();
        let (xk, yk) = (a.rank_key(), b.rank_key());
        let (sx, sy) = (side_of(xk, key_bits::<A>(), bx), side_of(yk, key_bits::<B>(), by));
        for (pass, h) in cx[..px].iter_mut().enumerate() {
            h[sx + xk.digit(pass)] += 1;
        }
        for (pass, h) in cy[..py].iter_mut().enumerate() {
            h[sy + yk.digit(pass)] += 1;
        }
        first[2 * sx + sy + yk.digit(0)] += 1;
    }
    if nan {
        return None;
    }
    let side = |c: &[[u32; 2 * RADIX]], passes: usize, s: usize| -> Vec<Histogram> {
        c[..passes].iter().map(|h| std::array::from_fn(|d| h[s * RADIX + d] as usize)).collect()
    };
    let quarter = |q: usize| -> Histogram { std::array::from_fn(|d| first[q * RADIX + d] as usize) };
    Some(HalfCounts {
        x: [side(&cx, px, 0), side(&cx, px, 1)],
        y: [side(&cy, py, 0), side(&cy, py, 1)],
        y_first: [[quarter(0), quarter(1)], [quarter(2), quarter(3)]],
    })
}

/// The buckets of a radix pass over two sides written by two threads, as each writer's own pieces of
/// `out`: the low side's pairs first, then the high side's, each ordered by first digit, and within a
/// digit writer 0's pairs before writer 1's. `counts[w][s]` is writer `w`'s first-digit histogram of side
/// `s`. Returns each writer's pieces, indexed by `side * RADIX + digit`.
fn bucket_writers<'a, T>(out: &'a mut [T], counts: [[&Histogram; 2]; 2]) -> [Vec<std::slice::IterMut<'a, T>>; 2] {
    let mut writers = [Vec::with_capacity(2 * RADIX), Vec::with_capacity(2 * RADIX)];
    let mut rest = out;
    let [[low0, high0], [low1, high1]] = counts;
    for (side0, side1) in [(low0, low1), (high0, high1)] {
        for (&first, &second) in side0.iter().zip(side1) {
            for (writer, count) in writers.iter_mut().zip([first, second]) {
                let (piece, after) = rest.split_at_mut(count);
                writer.push(piece.iter_mut());
                rest = after;
            }
        }
    }
    writers
}

/// One half of the inputs scattered by (x side, x first digit) into its buckets `out` ([`bucket_writers`]).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter_sides<A: RankSample, B: RankSample>(
    x: &[A],
    y: &[B],
    mut out: Vec<std::slice::IterMut<'_, PairOf<A, B>>>,
    bx: usize,
) {
    for (&a, &b) in x.iter().zip(y) {
        let xk = a.rank_key();
        put(&mut out, xk, (key_bits::<A>(), bx), pair(xk, b.rank_key()));
    }
}

/// Rank `sorted` (ordered by x; its first pair at global position `at` of `n`) and scatter each pair with
/// its doubled, centred x rank by (y side, y first digit) into its buckets `out` ([`bucket_writers`]; y's
/// key `y_bits` wide, its split prefix `by`); returns `Σ dx²`.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn rank_x_sides<W: RadixKey>(
    sorted: &[Pair<W>],
    mut out: Vec<std::slice::IterMut<'_, Pair<W>>>,
    (at, n, by, y_bits): (usize, usize, usize, u32),
) -> i128 {
    let mut sxx = 0i128;
    let mut start = 0;
    while start < sorted.len() {
        let key = sorted[start][0];
        let mut end = start + 1;
        while end < sorted.len() && sorted[end][0] == key {
            end += 1;
        }
        let d = (2 * at + start + end) as i64 - n as i64;
        let rank = W::from_rank(d);
        for p in &sorted[start..end] {
            put(&mut out, p[1], (y_bits, by), [rank, p[1]]);
        }
        sxx += (end - start) as i128 * i128::from(d * d);
        start = end;
    }
    sxx
}

/// The radix passes `passes` of `hist`; returns `(sorted, spare)` as [`radix_sort_by`].
fn radix_passes<'a, I: Copy, K: RadixKey>(
    items: &'a mut [I],
    scratch: &'a mut [I],
    hist: &[Histogram],
    passes: &[usize],
    key: impl Fn(&I) -> K + Copy,
) -> (&'a mut [I], &'a mut [I]) {
    let (mut src, mut dst) = (items, scratch);
    for &pass in passes {
        scatter(src, dst, &mut starts(&hist[pass]), pass, key);
        std::mem::swap(&mut src, &mut dst);
    }
    (src, dst)
}

/// Two digit histograms added.
fn add_histograms(a: &Histogram, b: &Histogram) -> Histogram {
    std::array::from_fn(|d| a[d] + b[d])
}

/// Run `f` on this thread and `g` on a second one, and return both results.
fn both<R: Send, S: Send>(f: impl FnOnce() -> R + Send, g: impl FnOnce() -> S + Send) -> (R, S) {
    std::thread::scope(|scope| {
        let other = scope.spawn(g);
        let r = f();
        match other.join() {
            Ok(s) => (r, s),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The rank sums of [`fused_rank_sums`] on two threads, equal to them (every sum is an exact integer). The
/// pairs are split at a key prefix into a low and a high side of about half each (the prefix chosen from a
/// sample), so that each thread sorts and ranks one side and no merge is needed. Each thread counts one half
/// of the inputs by side (digit histograms); each scatters its half by (x side, first digit), writing where
/// the counts place it; each sorts one x side by its other digits and ranks it from the side's first
/// position, scattering the ranked pairs by (y side, first digit); each sorts one y side and sums
/// `Σ dx·dy` over its runs. Equal keys share their prefix, so a run never straddles two sides. `None` when
/// some pair holds NaN.
fn parallel_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B]) -> Option<RankSums> {
    let n = x.len();
    let h = n / 2;
    let split = (
        split_prefix(n, |i| prefix_of(x[i].rank_key(), key_bits::<A>())),
        split_prefix(n, |i| prefix_of(y[i].rank_key(), key_bits::<B>())),
    );
    let ((x0, x1), (y0, y1)) = (x.split_at(h), y.split_at(h));
    let (c0, c1) = both(|| half_counts(x0, y0, split), || half_counts(x1, y1, split));
    let (c0, c1) = (c0?, c1?);
    let lx = counted(&c0.x[0]) + counted(&c1.x[0]); // pairs on the low x side
    let ly = counted(&c0.y[0]) + counted(&c1.y[0]); // ... and on the low y side
    let sum = |a: &[Histogram], b: &[Histogram]| -> Vec<Histogram> {
        a.iter().zip(b).map(|(p, q)| add_histograms(p, q)).collect()
    };
    let (hx, hy) =
        ([sum(&c0.x[0], &c1.x[0]), sum(&c0.x[1], &c1.x[1])], [sum(&c0.y[0], &c1.y[0]), sum(&c0.y[1], &c1.y[1])]);
    Some(with_buffers(n, |pairs: &mut [PairOf<A, B>], scratch| {
        // the first x pass, from the inputs: both halves scatter to both sides
        let [w0, w1] = bucket_writers(pairs, [[&c0.x[0][0], &c0.x[1][0]], [&c1.x[0][0], &c1.x[1][0]]]);
        both(|| scatter_sides::<A, B>(x0, y0, w0, split.0), || scatter_sides::<A, B>(x1, y1, w1, split.0));
        // the other x passes, both sides the same (so that both end in the same buffer)
        let passes = live_passes(&[(&hx[0], lx), (&hx[1], n - lx)], 1);
        {
            let (pl, ph) = pairs.split_at_mut(lx);
            let (tl, th) = scratch.split_at_mut(lx);
            both(
                || radix_passes(pl, tl, &hx[0], &passes, |q| q[0]).0.len(),
                || radix_passes(ph, th, &hx[1], &passes, |q| q[0]).0.len(),
            );
        }
        let (sorted, ranked) = if passes.len() % 2 == 1 { (scratch, pairs) } else { (pairs, scratch) };
        // ranked by x, scattered by (y side, first digit): the low x side writes first within each bucket
        let from = |sx: usize| [0, 1].map(|sy| add_histograms(&c0.y_first[sx][sy], &c1.y_first[sx][sy]));
        let (from_low, from_high) = (from(0), from(1));
        let [w0, w1] = bucket_writers(ranked, [[&from_low[0], &from_low[1]], [&from_high[0], &from_high[1]]]);
        let y_bits = key_bits::<B>();
        let (sorted_low, sorted_high) = sorted.split_at(lx);
        let (sxx_low, sxx_high) = both(
            || rank_x_sides(sorted_low, w0, (0, n, split.1, y_bits)),
            || rank_x_sides(sorted_high, w1, (lx, n, split.1, y_bits)),
        );
        // each y side sorted by its other digits, then its runs
        let (rl, rh) = ranked.split_at_mut(ly);
        let (tl, th) = sorted.split_at_mut(ly);
        let (pl, ph) = (live_passes(&[(&hy[0], ly)], 1), live_passes(&[(&hy[1], n - ly)], 1));
        let ((sxy0, syy0), (sxy1, syy1)) = both(
            || y_runs_from(radix_passes(rl, tl, &hy[0], &pl, |q| q[1]).0, 0, n, RadixKey::to_rank),
            || y_runs_from(radix_passes(rh, th, &hy[1], &ph, |q| q[1]).0, ly, n, RadixKey::to_rank),
        );
        RankSums { sxy: sxy0 + sxy1, sxx: sxx_low + sxx_high, syy: syy0 + syy1 }
    }))
}

/// Rank sums of `pairs` (raw keys on both sides); `scratch` is at least as long. Both are
/// working memory.
fn rank_sums<W: RadixKey>(pairs: &mut [Pair<W>], scratch: &mut [Pair<W>]) -> RankSums {
    let (sxx, sorted, spare) = rank_x(pairs, scratch);
    let (sxy, syy) = rank_y(sorted, spare, RadixKey::to_rank);
    RankSums { sxy, sxx, syy }
}

/// A side with at most this many distinct values is ranked by [`RankTable`], not sorted.
const TABLE_MAX_DISTINCT: usize = 2048;
/// Hash-table slots (a power of two, at least twice [`TABLE_MAX_DISTINCT`]).
const TABLE_SLOTS: usize = 4096;

/// Average ranks of a sample with few distinct values: open addressing (linear probing,
/// Fibonacci hashing) from key to slot, and from slot to doubled, centred rank.
struct RankTable<K> {
    keys: Vec<K>,
    counts: Vec<usize>,
    distinct: usize,
    /// Filled by [`RankTable::finish`].
    ranks: Vec<i64>,
    /// `Σ d²` over the sample, filled by [`RankTable::finish`].
    sum_sq: i128,
}

impl<K: RadixKey> RankTable<K> {
    fn new() -> Self {
        Self {
            keys: vec![K::EMPTY; TABLE_SLOTS],
            counts: vec![0; TABLE_SLOTS],
            distinct: 0,
            ranks: Vec::new(),
            sum_sq: 0,
        }
    }

    /// Count `k` (not a NaN key) and return its slot, or `None` past [`TABLE_MAX_DISTINCT`]
    /// distinct keys: continuous data gives up after a few thousand values.
    #[inline]
    fn insert(&mut self, k: K) -> Option<usize> {
        let mut s = (k.to_u64().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE_SLOTS.trailing_zeros())) as usize;
        while self.keys[s] != k && self.keys[s] != K::EMPTY {
            s = (s + 1) & (TABLE_SLOTS - 1);
        }
        if self.keys[s] == K::EMPTY {
            self.distinct += 1;
            if self.distinct > TABLE_MAX_DISTINCT {
                return None;
            }
            self.keys[s] = k;
        }
        self.counts[s] += 1;
        Some(s)
    }

    /// Give each slot the average rank of its key among the `n` values counted; returns the
    /// occupied slots in ascending key order.
    fn finish(&mut self, n: usize) -> Vec<usize> {
        let mut occupied: Vec<usize> = (0..TABLE_SLOTS).filter(|&s| self.keys[s] != K::EMPTY).collect();
        occupied.sort_unstable_by_key(|&s| self.keys[s]);
        self.ranks = vec![0; TABLE_SLOTS];
        let mut start = 0;
        for &s in &occupied {
            let end = start + self.counts[s];
            let d = (start + end) as i64 - n as i64;
            self.ranks[s] = d;
            self.sum_sq += self.counts[s] as i128 * i128::from(d * d);
            start = end;
        }
        occupied
    }
}

/// Sort buffers of up to this many bytes (the two together) are kept per thread between
/// calls, so that repeated calls on batches of up to ~4 million `f32` pairs (8 bytes each)
/// skip the page faults of first-touching fresh memory (~0.4 ms per MB on the dev machine).
/// This is all a thread retains after a call.
pub(crate) const KEEP_BYTES: usize = 1 << 26;

/// Larger buffers are anonymous maps advised as transparent huge pages (Linux
/// `MADV_HUGEPAGE`): one fault per 2 MiB instead of per 4 KiB (80 MB faults in ~7 ms instead
/// of ~35 ms on the dev machine) and fewer TLB misses in the radix scatter. They are unmapped
/// after the call. Where huge pages are unavailable the hint is ignored.
fn mapped(bytes: usize) -> Option<MmapMut> {
    let map = MmapMut::map_anon(bytes).ok()?;
    // Advice only: without THP the map still works, with 4 KiB pages.
    let _ = map.advise(Advice::HugePage);
    Some(map)
}

/// Memory for one sort buffer: this thread's kept heap memory or a fresh map.
enum Storage {
    /// `u128` words: aligned for any key pair.
    Heap(Vec<u128>),
    Mapped(MmapMut),
}

impl Storage {
    fn new(bytes: usize) -> Self {
        mapped(bytes).map_or_else(|| Storage::Heap(vec![0; bytes.div_ceil(16)]), Storage::Mapped)
    }

    /// The first `n` elements of type `T`.
    fn slice<T: Pod>(&mut self, n: usize) -> &mut [T] {
        let bytes = n * std::mem::size_of::<T>();
        let raw: &mut [u8] = match self {
            Storage::Heap(words) => bytemuck::cast_slice_mut(words.as_mut_slice()),
            Storage::Mapped(map) => map,
        };
        bytemuck::cast_slice_mut(&mut raw[..bytes])
    }
}

/// Run `f` with two buffers of `n` elements of `T` (the sort's input and scratch; their
/// contents are garbage). Up to [`KEEP_BYTES`] together, the memory is this thread's and kept
/// for the next call; beyond, it is mapped for this call only (see [`mapped`]).
pub(crate) fn with_buffers<T: Pod, R>(n: usize, f: impl FnOnce(&mut [T], &mut [T]) -> R) -> R {
    thread_local! {
        static KEPT: RefCell<(Vec<u128>, Vec<u128>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }
    let bytes = n * std::mem::size_of::<T>();
    if 2 * bytes > KEEP_BYTES {
        let (mut a, mut b) = (Storage::new(bytes), Storage::new(bytes));
        return f(a.slice(n), b.slice(n));
    }
    // Taken out, not borrowed: a panic inside `f` just drops them, and a nested call gets
    // fresh ones.
    let (mut a, mut b) = KEPT.with(RefCell::take);
    let words = bytes.div_ceil(16);
    for v in [&mut a, &mut b] {
        if v.len() < words {
            v.resize(words, 0);
        }
    }
    let (mut a, mut b) = (Storage::Heap(a), Storage::Heap(b));
    let out = f(a.slice(n), b.slice(n));
    if let (Storage::Heap(a), Storage::Heap(b)) = (a, b) {
        KEPT.with(|cell| *cell.borrow_mut() = (a, b));
    }
    out
}

/// The largest input the rank arithmetic supports (doubled ranks must fit in `i32`).
const MAX_LEN: usize = i32::MAX as usize;

fn check_len(n: usize) -> Result<()> {
    if n > MAX_LEN {
        return Err(StatsError::invalid("x", format!("more than {MAX_LEN} samples are not supported")));
    }
    Ok(())
}

/// Spearman's rho of two paired samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spearman {
    /// Rho in `[-1, 1]`; NaN when NaN was propagated or the statistic is undefined.
    pub rho: f64,
    /// Number of pairs used (after dropping NaN pairs under [`NanPolicy::Omit`]).
    pub n_pairs: usize,
    /// True when rho is undefined: fewer than 2 pairs, or x or y constant.
    pub undefined: bool,
}

/// Write the pairs of raw keys to `out` (at least as long as `x`); returns how many were
/// written and whether some pair holds NaN. When `omit`, NaN pairs are dropped.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn pack<A: RankSample, B: RankSample>(x: &[A], y: &[B], omit: bool, out: &mut [PairOf<A, B>]) -> (usize, bool) {
    let mut nan = false;
    if !omit {
        for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
            *o = pair(a.rank_key(), b.rank_key());
            nan |= a.is_nan() | b.is_nan();
        }
        return (x.len(), nan);
    }
    // Branch-free compaction: every pair is written, and the cursor advances past the kept ones.
    let mut len = 0;
    for (&a, &b) in x.iter().zip(y) {
        let bad = a.is_nan() | b.is_nan();
        nan |= bad;
        out[len] = pair(a.rank_key(), b.rank_key());
        len += usize::from(!bad);
    }
    (len, nan)
}

/// The outcome of ranking the pairs.
enum Ranked {
    /// The rank sums of the `n_pairs` pairs used.
    Sums { sums: RankSums, n_pairs: usize },
    /// Some pair holds NaN and NaN is not omitted.
    Nan,
}

/// The slot of a pair dropped for NaN in [`count_slots`]' output.
const NO_SLOT: u16 = u16::MAX;
const _: () = assert!(TABLE_SLOTS <= NO_SLOT as usize);

/// What [`count_slots`] found.
enum Slots {
    /// `len` pairs kept, and y's digit histograms over them.
    Counted { len: usize, hist: Vec<Histogram> },
    /// A NaN pair when NaN is not omitted.
    Nan,
}

/// Count x in `table`, writing each x's slot to `slots` ([`NO_SLOT`] for a NaN pair dropped
/// when `omit`), and count y's digit histograms over the kept pairs; `None` when x has too
/// many distinct values for the table.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_slots<A: RankSample, B: RankSample>(
    x: &[A],
    y: &[B],
    omit: bool,
    table: &mut RankTable<A::Key>,
    slots: &mut [u16],
) -> Option<Slots> {
    // LANES interleaved copies of each histogram: the high digits of y take few values, and
    // consecutive increments of one counter would form a chain through memory.
    const LANES: usize = 4;
    let passes = B::Key::PASSES;
    let mut lanes = vec![[0u32; RADIX]; LANES * passes];
    let mut len = 0;
    for (i, ((s, &a), &b)) in slots.iter_mut().zip(x).zip(y).enumerate() {
        if a.is_nan() | b.is_nan() {
            if omit {
                *s = NO_SLOT;
                continue;
            }
            return Some(Slots::Nan);
        }
        *s = table.insert(a.rank_key())? as u16;
        let yk = b.rank_key();
        let lane = &mut lanes[(i % LANES) * passes..][..passes];
        for (pass, h) in lane.iter_mut().enumerate() {
            h[yk.digit(pass)] += 1;
        }
        len += 1;
    }
    // Counts fit u32: at most `MAX_LEN` pairs.
    let mut hist = vec![[0usize; RADIX]; passes];
    for (k, lane) in lanes.iter().enumerate() {
        for (total, &c) in hist[k % passes].iter_mut().zip(lane) {
            *total += c as usize;
        }
    }
    Some(Slots::Counted { len, hist })
}

/// The first radix pass by y, reading the inputs: scatter the pairs (x's slot, y's raw key)
/// of the kept pairs to `out` by y's lowest digit. `offsets` are the bucket starts.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter_slots<A: RankSample, B: RankSample>(
    slots: &[u16],
    y: &[B],
    out: &mut [PairOf<A, B>],
    offsets: &mut Histogram,
) {
    for (&s, &b) in slots.iter().zip(y) {
        if s == NO_SLOT {
            continue;
        }
        let yk = b.rank_key();
        let o = &mut offsets[yk.digit(0)];
        out[*o] = pair(A::Key::from_rank(i64::from(s)), yk);
        *o += 1;
    }
}

/// Rank sums when x has few distinct values: one hashing pass ranks x, only y is sorted, and
/// the sort's first pass reads the inputs (no packed copy of the pairs is written).
/// `None` when x has too many distinct values.
fn table_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B], omit: bool) -> Option<Ranked> {
    with_buffers(x.len(), |pairs: &mut [PairOf<A, B>], scratch| {
        let mut table = RankTable::new();
        // The slots go to the scratch buffer's start: the first pass reads them from there
        // and scatters to `pairs`, and the next pass overwrites them.
        let slots = &mut bytemuck::cast_slice_mut::<_, u16>(&mut *scratch)[..x.len()];
        let (len, hist) = match count_slots(x, y, omit, &mut table, slots)? {
            Slots::Counted { len, hist } => (len, hist),
            Slots::Nan => return Some(Ranked::Nan),
        };
        table.finish(len);
        scatter_slots::<A, B>(slots, y, pairs, &mut starts(&hist[0]));
        let (sorted, _) = radix_sort_from(&mut pairs[..len], scratch, &hist, 1, |p| p[1]);
        let rank_of = |slot: <A::Key as RadixKey>::Join<B::Key>| table.ranks[slot.to_rank() as usize];
        let (sxy, syy) = y_runs(sorted, rank_of);
        Some(Ranked::Sums { sums: RankSums { sxy, sxx: table.sum_sq, syy }, n_pairs: len })
    })
}

/// What the y side of [`parallel_table_rank_sums`] counts: the digit histograms of each y side (key prefix
/// below the split: low) over every pair, and the first-digit histogram of each (half of the positions, side).
struct YSides {
    hist: [Vec<Histogram>; 2],
    first: [[Histogram; 2]; 2],
}

/// [`YSides`] of `y`, its halves split at position `h` and its sides at key prefix `by`, in one read; `None`
/// when some y is NaN. Flat 32-bit counters while counting, as [`half_counts`].
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn y_sides<B: RankSample>(y: &[B], h: usize, by: usize) -> Option<YSides> {
    let passes = B::Key::PASSES;
    let mut counts = [[0u32; 2 * RADIX]; MAX_PASSES];
    let mut first = [[0u32; 2 * RADIX]; 2];
    let mut nan = false;
    for (part, firsts) in [&y[..h], &y[h..]].into_iter().zip(&mut first) {
        for &b in part {
            nan |= b.is_nan();
            let yk = b.rank_key();
            let side = side_of(yk, key_bits::<B>(), by);
            for (pass, c) in counts[..passes].iter_mut().enumerate() {
                c[side + yk.digit(pass)] += 1;
            }
            firsts[side + yk.digit(0)] += 1;
        }
    }
    if nan {
        return None;
    }
    let side = |s: usize| -> Vec<Histogram> {
        counts[..passes].iter().map(|c| std::array::from_fn(|d| c[s * RADIX + d] as usize)).collect()
    };
    let of = |half: usize, s: usize| -> Histogram { std::array::from_fn(|d| first[half][s * RADIX + d] as usize) };
    Some(YSides { hist: [side(0), side(1)], first: [[of(0, 0), of(0, 1)], [of(1, 0), of(1, 1)]] })
}

/// Count x in `table`, writing each x's slot to `slots`; `None` when x has too many distinct values or some
/// x is NaN (the one-thread path then decides).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn x_slots<A: RankSample>(x: &[A], table: &mut RankTable<A::Key>, slots: &mut [u16]) -> Option<()> {
    for (s, &a) in slots.iter_mut().zip(x) {
        if a.is_nan() {
            return None;
        }
        *s = table.insert(a.rank_key())? as u16;
    }
    Some(())
}

/// One half of the pairs (x's slots and y) scattered by (y side, y first digit) into its buckets `out`
/// ([`bucket_writers`]).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn scatter_slot_sides<A: RankSample, B: RankSample>(
    slots: &[u16],
    y: &[B],
    mut out: Vec<std::slice::IterMut<'_, PairOf<A, B>>>,
    by: usize,
) {
    for (&s, &b) in slots.iter().zip(y) {
        let yk = b.rank_key();
        put(&mut out, yk, (key_bits::<B>(), by), pair(A::Key::from_rank(i64::from(s)), yk));
    }
}

/// The rank sums of [`table_rank_sums`] on two threads, equal to them (exact integers): one thread ranks x by
/// table while the other counts y by side (a key prefix that splits y in about half, chosen from a sample);
/// each thread then scatters half of the pairs by (y side, first digit), sorts one y side by its other digits
/// and sums its runs from the side's first position. `None` when some pair holds NaN or x has too many
/// distinct values.
fn parallel_table_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B]) -> Option<Ranked> {
    let n = x.len();
    let h = n / 2;
    let by = split_prefix(n, |i| prefix_of(y[i].rank_key(), key_bits::<B>()));
    with_buffers(n, |pairs: &mut [PairOf<A, B>], scratch| {
        let mut table = RankTable::new();
        let (ly, hist) = {
            // The slots go to the scratch buffer's start: the scatter reads them from there, the sort overwrites them.
            let slots = &mut bytemuck::cast_slice_mut::<_, u16>(&mut *scratch)[..n];
            let (ranked, sides) = both(|| x_slots(x, &mut table, slots), || y_sides(y, h, by));
            let (YSides { hist, first }, ()) = (sides?, ranked?);
            let [w0, w1] = bucket_writers(pairs, [[&first[0][0], &first[0][1]], [&first[1][0], &first[1][1]]]);
            let (s0, s1) = slots.split_at(h);
            both(
                || scatter_slot_sides::<A, B>(s0, &y[..h], w0, by),
                || scatter_slot_sides::<A, B>(s1, &y[h..], w1, by),
            );
            (counted(&hist[0]), hist)
        };
        table.finish(n);
        let rank_of = |slot: <A::Key as RadixKey>::Join<B::Key>| table.ranks[slot.to_rank() as usize];
        let (pl, ph) = pairs.split_at_mut(ly);
        let (tl, th) = scratch.split_at_mut(ly);
        let (low, high) = (live_passes(&[(&hist[0], ly)], 1), live_passes(&[(&hist[1], n - ly)], 1));
        let ((sxy0, syy0), (sxy1, syy1)) = both(
            || y_runs_from(radix_passes(pl, tl, &hist[0], &low, |q| q[1]).0, 0, n, rank_of),
            || y_runs_from(radix_passes(ph, th, &hist[1], &high, |q| q[1]).0, ly, n, rank_of),
        );
        Some(Ranked::Sums { sums: RankSums { sxy: sxy0 + sxy1, sxx: table.sum_sq, syy: syy0 + syy1 }, n_pairs: n })
    })
}

/// Values sampled (at an even stride) to tell a continuous side from one with few distinct values.
const PROBE: usize = 256;
/// A probe with at least this many distinct values comes from a side with many more distinct
/// values than [`TABLE_MAX_DISTINCT`]: `PROBE` draws from `D` equally common values give about
/// `D (1 - e^(-PROBE / D))` distinct ones, 240 for `D = 2048`, 256 for continuous data.
const PROBE_CONTINUOUS: usize = 250;

/// Whether `v` looks continuous (many more distinct values than the rank table holds), judged on
/// [`PROBE`] values at an even stride: the table's attempt, which fails only after counting
/// [`TABLE_MAX_DISTINCT`] values, is then not made. A wrong guess costs time, never accuracy.
fn looks_continuous<T: RankSample>(v: &[T]) -> bool {
    let stride = (v.len() / PROBE).max(1);
    let mut keys: Vec<T::Key> = v.iter().step_by(stride).take(PROBE).map(|&s| s.rank_key()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len() >= PROBE_CONTINUOUS
}

/// [`table_rank_sums`], on two threads from [`PARALLEL_MIN`] pairs when `threads` allows and no pair holds NaN.
fn tabled_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B], omit: bool, threads: usize) -> Option<Ranked> {
    if x.len() >= PARALLEL_MIN
        && threads >= 2
        && let Some(ranked) = parallel_table_rank_sums(x, y)
    {
        return Some(ranked);
    }
    table_rank_sums(x, y, omit)
}

/// Rank sums of the pairs of `x` and `y`, ranking a low-cardinality side by table.
fn paired_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B], omit: bool, threads: usize) -> Ranked {
    if x.len() >= RADIX_MIN_LEN {
        if !looks_continuous(x)
            && let Some(ranked) = tabled_rank_sums(x, y, omit, threads)
        {
            return ranked;
        }
        // Rho is symmetric: rank y by table and sort x.
        if !looks_continuous(y)
            && let Some(ranked) = tabled_rank_sums(y, x, omit, threads)
        {
            return match ranked {
                Ranked::Sums { sums, n_pairs } => {
                    Ranked::Sums { sums: RankSums { sxy: sums.sxy, sxx: sums.syy, syy: sums.sxx }, n_pairs }
                }
                Ranked::Nan => Ranked::Nan,
            };
        }
    }
    if x.len() >= PARALLEL_MIN
        && threads >= 2
        && let Some(sums) = parallel_rank_sums(x, y)
    {
        return Ranked::Sums { sums, n_pairs: x.len() };
    }
    if x.len() >= RADIX_MIN_LEN
        && let Some(sums) = fused_rank_sums(x, y)
    {
        return Ranked::Sums { sums, n_pairs: x.len() };
    }
    with_buffers(x.len(), |pairs: &mut [PairOf<A, B>], scratch| {
        // NaN is rare: pack everything, and compact only when some pair turns out to hold NaN.
        let (mut len, nan) = pack(x, y, false, pairs);
        if nan {
            if !omit {
                return Ranked::Nan;
            }
            len = pack(x, y, true, pairs).0;
        }
        Ranked::Sums { sums: rank_sums(&mut pairs[..len], scratch), n_pairs: len }
    })
}

/// Spearman's rank correlation of `x` and `y` (average ranks for ties), as
/// `scipy.stats.spearmanr(x, y).statistic`.
///
/// Memory: two sort buffers of one key pair per sample (8 bytes for two `f32`, 16 otherwise).
/// Up to [`KEEP_BYTES`] together they are kept by the calling thread for its next call; larger
/// ones are mapped for the call and released after it.
///
/// # Errors
/// `y` of another length than `x`; empty `x` (or no pair left after NaN omission); NaN under
/// [`NanPolicy::Raise`]; more than `i32::MAX` pairs.
pub fn spearman<A: RankSample, B: RankSample>(x: &[A], y: &[B], nan_policy: NanPolicy) -> Result<Spearman> {
    spearman_threads(x, y, nan_policy, 0)
}

/// [`spearman`] on at most `threads` threads (0: two when the machine has them, else one). From
/// [`PARALLEL_MIN`] pairs without NaN, two threads sort and rank half each: with many distinct values on both
/// sides ([`parallel_rank_sums`]), or with few on one side, which one thread ranks by table while the other
/// counts the other side ([`parallel_table_rank_sums`]); the result is the same to the bit.
///
/// # Errors
/// As [`spearman`].
pub fn spearman_threads<A: RankSample, B: RankSample>(
    x: &[A],
    y: &[B],
    nan_policy: NanPolicy,
    threads: usize,
) -> Result<Spearman> {
    check_same_len("x", x.len(), "y", y.len())?;
    check_non_empty("x", x.len())?;
    check_len(x.len())?;
    raise_on_nan(nan_policy, "x", x)?;
    raise_on_nan(nan_policy, "y", y)?;
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(2),
        t => t,
    };
    match paired_rank_sums(x, y, nan_policy == NanPolicy::Omit, threads) {
        Ranked::Nan => Ok(Spearman { rho: f64::NAN, n_pairs: x.len(), undefined: false }),
        Ranked::Sums { sums, n_pairs } => {
            check_non_empty("x", n_pairs)?;
            let rho = sums.rho();
            Ok(Spearman { rho: rho.unwrap_or(f64::NAN), n_pairs, undefined: rho.is_none() })
        }
    }
}

/// Spearman's rho within each group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedSpearman {
    /// The id of each group (`None` for a contiguous layout).
    pub labels: Option<Vec<i64>>,
    /// Rho of each group; NaN where undefined or where NaN was propagated.
    pub rho: Vec<f64>,
    /// Groups with a rho.
    pub n_defined: usize,
    /// Groups with fewer than 2 pairs or a constant x or y (rho undefined).
    pub n_undefined: usize,
    /// Groups holding NaN under [`NanPolicy::Propagate`] (rho NaN).
    pub n_nan: usize,
    /// Mean rho over the defined groups; NaN when none is defined, or when some group holds
    /// NaN under [`NanPolicy::Propagate`].
    pub mean: f64,
}

/// Reusable buffers of the per-group loop, so that no group allocates.
struct GroupWork<W> {
    pairs: Vec<Pair<W>>,
    scratch: Vec<Pair<W>>,
}

enum GroupRho {
    Defined(f64),
    Undefined,
    Nan,
}

impl<W: RadixKey> GroupWork<W> {
    fn rho<A: RankSample, B: RankSample>(&mut self, members: impl Iterator<Item = (A, B)>, omit: bool) -> GroupRho {
        self.pairs.clear();
        let mut saw_nan = false;
        for (a, b) in members {
            if a.is_nan() || b.is_nan() {
                saw_nan = true;
            } else {
                self.pairs.push(pair(a.rank_key(), b.rank_key()));
            }
        }
        if saw_nan && !omit {
            return GroupRho::Nan;
        }
        let sums = if self.pairs.len() <= SMALL_GROUP {
            small_rank_sums(&self.pairs)
        } else {
            self.scratch.resize(self.pairs.len(), Pair::default());
            rank_sums(&mut self.pairs, &mut self.scratch)
        };
        match sums.rho() {
            Some(r) => GroupRho::Defined(r),
            None => GroupRho::Undefined,
        }
    }
}

/// Groups of at most this many pairs are ranked by counting comparisons (`O(n²)`, branch-free,
/// vectorised) instead of sorting: GRPO's groups of 8 to 16 completions are all like this.
const SMALL_GROUP: usize = 32;

/// [`rank_sums`] of at most [`SMALL_GROUP`] pairs, each side ranked by [`ranks_of`].
fn small_rank_sums<W: RadixKey>(pairs: &[Pair<W>]) -> RankSums {
    let n = pairs.len();
    let (mut xs, mut ys) = ([W::default(); SMALL_GROUP], [W::default(); SMALL_GROUP]);
    for (k, p) in pairs.iter().enumerate() {
        xs[k] = p[0];
        ys[k] = p[1];
    }
    let (mut dx, mut dy) = ([0i64; SMALL_GROUP], [0i64; SMALL_GROUP]);
    let mut unused = Vec::new();
    let sxx = ranks_of(&xs[..n], &mut dx[..n], &mut unused);
    let syy = ranks_of(&ys[..n], &mut dy[..n], &mut unused);
    let sxy = dx[..n].iter().zip(&dy[..n]).map(|(&a, &b)| i128::from(a * b)).sum();
    RankSums { sxy, sxx, syy }
}

/// Doubled, centred average ranks `2 r - (n + 1)` of `keys` into `out` (as long); returns `Σ d²`.
/// Up to [`SMALL_GROUP`] keys by counting comparisons: a key with `less` smaller and `equal`
/// equal keys (itself included) gets `2 less + equal - n`, the integer [`rank_x`] assigns to
/// its run; more keys are sorted (`order` is working memory).
fn ranks_of<K: RadixKey>(keys: &[K], out: &mut [i64], order: &mut Vec<(K, u32)>) -> i128 {
    let n = keys.len() as i64;
    let mut sum_sq = 0i128;
    if keys.len() <= SMALL_GROUP {
        return i128::from(small_ranks(keys, out));
    }
    order.clear();
    order.extend(keys.iter().enumerate().map(|(i, &k)| (k, i as u32)));
    order.sort_unstable();
    let mut start = 0;
    while start < order.len() {
        let end = start + order[start..].iter().take_while(|p| p.0 == order[start].0).count();
        let d = (start + end) as i64 - n;
        for p in &order[start..end] {
            out[p.1 as usize] = d;
        }
        sum_sq += (end - start) as i128 * i128::from(d * d);
        start = end;
    }
    sum_sq
}

/// [`ranks_of`] of at most [`SMALL_GROUP`] keys by counting comparisons (`|d| <= 32`, so `Σ d²`
/// fits an `i64`); compiled for AVX2 too, where the comparisons run 8 keys at a time.
fn small_ranks<K: RadixKey>(keys: &[K], out: &mut [i64]) -> i64 {
    // GRPO's usual group sizes at a fixed length: the loops unroll into whole vectors.
    match (keys.len(), <&[K; 16]>::try_from(keys), <&mut [i64; 16]>::try_from(&mut *out)) {
        (16, Ok(k), Ok(o)) => small_ranks_fixed(k, o),
        _ => match (<&[K; 8]>::try_from(keys), <&mut [i64; 8]>::try_from(&mut *out)) {
            (Ok(k), Ok(o)) => small_ranks_fixed(k, o),
            _ => small_ranks_any(keys, out),
        },
    }
}

/// [`small_ranks`] of exactly `N` keys.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn small_ranks_fixed<K: RadixKey, const N: usize>(keys: &[K; N], out: &mut [i64; N]) -> i64 {
    ranks_fixed(keys, out)
}

/// The body of [`small_ranks_fixed`], inlined into every dispatched loop that ranks many groups.
#[allow(clippy::inline_always)]
#[inline(always)]
fn ranks_fixed<K: RadixKey, const N: usize>(keys: &[K; N], out: &mut [i64; N]) -> i64 {
    let (mut less, mut equal) = ([0u32; N], [0u32; N]);
    for &k in keys {
        for ((l, e), &v) in less.iter_mut().zip(&mut equal).zip(keys) {
            *l += u32::from(k < v);
            *e += u32::from(k == v);
        }
    }
    let mut sum_sq = 0i64;
    for ((o, &l), &e) in out.iter_mut().zip(&less).zip(&equal) {
        *o = 2 * i64::from(l) + i64::from(e) - N as i64;
        sum_sq += *o * *o;
    }
    sum_sq
}

/// The within-group ranks of every contiguous group of `N` samples of `x` (without NaN), in one
/// dispatched loop: `each(g, ranks, Σ d²)` per group, the ranks as [`ranks_of`] gives them. GRPO's
/// layout (groups of 8 or 16 completions) ranks thousands of groups a step: one dispatcher call
/// per step instead of one per group took 5-7 % off a 16,384-sample step's trace (bench/README.md).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn contiguous_ranks<A: RankSample, const N: usize>(x: &[A], mut each: impl FnMut(usize, &[i64; N], i64)) {
    let mut keys = [A::Key::default(); N];
    let mut d = [0i64; N];
    for (g, chunk) in x.chunks_exact(N).enumerate() {
        for (k, v) in keys.iter_mut().zip(chunk) {
            *k = v.rank_key();
        }
        let sum_sq = ranks_fixed(&keys, &mut d);
        each(g, &d, sum_sq);
    }
}

/// [`contiguous_ranks`] for groups of `size` when it is one of the sizes it is compiled for (8 and
/// 16); false, and `each` never called, for any other size.
fn contiguous_ranks_of<A: RankSample>(x: &[A], size: usize, mut each: impl FnMut(usize, &[i64], i64)) -> bool {
    match size {
        16 => contiguous_ranks::<A, 16>(x, |g, d, s| each(g, d, s)),
        8 => contiguous_ranks::<A, 8>(x, |g, d, s| each(g, d, s)),
        _ => return false,
    }
    true
}

/// [`small_ranks`] of any number of keys up to [`SMALL_GROUP`].
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn small_ranks_any<K: RadixKey>(keys: &[K], out: &mut [i64]) -> i64 {
    let n = keys.len();
    // Every key against all keys at once: the counters of all keys sit in vector lanes, so no
    // lane is summed horizontally.
    let (mut less, mut equal) = ([0u32; SMALL_GROUP], [0u32; SMALL_GROUP]);
    for &k in keys {
        for ((l, e), &v) in less[..n].iter_mut().zip(&mut equal[..n]).zip(keys) {
            *l += u32::from(k < v);
            *e += u32::from(k == v);
        }
    }
    let mut sum_sq = 0i64;
    for ((o, &l), &e) in out.iter_mut().zip(&less[..n]).zip(&equal[..n]) {
        *o = 2 * i64::from(l) + i64::from(e) - n as i64;
        sum_sq += *o * *o;
    }
    sum_sq
}

/// Spearman's rho of `x` and `y` within each group, and the mean over the groups where it is
/// defined.
///
/// # Errors
/// `y` of another length than `x`; empty `x`; a bad layout ([`Groups::check`]); NaN under
/// [`NanPolicy::Raise`].
pub fn within_group_spearman<A: RankSample, B: RankSample>(
    x: &[A],
    y: &[B],
    groups: Groups<'_>,
    nan_policy: NanPolicy,
) -> Result<GroupedSpearman> {
    check_same_len("x", x.len(), "y", y.len())?;
    check_non_empty("x", x.len())?;
    check_len(x.len())?;
    groups.check("x", x.len())?;
    raise_on_nan(nan_policy, "x", x)?;
    raise_on_nan(nan_policy, "y", y)?;
    let omit = nan_policy == NanPolicy::Omit;
    let mut work = GroupWork::<<A::Key as RadixKey>::Join<B::Key>> { pairs: Vec::new(), scratch: Vec::new() };
    let (labels, outcomes): (Option<Vec<i64>>, Vec<GroupRho>) = match groups {
        Groups::Contiguous { size } => {
            let out = x
                .chunks_exact(size)
                .zip(y.chunks_exact(size))
                .map(|(gx, gy)| work.rho(gx.iter().copied().zip(gy.iter().copied()), omit))
                .collect();
            (None, out)
        }
        Groups::Ids(ids) => {
            let index = GroupIndex::new(ids)?;
            let out = (0..index.n_groups())
                .map(|g| {
                    let members = index.members(g).iter().map(|&i| (x[i as usize], y[i as usize]));
                    work.rho(members, omit)
                })
                .collect();
            (Some(index.labels), out)
        }
    };
    let (mut n_defined, mut n_undefined, mut n_nan, mut sum) = (0usize, 0usize, 0usize, 0.0f64);
    let rho = outcomes
        .into_iter()
        .map(|o| match o {
            GroupRho::Defined(r) => {
                n_defined += 1;
                sum += r;
                r
            }
            GroupRho::Undefined => {
                n_undefined += 1;
                f64::NAN
            }
            GroupRho::Nan => {
                n_nan += 1;
                f64::NAN
            }
        })
        .collect();
    let mean = if n_defined == 0 || n_nan > 0 { f64::NAN } else { sum / n_defined as f64 };
    Ok(GroupedSpearman { labels, rho, n_defined, n_undefined, n_nan, mean })
}

/// The key width of a pair of a sample's key and a `u32` (an index or a rank).
type IndexPair<S> = <<S as RankSample>::Key as RadixKey>::Join<u32>;

/// A sample ranked once (doubled, centred average ranks in sample order), to correlate with
/// many other samples of the same length without ranking it again: the per-sample stage
/// trace ranks the reward once and reuses it for every stage ([`crate::trace`]).
///
/// Only a sample without NaN can be a reference: under NaN omission the pairs kept, and so
/// the reference's ranks, depend on the other sample.
#[derive(Debug, Clone)]
pub struct RankedReference {
    /// `2 r - (n + 1)` of each sample, `r` its 1-based average rank.
    ranks: Vec<i32>,
    /// `Σ ranks²`.
    sum_sq: i128,
    /// Distinct values (runs of equal keys in the sort; infinities included).
    distinct: u64,
}

impl RankedReference {
    /// Rank `y`; `None` when `y` is empty, holds NaN or is longer than `i32::MAX`.
    #[must_use]
    pub fn new<B: RankSample>(y: &[B]) -> Option<Self> {
        Self::new_and(y, |_| ()).map(|(r, ())| r)
    }

    /// [`RankedReference::new`], and `order` applied to `y` in ascending order while it is sorted:
    /// `order` is given the value of rank `i` (0-based, as `f64`, `-0.0` read as `+0.0`), for the
    /// order statistics of `y` without sorting it again.
    pub fn new_and<B: RankSample, R>(y: &[B], order: impl FnOnce(&dyn Fn(usize) -> f64) -> R) -> Option<(Self, R)> {
        if y.is_empty() || y.len() > MAX_LEN || crate::sample::first_nan(y).is_some() {
            return None;
        }
        if y.len() >= RADIX_MIN_LEN && !looks_continuous(y) {
            let mut order = Some(order);
            if let Some(done) = Self::by_table(y, &mut order) {
                return Some(done);
            }
            return Some(Self::by_sort(y, order.take()?));
        }
        Some(Self::by_sort(y, order))
    }

    /// [`RankedReference::new_and`] for a sample with few distinct values: one hashing pass
    /// ranks it ([`RankTable`]), no sort. `None` (and `order` left unused) past
    /// [`TABLE_MAX_DISTINCT`] distinct values.
    fn by_table<B: RankSample, R>(
        y: &[B],
        order: &mut Option<impl FnOnce(&dyn Fn(usize) -> f64) -> R>,
    ) -> Option<(Self, R)> {
        let mut table = RankTable::new();
        let mut slots: Vec<u16> = Vec::with_capacity(y.len());
        for &b in y {
            slots.push(table.insert(b.rank_key())? as u16);
        }
        let levels = table.finish(y.len());
        let ranks = slots.iter().map(|&s| table.ranks[usize::from(s)] as i32).collect();
        // The values in ascending order, each level repeated by its count (the MAD walks them),
        // in this thread's kept buffer.
        let order = order.take()?;
        let ordered = with_buffers(y.len(), |sorted: &mut [f64], _| {
            let mut start = 0;
            for &s in &levels {
                sorted[start..start + table.counts[s]].fill(B::key_value(table.keys[s]));
                start += table.counts[s];
            }
            order(&|i| sorted[i])
        });
        Some((Self { ranks, sum_sq: table.sum_sq, distinct: levels.len() as u64 }, ordered))
    }

    /// [`RankedReference::new_and`] by a radix sort of (key, index) pairs.
    fn by_sort<B: RankSample, R>(y: &[B], order: impl FnOnce(&dyn Fn(usize) -> f64) -> R) -> (Self, R) {
        let mut ranks = vec![0i32; y.len()];
        let (sum_sq, distinct, ordered) = with_buffers(y.len(), |pairs: &mut [Pair<IndexPair<B>>], scratch| {
            for (i, (p, &b)) in pairs.iter_mut().zip(y).enumerate() {
                *p = pair(b.rank_key(), i as u32);
            }
            let (sum_sq, sorted, _) = rank_x(pairs, scratch);
            // Equal values share a rank, so the runs of equal ranks are the distinct values.
            let mut distinct = 0u64;
            let mut prev = None;
            for p in sorted.iter() {
                ranks[p[1].to_u64() as usize] = p[0].to_rank() as i32;
                distinct += u64::from(prev != Some(p[0]));
                prev = Some(p[0]);
            }
            let sorted: &[Pair<IndexPair<B>>] = sorted;
            let ordered = order(&|i| B::key_value(y[sorted[i][1].to_u64() as usize].rank_key()));
            (sum_sq, distinct, ordered)
        });
        (Self { ranks, sum_sq, distinct }, ordered)
    }

    /// Number of samples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// Number of distinct values of the reference (`-0.0` and `+0.0` are one; infinities count).
    #[must_use]
    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// True when there is no sample (never: [`RankedReference::new`] refuses empty input).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// Spearman's rho of `x` with the reference, as [`spearman`]`(x, y, ..)` would give it;
    /// `None` when `x` holds NaN (call [`spearman`] with the NaN policy then).
    ///
    /// # Errors
    /// `x` of another length than the reference.
    pub fn spearman<A: RankSample>(&self, x: &[A]) -> Result<Option<Spearman>> {
        Ok(self.spearman_and_distinct(x)?.map(|(s, _)| s))
    }

    /// [`RankedReference::spearman`] and, from the same sort of `x`, the number of distinct
    /// finite values of `x` (as [`crate::census::value_census`] counts them).
    ///
    /// # Errors
    /// `x` of another length than the reference.
    pub fn spearman_and_distinct<A: RankSample>(&self, x: &[A]) -> Result<Option<(Spearman, u64)>> {
        Ok(self.spearman_distinct_and(x, |_| ())?.map(|(s, d, ())| (s, d)))
    }

    /// [`RankedReference::spearman_and_distinct`], and `order` applied to `x` in ascending order
    /// while it is sorted: `order` is given the value of rank `i` (0-based, as `f64`), for the
    /// order statistics of `x` (quantiles, the median) without sorting it again.
    ///
    /// # Errors
    /// `x` of another length than the reference.
    pub fn spearman_distinct_and<A: RankSample, R>(
        &self,
        x: &[A],
        order: impl FnOnce(&dyn Fn(usize) -> f64) -> R,
    ) -> Result<Option<(Spearman, u64, R)>> {
        check_same_len("y", self.ranks.len(), "x", x.len())?;
        if crate::sample::first_nan(x).is_some() {
            return Ok(None);
        }
        let (sums, distinct, ordered) = with_buffers(x.len(), |pairs: &mut [Pair<IndexPair<A>>], scratch| {
            for ((p, &a), &r) in pairs.iter_mut().zip(x).zip(&self.ranks) {
                *p = [IndexPair::<A>::from_rank(i64::from(r)), IndexPair::<A>::from_u64(a.rank_key().to_u64())];
            }
            let sorted = if pairs.len() < RADIX_MIN_LEN {
                pairs.sort_unstable_by_key(|p| p[1]);
                pairs
            } else {
                let hist = histograms(pairs, |p| p[1]);
                radix_sort_by(pairs, scratch, &hist, |p| p[1]).0
            };
            // Runs of equal x: Σ d_ref·d_x and Σ d_x², and the runs of finite x.
            let (sxy, sxx) = y_runs(sorted, RadixKey::to_rank);
            let mut distinct = 0u64;
            let mut prev = None;
            for p in sorted.iter() {
                if prev != Some(p[1]) {
                    prev = Some(p[1]);
                    distinct += u64::from(A::key_is_finite(A::Key::from_u64(p[1].to_u64())));
                }
            }
            let sorted: &[Pair<IndexPair<A>>] = sorted;
            let ordered = order(&|i| A::key_value(A::Key::from_u64(sorted[i][1].to_u64())));
            (RankSums { sxy, sxx, syy: self.sum_sq }, distinct, ordered)
        });
        let rho = sums.rho();
        let s = Spearman { rho: rho.unwrap_or(f64::NAN), n_pairs: x.len(), undefined: rho.is_none() };
        Ok(Some((s, distinct, ordered)))
    }
}

/// The group layout of a [`GroupedReference`].
#[derive(Debug, Clone)]
enum Members {
    Contiguous(usize),
    Index(GroupIndex),
}

/// A sample ranked once within each of its groups, for the within-group Spearman of many other
/// samples with it: [`within_group_spearman`] ranks both sides of every group (and indexes the
/// ids) on every call; this ranks the reference side and indexes the ids once. Only a sample
/// without NaN can be a reference.
#[derive(Debug, Clone)]
pub struct GroupedReference {
    members: Members,
    /// Doubled, centred rank of each sample within its group, group by group in member order
    /// (`i32`: half the memory of `i64`, below the allocator's map threshold at 16,384 samples).
    ranks: Vec<i32>,
    /// `Σ d²` of each group.
    sum_sq: Vec<i128>,
}

impl GroupedReference {
    /// Rank `y` within its groups; `None` when `y` holds NaN or more than `i32::MAX` values.
    ///
    /// # Errors
    /// Empty `y`; a bad layout ([`Groups::check`]).
    pub fn new<B: RankSample>(y: &[B], groups: Groups<'_>) -> Result<Option<Self>> {
        check_non_empty("y", y.len())?;
        groups.check("y", y.len())?;
        if y.len() > MAX_LEN || crate::sample::first_nan(y).is_some() {
            return Ok(None);
        }
        let members = match groups {
            Groups::Contiguous { size } => Members::Contiguous(size),
            Groups::Ids(ids) => Members::Index(GroupIndex::new(ids)?),
        };
        let mut this = Self { members, ranks: Vec::new(), sum_sq: Vec::new() };
        let mut ranks = Vec::with_capacity(y.len());
        let mut sum_sq = Vec::with_capacity(this.n_groups(y.len()));
        if let Members::Contiguous(size) = this.members
            && contiguous_ranks_of(y, size, |_, d, s| {
                // |d| <= size
                ranks.extend(d.iter().map(|&v| v as i32));
                sum_sq.push(i128::from(s));
            })
        {
            this.ranks = ranks;
            this.sum_sq = sum_sq;
            return Ok(Some(this));
        }
        let (mut keys, mut order, mut d) = (Vec::new(), Vec::new(), Vec::new());
        for g in 0..this.n_groups(y.len()) {
            let len = this.keys_of(g, y, &mut keys);
            d.clear();
            d.resize(len, 0i64);
            sum_sq.push(ranks_of(&keys, &mut d, &mut order));
            // |d| < n <= MAX_LEN = i32::MAX
            ranks.extend(d.iter().map(|&v| v as i32));
        }
        this.ranks = ranks;
        this.sum_sq = sum_sq;
        Ok(Some(this))
    }

    fn n_groups(&self, n: usize) -> usize {
        match &self.members {
            Members::Contiguous(size) => n / size,
            Members::Index(index) => index.n_groups(),
        }
    }

    /// The rank keys of the members of group `g` of `x`, into `keys` (read straight from `x`
    /// for a contiguous layout); returns the group's size.
    fn keys_of<A: RankSample>(&self, g: usize, x: &[A], keys: &mut Vec<A::Key>) -> usize {
        keys.clear();
        match &self.members {
            Members::Contiguous(size) => keys.extend(x[g * size..(g + 1) * size].iter().map(|v| v.rank_key())),
            Members::Index(index) => keys.extend(index.members(g).iter().map(|&i| x[i as usize].rank_key())),
        }
        keys.len()
    }

    /// [`within_group_spearman`]`(x, y, groups, ..)` with this reference as `y`; `None` when `x`
    /// holds NaN (call [`within_group_spearman`] with the NaN policy then).
    ///
    /// # Errors
    /// `x` of another length than the reference.
    pub fn within<A: RankSample>(&self, x: &[A]) -> Result<Option<GroupedSpearman>> {
        check_same_len("y", self.ranks.len(), "x", x.len())?;
        if crate::sample::first_nan(x).is_some() {
            return Ok(None);
        }
        let n_groups = self.n_groups(x.len());
        let (mut rho, mut n_defined, mut sum) = (Vec::with_capacity(n_groups), 0usize, 0.0f64);
        let mut add = |sums: RankSums| match sums.rho() {
            Some(r) => {
                n_defined += 1;
                sum += r;
                rho.push(r);
            }
            None => rho.push(f64::NAN),
        };
        let fast = match &self.members {
            Members::Contiguous(size) => contiguous_ranks_of(x, *size, |g, dx, sxx| {
                let dy = &self.ranks[g * size..(g + 1) * size];
                // |dx|, |dy| <= size <= 16: the sums fit an i64
                let sxy: i64 = dx.iter().zip(dy).map(|(&a, &b)| a * i64::from(b)).sum();
                add(RankSums { sxy: i128::from(sxy), sxx: i128::from(sxx), syy: self.sum_sq[g] });
            }),
            Members::Index(_) => false,
        };
        let (mut keys, mut order, mut dx) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = 0;
        // any other layout: group by group
        let slow_groups = if fast { 0 } else { n_groups };
        for g in 0..slow_groups {
            let len = self.keys_of(g, x, &mut keys);
            dx.clear();
            dx.resize(len, 0);
            let sxx = ranks_of(&keys, &mut dx, &mut order);
            let dy = &self.ranks[offset..offset + len];
            // |dx|, |dy| < 2^31 and a group holds fewer than 2^32 samples... but not both bounds
            // at once in an i64 sum: small groups (|d| <= 32) sum in i64, large ones in i128.
            let sxy = if len <= SMALL_GROUP {
                i128::from(dx.iter().zip(dy).map(|(&a, &b)| a * i64::from(b)).sum::<i64>())
            } else {
                dx.iter().zip(dy).map(|(&a, &b)| i128::from(a * i64::from(b))).sum()
            };
            offset += len;
            add(RankSums { sxy, sxx, syy: self.sum_sq[g] });
        }
        let labels = match &self.members {
            Members::Contiguous(_) => None,
            Members::Index(index) => Some(index.labels.clone()),
        };
        let mean = if n_defined == 0 { f64::NAN } else { sum / n_defined as f64 };
        Ok(Some(GroupedSpearman { labels, rho, n_defined, n_undefined: n_groups - n_defined, n_nan: 0, mean }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Average ranks (1-based) by brute force: rank = #less + (#equal + 1) / 2.
    fn naive_ranks(xs: &[f64]) -> Vec<f64> {
        xs.iter()
            .map(|&a| {
                let less = xs.iter().filter(|&&b| b < a).count() as f64;
                let equal = xs.iter().filter(|&&b| b == a).count() as f64;
                less + f64::midpoint(equal, 1.0)
            })
            .collect()
    }

    fn naive_spearman(x: &[f64], y: &[f64]) -> f64 {
        let (rx, ry) = (naive_ranks(x), naive_ranks(y));
        let n = x.len() as f64;
        let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
        let sxy: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = rx.iter().map(|a| (a - mx) * (a - mx)).sum();
        let syy: f64 = ry.iter().map(|b| (b - my) * (b - my)).sum();
        sxy / (sxx * syy).sqrt()
    }

    fn rho(x: &[f64], y: &[f64]) -> f64 {
        spearman(x, y, NanPolicy::Propagate).unwrap().rho
    }

    #[test]
    fn known_values() {
        assert_eq!(rho(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]), 1.0);
        assert_eq!(rho(&[1.0, 2.0, 3.0, 4.0], &[4.0, 3.0, 2.0, 1.0]), -1.0);
        // Ties: ranks x = [1.5, 1.5, 3], y = [1, 2, 3]: rho = sqrt(3)/2.
        assert!((rho(&[0.0, -0.0, 1.0], &[1.0, 2.0, 3.0]) - 0.75f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn undefined_and_nan() {
        let s = spearman(&[1.0f32, 1.0, 1.0], &[1.0f64, 2.0, 3.0], NanPolicy::Propagate).unwrap();
        assert!(s.undefined && s.rho.is_nan());
        let s = spearman(&[1.0f64], &[2.0f64], NanPolicy::Propagate).unwrap();
        assert!(s.undefined);
        let x = [1.0, f64::NAN, 3.0, 4.0];
        let y = [1.0, 5.0, 2.0, 3.0];
        let s = spearman(&x, &y, NanPolicy::Propagate).unwrap();
        assert!(s.rho.is_nan() && !s.undefined);
        let s = spearman(&x, &y, NanPolicy::Omit).unwrap();
        assert_eq!(s.n_pairs, 3);
        assert!((s.rho - naive_spearman(&[1.0, 3.0, 4.0], &[1.0, 2.0, 3.0])).abs() < 1e-15);
        let e = spearman(&y, &x, NanPolicy::Raise).unwrap_err();
        assert_eq!(e, StatsError::NanFound { arg: "y", index: 1 });
        assert_eq!(spearman(&x, &y[..3], NanPolicy::Omit).unwrap_err().arg(), "y");
        let empty: [f64; 0] = [];
        assert_eq!(spearman(&empty, &empty, NanPolicy::Omit).unwrap_err().arg(), "x");
        let all_nan = [f64::NAN; 3];
        assert_eq!(spearman(&all_nan, &y[..3], NanPolicy::Omit).unwrap_err().arg(), "x");
    }

    #[test]
    fn large_paths_match_naive() {
        // Long enough for the radix sort; x has 201 distinct values (table path), y is
        // continuous with mixed signs; zeros of both signs tie.
        let n = 3 * RADIX_MIN_LEN;
        let coarse: Vec<f32> =
            (0..n).map(|i| ((i * 7919 % 201) as f32 - 100.0) / 100.0 * if i % 3 == 0 { -1.0 } else { 1.0 }).collect();
        let fine: Vec<f64> = (0..n).map(|i| ((i * 104_729 % 1009) as f64 + i as f64 * 1e-3).sin() * 1e6).collect();
        let fine2: Vec<f64> = (0..n).map(|i| ((i * 31 % 4099) as f64).cos() + 1e6).collect();
        let coarse_f: Vec<f64> = coarse.iter().map(|&v| f64::from(v)).collect();
        let check = |got: f64, want: f64| assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        // Table on x; table on y (roles swapped); both sorted.
        check(spearman(&coarse, &fine, NanPolicy::Propagate).unwrap().rho, naive_spearman(&coarse_f, &fine));
        check(spearman(&fine, &coarse, NanPolicy::Propagate).unwrap().rho, naive_spearman(&fine, &coarse_f));
        check(rho(&fine, &fine2), naive_spearman(&fine, &fine2));
        // NaN omission on the large paths drops pairs jointly.
        let mut holes = fine.clone();
        let mut coarse_holes = coarse.clone();
        for i in (0..n).step_by(7) {
            holes[i] = f64::NAN;
        }
        for i in (0..n).step_by(11) {
            coarse_holes[i] = f32::NAN;
        }
        let keep: Vec<usize> = (0..n).filter(|&i| i % 7 != 0 && i % 11 != 0).collect();
        let kx: Vec<f64> = keep.iter().map(|&i| coarse_f[i]).collect();
        let ky: Vec<f64> = keep.iter().map(|&i| fine[i]).collect();
        let s = spearman(&coarse_holes, &holes, NanPolicy::Omit).unwrap();
        assert_eq!(s.n_pairs, keep.len());
        check(s.rho, naive_spearman(&kx, &ky));
        let kz: Vec<f64> = keep.iter().map(|&i| fine2[i]).collect();
        let z: Vec<f64> = (0..n).map(|i| if i % 11 == 0 { f64::NAN } else { fine2[i] }).collect();
        check(spearman(&holes, &z, NanPolicy::Omit).unwrap().rho, naive_spearman(&ky, &kz));
    }

    #[test]
    fn mapped_buffers_beyond_the_kept_size() {
        // Pairs of two f32 are 8 bytes: this many need mapped buffers, not the kept ones.
        let n = KEEP_BYTES / 16 + 1000;
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 100_003) as f32 - 5e4).collect();
        let up: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
        let down: Vec<f64> = x.iter().map(|&v| -f64::from(v).powi(3)).collect();
        let coarse: Vec<f32> = x.iter().map(|v| (v / 1e3).round()).collect();
        assert_eq!(spearman(&x, &up, NanPolicy::Propagate).unwrap().rho, 1.0);
        assert_eq!(spearman(&x, &down, NanPolicy::Propagate).unwrap().rho, -1.0);
        // Table path (101 distinct values) and sorted path against average ranks by std sort.
        let ranks = |v: &[f32]| -> Vec<f64> {
            let mut idx: Vec<usize> = (0..v.len()).collect();
            idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
            let mut r = vec![0.0; v.len()];
            let mut start = 0;
            while start < idx.len() {
                let end = start + idx[start..].iter().take_while(|&&i| v[i] == v[idx[start]]).count();
                for &i in &idx[start..end] {
                    r[i] = (start + end + 1) as f64 / 2.0; // average 1-based rank
                }
                start = end;
            }
            r
        };
        let shuffled: Vec<f32> = (0..n).map(|i| ((i * 104_729) % 65_537) as f32).collect();
        let (rx, rc, rs) = (ranks(&x), ranks(&coarse), ranks(&shuffled));
        let pearson = |a: &[f64], b: &[f64]| {
            let m = f64::midpoint(n as f64, 1.0);
            let sab: f64 = a.iter().zip(b).map(|(p, q)| (p - m) * (q - m)).sum();
            let saa: f64 = a.iter().map(|p| (p - m) * (p - m)).sum();
            let sbb: f64 = b.iter().map(|q| (q - m) * (q - m)).sum();
            sab / (saa * sbb).sqrt()
        };
        let table = spearman(&coarse, &shuffled, NanPolicy::Propagate).unwrap().rho;
        assert!((table - pearson(&rc, &rs)).abs() < 1e-9, "{table}");
        let sorted = spearman(&x, &shuffled, NanPolicy::Propagate).unwrap().rho;
        assert!((sorted - pearson(&rx, &rs)).abs() < 1e-9, "{sorted}");
    }

    #[test]
    fn grouped_matches_per_group() {
        let x = [1.0, 2.0, 3.0, 5.0, 5.0, 5.0, 1.0, f64::NAN, 2.0, 9.0];
        let y = [3.0, 1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0];
        let g = within_group_spearman(&x[..9], &y[..9], Groups::Contiguous { size: 3 }, NanPolicy::Omit).unwrap();
        assert!((g.rho[0] - naive_spearman(&x[..3], &y[..3])).abs() < 1e-15);
        assert!(g.rho[1].is_nan());
        assert_eq!(g.rho[2], 1.0);
        assert_eq!((g.n_defined, g.n_undefined, g.n_nan), (2, 1, 0));
        assert!((g.mean - f64::midpoint(g.rho[0], 1.0)).abs() < 1e-15);
        let p = within_group_spearman(&x[..9], &y[..9], Groups::Contiguous { size: 3 }, NanPolicy::Propagate).unwrap();
        assert_eq!((p.n_defined, p.n_undefined, p.n_nan), (1, 1, 1));
        assert!(p.mean.is_nan());
        let ids = [4i64, 4, 4, -1, -1, -1, 7, 7, 7, 7];
        let i = within_group_spearman(&x, &y, Groups::Ids(&ids), NanPolicy::Omit).unwrap();
        assert_eq!(i.labels, Some(vec![-1, 4, 7]));
        assert_eq!(i.rho[1], g.rho[0]);
        assert_eq!(i.rho[2], 1.0);
    }

    fn finite_vec(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
        // Small integer grid: plenty of ties.
        prop::collection::vec((-20i32..20).prop_map(|v| f64::from(v) * 0.5), len)
    }

    /// `n` pairs drawn from `seed`: continuous (`levels` 0) or of `levels` values for x and `levels / 2` for y,
    /// negative and positive, `-0.0` beside `+0.0`.
    fn draws(seed: u64, n: usize, levels: u32) -> (Vec<f64>, Vec<f64>) {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut draw = |levels: u32| {
            let u = next();
            let v = if levels == 0 {
                (u >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            } else {
                (u % u64::from(levels)) as f64 - 5.0
            };
            if v == 0.0 && u & 1 == 1 { -0.0 } else { v }
        };
        let x = (0..n).map(|_| draw(levels)).collect();
        let y = (0..n).map(|_| draw(levels / 2)).collect();
        (x, y)
    }

    /// The rank sums of the packed path ([`pack`], then [`rank_sums`]), which the fused path must equal.
    fn packed_rank_sums<A: RankSample, B: RankSample>(x: &[A], y: &[B]) -> RankSums {
        let mut pairs = vec![PairOf::<A, B>::default(); x.len()];
        let mut scratch = pairs.clone();
        let (len, _) = pack(x, y, false, &mut pairs);
        rank_sums(&mut pairs[..len], &mut scratch)
    }

    #[test]
    fn spearman_on_two_threads_is_the_one_thread_result() {
        // from PARALLEL_MIN pairs: continuous f32 against f64, a share of exact ties on one side
        let n = PARALLEL_MIN + 3;
        let mut state = 7u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let x: Vec<f32> = (0..n).map(|_| next() as f32).collect();
        let y: Vec<f64> = x.iter().map(|&v| if v < 0.1 { 0.0 } else { f64::from(v) + next() }).collect();
        let one = spearman_threads(&x, &y, NanPolicy::Propagate, 1).unwrap();
        let two = spearman_threads(&x, &y, NanPolicy::Propagate, 2).unwrap();
        assert_eq!(one.rho.to_bits(), two.rho.to_bits());
        assert_eq!(Some(packed_rank_sums(&x, &y)), parallel_rank_sums(&x, &y));
        // a side of 101 rounded rewards is ranked by table, on two threads as on one; continuous data is no table's
        let rewards: Vec<f32> = x.iter().map(|&v| (v * 100.0).round() / 100.0).collect();
        let one = spearman_threads(&rewards, &y, NanPolicy::Propagate, 1).unwrap();
        let two = spearman_threads(&rewards, &y, NanPolicy::Propagate, 2).unwrap();
        assert_eq!(one.rho.to_bits(), two.rho.to_bits());
        assert!(parallel_table_rank_sums(&x, &y).is_none());
    }

    proptest! {
        #[test]
        fn fused_rank_sums_equal_the_packed_path(
            seed in any::<u64>(),
            n in RADIX_MIN_LEN..3 * RADIX_MIN_LEN,
            levels in prop_oneof![Just(0u32), 1u32..50],
        ) {
            // continuous (levels 0) or tied on both sides, negative and positive, -0.0 beside +0.0
            let (x, y) = draws(seed, n, levels);
            let (xf, yf): (Vec<f32>, Vec<f32>) = (x.iter().map(|&v| v as f32).collect(), y.iter().map(|&v| v as f32).collect());
            prop_assert_eq!(fused_rank_sums(&x, &y), Some(packed_rank_sums(&x, &y)));
            prop_assert_eq!(fused_rank_sums(&xf, &yf), Some(packed_rank_sums(&xf, &yf)));
            prop_assert_eq!(fused_rank_sums(&xf, &y), Some(packed_rank_sums(&xf, &y)));
            let mut with_nan = xf.clone();
            with_nan[n / 2] = f32::NAN;
            prop_assert_eq!(fused_rank_sums(&with_nan, &yf), None);
        }

        #[test]
        fn two_threads_equal_the_packed_path(
            seed in any::<u64>(),
            n in 1usize..3 * RADIX_MIN_LEN,
            levels in prop_oneof![Just(0u32), 1u32..50, Just(2u32)],
            order in 0u8..3,
        ) {
            // continuous or tied, in random order, sorted by x (each half holds one end of the range: the
            // split by key then falls inside one half) or reversed; every pairing of widths
            let (mut x, y) = draws(seed, n, levels);
            match order {
                1 => x.sort_by(f64::total_cmp),
                2 => x.sort_by(|a, b| b.total_cmp(a)),
                _ => {}
            }
            let (xf, yf): (Vec<f32>, Vec<f32>) = (x.iter().map(|&v| v as f32).collect(), y.iter().map(|&v| v as f32).collect());
            prop_assert_eq!(parallel_rank_sums(&x, &y), Some(packed_rank_sums(&x, &y)));
            prop_assert_eq!(parallel_rank_sums(&xf, &yf), Some(packed_rank_sums(&xf, &yf)));
            prop_assert_eq!(parallel_rank_sums(&xf, &y), Some(packed_rank_sums(&xf, &y)));
            prop_assert_eq!(parallel_rank_sums(&x, &yf), Some(packed_rank_sums(&x, &yf)));
            let mut with_nan = yf.clone();
            with_nan[n - 1] = f32::NAN;
            prop_assert_eq!(parallel_rank_sums(&xf, &with_nan), None);
        }

        #[test]
        fn two_threads_on_a_tabled_side_equal_the_packed_path(
            seed in any::<u64>(),
            n in 1usize..3 * RADIX_MIN_LEN,
            x_levels in 1u32..300,
            y_continuous in any::<bool>(),
            by_y in any::<bool>(),
        ) {
            // x with few distinct values against y continuous or tied, in random order or sorted by y (each half of
            // the positions then holds one y side); every pairing of widths
            let (x, mut y) = draws(seed, n, x_levels);
            if y_continuous {
                y = draws(seed ^ 0x5555, n, 0).1;
            }
            let (x, y) = if by_y {
                let mut pairs: Vec<(f64, f64)> = x.into_iter().zip(y).collect();
                pairs.sort_by(|a, b| a.1.total_cmp(&b.1));
                pairs.into_iter().unzip()
            } else {
                (x, y)
            };
            let (xf, yf): (Vec<f32>, Vec<f32>) = (x.iter().map(|&v| v as f32).collect(), y.iter().map(|&v| v as f32).collect());
            let sums = |r: Option<Ranked>| match r {
                Some(Ranked::Sums { sums, n_pairs }) => Some((sums, n_pairs)),
                _ => None,
            };
            prop_assert_eq!(sums(parallel_table_rank_sums(&x, &y)), Some((packed_rank_sums(&x, &y), n)));
            prop_assert_eq!(sums(parallel_table_rank_sums(&xf, &yf)), Some((packed_rank_sums(&xf, &yf), n)));
            prop_assert_eq!(sums(parallel_table_rank_sums(&xf, &y)), Some((packed_rank_sums(&xf, &y), n)));
            prop_assert_eq!(sums(parallel_table_rank_sums(&x, &yf)), Some((packed_rank_sums(&x, &yf), n)));
            let mut with_nan = yf.clone();
            with_nan[n - 1] = f32::NAN;
            prop_assert!(parallel_table_rank_sums(&xf, &with_nan).is_none());
            with_nan[n - 1] = yf[n - 1];
            with_nan[0] = f32::NAN;
            prop_assert!(parallel_table_rank_sums(&with_nan, &yf).is_none());
        }

        #[test]
        fn within_groups_equal_naive_per_group(
            rows in prop::collection::vec(
                (prop_oneof![4 => (-6i32..6).prop_map(|v| f64::from(v) * 0.5), 1 => Just(f64::NAN)],
                 (-6i32..6).prop_map(f64::from), 0i64..4),
                1..160),
        ) {
            let x: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let y: Vec<f32> = rows.iter().map(|r| r.1 as f32).collect();
            let ids: Vec<i64> = rows.iter().map(|r| r.2).collect();
            let got = within_group_spearman(&x, &y, Groups::Ids(&ids), NanPolicy::Omit).unwrap();
            let labels = got.labels.clone().unwrap();
            for (k, g) in labels.iter().enumerate() {
                let (gx, gy): (Vec<f64>, Vec<f64>) = rows.iter()
                    .filter(|r| r.2 == *g && !r.0.is_nan())
                    .map(|r| (r.0, r.1))
                    .unzip();
                let want = if gx.len() < 2 { f64::NAN } else { naive_spearman(&gx, &gy) };
                prop_assert!((want.is_nan() && got.rho[k].is_nan()) || (got.rho[k] - want).abs() < 1e-12,
                             "group {}: {} vs {}", g, got.rho[k], want);
            }
        }

        #[test]
        fn grouped_reference_equals_within_group_spearman(
            rows in prop::collection::vec(((-6i32..6).prop_map(f64::from), (-40i32..40).prop_map(f64::from), 0i64..3), 1..200),
            contiguous in any::<bool>(),
        ) {
            let x: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let y: Vec<f32> = rows.iter().map(|r| r.1 as f32).collect();
            let ids: Vec<i64> = rows.iter().map(|r| r.2).collect();
            let groups = if contiguous { Groups::Contiguous { size: 1 + rows.len() % 7 } } else { Groups::Ids(&ids) };
            if groups.check("x", x.len()).is_ok() {
                let want = within_group_spearman(&x, &y, groups, NanPolicy::Omit).unwrap();
                let got = GroupedReference::new(&y, groups).unwrap().unwrap().within(&x).unwrap().unwrap();
                prop_assert_eq!(&got.labels, &want.labels);
                prop_assert_eq!((got.n_defined, got.n_undefined), (want.n_defined, want.n_undefined));
                prop_assert!(got.rho.iter().zip(&want.rho).all(|(a, b)| a == b || (a.is_nan() && b.is_nan())));
                prop_assert!(got.mean == want.mean || (got.mean.is_nan() && want.mean.is_nan()));
            }
        }

        #[test]
        fn grouped_reference_of_grpo_sized_groups_equals_within_group_spearman(
            rows in prop::collection::vec(((-6i32..6).prop_map(f64::from), (-3i32..3).prop_map(f64::from)), 16..400),
            sixteen in any::<bool>(),
        ) {
            // the dispatched loop over contiguous groups of 8 or 16 (ties on both sides)
            let size = if sixteen { 16 } else { 8 };
            let n = rows.len() / size * size;
            let x: Vec<f32> = rows[..n].iter().map(|r| r.0 as f32).collect();
            let y: Vec<f64> = rows[..n].iter().map(|r| r.1).collect();
            let groups = Groups::Contiguous { size };
            let want = within_group_spearman(&x, &y, groups, NanPolicy::Omit).unwrap();
            let got = GroupedReference::new(&y, groups).unwrap().unwrap().within(&x).unwrap().unwrap();
            prop_assert_eq!((got.n_defined, got.n_undefined), (want.n_defined, want.n_undefined));
            prop_assert!(got.rho.iter().zip(&want.rho).all(|(a, b)| a == b || (a.is_nan() && b.is_nan())));
            prop_assert!(got.mean == want.mean || (got.mean.is_nan() && want.mean.is_nan()));
        }

        #[test]
        fn in_range_symmetric_and_monotone_invariant(
            (x, y) in (2usize..60).prop_flat_map(|n| (finite_vec(n..n + 1), finite_vec(n..n + 1))),
        ) {
            let r = rho(&x, &y);
            let naive = naive_spearman(&x, &y);
            if r.is_nan() {
                prop_assert!(naive.is_nan());
            } else {
                prop_assert!((-1.0..=1.0).contains(&r));
                prop_assert!((r - naive).abs() < 1e-12);
                prop_assert_eq!(r, rho(&y, &x));
                // Strictly increasing transforms keep every rank; decreasing ones flip the sign.
                let up: Vec<f64> = x.iter().map(|v| (v * 0.3).exp() + 1e6).collect();
                let down: Vec<f64> = y.iter().map(|v| -v * v * v).collect();
                prop_assert!((rho(&up, &y) - r).abs() < 1e-12);
                prop_assert!((rho(&x, &down) + r).abs() < 1e-12);
            }
        }
    }
}
