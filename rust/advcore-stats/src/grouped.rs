//! Grouped statistics: per-group moments, the zero-variance-group census, the within/between
//! variance decomposition and explained variance, for a contiguous group size G or `i64` ids.
//!
//! Every kernel runs one engine, [`scan`], that summarises each group into a [`GroupStat`]
//! (count, shift, mean offset from the shift, M2, min, max) and hands it to a [`Sink`]; the
//! zero-variance census is counted in the same pass. Algorithms:
//!
//! * Contiguous groups of a power-of-two G up to 64 are compiled with G as a constant and
//!   summarised in one pass by tree-shaped *shifted sums* of `x - K` and `(x - K)^2` with `K`
//!   the group's first value (Chan, Golub & LeVeque 1983, "Algorithms for computing the sample
//!   variance", The American Statistician 37(3), section 3), a block of groups at a time with
//!   one SIMD lane per group ([`Block`]). With `K` a member the error is below `2 G log2(G) eps` relative to the
//!   variance whatever the offset, so `1e6 + noise` loses nothing to cancellation (see
//!   `summarise_block`). Other G are summarised two-pass (mean, then squared deviations
//!   with the correction term of the same paper).
//! * Ids are accumulated in one pass into a table indexed by `id - min(id)` (or by the dense
//!   index of [`dense_ids`] when the ids are sparse) with *shifted sums*: each group subtracts
//!   its first value `K` before summing `x - K` and `(x - K)^2` (Chan, Golub & LeVeque 1983,
//!   section 3), with a relative error of order `n eps` times `1 + (mean - K)^2 / var`.
//! * Ids in non-decreasing order (each prompt's completions listed together) are summarised
//!   run by run as they stream past, by the same shifted sums in the same order: no table.
//! * Groups that see a NaN or an infinity (or overflow) are rare and recomputed exactly from
//!   their members, so the fast paths never test for them per element.
//!
//! A group's state converts to [`Moments`], so partial results over shards of a batch combine
//! exactly (Chan, Golub & LeVeque 1979).

// The per-element helpers must inline into the AVX2 clones made by `dispatch`: a call into a
// baseline-compiled helper would leave the hot loop scalar.
#![allow(clippy::inline_always)]
// Author names in the references (LeVeque) are not code.
#![allow(clippy::doc_markdown)]

use crate::error::{Result, StatsError, check_non_empty, check_same_len};
use crate::groups::{Groups, dense_ids};
use crate::moments::Moments;
use crate::sample::{NanPolicy, Sample, raise_on_nan};
use crate::simd::dispatch;

/// Tolerances of the near-zero spread test, as `numpy.isclose` spells them: a group of at
/// least two values has near-zero spread when `max - min <= atol + rtol * max(|min|, |max|)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance, in the unit of the values.
    pub atol: f64,
    /// Relative tolerance, a fraction of the larger magnitude of `min` and `max`.
    pub rtol: f64,
}

impl Default for Tolerance {
    /// numpy's defaults: `atol = 1e-8`, `rtol = 1e-5`.
    fn default() -> Self {
        Self { atol: 1e-8, rtol: 1e-5 }
    }
}

impl Tolerance {
    /// Check both tolerances are finite and non-negative.
    ///
    /// # Errors
    /// [`StatsError::Invalid`] naming `atol` or `rtol`.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [("atol", self.atol), ("rtol", self.rtol)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(StatsError::invalid(name, format!("must be a finite non-negative number, got {v}")));
            }
        }
        Ok(())
    }
}

/// The summary of one group, as the engine hands it to a [`Sink`].
///
/// The mean is kept as `shift + offset` with `shift` a member of the group, so the small
/// `offset` carries the digits that a rounded mean near `1e6` would lose; the variance
/// decomposition needs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupStat {
    /// Number of values (after NaN omission).
    pub count: u64,
    /// A member of the group (the first one), subtracted before summing.
    pub shift: f64,
    /// `mean - shift`.
    pub offset: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl GroupStat {
    /// A group with no values left (every value was NaN and omitted).
    pub const EMPTY: Self = Self { count: 0, shift: 0.0, offset: f64::NAN, m2: f64::NAN, min: f64::NAN, max: f64::NAN };

    /// A group whose statistics are NaN because it holds NaN (`nan_policy="propagate"`).
    const fn nan(count: u64) -> Self {
        Self { count, shift: f64::NAN, offset: f64::NAN, m2: f64::NAN, min: f64::NAN, max: f64::NAN }
    }

    /// The mean, NaN for an empty group.
    #[inline]
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.shift + self.offset
    }

    /// The mergeable state of the group.
    #[must_use]
    pub fn to_moments(&self) -> Moments {
        if self.count == 0 {
            return Moments::EMPTY;
        }
        Moments { count: self.count, mean: self.mean(), m2: self.m2, min: self.min, max: self.max }
    }

    /// Summarise any group exactly, following the NaN policy. The slow path: it collects the
    /// group and handles NaN, infinities and overflow the way numpy does.
    fn exact<T: Sample>(xs: impl Iterator<Item = T>, omit: bool) -> Self {
        let mut buf: Vec<f64> = Vec::new();
        let mut seen_nan = false;
        for x in xs {
            if x.is_nan() {
                seen_nan = true;
                if omit {
                    continue;
                }
            }
            buf.push(x.to_f64());
        }
        if buf.is_empty() {
            return Self::EMPTY;
        }
        let count = buf.len() as u64;
        if seen_nan && !omit {
            return Self::nan(count);
        }
        let n = buf.len() as f64;
        let shift = buf[0];
        let (mut min, mut max) = (shift, shift);
        let mut sum = 0.0;
        for &x in &buf {
            sum += x - shift;
            min = min.min(x);
            max = max.max(x);
        }
        let mut offset = sum / n;
        let (mut q, mut comp) = (0.0, 0.0);
        for &x in &buf {
            let e = (x - shift) - offset;
            q += e * e;
            comp += e;
        }
        // An infinite member makes the deviations NaN, as numpy's var; its mean stays infinite.
        let m2 = if comp.is_finite() {
            offset += comp / n;
            (q - comp * comp / n).max(0.0)
        } else {
            f64::NAN
        };
        if shift.is_infinite() {
            // `x - shift` is NaN or -inf for every member; recover the mean numpy reports.
            let mean = buf.iter().sum::<f64>() / n;
            return Self { count, shift: mean, offset: 0.0, m2: f64::NAN, min, max };
        }
        Self { count, shift, offset, m2, min, max }
    }
}

/// The zero-variance census of the groups: how many have no spread at all, how many have a
/// spread within a tolerance, and how many cannot be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpreadCensus {
    /// Number of groups.
    pub n_groups: u64,
    /// Groups with fewer than two values (after NaN omission): a spread is undefined, so they
    /// are counted apart and never as zero variance.
    pub n_singleton: u64,
    /// Groups of at least two values with `max == min`.
    pub n_exact_zero: u64,
    /// Groups of at least two values with `max - min <= atol + rtol * max(|min|, |max|)`
    /// (includes the exact ones).
    pub n_near_zero: u64,
    /// Groups of at least two values that hold NaN (only under `nan_policy="propagate"`).
    pub n_nan: u64,
}

impl SpreadCensus {
    #[inline(always)]
    fn record(&mut self, s: &GroupStat, tol: Tolerance) {
        self.n_groups += 1;
        if s.count < 2 {
            self.n_singleton += 1;
        } else if s.min.is_nan() || s.max.is_nan() {
            self.n_nan += 1;
        } else {
            let exact = s.max == s.min;
            let bound = tol.atol + tol.rtol * s.min.abs().max(s.max.abs());
            self.n_exact_zero += u64::from(exact);
            self.n_near_zero += u64::from(exact || s.max - s.min <= bound);
        }
    }

