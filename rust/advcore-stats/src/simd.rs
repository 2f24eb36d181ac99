//! Run-time dispatch to the AVX2+FMA build of a hot loop.
//!
//! Wheels must run on baseline x86-64, so kernels are not compiled with `-C target-cpu`.
//! Instead a hot function is annotated with [`dispatch`] (the `multiversion` crate): it is
//! compiled once for the baseline and once with AVX2 and FMA enabled, and the first call picks
//! the best version the CPU supports. The compiler auto-vectorises both versions; no
//! hand-written intrinsics and no `unsafe` in our code.
//!
//! ```ignore
//! #[advcore_stats::simd::dispatch(targets("x86_64+avx2+fma"))]
//! fn sum(xs: &[f32]) -> f64 { xs.iter().map(|&x| f64::from(x)).sum() }
//! ```

pub use multiversion::multiversion as dispatch;

/// The targets every dispatched kernel is compiled for, besides the baseline.
/// Written out at each use site because attribute macros cannot take constants:
/// `#[dispatch(targets("x86_64+avx2+fma"))]`.
pub const TARGETS: &str = "x86_64+avx2+fma";
