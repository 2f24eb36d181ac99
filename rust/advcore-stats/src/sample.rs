//! The input element types (float32, float64) and the NaN policy shared by every kernel.

use crate::error::{Result, StatsError};

/// A floating-point sample the kernels accept. Kernels read `T` and accumulate in `f64`.
pub trait Sample: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    /// Widen to `f64` (exact for both implementors).
    fn to_f64(self) -> f64;
    /// Narrow from `f64` (rounds to nearest for `f32`; exact for values read from `Self`).
    fn from_f64(x: f64) -> Self;
    /// True when the value is NaN.
    fn is_nan(self) -> bool;
    /// Name of the dtype as numpy spells it.
    const DTYPE: &'static str;
}

impl Sample for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    const DTYPE: &'static str = "float32";
}

impl Sample for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    const DTYPE: &'static str = "float64";
}

/// What a kernel does with NaN input, with scipy's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NanPolicy {
    /// NaN flows into the result (the statistic of anything containing NaN is NaN).
    #[default]
    Propagate,
    /// NaN samples are dropped before the statistic is computed (paired arrays: the pair is dropped).
    Omit,
    /// NaN is an error naming the argument and the first index.
    Raise,
}

impl NanPolicy {
    /// Parse scipy's spelling (`"propagate"`, `"omit"`, `"raise"`).
    ///
    /// # Errors
    /// [`StatsError::Invalid`] naming `nan_policy`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "propagate" => Ok(Self::Propagate),
            "omit" => Ok(Self::Omit),
            "raise" => Ok(Self::Raise),
            other => Err(StatsError::invalid(
                "nan_policy",
                format!("expected 'propagate', 'omit' or 'raise', got {other:?}"),
            )),
        }
    }
}

/// Index of the first NaN in `xs`, if any.
#[must_use]
pub fn first_nan<T: Sample>(xs: &[T]) -> Option<usize> {
    // A plain scan: `any` short-circuits per element and does not vectorise; chunking does.
    const CHUNK: usize = 1024;
    for (c, chunk) in xs.chunks(CHUNK).enumerate() {
        if chunk.iter().fold(false, |acc, &x| acc | x.is_nan()) {
            let i = chunk.iter().position(|x| x.is_nan()).unwrap_or(0);
            return Some(c * CHUNK + i);
        }
    }
    None
}

/// Under [`NanPolicy::Raise`], fail on the first NaN of `xs`.
///
/// # Errors
/// [`StatsError::NanFound`] naming `arg`.
pub fn raise_on_nan<T: Sample>(policy: NanPolicy, arg: &'static str, xs: &[T]) -> Result<()> {
    if policy == NanPolicy::Raise
        && let Some(index) = first_nan(xs)
    {
        return Err(StatsError::NanFound { arg, index });
    }
    Ok(())
}