    /// [`SpreadCensus::record`] for a block of finite groups, vectorised.
    #[inline(always)]
    fn record_block(&mut self, b: &Block, tol: Tolerance) {
        let n = b.len;
        self.n_groups += n as u64;
        if b.count < 2 {
            self.n_singleton += n as u64;
            return;
        }
        let (mut exact, mut near) = (0u64, 0u64);
        for (&lo, &hi) in b.min[..n].iter().zip(&b.max[..n]) {
            let bound = tol.atol + tol.rtol * lo.abs().max(hi.abs());
            exact += u64::from(hi == lo);
            near += u64::from(hi - lo <= bound);
        }
        self.n_exact_zero += exact;
        self.n_near_zero += near;
    }

    /// Groups of at least two values, the denominator of the fractions.
    #[must_use]
    pub fn n_judged(&self) -> u64 {
        self.n_groups - self.n_singleton
    }

    fn fraction(&self, k: u64) -> f64 {
        if self.n_nan > 0 || self.n_judged() == 0 { f64::NAN } else { k as f64 / self.n_judged() as f64 }
    }

    /// `n_exact_zero / (n_groups - n_singleton)`; NaN when every group is a singleton or a
    /// group of two or more values holds NaN (NaN propagates).
    #[must_use]
    pub fn exact_fraction(&self) -> f64 {
        self.fraction(self.n_exact_zero)
    }

    /// `n_near_zero / (n_groups - n_singleton)`, NaN as [`SpreadCensus::exact_fraction`].
    #[must_use]
    pub fn near_fraction(&self) -> f64 {
        self.fraction(self.n_near_zero)
    }
}

/// Receives the group summaries of a [`scan`]: `start` once with an upper bound of the number
/// of groups, then `emit` exactly once per group row `0..n_groups`, in any order.
pub trait Sink {
    /// Called once before any `emit`, with at least as many rows as will be emitted.
    fn start(&mut self, max_groups: usize);
    /// The summary of group `row`.
    fn emit(&mut self, row: usize, stat: &GroupStat);
    /// The summaries of groups `row .. row + block.len`, all finite (the contiguous fast path).
    /// Override it when the rows can be written as whole columns (vectorised).
    #[inline(always)]
    fn emit_block(&mut self, row: usize, block: &Block) {
        for k in 0..block.len {
            self.emit(row + k, &block.stat(k));
        }
    }
}

/// Groups summarised side by side by the contiguous fast path, one lane per group, so that
/// the compiler vectorises across groups rather than within one (struct of arrays).
#[derive(Debug, Clone)]
pub struct Block {
    /// Number of groups held (`<= BLOCK`).
    pub len: usize,
    /// Values per group (the same for every group of a contiguous layout).
    pub count: u64,
    /// See [`GroupStat`].
    pub shift: [f64; BLOCK],
    /// See [`GroupStat`].
    pub offset: [f64; BLOCK],
    /// See [`GroupStat`].
    pub m2: [f64; BLOCK],
    /// See [`GroupStat`].
    pub min: [f64; BLOCK],
    /// See [`GroupStat`].
    pub max: [f64; BLOCK],
}

/// Groups per [`Block`]: its arrays stay in L1 (2.5 KiB).
pub const BLOCK: usize = 64;

impl Block {
    const fn new() -> Self {
        Self {
            len: 0,
            count: 0,
            shift: [0.0; BLOCK],
            offset: [0.0; BLOCK],
            m2: [0.0; BLOCK],
            min: [0.0; BLOCK],
            max: [0.0; BLOCK],
        }
    }

    /// The summary of group `k` of the block.
    #[inline(always)]
    #[must_use]
    pub fn stat(&self, k: usize) -> GroupStat {
        GroupStat {
            count: self.count,
            shift: self.shift[k],
            offset: self.offset[k],
            m2: self.m2[k],
            min: self.min[k],
            max: self.max[k],
        }
    }
}

/// What a [`scan`] returns besides what its sink collected.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanInfo {
    /// The id of each group row, ascending (`None` for a contiguous layout).
    pub labels: Option<Vec<i64>>,
    /// The zero-variance census, counted in the same pass.
    pub census: SpreadCensus,
}

/// Summarise every group of `values` into `sink` and count the zero-variance census.
///
/// # Errors
/// See [`Plan::new`].
pub fn scan<T: Sample, S: Sink>(
    values: &[T],
    groups: Groups<'_>,
    nan_policy: NanPolicy,
    tol: Tolerance,
    sink: &mut S,
) -> Result<ScanInfo> {
    Ok(Plan::new(values, groups, nan_policy, tol)?.run(sink))
}

/// A validated scan, ready to run. Building it resolves the layout (the id range, or the
/// dense keys of sparse ids), so the number of groups is bounded before a caller allocates
/// the output columns (for example as numpy arrays, see [`Columns`]).
#[derive(Debug)]
pub struct Plan<'a, T> {
    values: &'a [T],
    layout: Layout<'a>,
    omit: bool,
    tol: Tolerance,
}

#[derive(Debug)]
enum Layout<'a> {
    Contiguous(usize),
    /// Ids in non-decreasing order: each group is one run of equal ids, `n_runs` of them.
    Runs {
        ids: &'a [i64],
        n_runs: usize,
    },
    /// Keys `id - lo` in `0..n_keys`.
    Direct {
        ids: &'a [i64],
        lo: i64,
        n_keys: usize,
    },
    /// Keys from [`dense_ids`]: `labels[dense[i]]` is the id of sample `i`.
    Dense {
        labels: Vec<i64>,
        dense: Vec<u32>,
    },
}

impl<'a, T: Sample> Plan<'a, T> {
    /// Validate the arguments and resolve the layout.
    ///
    /// # Errors
    /// Empty `values`, a bad layout (see [`Groups::check`]), bad tolerances, more than
    /// `2^32 - 1` samples with ids, or NaN under [`NanPolicy::Raise`].
    pub fn new(values: &'a [T], groups: Groups<'a>, nan_policy: NanPolicy, tol: Tolerance) -> Result<Self> {
        check_non_empty("values", values.len())?;
        groups.check("values", values.len())?;
        tol.check()?;
        raise_on_nan(nan_policy, "values", values)?;
        let layout = match groups {
            Groups::Contiguous { size } => Layout::Contiguous(size),
            Groups::Ids(ids) => {
                if values.len() >= u32::MAX as usize {
                    return Err(StatsError::invalid("group_ids", "more than 2^32 - 1 samples are not supported"));
                }
                let IdSummary { lo, hi, n_runs, sorted } = summarise_ids(ids);
                let span = hi.abs_diff(lo);
                if sorted {
                    Layout::Runs { ids, n_runs }
                } else if span < values.len() as u64 / DIRECT_SPAN_DIVISOR + DIRECT_SLACK {
                    Layout::Direct { ids, lo, n_keys: span as usize + 1 }
                } else {
                    let (labels, dense) = dense_ids(ids);
                    Layout::Dense { labels, dense }
                }
            }
        };
        Ok(Self { values, layout, omit: nan_policy == NanPolicy::Omit, tol })
    }

