//! Robust spread: the median absolute deviation and the interquartile range.
//!
//! Both reuse the multi-rank radix selection of [`crate::quantile`]; neither sorts. The MAD
//! selects the median, then the median of `|x - median|` with the deviations computed on the
//! fly inside the selection passes (never materialised), in `f64`. Definitions as
//! `scipy.stats.median_abs_deviation` and `scipy.stats.iqr` (Rousseeuw & Croux 1993,
//! "Alternatives to the median absolute deviation", JASA 88(424), for the MAD and its
//! normal-consistency constant).

use crate::error::{Result, StatsError, check_non_empty};
use crate::quantile::{Method, RadixKey, Select, Selector, key_of, quantile};
use crate::sample::{NanPolicy, raise_on_nan};
use crate::simd::dispatch;
use crate::sortkey::SortKey;

/// `Phi^-1(3/4)`, the MAD of the standard normal; `scale = "normal"` divides by it (scipy's
/// constant `special.ndtri(0.75)`).
pub const NORMAL_MAD: f64 = 0.674_489_750_196_081_7;

/// Median absolute deviation `median(|x - median(x)|) / scale`, equal to
/// `scipy.stats.median_abs_deviation(values.astype(float64), scale=scale, nan_policy=...)`.
///
/// The medians are numpy's: the middle value, or the mean `(a + b) / 2` of the two middle
/// values. NaN: [`NanPolicy::Propagate`] gives NaN, [`NanPolicy::Omit`] drops NaN first (NaN if
/// none is left). An infinite median gives NaN, as in scipy.
///
/// # Errors
/// Empty `values`; `scale` not a finite positive number; NaN under [`NanPolicy::Raise`].
pub fn median_abs_deviation<T: Select>(values: &[T], scale: f64, nan_policy: NanPolicy) -> Result<f64> {
    check_non_empty("values", values.len())?;
    if !(scale.is_finite() && scale > 0.0) {
        return Err(StatsError::invalid("scale", format!("must be a finite positive number, got {scale}")));
    }
    raise_on_nan(nan_policy, "values", values)?;
    let values_sel = Selector::new(values, key_of::<T>);
    let n_nan = values_sel.n_nan();
    if (n_nan > 0 && nan_policy == NanPolicy::Propagate) || values_sel.n_valid() == 0 {
        return Ok(f64::NAN);
    }
    let center = median(&values_sel, |k| T::from_key(T::Key::from_u64(k)).to_f64());
    if center.is_finite()
        && let Some(mad) = deviation_median_by_bracketing(&values_sel, values, center)
    {
        return Ok(mad / scale);
    }
    // NaN samples (omitted) and NaN deviations (inf - inf) both get the NaN key.
    let deviation = move |x: T| key_of::<f64>((x.to_f64() - center).abs());
    let deviations_sel = Selector::new(values, deviation);
    if deviations_sel.n_nan() > n_nan {
        return Ok(f64::NAN);
    }
    Ok(median(&deviations_sel, f64::from_key) / scale)
}

/// [`median_abs_deviation`] with `scale` 1 of `n >= 1` values already in ascending order without
/// NaN, `value(i)` the one of rank `i`; `None` when their median is not finite (the deviations
/// then hold NaN or infinities that [`median_abs_deviation`] resolves by selection).
///
/// The deviations `|x - m|` fall from the first value to the median and rise after it (rounding is
/// monotone): two ascending runs, the values left of the median read outward and the values right
/// of it. Their middle order statistics are found by bisecting how many of them the left run
/// gives (the k-th smallest of two sorted arrays): `O(log n)` reads, no merge, no selection.
#[must_use]
pub fn sorted_median_abs_deviation(value: &dyn Fn(usize) -> f64, n: usize) -> Option<f64> {
    if n == 0 {
        return None;
    }
    #[allow(clippy::manual_midpoint)] // numpy's mean of the two middle values, as `median` takes it
    let center = if n % 2 == 1 { value(n / 2) } else { (value(n / 2 - 1) + value(n / 2)) / 2.0 };
    if !center.is_finite() {
        return None;
    }
    // first rank at or right of the centre
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if value(mid) < center { lo = mid + 1 } else { hi = mid }
    }
    let split = lo;
    // The left run, ascending: the values below the centre read from the centre outward.
    let left = |i: usize| center - value(split - 1 - i);
    let right = |j: usize| value(split + j) - center;
    let kth = |k: usize| kth_of_two(&left, split, &right, n - split, k);
    #[allow(clippy::manual_midpoint)]
    Some(if n % 2 == 1 { kth(n / 2) } else { (kth(n / 2 - 1) + kth(n / 2)) / 2.0 })
}

