//! Quantiles with numpy's thirteen `method`s, computed by multi-rank radix selection.
//!
//! **Positions.** [`Method::position`] turns `(n, q)` into the order statistics a quantile needs
//! and the interpolation weight, with the floating-point operations of `numpy.quantile` (numpy
//! 2.x, `_QuantileMethods`, `_compute_virtual_index`, `_get_indexes`, `_lerp`), so results are
//! bit-identical to numpy run on the values widened to float64. The continuous methods are the
//! sample quantiles of Hyndman & Fan (1996), "Sample quantiles in statistical packages",
//! The American Statistician 50(4), definitions 4-9.
//!
//! **Selection.** The needed order statistics are found together without sorting: one pass
//! histograms the top [`RADIX_BITS`] bits of the order-preserving keys ([`crate::sortkey`]),
//! the cumulative counts give the bucket and the rank inside it of every needed order
//! statistic, and a second pass gathers only those buckets' keys, which are finished by
//! `select_nth_unstable`. A bucket holding more than a quarter of the data (heavy ties: many RL
//! rewards are exactly 0 or 1; or a huge common offset, `1e6 + noise`) is not gathered but
//! refined by another histogram pass restricted to its key range, which also records the
//! range's exact minimum and maximum: a bucket of a single value ends there, in linear time.
//! This is the MSD radix select of the radix-sort literature (e.g. Alabi et al. 2012, "Fast
//! k-selection algorithms for graphics processing units", JEA 17) for several ranks at once.
//!
//! **One dominant value.** When one value holds at least half of a probe of the first values (90 % of
//! RL rewards at exactly 0), one pass counts it (and the values below it) and copies the others out;
//! the order statistics inside its run are that value, the others are selected among the copied ones
//! (a tenth of the data) as above.

use crate::error::{Result, StatsError, check_non_empty};
use crate::sample::{NanPolicy, Sample, raise_on_nan};
use crate::simd::dispatch;
use crate::sortkey::SortKey;

/// The quantile definitions of `numpy.quantile`, by numpy's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// H&F 1: the inverse of the empirical CDF (discontinuous).
    InvertedCdf,
    /// H&F 2: as `InvertedCdf`, averaging at discontinuities.
    AveragedInvertedCdf,
    /// H&F 3: the nearest order statistic, the even one at ties (discontinuous).
    ClosestObservation,
    /// H&F 4: linear interpolation of the empirical CDF.
    InterpolatedInvertedCdf,
    /// H&F 5: piecewise linear with knots at the midpoints of the steps.
    Hazen,
    /// H&F 6: `p[k] = k / (n + 1)`.
    Weibull,
    /// H&F 7, numpy's and Polars' default: `p[k] = (k - 1) / (n - 1)`.
    Linear,
    /// H&F 8: median-unbiased whatever the distribution.
    MedianUnbiased,
    /// H&F 9: unbiased for normally distributed data.
    NormalUnbiased,
    /// The order statistic at `floor((n - 1) q)`.
    Lower,
    /// The order statistic at `ceil((n - 1) q)`.
    Higher,
    /// The mean of `Lower` and `Higher`.
    Midpoint,
    /// The order statistic at `(n - 1) q` rounded half to even.
    Nearest,
}

impl Method {
    /// Every method, in numpy's documentation order.
    pub const ALL: [Self; 13] = [
        Self::InvertedCdf,
        Self::AveragedInvertedCdf,
        Self::ClosestObservation,
        Self::InterpolatedInvertedCdf,
        Self::Hazen,
        Self::Weibull,
        Self::Linear,
        Self::MedianUnbiased,
        Self::NormalUnbiased,
        Self::Lower,
        Self::Higher,
        Self::Midpoint,
        Self::Nearest,
    ];

    /// numpy's name of the method.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::InvertedCdf => "inverted_cdf",
            Self::AveragedInvertedCdf => "averaged_inverted_cdf",
            Self::ClosestObservation => "closest_observation",
            Self::InterpolatedInvertedCdf => "interpolated_inverted_cdf",
            Self::Hazen => "hazen",
            Self::Weibull => "weibull",
            Self::Linear => "linear",
            Self::MedianUnbiased => "median_unbiased",
            Self::NormalUnbiased => "normal_unbiased",
            Self::Lower => "lower",
            Self::Higher => "higher",
            Self::Midpoint => "midpoint",
            Self::Nearest => "nearest",
        }
    }

    /// Parse numpy's name.
    ///
    /// # Errors
    /// [`StatsError::Invalid`] naming `method`, listing the valid names.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|m| m.name()).collect();
            StatsError::invalid("method", format!("unknown method {s:?}; expected one of {}", names.join(", ")))
        })
    }

    /// Where the `q` quantile of `n >= 1` sorted values lies, computed as numpy does.
    #[must_use]
    pub fn position(self, n: usize, q: f64) -> Position {
        debug_assert!(n >= 1);
        let nf = n as f64;
        let last = n - 1;
        // Discrete methods index the sorted data directly (numpy `take`s, no interpolation).
        let take = |index: f64| Position::Take((index.max(0.0) as usize).min(last));
        match self {
            Self::InvertedCdf => {
                let index = nf * q - 1.0;
                let prev = index.floor();
                take(if index - prev == 0.0 { prev } else { prev + 1.0 })
            }
            Self::ClosestObservation => {
                // H&F: at a tie pick the even 1-based order statistic, i.e. the odd 0-based one.
                let index = nf * q - 1.0 - 0.5;
                let prev = index.floor();
                let odd = prev.rem_euclid(2.0) == 1.0;
                take(if index - prev == 0.0 && odd { prev } else { prev + 1.0 })
            }
            Self::Lower => take(((nf - 1.0) * q).floor()),
            Self::Higher => take(((nf - 1.0) * q).ceil()),
            Self::Nearest => take(((nf - 1.0) * q).round_ties_even()),
            Self::AveragedInvertedCdf => {
                let virtual_index = nf * q - 1.0;
                let g = virtual_index - virtual_index.floor();
                Self::lerp_position(n, virtual_index, if g == 0.0 { 0.5 } else { 1.0 })
            }
            Self::Midpoint => {
                let i = (nf - 1.0) * q;
                let virtual_index = 0.5 * (i.floor() + i.ceil());
                let g = if virtual_index % 1.0 == 0.0 { 0.0 } else { 0.5 };
                Self::lerp_position(n, virtual_index, g)
            }
            Self::Linear => {
                // numpy uses `(n - 1) q` here rather than the general formula, to avoid rounding.
                let virtual_index = (nf - 1.0) * q;
                Self::lerp_position(n, virtual_index, virtual_index - virtual_index.floor())
            }
            Self::InterpolatedInvertedCdf => Self::alpha_beta(n, q, 0.0, 1.0),
            Self::Hazen => Self::alpha_beta(n, q, 0.5, 0.5),
            Self::Weibull => Self::alpha_beta(n, q, 0.0, 0.0),
            Self::MedianUnbiased => Self::alpha_beta(n, q, 1.0 / 3.0, 1.0 / 3.0),
            Self::NormalUnbiased => Self::alpha_beta(n, q, 3.0 / 8.0, 3.0 / 8.0),
        }
    }

    /// numpy's `_compute_virtual_index` (same operation order, so the same rounding).
    fn alpha_beta(n: usize, q: f64, alpha: f64, beta: f64) -> Position {
        let nf = n as f64;
        let virtual_index = nf * q + (alpha + q * (1.0 - alpha - beta)) - 1.0;
        Self::lerp_position(n, virtual_index, virtual_index - virtual_index.floor())
    }

    /// numpy's `_get_indexes`: neighbours of the virtual index, clamped to the data.
    fn lerp_position(n: usize, virtual_index: f64, gamma: f64) -> Position {
        let last = n - 1;
        let (lo, hi) = if virtual_index >= last as f64 {
            (last, last)
        } else if virtual_index < 0.0 {
            (0, 0)
        } else {
            let prev = virtual_index.floor() as usize;
            (prev, prev + 1)
        };
        Position::Lerp { lo, hi, gamma }
    }
}