    /// An upper bound of the number of groups (exact for contiguous groups and sparse ids).
    #[must_use]
    pub fn max_groups(&self) -> usize {
        match &self.layout {
            Layout::Contiguous(size) => self.values.len() / size,
            Layout::Runs { n_runs, .. } => *n_runs,
            Layout::Direct { n_keys, .. } => (*n_keys).min(self.values.len()),
            Layout::Dense { labels, .. } => labels.len(),
        }
    }

    /// False when every group holds the group size (contiguous groups without NaN omission),
    /// so a count column is not needed.
    #[must_use]
    pub fn counts_vary(&self) -> bool {
        self.omit || !matches!(self.layout, Layout::Contiguous(_))
    }

    /// Run the scan; `sink.start` receives [`Plan::max_groups`].
    pub fn run<S: Sink>(&self, sink: &mut S) -> ScanInfo {
        let (xs, omit, tol) = (self.values, self.omit, self.tol);
        match &self.layout {
            &Layout::Contiguous(size) => ScanInfo { labels: None, census: contiguous(xs, size, omit, tol, sink) },
            &Layout::Runs { ids, n_runs } => {
                let (labels, census) = runs(ids, n_runs, xs, omit, tol, sink);
                ScanInfo { labels: Some(labels), census }
            }
            &Layout::Direct { ids, lo, n_keys } => {
                let keys = ids.iter().map(|&id| id.abs_diff(lo) as u32);
                let key_of = |i: usize| ids[i].abs_diff(lo) as usize;
                let (labels, census) =
                    by_keys(keys, n_keys, xs, |k| lo.wrapping_add(k as i64), key_of, omit, tol, sink);
                ScanInfo { labels: Some(labels), census }
            }
            Layout::Dense { labels, dense } => {
                let key_of = |i: usize| dense[i] as usize;
                let (labels, census) =
                    by_keys(dense.iter().copied(), labels.len(), xs, |k| labels[k], key_of, omit, tol, sink);
                ScanInfo { labels: Some(labels), census }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Contiguous groups

fn contiguous<T: Sample, S: Sink>(xs: &[T], size: usize, omit: bool, tol: Tolerance, sink: &mut S) -> SpreadCensus {
    sink.start(xs.len() / size);
    match size {
        1 => contiguous_fixed::<T, S, 1>(xs, omit, tol, sink),
        2 => contiguous_fixed::<T, S, 2>(xs, omit, tol, sink),
        4 => contiguous_fixed::<T, S, 4>(xs, omit, tol, sink),
        8 => contiguous_fixed::<T, S, 8>(xs, omit, tol, sink),
        16 => contiguous_fixed::<T, S, 16>(xs, omit, tol, sink),
        32 => contiguous_fixed::<T, S, 32>(xs, omit, tol, sink),
        64 => contiguous_fixed::<T, S, 64>(xs, omit, tol, sink),
        _ => contiguous_any(xs, size, omit, tol, sink),
    }
}

/// Power-of-two G known at compile time: blocks of [`BLOCK`] groups summarised side by side
/// (one SIMD lane per group), then handed to the sink and the census as whole columns. A block
/// holding a NaN, an infinity or an overflow is redone group by group on the exact path.
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn contiguous_fixed<T: Sample, S: Sink, const G: usize>(
    xs: &[T],
    omit: bool,
    tol: Tolerance,
    sink: &mut S,
) -> SpreadCensus {
    let mut census = SpreadCensus::default();
    let mut block = Block::new();
    for (b, chunk) in xs.chunks(BLOCK * G).enumerate() {
        let row = b * BLOCK;
        if summarise_block::<T, G>(chunk, &mut block) {
            census.record_block(&block, tol);
            sink.emit_block(row, &block);
        } else {
            for (k, group) in chunk.chunks_exact(G).enumerate() {
                let stat =
                    if block.m2[k].is_finite() { block.stat(k) } else { GroupStat::exact(group.iter().copied(), omit) };
                census.record(&stat, tol);
                sink.emit(row + k, &stat);
            }
        }
    }
    census
}

/// Summarise the `chunk.len() / G <= BLOCK` groups of `chunk` into `block` by shifted sums;
/// false when some group saw a NaN, an infinity or an overflow (its `m2` is then not finite).
///
/// With the shift `K = x[0]` a member of the group, `sum (x-K)^2 <= G * R^2` for the range `R`
/// while `M2 >= R^2 / 2`, so `M2 = sum (x-K)^2 - (sum (x-K))^2 / G` loses at most a factor
/// `2G` to cancellation on top of the tree sums' `log2(G)` rounding: relative error below
/// `2 G log2(G) eps`, 1e-13 for G = 64, whatever the offset of the values. For float32 input
/// the differences and their squares are exact in float64. One pass instead of two.
#[inline(always)]
fn summarise_block<T: Sample, const G: usize>(chunk: &[T], block: &mut Block) -> bool {
    let n = chunk.len() / G;
    assert!(n <= BLOCK);
    block.len = n;
    block.count = G as u64;
    let mut finite = true;
    for k in 0..n {
        let group: &[T; G] = chunk[k * G..(k + 1) * G].try_into().unwrap_or_else(|_| unreachable!());
        let shift = group[0].to_f64();
        let d: [f64; G] = std::array::from_fn(|i| group[i].to_f64() - shift);
        let s1 = tree(d, |a, b| a + b);
        let s2 = tree(d.map(|v| v * v), |a, b| a + b);
        // A NaN or an infinity anywhere makes `s2` NaN or infinite (as does overflow).
        finite &= s2 < f64::INFINITY;
        let offset = s1 / G as f64;
        block.shift[k] = shift;
        block.offset[k] = offset;
        // `s2 - s1 * offset` when finite, NaN otherwise (the group is then redone).
        block.m2[k] = if s2 < f64::INFINITY { (s2 - s1 * offset).max(0.0) } else { f64::NAN };
        // Comparisons in the input type: half the lanes of f64 for float32.
        block.min[k] = tree(*group, |a, b| if b < a { b } else { a }).to_f64();
        block.max[k] = tree(*group, |a, b| if b > a { b } else { a }).to_f64();
    }
    finite
}

/// Pairwise reduction of a power-of-two array, which the compiler lays out as SIMD lanes.
#[inline(always)]
fn tree<V: Copy, const G: usize>(mut v: [V; G], op: impl Fn(V, V) -> V) -> V {
    let mut w = G;
    while w > 1 {
        let h = w / 2;
        for i in 0..h {
            v[i] = op(v[i], v[i + h]);
        }
        w = h;
    }
    v[0]
}

/// Any G: the same two-pass summary with four interleaved accumulators.
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn contiguous_any<T: Sample, S: Sink>(xs: &[T], size: usize, omit: bool, tol: Tolerance, sink: &mut S) -> SpreadCensus {
    let mut census = SpreadCensus::default();
    for (row, chunk) in xs.chunks_exact(size).enumerate() {
        let stat = summarise_any(chunk).unwrap_or_else(|| GroupStat::exact(chunk.iter().copied(), omit));
        census.record(&stat, tol);
        sink.emit(row, &stat);
    }
    census
}

#[inline(always)]
fn summarise_any<T: Sample>(chunk: &[T]) -> Option<GroupStat> {
    const L: usize = 4;
    let n = chunk.len() as f64;
    let shift = chunk[0].to_f64();
    let (body, tail) = chunk.split_at(chunk.len() - chunk.len() % L);
    let lanes = |f: &dyn Fn(f64) -> f64| {
        let mut acc = [0.0f64; L];
        for c in body.chunks_exact(L) {
            for i in 0..L {
                acc[i] += f(c[i].to_f64());
            }
        }
        let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
        for &x in tail {
            s += f(x.to_f64());
        }
        s
    };
    let offset = lanes(&|x| x - shift) / n;
    let comp = lanes(&|x| (x - shift) - offset);
    let q = lanes(&|x| {
        let e = (x - shift) - offset;
        e * e
    });
    if !q.is_finite() {
        return None;
    }
    let (mut min, mut max) = (chunk[0], chunk[0]);
    for &x in chunk {
        min = if x < min { x } else { min };
        max = if x > max { x } else { max };
    }
    Some(GroupStat {
        count: chunk.len() as u64,
        shift,
        offset: offset + comp / n,
        m2: (q - comp * comp / n).max(0.0),
        min: min.to_f64(),
        max: max.to_f64(),
    })
}

// ---------------------------------------------------------------------------------------------
// Integer ids

/// One group's shifted sums. Laid out so a float32 group fills 32 bytes (two per cache line)
/// and never straddles a line: each sample costs one cache-line access.
#[repr(C, align(32))]
#[derive(Debug, Clone, Copy)]
struct Acc<T> {
    count: u32,
    shift: T,
    min: T,
    max: T,
    s1: f64,
    s2: f64,
}

/// Ids spanning less than the sample count divided by this (plus [`DIRECT_SLACK`]) are used as
/// keys directly (`id - min`); a wider span (sparse ids such as `1 << 40`) is first mapped to
/// dense keys by [`dense_ids`], so that empty keys never cost more than the samples do.
const DIRECT_SPAN_DIVISOR: u64 = 2;
/// Spans below this always index directly.
const DIRECT_SLACK: u64 = 1 << 16;

impl<T: Sample> Acc<T> {
    fn empty() -> Self {
        Self {
            count: 0,
            shift: T::default(),
            min: T::from_f64(f64::INFINITY),
            max: T::from_f64(f64::NEG_INFINITY),
            s1: 0.0,
            s2: 0.0,
        }
    }

    /// The group summary, or `None` when a NaN, an infinity or an overflow went in (the sums
    /// are then NaN or infinite) and the group must be recomputed from its members.
    #[inline(always)]
    fn stat(&self) -> Option<GroupStat> {
        if !self.s2.is_finite() {
            return None;
        }
        let offset = self.s1 / f64::from(self.count);
        Some(GroupStat {
            count: u64::from(self.count),
            shift: self.shift.to_f64(),
            offset,
            m2: (self.s2 - self.s1 * offset).max(0.0),
            min: self.min.to_f64(),
            max: self.max.to_f64(),
        })
    }
}

/// What one pass over the ids finds: their range, and whether they come in non-decreasing
/// order (each group one run of equal ids, as batches that list a prompt's completions
/// together have them).
struct IdSummary {
    lo: i64,
    hi: i64,
    /// Number of runs of equal consecutive ids.
    n_runs: usize,
    sorted: bool,
}

/// `ids` must not be empty.
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn summarise_ids(ids: &[i64]) -> IdSummary {
    let (mut lo, mut hi) = (ids[0], ids[0]);
    let (mut changes, mut descents) = (0usize, 0usize);
    for (&a, &b) in ids.iter().zip(&ids[1..]) {
        lo = lo.min(b);
        hi = hi.max(b);
        changes += usize::from(a != b);
        descents += usize::from(b < a);
    }
    IdSummary { lo, hi, n_runs: changes + 1, sorted: descents == 0 }
}

/// Sorted ids: each run of equal ids is one group, summarised as it streams past by the
/// shifted sums of [`insert`], in the same order and with the same shift (so the results do
/// not depend on which path the ids took). No table, no partition: one pass.
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn runs<T: Sample, S: Sink>(
    ids: &[i64],
    n_runs: usize,
    xs: &[T],
    omit: bool,
    tol: Tolerance,
    sink: &mut S,
) -> (Vec<i64>, SpreadCensus) {
    sink.start(n_runs);
    let mut labels = Vec::with_capacity(n_runs);
    let mut census = SpreadCensus::default();
    let mut start = 0;
    while start < ids.len() {
        let id = ids[start];
        let mut end = start + 1;
        while end < ids.len() && ids[end] == id {
            end += 1;
        }
        let group = &xs[start..end];
        let stat = summarise_run(group).unwrap_or_else(|| GroupStat::exact(group.iter().copied(), omit));
        census.record(&stat, tol);
        sink.emit(labels.len(), &stat);
        labels.push(id);
        start = end;
    }
    (labels, census)
}

/// [`insert`] over one group, unrolled: the shift is the first value (`insert` arrives at the
/// same one) and the first deviation is zero. `None` when a NaN, an infinity or an overflow
/// spoiled the sums.
#[inline(always)]
fn summarise_run<T: Sample>(group: &[T]) -> Option<GroupStat> {
    let first = group[0];
    let shift = first.to_f64();
    let (mut s1, mut s2, mut min, mut max) = (0.0f64, 0.0f64, first, first);
    for &x in group {
        let v = x.to_f64() - shift;
        s1 += v;
        s2 += v * v;
        min = if x < min { x } else { min };
        max = if x > max { x } else { max };
    }
    if !s2.is_finite() {
        return None;
    }
    let offset = s1 / group.len() as f64;
    Some(GroupStat {
        count: group.len() as u64,
        shift,
        offset,
        m2: (s2 - s1 * offset).max(0.0),
        min: min.to_f64(),
        max: max.to_f64(),
    })
}

/// Bytes of accumulator table worked on at a time: half of a 1 MiB L2 cache (AMD EPYC here;
/// 256 KiB made 100k-sample batches with 12.5k groups take the slower partitioned path).
const SLICE_BYTES: usize = 512 << 10;
/// At most this many partitions: more write streams than this thrash the write buffers.
const MAX_PARTITIONS: usize = 1024;

/// Accumulate and emit groups keyed `0..n_keys` (present keys only, in key order).
///
/// A table of all keys is far larger than the caches for millions of groups, and random
/// accesses to it stall on memory. So the samples are first partitioned by the high bits of
/// their key (one sequential pass, a few hundred write streams), then each partition is
/// accumulated into one cache-resident slice of the table, which is emitted and reset before
/// the next (radix partitioning, as in Manegold, Boncz & Kersten 2000, "Optimizing database
/// architecture for the new bottleneck: memory access", VLDB Journal 9(3)).
#[allow(clippy::too_many_arguments)]
fn by_keys<T: Sample, S: Sink>(
    keys: impl Iterator<Item = u32>,
    n_keys: usize,
    xs: &[T],
    label: impl Fn(usize) -> i64,
    key_of: impl Fn(usize) -> usize,
    omit: bool,
    tol: Tolerance,
    sink: &mut S,
) -> (Vec<i64>, SpreadCensus) {
    // Rows are at most the number of keys and the number of samples; sinks allocate that
    // (untouched pages cost nothing) and the caller truncates to the rows emitted.
    let max_rows = n_keys.min(xs.len());
    sink.start(max_rows);
    let mut out = Emitter { labels: Vec::with_capacity(max_rows), census: SpreadCensus::default(), redo: Vec::new() };
    let slice_len = (SLICE_BYTES / size_of::<Acc<T>>()).max(n_keys.div_ceil(MAX_PARTITIONS)).next_power_of_two();
    if n_keys <= slice_len {
        let mut table = vec![Acc::<T>::empty(); n_keys];
        accumulate(&mut table, keys, xs, 0);
        out.emit_slice(&mut table, 0, &label, tol, sink);
    } else {
        let shift = slice_len.trailing_zeros();
        let parts = partition(keys, xs, n_keys.div_ceil(slice_len), shift);
        let mut table = vec![Acc::<T>::empty(); slice_len];
        for (p, part) in parts.into_iter().enumerate() {
            let base = p << shift;
            accumulate_records(&mut table, &part, base);
            drop(part);
            out.emit_slice(&mut table, base, &label, tol, sink);
        }
    }
    out.recompute(n_keys, key_of, xs, omit, tol, sink);
    (out.labels, out.census)
}

/// Split `(key, value)` pairs by `key >> shift`, keeping sample order within each part.
fn partition<T: Sample>(keys: impl Iterator<Item = u32>, xs: &[T], n_parts: usize, shift: u32) -> Vec<Vec<(u32, T)>> {
    // Sized for evenly spread keys, plus slack: parts that overflow grow as usual.
    let expect = xs.len() / n_parts + xs.len() / n_parts / 8 + 16;
    let mut parts: Vec<Vec<(u32, T)>> = (0..n_parts).map(|_| Vec::with_capacity(expect)).collect();
    for (k, &x) in keys.zip(xs) {
        parts[(k >> shift) as usize].push((k, x));
    }
    parts
}

/// Add one sample to its group: shifted sums, with the group's first value as the shift.
///
/// The shift starts at 0, so `shift + (x - shift) * first` is exactly `x` for the group's first
/// sample and `shift` after it (a NaN or infinite `x` spoils it, but then the sums are spoiled
/// too and the group is recomputed). Arithmetic rather than a branch: which sample comes first
/// is unpredictable.
#[inline(always)]
fn insert<T: Sample>(a: &mut Acc<T>, x: T) {
    let first = (1.0 - f64::from(a.count)).max(0.0);
    let (xf, s) = (x.to_f64(), a.shift.to_f64());
    let s = s + (xf - s) * first;
    a.shift = T::from_f64(s);
    let v = xf - s;
    a.s1 += v;
    a.s2 += v * v;
    a.min = if x < a.min { x } else { a.min };
    a.max = if x > a.max { x } else { a.max };
    a.count += 1;
}

#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn accumulate<T: Sample>(table: &mut [Acc<T>], keys: impl Iterator<Item = u32>, xs: &[T], base: usize) {
    for (k, &x) in keys.zip(xs) {
        insert(&mut table[k as usize - base], x);
    }
}

#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn accumulate_records<T: Sample>(table: &mut [Acc<T>], records: &[(u32, T)], base: usize) {
    for &(k, x) in records {
        insert(&mut table[k as usize - base], x);
    }
}

/// Collects the rows emitted from the table slices and the groups to recompute.
struct Emitter {
    labels: Vec<i64>,
    census: SpreadCensus,
    /// `(key, row)` of groups whose sums went non-finite.
    redo: Vec<(usize, usize)>,
}

impl Emitter {
    /// Emit the present groups of `table` (keys `base..`) in key order and reset the slice.
    fn emit_slice<T: Sample, S: Sink>(
        &mut self,
        table: &mut [Acc<T>],
        base: usize,
        label: &impl Fn(usize) -> i64,
        tol: Tolerance,
        sink: &mut S,
    ) {
        for (j, a) in table.iter_mut().enumerate() {
            if a.count == 0 {
                continue;
            }
            let row = self.labels.len();
            self.labels.push(label(base + j));
            if let Some(stat) = a.stat() {
                self.census.record(&stat, tol);
                sink.emit(row, &stat);
            } else {
                self.redo.push((base + j, row));
            }
            *a = Acc::empty();
        }
    }

    /// Recompute the groups that saw NaN, infinities or overflow exactly from their members.
    fn recompute<T: Sample, S: Sink>(
        &mut self,
        n_keys: usize,
        key_of: impl Fn(usize) -> usize,
        xs: &[T],
        omit: bool,
        tol: Tolerance,
        sink: &mut S,
    ) {
        if self.redo.is_empty() {
            return;
        }
        let mut slot = vec![u32::MAX; n_keys];
        for (j, &(k, _)) in self.redo.iter().enumerate() {
            slot[k] = j as u32;
        }
        let mut members: Vec<Vec<T>> = vec![Vec::new(); self.redo.len()];
        for (i, &x) in xs.iter().enumerate() {
            let j = slot[key_of(i)];
            if j != u32::MAX {
                members[j as usize].push(x);
            }
        }
        for (&(_, row), m) in self.redo.iter().zip(&members) {
            let stat = GroupStat::exact(m.iter().copied(), omit);
            self.census.record(&stat, tol);
            sink.emit(row, &stat);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels

/// Per-group moments as columns (struct of arrays), one row per group: groups in order for a
/// contiguous layout, in ascending id order for ids.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupedMoments<T = f64> {
    /// The id of each group (`None` for a contiguous layout, where group `g` is samples `g*G..(g+1)*G`).
    pub labels: Option<Vec<i64>>,
    /// Values per group (after NaN omission).
    pub count: Vec<u64>,
    /// Mean; NaN for a group left empty.
    pub mean: Vec<f64>,
    /// `M2 / (count - ddof)`; NaN where `count <= ddof`.
    pub var: Vec<f64>,
    /// Smallest value, in the input type (exact); NaN for a group left empty.
    pub min: Vec<T>,
    /// Largest value, in the input type (exact); NaN for a group left empty.
    pub max: Vec<T>,
    /// The delta degrees of freedom of `var`.
    pub ddof: u32,
    /// The zero-variance census, counted in the same pass.
    pub census: SpreadCensus,
}

impl<T: Sample> GroupedMoments<T> {
    /// Number of groups.
    #[must_use]
    pub fn n_groups(&self) -> usize {
        self.count.len()
    }

    /// The mergeable state of group `g`, to [`Moments::combine`] with the same group of another
    /// shard. `M2` is recovered as `var * (count - ddof)`; it is lost only where
    /// `1 < count <= ddof` (use `ddof = 0` when merging).
    #[must_use]
    pub fn moments(&self, g: usize) -> Moments {
        let count = self.count[g];
        if count == 0 {
            return Moments::EMPTY;
        }
        let m2 = if count > u64::from(self.ddof) {
            self.var[g] * (count - u64::from(self.ddof)) as f64
        } else if count == 1 && !self.mean[g].is_nan() {
            0.0
        } else {
            f64::NAN
        };
        Moments { count, mean: self.mean[g], m2, min: self.min[g].to_f64(), max: self.max[g].to_f64() }
    }
}

/// Output columns borrowed from the caller (numpy arrays in the Python binding), each at least
/// [`Plan::max_groups`] long; row `g` is written for every group `g < n_groups`.
#[derive(Debug)]
pub struct Columns<'a, T> {
    /// Values per group; may be `None` when [`Plan::counts_vary`] is false (every group then
    /// holds the group size).
    pub count: Option<&'a mut [u64]>,
    /// Mean per group.
    pub mean: &'a mut [f64],
    /// Variance per group with `ddof`.
    pub var: &'a mut [f64],
    /// Smallest value per group, in the input type (exact).
    pub min: &'a mut [T],
    /// Largest value per group, in the input type (exact).
    pub max: &'a mut [T],
    /// Delta degrees of freedom of `var`.
    pub ddof: u32,
}

impl<T: Sample> Sink for Columns<'_, T> {
    fn start(&mut self, max_groups: usize) {
        let count = self.count.as_ref().map_or(usize::MAX, |c| c.len());
        let shortest =
            [self.mean.len(), self.var.len(), self.min.len(), self.max.len()].into_iter().fold(count, usize::min);
        assert!(shortest >= max_groups, "output columns hold {shortest} rows, {max_groups} needed");
    }

    #[inline(always)]
    fn emit(&mut self, row: usize, s: &GroupStat) {
        let dof = s.count.saturating_sub(u64::from(self.ddof));
        if let Some(count) = self.count.as_deref_mut() {
            count[row] = s.count;
        }
        self.mean[row] = s.mean();
        self.var[row] = if dof > 0 { s.m2 / dof as f64 } else { f64::NAN };
        self.min[row] = T::from_f64(s.min);
        self.max[row] = T::from_f64(s.max);
    }

    #[inline(always)]
    fn emit_block(&mut self, row: usize, b: &Block) {
        let rows = row..row + b.len;
        if let Some(count) = self.count.as_deref_mut() {
            count[rows.clone()].fill(b.count);
        }
        for ((mean, &shift), &offset) in self.mean[rows.clone()].iter_mut().zip(&b.shift).zip(&b.offset) {
            *mean = shift + offset;
        }
        let dof = b.count.saturating_sub(u64::from(self.ddof));
        let var = &mut self.var[rows.clone()];
        if dof > 0 {
            for (v, &m2) in var.iter_mut().zip(&b.m2) {
                *v = m2 / dof as f64;
            }
        } else {
            var.fill(f64::NAN);
        }
        for (out, &v) in self.min[rows.clone()].iter_mut().zip(&b.min) {
            *out = T::from_f64(v);
        }
        for (out, &v) in self.max[rows].iter_mut().zip(&b.max) {
            *out = T::from_f64(v);
        }
    }
}

/// Compute per-group count, mean, variance (`ddof`), min and max, and the zero-variance census
/// with tolerances `tol`, in one pass.
///
/// # Errors
/// See [`scan`].
pub fn grouped_moments<T: Sample>(
    values: &[T],
    groups: Groups<'_>,
    ddof: u32,
    nan_policy: NanPolicy,
    tol: Tolerance,
) -> Result<GroupedMoments<T>> {
    let plan = Plan::new(values, groups, nan_policy, tol)?;
    let m = plan.max_groups();
    let (mut count, mut mean, mut var) = (vec![0; m], vec![0.0; m], vec![0.0; m]);
    let (mut min, mut max) = (vec![T::default(); m], vec![T::default(); m]);
    let info = plan.run(&mut Columns {
        count: Some(&mut count),
        mean: &mut mean,
        var: &mut var,
        min: &mut min,
        max: &mut max,
        ddof,
    });
    let n = info.census.n_groups as usize;
    for v in [&mut mean, &mut var] {
        v.truncate(n);
    }
    for v in [&mut min, &mut max] {
        v.truncate(n);
    }
    count.truncate(n);
    Ok(GroupedMoments { labels: info.labels, count, mean, var, min, max, ddof, census: info.census })
}

/// Discards the summaries: the census alone.
struct Discard;

impl Sink for Discard {
    fn start(&mut self, _: usize) {}
    #[inline(always)]
    fn emit(&mut self, _: usize, _: &GroupStat) {}
}

/// The zero-variance census of the groups of `values` (see [`SpreadCensus`]).
///
/// # Errors
/// See [`scan`].
pub fn zero_variance_fraction<T: Sample>(
    values: &[T],
    groups: Groups<'_>,
    tol: Tolerance,
    nan_policy: NanPolicy,
) -> Result<SpreadCensus> {
    Ok(scan(values, groups, nan_policy, tol, &mut Discard)?.census)
}

/// Population variance (ddof 0) split into its within-group and between-group parts:
/// `total = within + between`, `within = sum_g n_g var_g / N`,
/// `between = sum_g n_g (mean_g - mean)^2 / N`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VarianceDecomposition {
    /// Variance of all values, `within + between`.
    pub total: f64,
    /// Count-weighted mean of the group variances.
    pub within: f64,
    /// Count-weighted variance of the group means around the overall mean.
    pub between: f64,
    /// Number of values (after NaN omission).
    pub count: u64,
    /// Number of groups (including groups left empty by NaN omission).
    pub n_groups: u64,
}

impl VarianceDecomposition {
    /// `within / total`; NaN when `total == 0`.
    #[must_use]
    pub fn within_fraction(&self) -> f64 {
        if self.total == 0.0 { f64::NAN } else { self.within / self.total }
    }
}

/// Sums the group M2s and runs a count-weighted Welford update (West 1979, "Updating mean and
/// variance estimates: an improved method", CACM 22(9)) over the group means. The means enter
/// relative to the first group's shift, so their small differences keep every digit.
#[derive(Default)]
struct Decompose {
    anchor: Option<f64>,
    count: u64,
    mean: f64,
    within: f64,
    between: f64,
}

impl Sink for Decompose {
    fn start(&mut self, _: usize) {}

