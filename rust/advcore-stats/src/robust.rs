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
    // NaN samples (omitted) and NaN deviations (inf - inf) both get the NaN key.
    let deviation = move |x: T| key_of::<f64>((x.to_f64() - center).abs());
    let deviations_sel = Selector::new(values, deviation);
    if deviations_sel.n_nan() > n_nan {
        return Ok(f64::NAN);
    }
    Ok(median(&deviations_sel, f64::from_key) / scale)
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
    }
}