/// Which order statistics (0-based ranks in the sorted data) a quantile is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Position {
    /// The order statistic at this rank, as is.
    Take(usize),
    /// numpy's `_lerp` between the order statistics at `lo` and `hi` with weight `gamma`.
    Lerp {
        /// Lower rank.
        lo: usize,
        /// Upper rank (`lo` or `lo + 1`).
        hi: usize,
        /// Weight of the upper value.
        gamma: f64,
    },
}

impl Position {
    /// The ranks this position reads.
    #[must_use]
    pub fn ranks(self) -> [usize; 2] {
        match self {
            Self::Take(r) => [r, r],
            Self::Lerp { lo, hi, .. } => [lo, hi],
        }
    }

    /// The quantile given the values at [`Position::ranks`].
    #[must_use]
    pub fn combine(self, a: f64, b: f64) -> f64 {
        match self {
            Self::Take(_) => a,
            Self::Lerp { gamma, .. } => lerp(a, b, gamma),
        }
    }
}

/// numpy's `_lerp`: `a + (b - a) t`, evaluated from the nearer end for `t >= 0.5` so that
/// `t = 1` returns `b` exactly. Infinite endpoints give what numpy gives (often NaN).
#[must_use]
pub fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// Check that every `q` is in `[0, 1]` (NaN is rejected too).
///
/// # Errors
/// [`StatsError::Invalid`] naming `q`.
pub fn check_q(q: &[f64]) -> Result<()> {
    match q.iter().position(|&p| !(0.0..=1.0).contains(&p)) {
        None => Ok(()),
        Some(i) => Err(StatsError::invalid("q", format!("q[{i}] = {} is outside [0, 1]", q[i]))),
    }
}

/// The quantiles `q` of `values`, equal to `numpy.quantile(values.astype(float64), q, method)`.
///
/// NaN in `values`: [`NanPolicy::Propagate`] returns NaN for every `q`; [`NanPolicy::Omit`]
/// drops NaN first (as `numpy.nanquantile`) and returns NaN for every `q` if nothing is left.
///
/// # Errors
/// Empty `values`; `q` outside `[0, 1]`; NaN under [`NanPolicy::Raise`].
pub fn quantile<T: Select>(values: &[T], q: &[f64], method: Method, nan_policy: NanPolicy) -> Result<Vec<f64>> {
    check_non_empty("values", values.len())?;
    check_q(q)?;
    raise_on_nan(nan_policy, "values", values)?;
    if let Some(tie) = dominant_key(values) {
        return Ok(tied_quantile(values, tie, q, method, nan_policy));
    }
    let selector = Selector::new(values, key_of::<T>);
    if selector.n_nan() > 0 && nan_policy == NanPolicy::Propagate || selector.n_valid() == 0 {
        return Ok(vec![f64::NAN; q.len()]);
    }
    Ok(combined::<T>(selector.n_valid(), q, method, |ranks| selector.select(ranks)))
}

/// The quantiles `q` of `n` non-NaN values by `method`: the order statistics they need, as keys from
/// `select` (given their ranks), combined as numpy combines them.
fn combined<T: Select>(n: usize, q: &[f64], method: Method, select: impl FnOnce(&[usize]) -> Vec<u64>) -> Vec<f64> {
    let positions: Vec<Position> = q.iter().map(|&p| method.position(n, p)).collect();
    let ranks: Vec<usize> = positions.iter().flat_map(|p| p.ranks()).collect();
    let keys = select(&ranks);
    let value = |k: u64| T::from_key(T::Key::from_u64(k)).to_f64();
    positions.iter().zip(keys.chunks_exact(2)).map(|(p, k)| p.combine(value(k[0]), value(k[1]))).collect()
}

/// A value held by at least this share of the probe (the first [`PROBE`] values) is taken out before
/// selecting: 90 % of RL rewards at exactly 0 cost two full passes of the histogram selection (one to
/// count, one to gather the keys around the upper quantiles), the split one pass and the selection a
/// pass over the other 10 %.
const TIE_SHARE: usize = 2;

