//! Run-time dispatch to the AVX-512 or AVX2+FMA build of a hot loop.
//!
//! Wheels must run on baseline x86-64, so kernels are not compiled with `-C target-cpu`.
//! Instead a hot function is annotated with [`dispatch`] (the `multiversion` crate): it is
//! compiled for the baseline, for AVX-512 (F, BW, CD, DQ, VL: Intel Xeon since Skylake-SP, AMD
//! since Zen 4) and for AVX2 with FMA, and the first call picks the first version the CPU
//! supports. Rust never reassociates or contracts floating-point arithmetic, so every version
//! rounds alike: the results are the same bit for bit on every CPU. The compiler auto-vectorises both versions; no
//! hand-written intrinsics and no `unsafe` in our code.
//!
//! ```ignore
//! #[advcore_stats::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
//! fn sum(xs: &[f32]) -> f64 { xs.iter().map(|&x| f64::from(x)).sum() }
//! ```

pub use multiversion::multiversion as dispatch;

/// The targets every dispatched kernel is compiled for, besides the baseline, in order of
/// preference. Written out at each use site because attribute macros cannot take constants:
/// `#[dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]`.
/// On the Intel Xeon dev VM the AVX-512 copies took the 16,384-sample trace from 0.70 to 0.63 ms
/// (10th percentile; bench/README.md).
pub const TARGETS: [&str; 2] = ["x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"];

/// Independent accumulators of a reduction over floats: one running sum or maximum per lane, so
/// the loop vectorises instead of waiting on one chain of additions (4 cycles a value).
pub(crate) const LANES: usize = 8;

/// `lane(k, x, y)` for every pair of `xs` and `ys` in order (pairs beyond the shorter are left out),
/// `k = i % LANES` for the `i`-th pair: a reduction that keeps one accumulator per `k` vectorises.
/// Always inlined, so that it is compiled into the dispatched copy of its caller.
#[allow(clippy::inline_always)]
#[inline(always)]
pub(crate) fn by_lane<X, Y>(xs: &[X], ys: &[Y], mut lane: impl FnMut(usize, &X, &Y)) {
    let (x8, y8) = (xs.chunks_exact(LANES), ys.chunks_exact(LANES));
    let (x_rest, y_rest) = (x8.remainder(), y8.remainder());
    for (x, y) in x8.zip(y8) {
        for k in 0..LANES {
            lane(k, &x[k], &y[k]);
        }
    }
    for (k, (x, y)) in x_rest.iter().zip(y_rest).enumerate() {
        lane(k, x, y);
    }
}
