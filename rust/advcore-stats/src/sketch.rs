//! A streaming, mergeable quantile sketch with a deterministic relative-error bound.
//!
//! Values are widened to `f64` and counted in buckets given by the top bits of their
//! order-preserving key ([`crate::sortkey`]): the sign, the 11 exponent bits and the top `m`
//! mantissa bits. A bucket of normal numbers spans `[2^e (1 + j 2^-m), 2^e (1 + (j+1) 2^-m))`
//! in magnitude, so its midpoint is within a relative `2^-(m+1)` of every value in it. This is
//! the logarithmic-bucket idea of `DDSketch` (Masson, Rim & Lee 2019, "`DDSketch`: a fast and
//! fully-mergeable quantile sketch with relative-error guarantees", VLDB 12(12)) with buckets
//! read off the float bits instead of a logarithm, so bucketing is exact and cheap.
//!
//! Counts are exact integers and the minimum and maximum are kept exactly, so merging is exact
//! (`merge(a, b)` equals the sketch of the concatenation bit for bit) and independent of order.
//!
//! **Guarantee.** For `n` values and `q` in `[0, 1]`, [`QuantileSketch::quantile`] returns `v`
//! with `|v - x| <= 2^-(m+1) |x|`, where `x` is the exact order statistic at 0-based rank
//! `floor(q (n - 1))` (`numpy.quantile(values, q, method="lower")`), when `|x| >= 2^-1022`;
//! for subnormal or zero `x` it returns 0, within `2^-1022` of `x`. Ranks 0 and `n - 1` (the
//! minimum and maximum) are exact, and every answer lies in `[min, max]`.

use crate::error::{Result, StatsError};
use crate::sample::{NanPolicy, Sample, first_nan};
use crate::sortkey::SortKey;

/// Default mantissa bits: relative error `2^-8` (0.39%), at most 128 buckets per octave.
pub const DEFAULT_MANTISSA_BITS: u32 = 7;
/// Largest supported mantissa bits (relative error `2^-17`, 64 KiB counters per used octave).
pub const MAX_MANTISSA_BITS: u32 = 13;
/// Pages are indexed by the key's top 12 bits: sign and exponent.
const N_PAGES: usize = 1 << 12;
const MANTISSA: u32 = 52;
const MAGIC: &[u8; 4] = b"AQS1";

/// A mergeable quantile sketch over `f64`-widened samples; see the module docs for the bound.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantileSketch {
    mantissa_bits: u32,
    nan_policy: NanPolicy,
    /// Bucket counts by page (sign and exponent); an empty page is not allocated.
    pages: Vec<Vec<u64>>,
    count: u64,
    nan_count: u64,
    min: f64,
    max: f64,
}

impl QuantileSketch {
    /// An empty sketch keeping `mantissa_bits` mantissa bits per bucket.
    ///
    /// # Errors
    /// `mantissa_bits` outside `0..=13`, naming `mantissa_bits`.
    pub fn new(mantissa_bits: u32, nan_policy: NanPolicy) -> Result<Self> {
        if mantissa_bits > MAX_MANTISSA_BITS {
            return Err(StatsError::invalid(
                "mantissa_bits",
                format!("must be in 0..={MAX_MANTISSA_BITS}, got {mantissa_bits}"),
            ));
        }
        Ok(Self {
            mantissa_bits,
            nan_policy,
            pages: vec![Vec::new(); N_PAGES],
            count: 0,
            nan_count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        })
    }

    /// Mantissa bits kept per bucket.
    #[must_use]
    pub fn mantissa_bits(&self) -> u32 {
        self.mantissa_bits
    }

    /// The NaN policy applied by [`QuantileSketch::update`].
    #[must_use]
    pub fn nan_policy(&self) -> NanPolicy {
        self.nan_policy
    }

    /// The guaranteed relative error, `2^-(m+1)`.
    #[must_use]
    pub fn relative_error(&self) -> f64 {
        (-f64::from(self.mantissa_bits + 1)).exp2()
    }

    /// Number of (non-NaN) values counted.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Number of NaN values seen under [`NanPolicy::Propagate`] (they make quantiles NaN).
    #[must_use]
    pub fn nan_count(&self) -> u64 {
        self.nan_count
    }