/// The key of the value that at least 1 / [`TIE_SHARE`] of the probe holds (not NaN), for inputs the
/// histogram selection would take (more than [`SMALL_MAX`] values); None otherwise.
fn dominant_key<T: Select>(values: &[T]) -> Option<T::Key> {
    if values.len() <= SMALL_MAX {
        return None;
    }
    let mut probe: Vec<T::Key> = values[..PROBE].iter().map(|&x| key_of(x)).collect();
    probe.sort_unstable();
    let (mut best, mut best_len, mut start) = (probe[0], 0usize, 0usize);
    for i in 1..=probe.len() {
        if i == probe.len() || probe[i] != probe[start] {
            if i - start > best_len {
                (best, best_len) = (probe[start], i - start);
            }
            start = i;
        }
    }
    (best_len * TIE_SHARE >= probe.len() && best != T::Key::MAX).then_some(best)
}

/// `values` without the ones whose key is `tie` (in order), and how many had it, how many were
/// below it, and how many were NaN.
struct Untied<T> {
    rest: Vec<T>,
    tied: usize,
    below: usize,
    nan: usize,
}

#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn untie<T: Select>(values: &[T], tie: T::Key) -> Untied<T> {
    let mut rest = Vec::with_capacity(values.len() / 8);
    let (mut tied, mut below, mut nan) = (0usize, 0usize, 0usize);
    let mut keys = [T::Key::MIN; CHUNK];
    for chunk in values.chunks(CHUNK) {
        // Keys and counts in a loop the compiler vectorises ...
        for (k, &x) in keys.iter_mut().zip(chunk) {
            *k = key_of(x);
        }
        for &k in &keys[..chunk.len()] {
            tied += usize::from(k == tie);
            below += usize::from(k < tie);
            nan += usize::from(k == T::Key::MAX);
        }
        // ... then a bit mask of the others per 64 values, whose set bits alone are visited: with the
        // tie common, most values cost a compare and no store.
        for (part, base) in keys[..chunk.len()].chunks(64).zip((0..).step_by(64)) {
            let mut mask = 0u64;
            for (j, &k) in part.iter().enumerate() {
                mask |= u64::from(k != tie) << j;
            }
            while mask != 0 {
                rest.push(chunk[base + mask.trailing_zeros() as usize]);
                mask &= mask - 1;
            }
        }
    }
    Untied { rest, tied, below, nan }
}

/// [`quantile`] of `values` where the key `tie` is common: the order statistics below the tied run
/// and above it are selected among the other values, those inside it are the tied value.
fn tied_quantile<T: Select>(values: &[T], tie: T::Key, q: &[f64], method: Method, nan_policy: NanPolicy) -> Vec<f64> {
    let Untied { rest, tied, below, nan } = untie(values, tie);
    if nan > 0 && nan_policy == NanPolicy::Propagate {
        return vec![f64::NAN; q.len()];
    }
    combined::<T>(values.len() - nan, q, method, |ranks| {
        // Ranks among the other values: those above the tied run shift down by its length.
        let inside = |r: usize| r >= below && r < below + tied;
        let outside: Vec<usize> =
            ranks.iter().filter(|&&r| !inside(r)).map(|&r| if r < below { r } else { r - tied }).collect();
        let mut selected =
            if outside.is_empty() { Vec::new() } else { Selector::new(&rest, key_of::<T>).select(&outside) }
                .into_iter();
        ranks.iter().map(|&r| if inside(r) { tie.to_u64() } else { selected.next().unwrap_or(0) }).collect()
    })
}

/// The quantiles `q` (each in `[0, 1]`) of `n >= 1` values already in ascending order without
/// NaN, `value(i)` the one of rank `i`: what [`quantile`] gives for them, without selecting.
#[must_use]
pub fn sorted_quantiles(value: &dyn Fn(usize) -> f64, n: usize, q: &[f64], method: Method) -> Vec<f64> {
    q.iter()
        .map(|&p| {
            let position = method.position(n, p);
            let [lo, hi] = position.ranks();
            position.combine(value(lo), value(hi))
        })
        .collect()
}

/// The key of a sample with every NaN mapped to the largest key, above `+inf`.
// Always inlined: it must be compiled into the AVX2 clone of the hot loops that call it.
#[allow(clippy::inline_always)]
#[inline(always)]
pub(crate) fn key_of<T: Select>(x: T) -> T::Key {
    if x.is_nan() { T::Key::MAX } else { x.sort_key() }
}

/// A sample type the selection works on: a float with an order-preserving radix key.
pub trait Select: Sample + SortKey<Key: RadixKey> {}
impl Select for f32 {}
impl Select for f64 {}

/// The unsigned keys the radix passes work on (`u32` for `f32`, `u64` for `f64`).
pub trait RadixKey: Copy + Ord + Send + Sync + std::fmt::Debug + 'static {
    /// Width of the key in bits.
    const BITS: u32;
    /// The largest key; NaN is mapped here, and no non-NaN float has it.
    const MAX: Self;
    /// The smallest key.
    const MIN: Self;
    /// Widen to `u64` (level bookkeeping is done in `u64`).
    fn to_u64(self) -> u64;
    /// Narrow from `u64` (the value fits by construction).
    fn from_u64(v: u64) -> Self;
    /// `(self - lo) >> shift`, for `self >= lo` (callers keep it below `2^32`).
    fn bucket(self, lo: Self, shift: u32) -> u32;
    /// `self - other`, modulo `2^BITS`.
    #[must_use]
    fn wrapping_sub(self, other: Self) -> Self;
}

// Always inlined into the AVX2 clones of the hot loops.
#[allow(clippy::inline_always)]
impl RadixKey for u32 {
    const BITS: u32 = 32;
    const MAX: Self = u32::MAX;
    const MIN: Self = 0;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    #[inline(always)]
    fn bucket(self, lo: Self, shift: u32) -> u32 {
        self.wrapping_sub(lo) >> shift
    }
    #[inline(always)]
    fn wrapping_sub(self, other: Self) -> Self {
        Self::wrapping_sub(self, other)
    }
}

