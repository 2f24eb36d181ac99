//! Criterion benchmarks of the core kernels at one million float32 samples, without Python in
//! the way: `cargo bench -p advcore-stats`. The comparisons against numpy, scipy and Polars live
//! in `bench/run.py`.

use advcore_stats::grouped::{Tolerance, zero_variance_fraction};
use advcore_stats::quantile::{Method, quantile};
use advcore_stats::rank::spearman;
use advcore_stats::robust::median_abs_deviation;
use advcore_stats::{Groups, NanPolicy};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const N: usize = 1 << 20;

/// A deterministic pseudo-random stream (`SplitMix64`), so the benchmark needs no RNG crate.
fn uniform(seed: u64) -> impl Iterator<Item = f32> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    })
}

fn kernels(c: &mut Criterion) {
    let advantages: Vec<f32> = uniform(1).take(N).map(|u| u * 4.0 - 2.0).collect();
    let rewards: Vec<f32> = uniform(2).take(N).map(|u| (u * 100.0).round() / 100.0).collect();
    let ids: Vec<i64> = uniform(3).take(N).map(|u| (u * (N / 8) as f32) as i64).collect();
    let q = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99];

    let mut group = c.benchmark_group("kernels_1M_f32");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("zero_variance_fraction_G8", |b| {
        b.iter(|| {
            zero_variance_fraction(
                black_box(&rewards),
                Groups::Contiguous { size: 8 },
                Tolerance::default(),
                NanPolicy::Propagate,
            )
        });
    });
    group.bench_function("zero_variance_fraction_ids", |b| {
        b.iter(|| {
            zero_variance_fraction(black_box(&rewards), Groups::Ids(&ids), Tolerance::default(), NanPolicy::Propagate)
        });
    });
    group.bench_function("spearman_ties", |b| {
        b.iter(|| spearman(black_box(&advantages), black_box(&rewards), NanPolicy::Propagate));
    });
    group.bench_function("quantile_7_linear", |b| {
        b.iter(|| quantile(black_box(&advantages), &q, Method::Linear, NanPolicy::Propagate));
    });
    group.bench_function("median_abs_deviation", |b| {
        b.iter(|| median_abs_deviation(black_box(&advantages), 1.0, NanPolicy::Propagate));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = kernels
}
criterion_main!(benches);