    /// Exact smallest value (`+inf` when empty).
    #[must_use]
    pub fn min(&self) -> f64 {
        self.min
    }

    /// Exact largest value (`-inf` when empty).
    #[must_use]
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Add values. NaN: counted (propagate), skipped (omit), or an error that leaves the
    /// sketch unchanged (raise).
    ///
    /// # Errors
    /// NaN under [`NanPolicy::Raise`], or a count that would pass `u64::MAX` (a sketch read from
    /// hostile bytes), naming `values`; the sketch is then unchanged.
    pub fn update<T: Sample>(&mut self, values: &[T]) -> Result<()> {
        if self.count.checked_add(values.len() as u64).is_none()
            || self.nan_count.checked_add(values.len() as u64).is_none()
        {
            return Err(StatsError::invalid("values", "the sketch's count would pass 2^64 - 1"));
        }
        if self.nan_policy == NanPolicy::Raise
            && let Some(index) = first_nan(values)
        {
            return Err(StatsError::NanFound { arg: "values", index });
        }
        let shift = MANTISSA - self.mantissa_bits;
        let mask = (1u64 << self.mantissa_bits) - 1;
        let (mut min, mut max, mut nan) = (self.min, self.max, 0u64);
        for &x in values {
            let x = x.to_f64();
            if x.is_nan() {
                nan += 1;
                continue;
            }
            min = min.min(x);
            max = max.max(x);
            let key = x.sort_key();
            let page = &mut self.pages[(key >> MANTISSA) as usize];
            if page.is_empty() {
                *page = vec![0; 1 << self.mantissa_bits];
            }
            page[((key >> shift) & mask) as usize] += 1;
        }
        self.count += values.len() as u64 - nan;
        if self.nan_policy == NanPolicy::Propagate {
            self.nan_count += nan;
        }
        (self.min, self.max) = (min, max);
        Ok(())
    }

    /// Add the contents of `other`: afterwards `self` equals the sketch of both inputs.
    ///
    /// # Errors
    /// Different `mantissa_bits`, or counts whose sum passes `u64::MAX` (a sketch read from
    /// hostile bytes), naming `other`; `self` is then unchanged.
    pub fn merge(&mut self, other: &Self) -> Result<()> {
        if other.mantissa_bits != self.mantissa_bits {
            return Err(StatsError::invalid(
                "other",
                format!(
                    "has mantissa_bits={} but this sketch has {}; only sketches of the same resolution merge",
                    other.mantissa_bits, self.mantissa_bits
                ),
            ));
        }
        // every bucket count is at most its sketch's total, so totals that fit mean buckets that fit
        let (Some(count), Some(nan_count)) =
            (self.count.checked_add(other.count), self.nan_count.checked_add(other.nan_count))
        else {
            return Err(StatsError::invalid("other", "its counts and this sketch's add up past 2^64 - 1"));
        };
        for (mine, theirs) in self.pages.iter_mut().zip(&other.pages) {
            if theirs.is_empty() {
                continue;
            }
            if mine.is_empty() {
                mine.clone_from(theirs);
            } else {
                for (a, b) in mine.iter_mut().zip(theirs) {
                    *a += b;
                }
            }
        }
        (self.count, self.nan_count) = (count, nan_count);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        Ok(())
    }

