//! # advcore-stats
//!
//! The statistics kernels of advcore: grouped moments, zero-variance-group fraction, variance
//! decomposition, Spearman rank correlation, quantiles and a mergeable quantile sketch, robust
//! spread, value and change censuses, explained variance. Pure Rust, no Python dependency;
//! `advcore-py` exposes them as `advcore._core`.
//!
//! Every kernel takes `f32` or `f64` input, accumulates in `f64`, and is exact or states its
//! error bound. Hot loops are compiled for baseline x86-64 and for AVX2+FMA, chosen at run time
//! (see [`simd`]).

pub mod census;
pub mod checks;
pub mod error;
pub mod grouped;
pub mod groups;
pub mod moments;
pub mod quantile;
pub mod rank;
pub mod robust;
pub mod sample;
pub mod simd;
pub mod sketch;
pub mod sortkey;
pub mod trace;

pub use error::{Result, StatsError};
pub use groups::{GroupIndex, Groups};
pub use moments::Moments;
pub use sample::{NanPolicy, Sample};