#[allow(clippy::inline_always)]
impl RadixKey for u64 {
    const BITS: u32 = 64;
    const MAX: Self = u64::MAX;
    const MIN: Self = 0;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline(always)]
    fn bucket(self, lo: Self, shift: u32) -> u32 {
        (self.wrapping_sub(lo) >> shift) as u32
    }
    #[inline(always)]
    fn wrapping_sub(self, other: Self) -> Self {
        Self::wrapping_sub(self, other)
    }
}

/// Bits resolved per histogram pass: 65,536 buckets, whose `u32` counters fit in L2.
pub const RADIX_BITS: u32 = 16;
/// Buckets per pass. Past them are spare slots for keys out of the pass's range and for the
/// keys of up to two "hot" buckets (ties, such as 0/1 rewards): each kind is spread over
/// [`SPREAD`] counters, so their increments never wait on each other's stores (a chain of
/// increments of one counter runs at the store-forwarding latency, several times slower).
const N_BUCKETS: usize = 1 << RADIX_BITS;
const SPREAD: usize = 4;
const OUT_OF_RANGE: usize = N_BUCKETS;
const HOT_SLOTS: [usize; 2] = [N_BUCKETS + SPREAD, N_BUCKETS + 2 * SPREAD];
const STRIDE: usize = N_BUCKETS + 3 * SPREAD;
/// Elements histogrammed first to find hot buckets: those holding more than an eighth of
/// them, at most two.
const PROBE: usize = 1 << 14;
const NOT_HOT: u32 = u32::MAX;
/// `i % SPREAD` for the elements of a chunk, as data (an index computed in the loop would
/// stop it from being vectorised).
const LANE: [u32; CHUNK] = {
    let mut lane = [0u32; CHUNK];
    let mut i = 0;
    while i < CHUNK {
        lane[i] = (i % SPREAD) as u32;
        i += 1;
    }
    lane
};
/// Elements whose keys are computed (vectorised) before they are counted or gathered.
const CHUNK: usize = 256;
/// Elements per block of `u32` counters (so they cannot overflow).
const BLOCK: usize = 1 << 30;
/// A bucket with more elements than this is refined in place rather than gathered, so heavy
/// ties cost a pass over the data, not a copy of it.
const HUGE_MIN: usize = 1 << 12;

/// One histogram level: keys in `lo..=hi` fall in bucket `(key - lo) >> shift`.
#[derive(Debug, Clone)]
struct Level {
    lo: u64,
    shift: u32,
    /// Smallest and largest key seen in the range.
    min: u64,
    max: u64,
    counts: Vec<u64>,
}

/// Multi-rank selection over `key(x)` for the `x` of `values`. Keys equal to `K::MAX` are NaN:
/// counted, never selected. Construction runs the first histogram pass.
pub(crate) struct Selector<'a, T, K, F> {
    values: &'a [T],
    key: F,
    top: Level,
    n_nan: usize,
    /// Inputs of at most [`SMALL_MAX`] values: their non-NaN keys, selected in place (the
    /// 65,536-bucket histograms cost more than the data there); `top` is then unused.
    small: Option<Vec<K>>,
    _key: std::marker::PhantomData<K>,
}

/// Up to this many values, a [`Selector`] selects in a copy of the keys instead of
/// histogramming: at 16,384 values with heavy ties the histogram levels cost ~1.5 ms on the
/// dev machine, the copy and `select_nth_unstable` ~0.1 ms. Seven quantiles of 32,768 and
/// 65,536 random `f32` took 1.0 and 0.82 ms by histogram, 0.18 and 0.35 ms by selection; at
/// 131,072 the histogram is ahead (0.41 against 0.71 ms; AMD EPYC, 2026-12-02).
const SMALL_MAX: usize = 1 << 16;