    /// Approximate quantiles: for each `q`, the order statistic at rank `floor(q (n - 1))` to
    /// within the bound of the module docs. NaN for every `q` when the sketch is empty or has
    /// counted NaN.
    ///
    /// # Errors
    /// `q` outside `[0, 1]`, naming `q`.
    pub fn quantile(&self, q: &[f64]) -> Result<Vec<f64>> {
        crate::quantile::check_q(q)?;
        if self.count == 0 || self.nan_count > 0 {
            return Ok(vec![f64::NAN; q.len()]);
        }
        let last = self.count - 1;
        let mut wanted: Vec<(u64, usize)> =
            q.iter().enumerate().map(|(i, &p)| (((p * last as f64).floor() as u64).min(last), i)).collect();
        wanted.sort_unstable();
        let mut out = vec![f64::NAN; q.len()];
        let mut next = wanted.iter().peekable();
        let mut below = 0u64;
        'pages: for (p, page) in self.pages.iter().enumerate() {
            for (j, &c) in page.iter().enumerate() {
                below += c;
                while let Some(&&(rank, i)) = next.peek() {
                    if rank >= below {
                        break;
                    }
                    out[i] = self.representative(p, j, rank, last);
                    next.next();
                }
                if next.peek().is_none() {
                    break 'pages;
                }
            }
        }
        Ok(out)
    }

    /// The value returned for rank `rank` found in bucket `j` of page `p`.
    fn representative(&self, p: usize, j: usize, rank: u64, last: u64) -> f64 {
        if rank == 0 {
            return self.min;
        }
        if rank == last {
            return self.max;
        }
        let negative = p < N_PAGES / 2;
        let exponent = if negative { N_PAGES / 2 - 1 - p } else { p - N_PAGES / 2 };
        let mid = if exponent == 0 {
            0.0 // zero and subnormals
        } else if exponent == 0x7FF {
            if negative { f64::NEG_INFINITY } else { f64::INFINITY }
        } else {
            let shift = MANTISSA - self.mantissa_bits;
            let start = ((p as u64) << MANTISSA) | ((j as u64) << shift);
            let (a, b) = (f64::from_key(start), f64::from_key(start + (1u64 << shift)));
            a + (b - a) / 2.0
        };
        mid.clamp(self.min, self.max)
    }

    /// A portable little-endian encoding (for shipping between workers); see
    /// [`QuantileSketch::from_bytes`].
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let buckets: Vec<(u32, u64)> = self
            .pages
            .iter()
            .enumerate()
            .flat_map(|(p, page)| {
                page.iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(move |(j, &c)| (((p as u32) << self.mantissa_bits) | j as u32, c))
            })
            .collect();
        let mut out = Vec::with_capacity(4 + 2 + 32 + 4 + 12 * buckets.len());
        out.extend_from_slice(MAGIC);
        out.push(self.mantissa_bits as u8);
        out.push(match self.nan_policy {
            NanPolicy::Propagate => 0,
            NanPolicy::Omit => 1,
            NanPolicy::Raise => 2,
        });
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.nan_count.to_le_bytes());
        out.extend_from_slice(&self.min.to_le_bytes());
        out.extend_from_slice(&self.max.to_le_bytes());
        out.extend_from_slice(&(buckets.len() as u32).to_le_bytes());
        for (index, c) in buckets {
            out.extend_from_slice(&index.to_le_bytes());
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    /// Decode [`QuantileSketch::to_bytes`].
    ///
    /// # Errors
    /// Malformed or inconsistent bytes, naming `data`.
    pub fn from_bytes(data: &[u8]) -> Result<Self> {
        let bad = |why: &str| StatsError::invalid("data", format!("not a QuantileSketch encoding: {why}"));
        let mut r = Reader { data, at: 0 };
        if r.take(4).ok_or_else(|| bad("too short"))? != MAGIC {
            return Err(bad("wrong magic bytes"));
        }
        let head = r.take(2).ok_or_else(|| bad("too short"))?;
        let policy = match head[1] {
            0 => NanPolicy::Propagate,
            1 => NanPolicy::Omit,
            2 => NanPolicy::Raise,
            _ => return Err(bad("unknown nan_policy")),
        };
        let mut sketch = Self::new(u32::from(head[0]), policy).map_err(|_| bad("mantissa_bits out of range"))?;
        let m = sketch.mantissa_bits;
        let count = r.u64().ok_or_else(|| bad("too short"))?;
        sketch.nan_count = r.u64().ok_or_else(|| bad("too short"))?;
        sketch.min = f64::from_bits(r.u64().ok_or_else(|| bad("too short"))?);
        sketch.max = f64::from_bits(r.u64().ok_or_else(|| bad("too short"))?);
        let n_buckets =
            r.take(4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default())).ok_or_else(|| bad("too short"))?;
        let (mut total, mut previous) = (0u64, None);
        for _ in 0..n_buckets {
            let index = r
                .take(4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
                .ok_or_else(|| bad("truncated"))?;
            let c = r.u64().ok_or_else(|| bad("truncated"))?;
            if previous.is_some_and(|p| index <= p) || (index >> m) as usize >= N_PAGES || c == 0 {
                return Err(bad("bucket indices must increase and counts be positive"));
            }
            previous = Some(index);
            total = total.checked_add(c).ok_or_else(|| bad("counts overflow"))?;
            let page = &mut sketch.pages[(index >> m) as usize];
            if page.is_empty() {
                *page = vec![0; 1 << m];
            }
            page[(index & ((1 << m) - 1)) as usize] = c;
        }
        if r.at != data.len() {
            return Err(bad("trailing bytes"));
        }
        let extremes_ok = if count == 0 {
            sketch.min == f64::INFINITY && sketch.max == f64::NEG_INFINITY
        } else {
            sketch.min <= sketch.max
        };
        if total != count || !extremes_ok {
            return Err(bad("counts and extremes are inconsistent"));
        }
        sketch.count = count;
        Ok(sketch)
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let out = self.data.get(self.at..self.at + n)?;
        self.at += n;
        Some(out)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lower_order_statistic(xs: &[f64], q: f64) -> f64 {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v[(q * (v.len() - 1) as f64).floor() as usize]
    }

    /// One value counted 2^63 times, as hostile bytes can claim: header count and bucket count patched.
    fn huge() -> QuantileSketch {
        let mut s = QuantileSketch::new(7, NanPolicy::Propagate).unwrap();
        s.update(&[1.0f64]).unwrap();
        let mut bytes = s.to_bytes();
        let big = (1u64 << 63).to_le_bytes();
        bytes[6..14].copy_from_slice(&big);
        bytes[46..54].copy_from_slice(&big);
        QuantileSketch::from_bytes(&bytes).unwrap()
    }

    #[test]
    fn counts_that_would_pass_u64_max_are_an_error_that_changes_nothing() {
        let mut a = huge();
        assert_eq!(a.count(), 1 << 63);
        let err = a.merge(&huge()).unwrap_err();
        assert_eq!(err.arg(), "other");
        assert_eq!(a.count(), 1 << 63);
        assert_eq!(a.quantile(&[0.5]).unwrap(), vec![1.0]);
        let mut b = huge();
        b.merge(&QuantileSketch::new(7, NanPolicy::Propagate).unwrap()).unwrap();
        let mut c = huge();
        let mut d = huge();
        d.count = u64::MAX;
        assert_eq!(d.update(&[2.0f64]).unwrap_err().arg(), "values");
        assert_eq!(d.count(), u64::MAX);
        c.update(&[2.0f64]).unwrap();
        assert_eq!(c.count(), (1 << 63) + 1);
    }

    #[test]
    fn exact_extremes_and_rl_rewards() {
        let mut s = QuantileSketch::new(7, NanPolicy::Propagate).unwrap();
        s.update(&[0.0f32, 1.0, 0.0, 0.0, 1.0]).unwrap();
        assert_eq!(s.quantile(&[0.0, 0.5, 1.0]).unwrap(), vec![0.0, 0.0, 1.0]);
        assert_eq!(s.count(), 5);
        assert_eq!(s.relative_error(), 1.0 / 256.0);
    }

    #[test]
    fn nan_policies() {
        let mut s = QuantileSketch::new(7, NanPolicy::Propagate).unwrap();
        s.update(&[1.0f64, f64::NAN]).unwrap();
        assert!(s.quantile(&[0.5]).unwrap()[0].is_nan());
        let mut s = QuantileSketch::new(7, NanPolicy::Omit).unwrap();
        s.update(&[1.0f64, f64::NAN]).unwrap();
        assert_eq!((s.count(), s.quantile(&[0.5]).unwrap()[0]), (1, 1.0));
        let mut s = QuantileSketch::new(7, NanPolicy::Raise).unwrap();
        assert_eq!(s.update(&[1.0f64, f64::NAN]).unwrap_err().arg(), "values");
        assert_eq!(s.count(), 0);
        assert!(QuantileSketch::new(14, NanPolicy::Omit).is_err());
    }

    #[test]
    fn bytes_reject_garbage() {
        assert_eq!(QuantileSketch::from_bytes(b"nope").unwrap_err().arg(), "data");
        let mut s = QuantileSketch::new(3, NanPolicy::Omit).unwrap();
        s.update(&[1.0f64, 2.0]).unwrap();
        let mut bytes = s.to_bytes();
        bytes.push(0);
        assert!(QuantileSketch::from_bytes(&bytes).is_err());
        bytes.pop();
        bytes[8] ^= 1; // the count
        assert!(QuantileSketch::from_bytes(&bytes).is_err());
    }

    fn values() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(
            prop_oneof![
                4 => -1e9f64..1e9,
                2 => (-3i8..3).prop_map(f64::from),
                1 => Just(f64::INFINITY),
                1 => Just(f64::NEG_INFINITY),
                1 => 1e-310f64..1e-300,
            ],
            1..300,
        )
    }

    /// A valid encoding with bytes flipped, cut, spliced or repeated (the inputs `cargo fuzz` would
    /// find first; the libFuzzer target is `rust/fuzz`, `make fuzz-rust` on a nightly toolchain).
    fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
        (values(), 0u32..=10, prop::collection::vec((any::<usize>(), any::<u8>()), 0..6), any::<usize>(), 0u8..4)
            .prop_map(|(xs, m, flips, cut, how)| {
                let mut s = QuantileSketch::new(m, NanPolicy::Omit).unwrap();
                s.update(&xs).unwrap();
                let mut b = s.to_bytes();
                for (at, x) in flips {
                    let n = b.len();
                    b[at % n] ^= x;
                }
                match how {
                    0 => b.truncate(cut % (b.len() + 1)),
                    1 => {
                        let tail = b[cut % b.len()..].to_vec();
                        b.extend_from_slice(&tail);
                    }
                    _ => {}
                }
                b
            })
    }

    proptest! {
        #[test]
        fn hostile_bytes_decode_or_fail_cleanly(b in hostile_bytes()) {
            // never a panic; what decodes re-encodes to the same bytes and answers within its extremes
            match QuantileSketch::from_bytes(&b) {
                Err(e) => prop_assert_eq!(e.arg(), "data"),
                Ok(s) => {
                    prop_assert_eq!(s.to_bytes(), b);
                    let got = s.quantile(&[0.0, 0.5, 1.0]).unwrap();
                    if s.count() > 0 && s.nan_count() == 0 {
                        prop_assert!(got.iter().all(|v| (s.min()..=s.max()).contains(v)), "{:?}", got);
                    }
                    let mut twice = s.clone();
                    if twice.merge(&s).is_err() {
                        prop_assert_eq!(twice.to_bytes(), s.to_bytes()); // an overflow changes nothing
                    }
                }
            }
        }

        #[test]
        fn within_the_stated_bound(xs in values(), q in prop::collection::vec(0.0f64..=1.0, 1..8), m in 0u32..=10) {
            let mut s = QuantileSketch::new(m, NanPolicy::Propagate).unwrap();
            s.update(&xs).unwrap();
            let got = s.quantile(&q).unwrap();
            for (&p, &v) in q.iter().zip(&got) {
                let x = lower_order_statistic(&xs, p);
                if x.abs() >= f64::MIN_POSITIVE {
                    prop_assert!(v == x || (v - x).abs() <= s.relative_error() * x.abs(), "q={} x={} v={}", p, x, v);
                } else {
                    prop_assert!((v - x).abs() < f64::MIN_POSITIVE);
                }
            }
        }

        #[test]
        fn merge_is_exact_and_bytes_round_trip(a in values(), b in values(), m in 0u32..=10) {
            let mut whole = QuantileSketch::new(m, NanPolicy::Omit).unwrap();
            whole.update(&a).unwrap();
            whole.update(&b).unwrap();
            let mut sa = QuantileSketch::new(m, NanPolicy::Omit).unwrap();
            sa.update(&a).unwrap();
            let mut sb = QuantileSketch::new(m, NanPolicy::Omit).unwrap();
            sb.update(&b).unwrap();
            let mut ba = sb.clone();
            sa.merge(&sb).unwrap();
            ba.merge(&QuantileSketch::from_bytes(&sa.to_bytes()).unwrap()).unwrap();
            prop_assert_eq!(&sa, &whole);
            prop_assert_eq!(QuantileSketch::from_bytes(&whole.to_bytes()).unwrap(), whole);
            prop_assert_eq!(ba.count(), 2 * b.len() as u64 + a.len() as u64);
        }
    }
}
