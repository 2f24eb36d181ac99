//! Mergeable moments: count, mean, sum of squared deviations (M2), min and max, in `f64`.
//!
//! Insertion is Welford's update (Welford 1962); combining two states is the pairwise formula
//! of Chan, Golub & LeVeque (1979), exact up to rounding, as in Schubert & Gertz (2018),
//! "Numerically stable parallel computation of (co-)variance", SSDBM. A batch of values is
//! summarised two-pass (mean first, then squared deviations), which is what keeps
//! `1e6 + small noise` free of catastrophic cancellation.

use crate::sample::Sample;

/// Moments of a set of values. `count == 0` is the empty state (mean 0, min `+inf`, max `-inf`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
    /// Smallest value (`+inf` when empty).
    pub min: f64,
    /// Largest value (`-inf` when empty).
    pub max: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Moments {
    /// The state of no values.
    pub const EMPTY: Self = Self { count: 0, mean: 0.0, m2: 0.0, min: f64::INFINITY, max: f64::NEG_INFINITY };

    /// Add one value (Welford's update). NaN propagates into `mean`, `m2`, `min` and `max`.
    #[inline]
    pub fn insert(&mut self, x: f64) {
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
        self.min = nan_min(self.min, x);
        self.max = nan_max(self.max, x);
    }

    /// Summarise a slice two-pass: exact mean, then squared deviations from it.
    #[must_use]
    pub fn from_slice<T: Sample>(xs: &[T]) -> Self {
        if xs.is_empty() {
            return Self::EMPTY;
        }
        let n = xs.len() as f64;
        let (mut sum, mut min, mut max) = (0.0f64, f64::INFINITY, f64::NEG_INFINITY);
        for &x in xs {
            let x = x.to_f64();
            sum += x;
            min = nan_min(min, x);
            max = nan_max(max, x);
        }
        let mean = sum / n;
        let (mut m2, mut comp) = (0.0f64, 0.0f64);
        for &x in xs {
            let d = x.to_f64() - mean;
            m2 += d * d;
            comp += d;
        }
        // Corrected two-pass (Chan, Golub & LeVeque 1983): removes the rounding left in `mean`.
        m2 -= comp * comp / n;
        Self { count: xs.len() as u64, mean: mean + comp / n, m2: m2.max(0.0), min, max }
    }

    /// Combine two states as if all their values had been inserted into one (Chan et al. 1979).
    #[must_use]
    pub fn combine(&self, other: &Self) -> Self {
        if other.count == 0 {
            return *self;
        }
        if self.count == 0 {
            return *other;
        }
        let count = self.count + other.count;
        let (na, nb, n) = (self.count as f64, other.count as f64, count as f64);
        let delta = other.mean - self.mean;
        Self {
            count,
            mean: self.mean + delta * (nb / n),
            m2: self.m2 + other.m2 + delta * delta * (na * nb / n),
            min: nan_min(self.min, other.min),
            max: nan_max(self.max, other.max),
        }
    }

    /// Variance with `ddof` delta degrees of freedom: `m2 / (count - ddof)`.
    /// `None` when `count <= ddof` (the statistic is undefined).
    #[must_use]
    pub fn variance(&self, ddof: u32) -> Option<f64> {
        let dof = self.count.checked_sub(u64::from(ddof)).filter(|&d| d > 0)?;
        Some(self.m2 / dof as f64)
    }

    /// Mean, or `None` for the empty state.
    #[must_use]
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then_some(self.mean)
    }
}

/// `min` that lets NaN win, so NaN propagates (`f64::min` would drop it).
#[inline(always)]
fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

#[inline(always)]
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

#[cfg(test)]
mod tests {
    use super::Moments;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        let m = Moments::from_slice(&[1.0f64, 2.0, 3.0, 4.0]);
        assert_eq!(m.mean, 2.5);
        assert_eq!(m.variance(0), Some(1.25));
        assert_eq!(m.variance(1), Some(5.0 / 3.0));
        assert_eq!(m.variance(4), None);
        assert_eq!((m.min, m.max), (1.0, 4.0));
    }

    #[test]
    fn huge_offset_does_not_cancel() {
        let xs: Vec<f64> = (0..1000).map(|i| 1e6 + 1e-3 * f64::from(i % 7)).collect();
        let m = Moments::from_slice(&xs);
        let exact = {
            let mean = xs.iter().sum::<f64>() / 1000.0;
            xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 1000.0
        };
        assert!((m.variance(0).unwrap() - exact).abs() <= 1e-9 * exact);
    }

    proptest! {
        #[test]
        fn combine_equals_whole_and_is_order_independent(
            a in prop::collection::vec(-1e6f64..1e6, 0..50),
            b in prop::collection::vec(-1e6f64..1e6, 0..50),
        ) {
            let whole: Vec<f64> = a.iter().chain(&b).copied().collect();
            let w = Moments::from_slice(&whole);
            let ab = Moments::from_slice(&a).combine(&Moments::from_slice(&b));
            let ba = Moments::from_slice(&b).combine(&Moments::from_slice(&a));
            let mut inserted = Moments::EMPTY;
            for &x in &whole { inserted.insert(x); }
            for m in [ab, ba, inserted] {
                prop_assert_eq!(m.count, w.count);
                prop_assert!(m.m2 >= 0.0);
                let scale = 1.0 + w.mean.abs();
                prop_assert!((m.mean - w.mean).abs() <= 1e-9 * scale);
                prop_assert!((m.m2 - w.m2).abs() <= 1e-7 * (1.0 + w.m2));
            }
        }
    }
}