    #[inline]
    fn emit(&mut self, _: usize, s: &GroupStat) {
        if s.count == 0 {
            return;
        }
        let anchor = *self.anchor.get_or_insert(s.shift);
        let c = (s.shift - anchor) + s.offset;
        self.count += s.count;
        let w = s.count as f64;
        let delta = c - self.mean;
        self.mean += delta * (w / self.count as f64);
        self.between += w * delta * (c - self.mean);
        self.within += s.m2;
    }
}

/// Split the population variance of `values` into within- and between-group parts.
///
/// # Errors
/// See [`scan`]; also [`StatsError::Empty`] when every value is NaN and omitted.
pub fn variance_decomposition<T: Sample>(
    values: &[T],
    groups: Groups<'_>,
    nan_policy: NanPolicy,
) -> Result<VarianceDecomposition> {
    let mut d = Decompose::default();
    let info = scan(values, groups, nan_policy, Tolerance::default(), &mut d)?;
    if d.count == 0 {
        return Err(StatsError::Empty { arg: "values" });
    }
    let n = d.count as f64;
    let (within, between) = (d.within / n, d.between.max(0.0) / n);
    Ok(VarianceDecomposition {
        total: within + between,
        within,
        between,
        count: d.count,
        n_groups: info.census.n_groups,
    })
}

/// Explained variance overall and, when groups are given, per group.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedVariance {
    /// `1 - Var(returns - values) / Var(returns)` over all pairs; NaN when undefined.
    pub overall: f64,
    /// True when `Var(returns) == 0` over all pairs (or no pair is left), so `overall` is NaN.
    pub overall_undefined: bool,
    /// Per group, when groups were given.
    pub per_group: Option<PerGroupExplained>,
}