/// The `k`-th smallest (0-based) of two ascending runs `a` (`na` values) and `b` (`nb`),
/// `k < na + nb`: the smallest count `i` taken from `a` such that `a(i) >= b(k - i)` (the
/// predicate flips once as `i` grows), then the larger of the two last values taken.
fn kth_of_two(a: &dyn Fn(usize) -> f64, na: usize, b: &dyn Fn(usize) -> f64, nb: usize, k: usize) -> f64 {
    let taken = k + 1;
    let (mut lo, mut hi) = (taken.saturating_sub(nb), taken.min(na));
    while lo < hi {
        let i = lo + (hi - lo) / 2;
        // `i < hi <= na` and `taken - i > taken - hi >= 0`: both reads are in range.
        if a(i) < b(taken - i - 1) { lo = i + 1 } else { hi = i }
    }
    let (i, j) = (lo, taken - lo);
    let last_a = if i > 0 { a(i - 1) } else { f64::NEG_INFINITY };
    let last_b = if j > 0 { b(j - 1) } else { f64::NEG_INFINITY };
    last_a.max(last_b)
}

/// The median of `|x - center|` over the non-NaN `x`, from the values' top-level histogram and
/// one more pass, or `None` when that pass would have to keep too many deviations (a huge
/// common offset puts every value in a few buckets; the caller then selects on deviations).
///
/// Deviations are monotone in `x` on either side of `center` (rounding is monotone), so each
/// bucket's key bounds bound its deviations. The `k`-th smallest lower bound and the `k`-th
/// smallest upper bound, counted with the bucket counts, bracket the `k`-th smallest deviation.
/// The pass counts the deviations below the bracket, counts those equal to its lower end (ties
/// at the median cost nothing) and keeps only those inside it, computed in `f64` as scipy does.
fn deviation_median_by_bracketing<T, F>(selector: &Selector<'_, T, T::Key, F>, values: &[T], center: f64) -> Option<f64>
where
    T: Select,
    F: Fn(T) -> T::Key + Copy + Send + Sync,
{
    let n = selector.n_valid();
    let (rank_lo, rank_hi) = if n % 2 == 1 { (n / 2, n / 2) } else { (n / 2 - 1, n / 2) };
    // The upper key of the bucket holding +inf may be a NaN pattern: its values end at +inf.
    let value = |k: u64| {
        let v = T::from_key(T::Key::from_u64(k)).to_f64();
        if v.is_nan() { f64::INFINITY } else { v }
    };
    let buckets = selector.top_buckets();
    // Buckets before `centre` lie wholly left of the centre; the rest start at or right of it,
    // but for the first, which may straddle it.
    let centre = buckets.partition_point(|&(_, hi, _)| value(hi) < center);
    let bounds: Vec<Bracket> = buckets
        .into_iter()
        .map(|(lo, hi, count)| {
            let (lo, hi) = (value(lo), value(hi));
            let (d_min, d_max) = if lo >= center {
                (lo - center, hi - center)
            } else if hi <= center {
                (center - hi, center - lo)
            } else {
                (0.0, (center - lo).max(hi - center))
            };
            Bracket { d_min, d_max, count }
        })
        .collect();
    let t_lo = weighted_rank(&bounds, centre, rank_lo, |b| b.d_min);
    let t_hi = weighted_rank(&bounds, centre, rank_hi, |b| b.d_max);
    // Past `cap` kept deviations, selecting on all of them costs less.
    let cap = n / 8 + 1024;
    let estimate: u64 = bounds.iter().filter(|b| b.d_max > t_lo && b.d_min <= t_hi).map(|b| b.count).sum();
    let mut inside = Vec::with_capacity((estimate as usize).min(cap));
    let (below, at_lo) = deviations_in(values, center, t_lo, t_hi, cap, &mut inside)?;
    // Ranks `below..tied` are the ties at `t_lo`, the rest are among the kept deviations.
    let tied = below + at_lo;
    debug_assert!(below <= rank_lo && rank_hi < tied + inside.len());
    let lo = if rank_lo < tied { t_lo } else { *inside.select_nth_unstable_by(rank_lo - tied, f64::total_cmp).1 };
    if rank_hi == rank_lo {
        return Some(lo);
    }
    let hi = if rank_hi < tied {
        t_lo
    } else if rank_lo < tied {
        inside.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        // The smallest kept deviation right of the one just selected.
        inside[rank_lo - tied + 1..].iter().copied().fold(f64::INFINITY, f64::min)
    };
    // numpy's `mean` of the two middle values, as in `median`.
    #[allow(clippy::manual_midpoint)]
    let mid = (lo + hi) / 2.0;
    Some(mid)
}

/// Bounds on the deviations of one bucket's values, and their number.
#[derive(Debug, Clone, Copy)]
struct Bracket {
    d_min: f64,
    d_max: f64,
    count: u64,
}

/// The `rank`-th smallest of `bound(b)` over the brackets `b`, each counted `b.count` times.
/// `bound` grows away from bucket `centre` on both sides, except at `centre` itself.
fn weighted_rank(brackets: &[Bracket], centre: usize, rank: usize, bound: impl Fn(&Bracket) -> f64) -> f64 {
    let (mut left, mut right) = (centre, centre + 1);
    let mut centre_pending = centre < brackets.len();
    let mut seen = 0u64;
    loop {
        // The smallest head among the left run (walking down), the right run (walking up) and
        // the centre bucket.
        let candidates =
            [(left > 0).then(|| left - 1), (right < brackets.len()).then_some(right), centre_pending.then_some(centre)];
        let next = candidates
            .into_iter()
            .flatten()
            .min_by(|&a, &b| bound(&brackets[a]).total_cmp(&bound(&brackets[b])))
            .expect("rank below the number of values");
        seen += brackets[next].count;
        match next.cmp(&centre) {
            std::cmp::Ordering::Less => left -= 1,
            std::cmp::Ordering::Equal => centre_pending = false,
            std::cmp::Ordering::Greater => right += 1,
        }
        if seen > rank as u64 {
            return bound(&brackets[next]);
        }
    }
}

/// Count the `|x - center|` below `t_lo` and equal to it; append those in `(t_lo, t_hi]` to
/// `inside`, giving up (`None`) once it holds more than `cap`. NaN deviations are in none of
/// them.
#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn deviations_in<T: Select>(
    values: &[T],
    center: f64,
    t_lo: f64,
    t_hi: f64,
    cap: usize,
    inside: &mut Vec<f64>,
) -> Option<(usize, usize)> {
    const CHUNK: usize = 256;
    let (mut below, mut at_lo) = (0usize, 0usize);
    let (mut devs, mut kept) = ([0.0f64; CHUNK], [0.0f64; CHUNK]);
    for chunk in values.chunks(CHUNK) {
        // Deviations and counts in a loop the compiler vectorises ...
        let (mut n_below, mut n_at, mut n_up_to_hi) = (0u32, 0u32, 0u32);
        for (d, &x) in devs.iter_mut().zip(chunk) {
            let dev = (x.to_f64() - center).abs();
            *d = dev;
            n_below += u32::from(dev < t_lo);
            n_at += u32::from(dev == t_lo);
            n_up_to_hi += u32::from(dev <= t_hi);
        }
        below += n_below as usize;
        at_lo += n_at as usize;
        // ... then, in the chunks holding any, a branch-free compaction of the kept ones (a
        // branch per element mispredicts: half the deviations are below the bracket).
        if n_up_to_hi > n_below + n_at {
            let mut n_kept = 0;
            for &d in &devs[..chunk.len()] {
                kept[n_kept] = d;
                // `&`, not `&&`: a second branch is what this loop avoids.
                #[allow(clippy::needless_bitwise_bool)]
                let keep = (d > t_lo) & (d <= t_hi);
                n_kept += usize::from(keep);
            }
            inside.extend_from_slice(&kept[..n_kept]);
        }
        if inside.len() > cap {
            return None;
        }
    }
    Some((below, at_lo))
}