impl<'a, T, K, F> Selector<'a, T, K, F>
where
    T: Copy + Send + Sync,
    K: RadixKey,
    F: Fn(T) -> K + Copy + Send + Sync,
{
    /// Histogram the top [`RADIX_BITS`] bits of every key.
    pub(crate) fn new(values: &'a [T], key: F) -> Self {
        if values.len() <= SMALL_MAX {
            let (keys, min, max) = small_keys(values, key);
            let top = Level { lo: 0, shift: 0, min, max, counts: Vec::new() };
            let n_nan = values.len() - keys.len();
            return Self { values, key, top, n_nan, small: Some(keys), _key: std::marker::PhantomData };
        }
        Self::by_histogram(values, key)
    }

    /// [`Selector::new`] without the small-input path.
    fn by_histogram(values: &'a [T], key: F) -> Self {
        let top = histogram_level(values, key, 0, K::MAX.to_u64());
        // The top bucket holds only NaN: the largest non-NaN key (+inf) has lower top bits.
        let n_nan = (top.counts[N_BUCKETS - 1] as usize).min(values.len());
        Self { values, key, top, n_nan, small: None, _key: std::marker::PhantomData }
    }

    /// Number of NaN keys.
    pub(crate) fn n_nan(&self) -> usize {
        self.n_nan
    }

    /// Number of non-NaN keys.
    pub(crate) fn n_valid(&self) -> usize {
        self.values.len() - self.n_nan
    }

    /// The non-empty top-level buckets below the NaN bucket, in key order, as
    /// `(lo, hi, count)`: the `count` keys of the bucket lie in `lo..=hi`.
    pub(crate) fn top_buckets(&self) -> Vec<(u64, u64, u64)> {
        if let Some(keys) = &self.small {
            // One bucket spanning every key.
            return if keys.is_empty() { Vec::new() } else { vec![(self.top.min, self.top.max, keys.len() as u64)] };
        }
        let level = &self.top;
        let width = 1u64 << level.shift;
        level.counts[..N_BUCKETS - 1]
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| {
                let start = level.lo + (b as u64) * width;
                (start.max(level.min), (start + (width - 1)).min(level.max), c)
            })
            .collect()
    }

    /// The keys at the given 0-based ranks of the sorted non-NaN keys (any order, repeats
    /// allowed; each rank `< n_valid`), as `u64`, in the order of `ranks`.
    pub(crate) fn select(&self, ranks: &[usize]) -> Vec<u64> {
        assert!(ranks.iter().all(|&r| r < self.n_valid()), "rank out of range");
        let mut requests: Vec<Request> = ranks.iter().enumerate().map(|(slot, &rank)| Request { rank, slot }).collect();
        let mut out = vec![0u64; ranks.len()];
        if let Some(keys) = &self.small {
            requests.sort_unstable_by_key(|r| r.rank);
            select_in_buffer(&mut keys.clone(), &requests, &mut out);
            return out;
        }
        self.resolve(&self.top, &mut requests, &mut out);
        out
    }

    fn resolve(&self, level: &Level, requests: &mut [Request], out: &mut [u64]) {
        requests.sort_unstable_by_key(|r| r.rank);
        // Walk the cumulative counts once, cutting the requests into per-bucket runs.
        let mut buckets: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        let (mut bucket, mut below) = (0usize, 0usize);
        let mut i = 0;
        while i < requests.len() {
            while below + level.counts[bucket] as usize <= requests[i].rank {
                below += level.counts[bucket] as usize;
                bucket += 1;
            }
            let start = i;
            let end_rank = below + level.counts[bucket] as usize;
            while i < requests.len() && requests[i].rank < end_rank {
                requests[i].rank -= below;
                i += 1;
            }
            buckets.push((bucket, start..i));
        }

        let mut lut = vec![u8::MAX; STRIDE];
        let mut gathered: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        let mut huge: Vec<(u64, u64, std::ops::Range<usize>)> = Vec::new();
        for (b, run) in buckets {
            let count = level.counts[b] as usize;
            let b_lo = (level.lo + ((b as u64) << level.shift)).max(level.min);
            let b_hi =
                (level.lo + ((b as u64) << level.shift)).saturating_add((1u64 << level.shift) - 1).min(level.max);
            if b_lo == b_hi {
                for r in &requests[run] {
                    out[r.slot] = b_lo;
                }
            } else if count > HUGE_MIN && count > self.values.len() / 4 {
                huge.push((b_lo, b_hi, run));
            } else if gathered.len() < usize::from(u8::MAX) {
                lut[b] = gathered.len() as u8;
                gathered.push((b, run));
            } else {
                // Cannot happen with the ranks quantiles ask for; stay correct regardless.
                let child = histogram_level(self.values, self.key, b_lo, b_hi);
                self.resolve(&child, &mut requests[run], out);
            }
        }
        // The gather pass also finds the smallest and largest key of the first huge bucket, so
        // heavy ties (one repeated value) cost no pass of their own.
        let watch = huge.first().map(|&(lo, hi, _)| (K::from_u64(lo), K::from_u64(hi)));
        let mut watched = None;
        if !gathered.is_empty() {
            let mut bufs: Vec<Vec<K>> =
                gathered.iter().map(|(b, _)| Vec::with_capacity(level.counts[*b] as usize)).collect();
            let range = (K::from_u64(level.lo), K::from_u64(level.max));
            watched = gather_pass(self.values, self.key, range, level.shift, &lut, &mut bufs, watch);
            for ((_, run), mut buf) in gathered.into_iter().zip(bufs) {
                select_in_buffer(&mut buf, &requests[run], out);
            }
        }
        for (i, (b_lo, b_hi, run)) in huge.into_iter().enumerate() {
            // A bucket of one repeated value ends here; otherwise the refining histogram spans
            // only the keys present.
            let (min, max) = match watched {
                Some(min_max) if i == 0 => min_max,
                _ => min_max_pass(self.values, self.key, K::from_u64(b_lo), K::from_u64(b_hi)),
            };
            let (min, max) = (min.to_u64(), max.to_u64());
            if min == max {
                for r in &requests[run] {
                    out[r.slot] = min;
                }
            } else {
                let child = histogram_level(self.values, self.key, min, max);
                self.resolve(&child, &mut requests[run], out);
            }
        }
    }
}

/// The non-NaN keys of a small input, their minimum and maximum (0 when there is none).
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn small_keys<T: Copy, K: RadixKey>(values: &[T], key: impl Fn(T) -> K) -> (Vec<K>, u64, u64) {
    // Map everything (vectorised), then drop the NaN keys only when there are some.
    let mut keys: Vec<K> = values.iter().map(|&x| key(x)).collect();
    let (mut n_nan, mut min, mut max) = (0usize, K::MAX, K::MIN);
    for &k in &keys {
        let nan = k == K::MAX;
        n_nan += usize::from(nan);
        min = min.min(k);
        max = max.max(if nan { K::MIN } else { k });
    }
    if n_nan > 0 {
        keys.retain(|&k| k != K::MAX);
    }
    if keys.is_empty() { (keys, 0, 0) } else { (keys, min.to_u64(), max.to_u64()) }
}

#[derive(Debug, Clone, Copy)]
struct Request {
    rank: usize,
    slot: usize,
}

/// Keys at the requested ranks of a small buffer (`select_nth_unstable`, linear per rank).
fn select_in_buffer<K: RadixKey>(buf: &mut [K], requests: &[Request], out: &mut [u64]) {
    // Requests are sorted by rank: each selection leaves the larger keys to its right.
    let mut start = 0;
    for r in requests {
        if r.rank < start {
            // A repeated rank: already in place.
            out[r.slot] = buf[r.rank].to_u64();
            continue;
        }
        let (_, v, _) = buf[start..].select_nth_unstable(r.rank - start);
        out[r.slot] = v.to_u64();
        start = r.rank + 1;
    }
}