/// The per-group part of [`ExplainedVariance`].
#[derive(Debug, Clone, PartialEq)]
pub struct PerGroupExplained {
    /// The group ids (`None` for a contiguous layout).
    pub labels: Option<Vec<i64>>,
    /// Explained variance of each group; NaN where the group's `Var(returns) == 0`.
    pub explained: Vec<f64>,
    /// Number of groups whose `Var(returns) == 0` (or that no pair is left in).
    pub n_undefined: u64,
}

/// `1 - Var(returns - values) / Var(returns)`, as PPO implementations log `vf_explained_var`,
/// overall and per group. NaN pairs are dropped jointly under [`NanPolicy::Omit`].
///
/// # Errors
/// Empty `returns`, `values` of another length, a bad layout, NaN under [`NanPolicy::Raise`].
pub fn explained_variance<T: Sample>(
    returns: &[T],
    values: &[T],
    groups: Option<Groups<'_>>,
    nan_policy: NanPolicy,
) -> Result<ExplainedVariance> {
    check_non_empty("returns", returns.len())?;
    check_same_len("returns", returns.len(), "values", values.len())?;
    if let Some(layout) = groups {
        layout.check("returns", returns.len())?;
    }
    raise_on_nan(nan_policy, "returns", returns)?;
    raise_on_nan(nan_policy, "values", values)?;
    let omit = nan_policy == NanPolicy::Omit;
    // A pair with a NaN on either side is NaN on both, so omission drops it jointly.
    let (r, resid): (Vec<f64>, Vec<f64>) = returns
        .iter()
        .zip(values)
        .map(|(&r, &v)| {
            let (r, v) = (r.to_f64(), v.to_f64());
            let r = if omit && v.is_nan() { f64::NAN } else { r };
            (r, r - v)
        })
        .unzip();
    let ratio = |layout: Groups<'_>| -> Result<PerGroupExplained> {
        let tol = Tolerance::default();
        let var_r = grouped_moments(&r, layout, 0, nan_policy, tol)?;
        let var_e = grouped_moments(&resid, layout, 0, nan_policy, tol)?;
        let mut n_undefined = 0;
        let explained = var_r
            .var
            .iter()
            .zip(&var_r.count)
            .zip(&var_e.var)
            .map(|((&vr, &count), &ve)| {
                if vr == 0.0 || count == 0 {
                    n_undefined += 1;
                    f64::NAN
                } else {
                    1.0 - ve / vr
                }
            })
            .collect();
        Ok(PerGroupExplained { labels: var_r.labels, explained, n_undefined })
    };
    let all = ratio(Groups::Contiguous { size: r.len() })?;
    let per_group = groups.map(ratio).transpose()?;
    Ok(ExplainedVariance { overall: all.explained[0], overall_undefined: all.n_undefined > 0, per_group })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: each group gathered and summarised by `Moments::from_slice`.
    fn reference(values: &[f64], ids: &[i64]) -> Vec<(i64, Moments)> {
        let mut labels: Vec<i64> = ids.to_vec();
        labels.sort_unstable();
        labels.dedup();
        labels
            .into_iter()
            .map(|l| {
                let xs: Vec<f64> = values.iter().zip(ids).filter(|(_, id)| **id == l).map(|(x, _)| *x).collect();
                (l, Moments::from_slice(&xs))
            })
            .collect()
    }

    fn close(a: f64, b: f64, rel: f64, scale: f64) -> bool {
        a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= rel * (scale + a.abs().max(b.abs()))
    }

    fn run(values: &[f64], groups: Groups<'_>) -> GroupedMoments {
        grouped_moments(values, groups, 0, NanPolicy::Propagate, Tolerance::default()).unwrap()
    }

    #[test]
    fn known_values_and_census() {
        let xs = [1.0f64, 1.0, 0.0, 2.0, 5.0, 5.0 + 1e-9, 3.0, 3.0];
        let m = run(&xs, Groups::Contiguous { size: 2 });
        assert_eq!(m.mean, vec![1.0, 1.0, 5.0 + 0.5e-9, 3.0]);
        assert_eq!(m.var[..2], [0.0, 1.0]);
        assert_eq!(m.census, SpreadCensus { n_groups: 4, n_singleton: 0, n_exact_zero: 2, n_near_zero: 3, n_nan: 0 });
        assert_eq!(m.census.exact_fraction(), 0.5);
        let ids = [3i64, 3, 1, 1, 1 << 40, 1 << 40, 9, 9];
        let m = run(&xs, Groups::Ids(&ids));
        assert_eq!(m.labels, Some(vec![1, 3, 9, 1 << 40]));
        assert_eq!(m.mean[..3], [1.0, 1.0, 3.0]);
    }

    #[test]
    fn nan_rules() {
        let xs = [1.0f64, f64::NAN, 2.0, 2.0, f64::NAN, 7.0];
        let ids = [0i64, 0, 1, 1, 2, 3];
        let p = grouped_moments(&xs, Groups::Ids(&ids), 0, NanPolicy::Propagate, Tolerance::default()).unwrap();
        assert!(p.mean[0].is_nan() && p.min[0].is_nan());
        assert_eq!(p.census.n_nan, 1);
        assert!(p.census.exact_fraction().is_nan());
        let o = grouped_moments(&xs, Groups::Ids(&ids), 0, NanPolicy::Omit, Tolerance::default()).unwrap();
        assert_eq!(o.count, vec![1, 2, 0, 1]);
        assert_eq!(o.mean[0], 1.0);
        assert!(o.mean[2].is_nan());
        assert_eq!((o.census.n_singleton, o.census.n_exact_zero), (3, 1));
        assert_eq!(o.census.exact_fraction(), 1.0);
        let e = grouped_moments(&xs, Groups::Contiguous { size: 2 }, 0, NanPolicy::Raise, Tolerance::default());
        assert_eq!(e.unwrap_err(), StatsError::NanFound { arg: "values", index: 1 });
    }

    #[test]
    fn infinities_follow_numpy() {
        let xs = [f64::INFINITY, 1.0, 2.0, f64::INFINITY];
        for groups in [Groups::Contiguous { size: 2 }, Groups::Ids(&[0, 0, 1, 1])] {
            let m = run(&xs, groups);
            assert_eq!(m.mean, vec![f64::INFINITY; 2]);
            assert!(m.var.iter().all(|v| v.is_nan()));
            assert_eq!((m.min, m.max), (vec![1.0, 2.0], vec![f64::INFINITY; 2]));
        }
    }

    #[test]
    fn huge_offset_is_exact() {
        let xs: Vec<f64> = (0..4096).map(|i| 1e6 + 1e-3 * f64::from((i * 7919) % 13)).collect();
        let ids: Vec<i64> = (0..4096).map(|i| (i * 31) % 64).collect();
        let m = run(&xs, Groups::Ids(&ids));
        for (g, (_, r)) in reference(&xs, &ids).iter().enumerate() {
            assert!(close(m.var[g], r.variance(0).unwrap(), 1e-9, 0.0), "{} vs {:?}", m.var[g], r);
        }
        let d = variance_decomposition(&xs, Groups::Ids(&ids), NanPolicy::Propagate).unwrap();
        let total = Moments::from_slice(&xs).variance(0).unwrap();
        assert!(close(d.total, total, 1e-9, 0.0));
    }

    proptest! {
        #[test]
        fn ids_and_contiguous_match_the_reference(
            raw in prop::collection::vec((0i64..6, -3i32..4), 1..120),
            size in 1usize..9,
            sparse in any::<bool>(),
        ) {
            let values: Vec<f64> = raw.iter().map(|&(_, v)| f64::from(v) * 0.5 + 1e6).collect();
            let ids: Vec<i64> = raw.iter().map(|&(id, _)| if sparse { id << 40 } else { id }).collect();
            let m = run(&values, Groups::Ids(&ids));
            let r = reference(&values, &ids);
            prop_assert_eq!(m.labels.clone().unwrap(), r.iter().map(|(l, _)| *l).collect::<Vec<_>>());
            for (g, (_, want)) in r.iter().enumerate() {
                let got = m.moments(g);
                prop_assert_eq!(got.count, want.count);
                prop_assert!(close(got.mean, want.mean, 1e-15, 0.0));
                prop_assert!(close(got.m2, want.m2, 1e-9, 1e-6));
                prop_assert_eq!((got.min, got.max), (want.min, want.max));
            }
            let n = values.len() - values.len() % size;
            prop_assume!(n > 0);
            let c = run(&values[..n], Groups::Contiguous { size });
            for (g, chunk) in values[..n].chunks_exact(size).enumerate() {
                let want = Moments::from_slice(chunk);
                prop_assert!(close(c.mean[g], want.mean, 1e-15, 0.0));
                prop_assert!(close(c.var[g], want.variance(0).unwrap(), 1e-9, 1e-6));
            }
        }

        #[test]
        fn halves_combine_to_the_whole(
            a in prop::collection::vec(-1e3f64..1e3, 1..64),
            b in prop::collection::vec(-1e3f64..1e3, 1..64),
        ) {
            // Two shards of one batch with the same group ids: per-group states merge exactly.
            let ids_a: Vec<i64> = (0..a.len() as i64).map(|i| i % 3).collect();
            let ids_b: Vec<i64> = (0..b.len() as i64).map(|i| i % 3).collect();
            let whole: Vec<f64> = a.iter().chain(&b).copied().collect();
            let ids: Vec<i64> = ids_a.iter().chain(&ids_b).copied().collect();
            let (ma, mb, mw) = (run(&a, Groups::Ids(&ids_a)), run(&b, Groups::Ids(&ids_b)), run(&whole, Groups::Ids(&ids)));
            for (g, label) in mw.labels.clone().unwrap().iter().enumerate() {
                let part = |m: &GroupedMoments| {
                    m.labels.as_ref().unwrap().iter().position(|l| l == label).map_or(Moments::EMPTY, |i| m.moments(i))
                };
                let merged = part(&ma).combine(&part(&mb));
                let want = mw.moments(g);
                prop_assert_eq!(merged.count, want.count);
                prop_assert!(close(merged.mean, want.mean, 1e-12, 1.0));
                prop_assert!(close(merged.m2, want.m2, 1e-9, 1e-9));
            }
        }

        #[test]
        fn decomposition_identity(
            values in prop::collection::vec(-1e3f64..1e3, 1..200),
            k in 1i64..10,
        ) {
            let ids: Vec<i64> = (0..values.len() as i64).map(|i| (i * 7) % k).collect();
            let d = variance_decomposition(&values, Groups::Ids(&ids), NanPolicy::Propagate).unwrap();
            let total = Moments::from_slice(&values).variance(0).unwrap();
            prop_assert!(d.within >= 0.0 && d.between >= 0.0);
            prop_assert!(close(d.total, total, 1e-10, 1e-9));
            prop_assert_eq!(d.total, d.within + d.between);
        }

        #[test]
        fn census_counts_are_consistent(
            values in prop::collection::vec(prop::sample::select(vec![0.0f64, 1.0, 1.0 + 1e-7, f64::NAN]), 1..64),
            size in 1usize..5,
        ) {
            let n = values.len() - values.len() % size;
            prop_assume!(n > 0);
            let c = zero_variance_fraction(&values[..n], Groups::Contiguous { size }, Tolerance::default(), NanPolicy::Omit).unwrap();
            prop_assert!(c.n_exact_zero <= c.n_near_zero);
            prop_assert!(c.n_near_zero + c.n_singleton <= c.n_groups);
            prop_assert_eq!(c.n_nan, 0);
        }
    }

    #[test]
    fn partitioned_ids_with_nan_and_inf() {
        // More keys than one cache-sized table slice holds, so the ids are partitioned; a few
        // NaN and infinite values send their groups to the exact path.
        let n = 60_000usize;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ids: Vec<i64> = (0..n).map(|_| (next() % 20_000) as i64 - 7).collect();
        let mut values: Vec<f64> = (0..n).map(|_| 1e6 + (next() % 5) as f64 * 0.25).collect();
        for i in (0..n).step_by(997) {
            values[i] = if i % 2 == 0 { f64::NAN } else { f64::INFINITY };
        }
        let mut by_id: std::collections::BTreeMap<i64, Vec<f64>> = std::collections::BTreeMap::new();
        for (&id, &x) in ids.iter().zip(&values) {
            by_id.entry(id).or_default().push(x);
        }
        for policy in [NanPolicy::Propagate, NanPolicy::Omit] {
            let m = grouped_moments(&values, Groups::Ids(&ids), 0, policy, Tolerance::default()).unwrap();
            assert_eq!(m.labels.as_ref().unwrap().len(), by_id.len());
            for (g, (&id, xs)) in by_id.iter().enumerate() {
                assert_eq!(m.labels.as_ref().unwrap()[g], id);
                let kept: Vec<f64> =
                    xs.iter().copied().filter(|x| policy == NanPolicy::Propagate || !x.is_nan()).collect();
                let want = GroupStat::exact(kept.iter().copied(), false);
                assert_eq!(m.count[g], want.count);
                assert!(close(m.mean[g], want.mean(), 1e-15, 0.0), "{id}: {} vs {}", m.mean[g], want.mean());
                let var = want.m2 / want.count as f64;
                assert!(close(m.var[g], var, 1e-9, 1e-12), "{id}: {} vs {var}", m.var[g]);
            }
        }
    }

    #[test]
    fn contiguous_blocks_with_nan_and_inf() {
        // Several blocks of G = 8 groups, a partial last block, and a few NaN and infinite
        // values that send their block group by group to the exact path.
        let g = 8;
        let n = g * (3 * BLOCK + 5);
        let mut values: Vec<f32> = (0..n).map(|i| 1e6 + ((i * 7919) % 5) as f32 * 0.25).collect();
        for i in (3..n).step_by(1001) {
            values[i] = if i % 2 == 0 { f32::NAN } else { f32::INFINITY };
        }
        for policy in [NanPolicy::Propagate, NanPolicy::Omit] {
            let m = grouped_moments(&values, Groups::Contiguous { size: g }, 0, policy, Tolerance::default()).unwrap();
            let mut census = SpreadCensus::default();
            for (k, chunk) in values.chunks_exact(g).enumerate() {
                let want = GroupStat::exact(chunk.iter().copied(), policy == NanPolicy::Omit);
                census.record(&want, Tolerance::default());
                assert_eq!(m.count[k], want.count);
                assert!(close(m.mean[k], want.mean(), 1e-15, 0.0), "{k}: {} vs {}", m.mean[k], want.mean());
                let var = want.m2 / want.count as f64;
                assert!(close(m.var[k], var, 1e-9, 1e-12), "{k}: {} vs {var}", m.var[k]);
                assert!(
                    close(f64::from(m.min[k]), want.min, 0.0, 0.0) && close(f64::from(m.max[k]), want.max, 0.0, 0.0)
                );
            }
            assert_eq!(m.census, census);
        }
    }

    #[test]
    fn explained_variance_known() {
        let r = [1.0f64, 2.0, 3.0, 4.0];
        let v = [1.0f64, 2.0, 3.0, 3.0];
        let ev = explained_variance(&r, &v, Some(Groups::Contiguous { size: 2 }), NanPolicy::Propagate).unwrap();
        // resid = [0, 0, 0, 1]: var 0.1875; var(r) = 1.25.
        assert!(close(ev.overall, 1.0 - 0.1875 / 1.25, 1e-15, 0.0));
        let per_group = ev.per_group.unwrap();
        assert_eq!(per_group.explained, vec![1.0, 0.0]);
        assert_eq!(per_group.n_undefined, 0);
        let e = explained_variance(&r, &v[..3], None, NanPolicy::Propagate).unwrap_err();
        assert_eq!(e.arg(), "values");
    }
}
