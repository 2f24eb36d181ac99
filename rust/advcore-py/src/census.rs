//! Bindings for `advcore_stats::census`.

use advcore_stats::census::{self, ChangeCounts, ValueCensus};
use pyo3::prelude::*;

use crate::entry::{FloatArray, run};
use crate::with_floats;

/// `(n, n_nan, n_posinf, n_neginf, n_zero, n_near_zero, n_pos, n_neg, n_unique)`.
type ValueCounts = (u64, u64, u64, u64, u64, u64, u64, u64, u64);

#[pyfunction]
#[pyo3(signature = (values, atol))]
fn value_census(py: Python<'_>, values: FloatArray<'_>, atol: f64) -> PyResult<ValueCounts> {
    let out: ValueCensus =
        with_floats!(values, "values", |xs| run(py, "value_census", || census::value_census(xs, atol)))?;
    let c = out.counts;
    Ok((c.n, c.n_nan, c.n_posinf, c.n_neginf, c.n_zero, c.n_near_zero, c.n_pos, c.n_neg, out.n_unique))
}

/// `(n, n_changed, n_finite_pairs, sum_abs_change, max_abs_change)`; the last two are
/// meaningful only when `n_finite_pairs > 0`.
#[pyfunction]
#[pyo3(signature = (before, after, atol))]
fn change_census(
    py: Python<'_>,
    before: FloatArray<'_>,
    after: FloatArray<'_>,
    atol: f64,
) -> PyResult<(u64, u64, u64, f64, f64)> {
    let out: ChangeCounts =
        with_floats!(before, "before", |bs| with_floats!(after, "after", |as_| run(py, "change_census", || {
            census::change_census(bs, as_, atol)
        })))?;
    Ok((out.n, out.n_changed, out.n_finite_pairs, out.sum_abs_change, out.max_abs_change))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(value_census, m)?)?;
    m.add_function(wrap_pyfunction!(change_census, m)?)
}