/// Histogram of the keys in `lo..=hi` with the shift that fits the range in [`N_BUCKETS`].
fn histogram_level<T, K, F>(values: &[T], key: F, lo: u64, hi: u64) -> Level
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    let span_bits = 64 - (hi - lo).leading_zeros();
    let shift = span_bits.saturating_sub(RADIX_BITS);
    let (lo_k, hi_k) = (K::from_u64(lo), K::from_u64(hi));
    let mut hist = vec![0u32; STRIDE];
    let (probe, rest) = values.split_at(values.len().min(PROBE));
    let (mut min, mut max) = histogram_pass(probe, key, lo_k, hi_k, shift, [NOT_HOT; 2], &mut hist);
    let mut counts: Vec<u64> = hist[..N_BUCKETS].iter().map(|&c| u64::from(c)).collect();
    let mut by_count: Vec<(u32, u32)> = hist[..N_BUCKETS].iter().enumerate().map(|(b, &c)| (c, b as u32)).collect();
    by_count.select_nth_unstable_by(1, |a, b| b.cmp(a));
    let hot = [0, 1].map(|i| if by_count[i].0 as usize > probe.len() / 8 { by_count[i].1 } else { NOT_HOT });
    for block in rest.chunks(BLOCK) {
        hist.fill(0);
        let (bmin, bmax) = histogram_pass(block, key, lo_k, hi_k, shift, hot, &mut hist);
        min = min.min(bmin);
        max = max.max(bmax);
        for (c, &h) in counts.iter_mut().zip(&hist[..N_BUCKETS]) {
            *c += u64::from(h);
        }
        for (&b, slots) in hot.iter().zip(HOT_SLOTS) {
            if b != NOT_HOT {
                counts[b as usize] += hist[slots..slots + SPREAD].iter().map(|&c| u64::from(c)).sum::<u64>();
            }
        }
    }
    Level { lo, shift, min: min.to_u64(), max: max.to_u64(), counts }
}

/// Count the keys in `lo..=hi` by bucket into `hist`, those of the `hot` buckets into the
/// [`HOT_SLOTS`] instead; return the smallest and largest key in the range (`(MAX, MIN)` if
/// none).
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn histogram_pass<T, K, F>(values: &[T], key: F, lo: K, hi: K, shift: u32, hot: [u32; 2], hist: &mut [u32]) -> (K, K)
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    // The plain loop is worth keeping apart: the hot-bucket tests cost a third more.
    if hot == [NOT_HOT; 2] {
        count_keys::<T, K, F, false>(values, key, lo, hi, shift, hot, hist)
    } else {
        count_keys::<T, K, F, true>(values, key, lo, hi, shift, hot, hist)
    }
}

/// The body of [`histogram_pass`]; always inlined, so compiled with the caller's features.
#[allow(clippy::inline_always)]
#[inline(always)]
fn count_keys<T, K, F, const HOT: bool>(
    values: &[T],
    key: F,
    lo: K,
    hi: K,
    shift: u32,
    hot: [u32; 2],
    hist: &mut [u32],
) -> (K, K)
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    let (mut min, mut max) = (K::MAX, K::MIN);
    // One unsigned compare tests `lo <= k <= hi` (two compares vectorise badly).
    let span = hi.wrapping_sub(lo);
    let mut buckets = [0u32; CHUNK];
    for chunk in values.chunks(CHUNK) {
        // Keys and buckets first, in a loop the compiler vectorises ...
        for ((slot, &x), &lane) in buckets.iter_mut().zip(chunk).zip(&LANE) {
            let k = key(x);
            let offset = k.wrapping_sub(lo);
            let inside = offset <= span;
            min = min.min(if inside { k } else { K::MAX });
            max = max.max(if inside { k } else { K::MIN });
            let b = offset.bucket(K::MIN, shift);
            *slot = if !inside {
                OUT_OF_RANGE as u32 + lane
            } else if HOT && b == hot[0] {
                HOT_SLOTS[0] as u32 + lane
            } else if HOT && b == hot[1] {
                HOT_SLOTS[1] as u32 + lane
            } else {
                b
            };
        }
        // ... then the scattered increments.
        for &b in &buckets[..chunk.len()] {
            hist[b as usize] += 1;
        }
    }
    (min, max)
}

/// Append every key in `range` whose bucket has a slot in `lut` to that slot's buffer; with
/// a `watch` range, return the smallest and largest key in it (`(MAX, MIN)` if none).
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn gather_pass<T, K, F>(
    values: &[T],
    key: F,
    range: (K, K),
    shift: u32,
    lut: &[u8],
    bufs: &mut [Vec<K>],
    watch: Option<(K, K)>,
) -> Option<(K, K)>
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    match watch {
        None => {
            gather_keys::<T, K, F, false>(values, key, range, shift, lut, bufs, (K::MIN, K::MIN));
            None
        }
        Some(watch) => Some(gather_keys::<T, K, F, true>(values, key, range, shift, lut, bufs, watch)),
    }
}

/// The body of [`gather_pass`]; always inlined, so compiled with the caller's features.
#[allow(clippy::inline_always)]
#[inline(always)]
fn gather_keys<T, K, F, const WATCH: bool>(
    values: &[T],
    key: F,
    (lo, hi): (K, K),
    shift: u32,
    lut: &[u8],
    bufs: &mut [Vec<K>],
    (watch_lo, watch_hi): (K, K),
) -> (K, K)
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    const LANES: usize = 16;
    let span = hi.wrapping_sub(lo);
    let watch_span = watch_hi.wrapping_sub(watch_lo);
    let (mut min, mut max) = ([K::MAX; LANES], [K::MIN; LANES]);
    let mut keys = [K::MIN; CHUNK];
    let mut buckets = [0u32; CHUNK];
    for chunk in values.chunks(CHUNK) {
        // Keys and buckets in a loop the compiler vectorises, then one table lookup and a
        // (nearly always not taken) branch per element. Tried and slower: testing each
        // wanted bucket with vector compares, which the compiler does not keep in registers.
        for ((k_slot, b_slot), &x) in keys.iter_mut().zip(buckets.iter_mut()).zip(chunk) {
            let k = key(x);
            let offset = k.wrapping_sub(lo);
            *k_slot = k;
            *b_slot = if offset <= span { offset.bucket(K::MIN, shift) } else { OUT_OF_RANGE as u32 };
        }
        if WATCH {
            // Apart, over keys still in L1: inside the loop above it stops the vectorisation.
            // Explicit lanes: one vector of minima and one of maxima. A short last chunk pads
            // with a key it holds, which changes neither.
            if chunk.len() < CHUNK {
                let first = keys[0];
                keys[chunk.len()..].fill(first);
            }
            for block in keys.chunks_exact(LANES) {
                for ((mn, mx), &k) in min.iter_mut().zip(&mut max).zip(block) {
                    let inside = k.wrapping_sub(watch_lo) <= watch_span;
                    *mn = (*mn).min(if inside { k } else { K::MAX });
                    *mx = (*mx).max(if inside { k } else { K::MIN });
                }
            }
        }
        for (&k, &b) in keys.iter().zip(&buckets[..chunk.len()]) {
            let slot = lut[b as usize];
            if slot != u8::MAX {
                bufs[usize::from(slot)].push(k);
            }
        }
    }
    (min.into_iter().fold(K::MAX, Ord::min), max.into_iter().fold(K::MIN, Ord::max))
}