/// numpy's median of the selected keys: the middle one, or the mean of the middle two.
fn median<T, K, F>(selector: &Selector<'_, T, K, F>, value: impl Fn(u64) -> f64) -> f64
where
    T: Copy + Send + Sync,
    K: RadixKey,
    F: Fn(T) -> K + Copy + Send + Sync,
{
    let n = selector.n_valid();
    if n % 2 == 1 {
        value(selector.select(&[n / 2])[0])
    } else {
        let k = selector.select(&[n / 2 - 1, n / 2]);
        // numpy's `mean` of the two, overflow to inf included (`f64::midpoint` would avoid it).
        #[allow(clippy::manual_midpoint)]
        let mid = (value(k[0]) + value(k[1])) / 2.0;
        mid
    }
}

/// Interquartile range `Q(0.75) - Q(0.25)` with the quantiles of `numpy.quantile` for
/// `method` (scipy's `interpolation` names are numpy's method names).
///
/// # Errors
/// As [`quantile`].
pub fn interquartile_range<T: Select>(values: &[T], method: Method, nan_policy: NanPolicy) -> Result<f64> {
    let q = quantile(values, &[0.25, 0.75], method, nan_policy)?;
    Ok(q[1] - q[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mad_by_sorting(xs: &[f64]) -> f64 {
        #[allow(clippy::manual_midpoint)] // numpy's formula, on purpose
        fn med(v: &mut [f64]) -> f64 {
            v.sort_by(f64::total_cmp);
            let n = v.len();
            if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
        }
        let mut v = xs.to_vec();
        let m = med(&mut v);
        let mut d: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
        if d.iter().any(|x| x.is_nan()) {
            return f64::NAN;
        }
        med(&mut d)
    }

    #[test]
    fn known_values() {
        // scipy.stats.median_abs_deviation([1, 2, 3, 4, 100]) == 1.0
        assert_eq!(median_abs_deviation(&[1.0f64, 2.0, 3.0, 4.0, 100.0], 1.0, NanPolicy::Propagate).unwrap(), 1.0);
        assert_eq!(median_abs_deviation(&[1.0f32, 2.0, 3.0, 4.0], 1.0, NanPolicy::Propagate).unwrap(), 1.0);
        assert_eq!(median_abs_deviation(&[7.0f32], 1.0, NanPolicy::Propagate).unwrap(), 0.0);
        // scipy.stats.iqr([1, 2, 3, 4]) == 1.5
        assert_eq!(interquartile_range(&[1.0f64, 2.0, 3.0, 4.0], Method::Linear, NanPolicy::Propagate).unwrap(), 1.5);
    }

    #[test]
    fn nan_and_infinity() {
        let x = [1.0f64, f64::NAN, 3.0];
        assert!(median_abs_deviation(&x, 1.0, NanPolicy::Propagate).unwrap().is_nan());
        assert_eq!(median_abs_deviation(&x, 1.0, NanPolicy::Omit).unwrap(), 1.0);
        assert_eq!(median_abs_deviation(&x, 1.0, NanPolicy::Raise).unwrap_err().arg(), "values");
        assert!(median_abs_deviation(&[f64::INFINITY; 3], 1.0, NanPolicy::Propagate).unwrap().is_nan());
        assert_eq!(median_abs_deviation(&[1.0f64, 2.0, f64::INFINITY], 1.0, NanPolicy::Propagate).unwrap(), 1.0);
        assert_eq!(median_abs_deviation(&x, 0.0, NanPolicy::Omit).unwrap_err().arg(), "scale");
    }

    #[test]
    fn heavy_ties() {
        let x: Vec<f32> = (0..100_000u32).map(|i| if i % 10 == 0 { 1.0 } else { 0.0 }).collect();
        assert_eq!(median_abs_deviation(&x, 1.0, NanPolicy::Propagate).unwrap(), 0.0);
        let key_max = <u32 as RadixKey>::MAX;
        assert_eq!(key_max, u32::MAX);
    }

    #[test]
    fn bracketing_ties_and_infinities() {
        // Large enough for the bracketing path; ties at the median, at the bracket's lower end,
        // infinities and NaN (omitted), odd and even counts.
        let base: Vec<f64> = (0..20_001u32).map(|i| f64::from((i * 7919) % 2003) * 0.01 - 10.0).collect();
        let mut cases = vec![base.clone(), base[1..].to_vec()];
        let mut tied = base.clone();
        tied.iter_mut().step_by(3).for_each(|x| *x = 0.5);
        cases.push(tied);
        let mut zeros = base.clone();
        zeros.iter_mut().take(12_000).for_each(|x| *x = 0.0);
        cases.push(zeros);
        let mut inf = base.clone();
        inf[..3000].fill(f64::INFINITY);
        inf[3000..4000].fill(f64::NEG_INFINITY);
        cases.push(inf.clone());
        for xs in &cases {
            assert_eq!(median_abs_deviation(xs, 1.0, NanPolicy::Propagate).unwrap(), mad_by_sorting(xs));
            let xf: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let xfd: Vec<f64> = xf.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(median_abs_deviation(&xf, 1.0, NanPolicy::Propagate).unwrap(), mad_by_sorting(&xfd));
        }
        let mut with_nan = inf;
        with_nan[5000..5500].fill(f64::NAN);
        let finite: Vec<f64> = with_nan.iter().copied().filter(|x| !x.is_nan()).collect();
        assert_eq!(median_abs_deviation(&with_nan, 1.0, NanPolicy::Omit).unwrap(), mad_by_sorting(&finite));
    }

    proptest! {
        #[test]
        fn mad_equals_sorting_reference(xs in prop::collection::vec(prop_oneof![-1e3f64..1e3, (0u8..3).prop_map(f64::from)], 1..300),
                                        offset in prop_oneof![Just(0.0), Just(1e6)]) {
            let xs: Vec<f64> = xs.iter().map(|x| x + offset).collect();
            prop_assert_eq!(median_abs_deviation(&xs, 1.0, NanPolicy::Propagate).unwrap(), mad_by_sorting(&xs));
            let xf: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let xfd: Vec<f64> = xf.iter().map(|&v| f64::from(v)).collect();
            prop_assert_eq!(median_abs_deviation(&xf, 1.0, NanPolicy::Propagate).unwrap(), mad_by_sorting(&xfd));
        }

        #[test]
        fn sorted_mad_and_quantiles_equal_the_kernels(
            xs in prop::collection::vec(prop_oneof![
                -1e3f64..1e3, (0u8..3).prop_map(f64::from), Just(-0.0), Just(f64::INFINITY), Just(f64::NEG_INFINITY)
            ], 1..300),
        ) {
            // the trace's path: order statistics read off the sort its Spearman makes
            // decoded from the keys, as the sort gives them (-0.0 and +0.0 share a key)
            let mut sorted: Vec<f64> = xs.iter().map(|x| f64::from_key(x.sort_key())).collect();
            sorted.sort_by(f64::total_cmp);
            let value = |i: usize| sorted[i];
            let q = [0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0];
            let got = crate::quantile::sorted_quantiles(&value, xs.len(), &q, Method::Linear);
            let want = quantile(&xs, &q, Method::Linear, NanPolicy::Propagate).unwrap();
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{g} != {w}");
            }
            let kernel = median_abs_deviation(&xs, 1.0, NanPolicy::Propagate).unwrap();
            match sorted_median_abs_deviation(&value, xs.len()) {
                Some(mad) => prop_assert_eq!(mad.to_bits(), kernel.to_bits()),
                None => prop_assert!(!value(xs.len() / 2).is_finite() || !value((xs.len() - 1) / 2).is_finite()),
            }
        }
    }
}
