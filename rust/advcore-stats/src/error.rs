//! The one error type of the kernels. Every variant names the argument it is about, so the
//! Python layer can pass the message through unchanged.

use std::fmt;

/// An argument a kernel cannot work with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsError {
    /// The array has no elements (after NaN omission, if NaN was omitted).
    Empty {
        /// Name of the argument, as the Python signature spells it.
        arg: &'static str,
    },
    /// Two arrays that must be paired element by element have different lengths.
    LengthMismatch {
        /// Name of the argument whose length is wrong.
        arg: &'static str,
        /// Its length.
        found: usize,
        /// Name of the argument it must match.
        other: &'static str,
        /// The length of that argument.
        expected: usize,
    },
    /// NaN was found and the caller asked for `nan_policy="raise"`.
    NanFound {
        /// Name of the argument.
        arg: &'static str,
        /// Index of the first NaN.
        index: usize,
    },
    /// Any other invalid argument value, with the reason.
    Invalid {
        /// Name of the argument.
        arg: &'static str,
        /// What was wrong, in a sentence fragment.
        reason: String,
    },
}

impl StatsError {
    /// Shorthand for [`StatsError::Invalid`].
    pub fn invalid(arg: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { arg, reason: reason.into() }
    }

    /// The argument the error is about.
    #[must_use]
    pub fn arg(&self) -> &'static str {
        match self {
            Self::Empty { arg }
            | Self::LengthMismatch { arg, .. }
            | Self::NanFound { arg, .. }
            | Self::Invalid { arg, .. } => arg,
        }
    }
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty { arg } => write!(f, "`{arg}` is empty; at least one value is needed"),
            Self::LengthMismatch { arg, found, other, expected } => write!(
                f,
                "`{arg}` has length {found} but `{other}` has length {expected}; they must be paired element by element"
            ),
            Self::NanFound { arg, index } => {
                write!(f, "`{arg}` contains NaN (first at index {index}) and nan_policy='raise'")
            }
            Self::Invalid { arg, reason } => write!(f, "`{arg}`: {reason}"),
        }
    }
}

impl std::error::Error for StatsError {}

/// Result alias for the kernels.
pub type Result<T> = std::result::Result<T, StatsError>;

/// Check that `b` has the same length as `a`.
///
/// # Errors
/// [`StatsError::LengthMismatch`] naming `b_name`.
pub fn check_same_len(a_name: &'static str, a: usize, b_name: &'static str, b: usize) -> Result<()> {
    if a == b { Ok(()) } else { Err(StatsError::LengthMismatch { arg: b_name, found: b, other: a_name, expected: a }) }
}

/// Check that an array is not empty.
///
/// # Errors
/// [`StatsError::Empty`] naming `arg`.
pub fn check_non_empty(arg: &'static str, len: usize) -> Result<()> {
    if len == 0 { Err(StatsError::Empty { arg }) } else { Ok(()) }
}