/// Smallest and largest key in `lo..=hi` (`(MAX, MIN)` if none).
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn min_max_pass<T, K, F>(values: &[T], key: F, lo: K, hi: K) -> (K, K)
where
    T: Copy,
    K: RadixKey,
    F: Fn(T) -> K + Copy,
{
    const LANES: usize = 16;
    // Explicit lanes: the compiler then keeps one vector of minima and one of maxima.
    let (mut min, mut max) = ([K::MAX; LANES], [K::MIN; LANES]);
    let span = hi.wrapping_sub(lo);
    let mut blocks = values.chunks_exact(LANES);
    for block in &mut blocks {
        for ((mn, mx), &x) in min.iter_mut().zip(&mut max).zip(block) {
            let k = key(x);
            let inside = k.wrapping_sub(lo) <= span;
            *mn = (*mn).min(if inside { k } else { K::MAX });
            *mx = (*mx).max(if inside { k } else { K::MIN });
        }
    }
    for &x in blocks.remainder() {
        let k = key(x);
        if k.wrapping_sub(lo) <= span {
            min[0] = min[0].min(k);
            max[0] = max[0].max(k);
        }
    }
    (min.into_iter().fold(K::MAX, Ord::min), max.into_iter().fold(K::MIN, Ord::max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: sort, then apply the same positions.
    fn by_sorting(values: &[f64], q: &[f64], method: Method, omit: bool) -> Vec<f64> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !(omit && x.is_nan())).collect();
        if v.iter().any(|x| x.is_nan()) || v.is_empty() {
            return vec![f64::NAN; q.len()];
        }
        v.sort_by(f64::total_cmp);
        q.iter()
            .map(|&p| {
                let pos = method.position(v.len(), p);
                let [a, b] = pos.ranks();
                pos.combine(v[a], v[b])
            })
            .collect()
    }

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    const QS: [f64; 9] = [0.0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1.0];

    #[test]
    fn small_known_values() {
        let x = [3.0f64, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        // numpy.quantile(x, [0, .25, .5, 1]) == [1., 1.75, 3.5, 9.]
        assert_eq!(
            quantile(&x, &[0.0, 0.25, 0.5, 1.0], Method::Linear, NanPolicy::Propagate).unwrap(),
            vec![1.0, 1.75, 3.5, 9.0]
        );
        // numpy.quantile(x, .5, method=m) for lower / higher / midpoint / nearest / inverted_cdf
        let at_half = |m| quantile(&x, &[0.5], m, NanPolicy::Propagate).unwrap()[0];
        assert_eq!(at_half(Method::Lower), 3.0);
        assert_eq!(at_half(Method::Higher), 4.0);
        assert_eq!(at_half(Method::Midpoint), 3.5);
        assert_eq!(at_half(Method::Nearest), 4.0);
        assert_eq!(at_half(Method::InvertedCdf), 3.0);
    }

    #[test]
    fn errors_name_their_argument() {
        assert_eq!(quantile::<f64>(&[], &[0.5], Method::Linear, NanPolicy::Omit).unwrap_err().arg(), "values");
        assert_eq!(quantile(&[1.0f32], &[1.5], Method::Linear, NanPolicy::Omit).unwrap_err().arg(), "q");
        assert_eq!(quantile(&[1.0f32], &[f64::NAN], Method::Linear, NanPolicy::Omit).unwrap_err().arg(), "q");
        assert_eq!(quantile(&[f32::NAN], &[0.5], Method::Linear, NanPolicy::Raise).unwrap_err().arg(), "values");
        assert_eq!(Method::parse("median").unwrap_err().arg(), "method");
    }

    #[test]
    fn nan_policies() {
        let x = [1.0f64, f64::NAN, 3.0, -f64::NAN];
        assert!(quantile(&x, &[0.5], Method::Linear, NanPolicy::Propagate).unwrap()[0].is_nan());
        assert_eq!(quantile(&x, &[0.5], Method::Linear, NanPolicy::Omit).unwrap(), vec![2.0]);
        assert!(quantile(&[f32::NAN], &[0.5], Method::Linear, NanPolicy::Omit).unwrap()[0].is_nan());
    }

    #[test]
    fn a_dominant_value_is_taken_out_before_selecting() {
        // 90% zeros (RL rewards), then ones and a spread: the split path.
        let mut x: Vec<f32> = (0..100_000u32).map(|i| if i % 10 == 0 { (i % 7) as f32 * 0.25 } else { 0.0 }).collect();
        x[5] = 1.0;
        assert_eq!(dominant_key(&x), Some(0.0f32.sort_key()));
        let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        for m in Method::ALL {
            assert!(
                same(&quantile(&x, &QS, m, NanPolicy::Propagate).unwrap(), &by_sorting(&xd, &QS, m, false)),
                "{m:?}"
            );
        }
        // NaN among them: propagated, or omitted from the ranks
        x[7] = f32::NAN;
        let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        assert!(quantile(&x, &QS, Method::Linear, NanPolicy::Propagate).unwrap().iter().all(|v| v.is_nan()));
        assert!(same(
            &quantile(&x, &QS, Method::Linear, NanPolicy::Omit).unwrap(),
            &by_sorting(&xd, &QS, Method::Linear, true)
        ));
    }

    #[test]
    fn heavy_ties_and_offsets_take_the_refinement_path() {
        // 40% zeros, 40% ones, then a spread: no value holds half, so the zero and one buckets are
        // refined, not gathered.
        let x: Vec<f32> = (0..100_000u32)
            .map(|i| match i % 10 {
                1..=4 => 0.0,
                5..=8 => 1.0,
                _ => (i % 7) as f32 * 0.25,
            })
            .collect();
        assert_eq!(dominant_key(&x), None);
        let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        for m in Method::ALL {
            assert!(
                same(&quantile(&x, &QS, m, NanPolicy::Propagate).unwrap(), &by_sorting(&xd, &QS, m, false)),
                "{m:?}"
            );
        }
        // A huge common offset: every key lands in one top-level bucket.
        let y: Vec<f64> = (0..50_000u32).map(|i| 1e6 + f64::from((i * 7919) % 1000) * 1e-7).collect();
        let yf: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let yfd: Vec<f64> = yf.iter().map(|&v| f64::from(v)).collect();
        for m in Method::ALL {
            assert!(
                same(&quantile(&y, &QS, m, NanPolicy::Propagate).unwrap(), &by_sorting(&y, &QS, m, false)),
                "{m:?}"
            );
            assert!(
                same(&quantile(&yf, &QS, m, NanPolicy::Propagate).unwrap(), &by_sorting(&yfd, &QS, m, false)),
                "{m:?}"
            );
        }
    }

    #[test]
    fn infinities() {
        let x = [f64::NEG_INFINITY, 0.0, 1.0, f64::INFINITY, f64::INFINITY];
        for m in Method::ALL {
            assert!(
                same(&quantile(&x, &QS, m, NanPolicy::Propagate).unwrap(), &by_sorting(&x, &QS, m, false)),
                "{m:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// The split path against sorting: a value held by half of the values or more, among others
        /// with ties, infinities and NaN, every method, both NaN policies.
        #[test]
        fn dominant_values_match_sorting(
            n in 65_537usize..75_000,
            share in 0.5f64..0.99,
            tie in prop_oneof![Just(0.0f64), Just(1.0), Just(-3.5)],
            seed in any::<u64>(),
            nan in any::<bool>(),
            q in proptest::collection::vec(0.0f64..=1.0, 1..8),
        ) {
            let mut state = seed | 1;
            let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state };
            let mut x: Vec<f64> = (0..n).map(|_| {
                let r = next();
                if (r % 10_000) as f64 / 10_000.0 < share { tie } else {
                    match r % 5 { 0 => ((r >> 8) % 11) as f64, 1 => f64::INFINITY, _ => ((r >> 11) as f64) / 1e12 - 2.0 }
                }
            }).collect();
            if nan { x[n / 3] = f64::NAN; }
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let xfd: Vec<f64> = xf.iter().map(|&v| f64::from(v)).collect();
            for m in Method::ALL {
                for (policy, omit) in [(NanPolicy::Propagate, false), (NanPolicy::Omit, true)] {
                    prop_assert!(same(&quantile(&x, &q, m, policy).unwrap(), &by_sorting(&x, &q, m, omit)), "{:?}", m);
                    prop_assert!(same(&quantile(&xf, &q, m, policy).unwrap(), &by_sorting(&xfd, &q, m, omit)), "{:?}", m);
                }
            }
        }
    }

    fn value_strategy() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -1e3f64..1e3,
            2 => (0u8..4).prop_map(f64::from),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(-0.0),
        ]
    }

    proptest! {
        #[test]
        fn small_path_equals_histogram_path(xs in prop::collection::vec(value_strategy(), 1..300),
                                            ranks in prop::collection::vec(0.0f64..1.0, 1..6)) {
            let small = Selector::new(&xs, key_of::<f64>);
            let big = Selector::by_histogram(&xs, key_of::<f64>);
            prop_assert!(small.small.is_some() && big.small.is_none());
            prop_assert_eq!(small.n_nan(), big.n_nan());
            if small.n_valid() > 0 {
                let r: Vec<usize> = ranks.iter().map(|p| (p * small.n_valid() as f64) as usize).collect();
                prop_assert_eq!(small.select(&r), big.select(&r));
            }
        }

        #[test]
        fn equals_sorting_reference(xs in prop::collection::vec(value_strategy(), 1..300),
                                    q in prop::collection::vec(0.0f64..=1.0, 1..8),
                                    m in 0usize..13, omit in any::<bool>()) {
            let method = Method::ALL[m];
            let policy = if omit { NanPolicy::Omit } else { NanPolicy::Propagate };
            let got = quantile(&xs, &q, method, policy).unwrap();
            prop_assert!(same(&got, &by_sorting(&xs, &q, method, omit)));
            let xf: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let xfd: Vec<f64> = xf.iter().map(|&v| f64::from(v)).collect();
            prop_assert!(same(&quantile(&xf, &q, method, policy).unwrap(), &by_sorting(&xfd, &q, method, omit)));
        }

        #[test]
        fn monotone_in_q_and_within_min_max(xs in prop::collection::vec(-1e6f64..1e6, 1..400),
                                            mut q in prop::collection::vec(0.0f64..=1.0, 1..10),
                                            m in 0usize..13) {
            q.sort_by(f64::total_cmp);
            let got = quantile(&xs, &q, Method::ALL[m], NanPolicy::Propagate).unwrap();
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for w in got.windows(2) {
                prop_assert!(w[0] <= w[1]);
            }
            for v in got {
                prop_assert!(lo <= v && v <= hi);
            }
        }
    }
}
