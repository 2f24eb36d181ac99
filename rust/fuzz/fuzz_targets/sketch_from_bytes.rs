//! `QuantileSketch::from_bytes` on arbitrary bytes: never a panic; what decodes re-encodes to the
//! same bytes, answers quantiles within its extremes, and merges with itself or refuses unchanged.
#![no_main]

use advcore_stats::sketch::QuantileSketch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = QuantileSketch::from_bytes(data) else { return };
    assert_eq!(s.to_bytes(), data);
    let got = s.quantile(&[0.0, 0.25, 0.5, 1.0]).expect("quantiles of a decoded sketch");
    if s.count() > 0 && s.nan_count() == 0 {
        assert!(got.iter().all(|v| (s.min()..=s.max()).contains(v)), "{got:?}");
    }
    let mut twice = s.clone();
    if twice.merge(&s).is_err() {
        assert_eq!(twice.to_bytes(), s.to_bytes());
    }
});
