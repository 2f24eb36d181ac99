//! Bindings for `advcore_stats::rank`.

use advcore_stats::rank::{self, GroupedSpearman, Spearman};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::entry::{FloatArray, layout, nan_policy, run, slice};
use crate::with_floats;

/// `(rho, n_pairs, undefined)`; `threads` as [`rank::spearman_threads`] (0: two when available).
#[pyfunction]
#[pyo3(signature = (x, y, nan_policy, threads = 0))]
fn spearman(
    py: Python<'_>,
    x: FloatArray<'_>,
    y: FloatArray<'_>,
    nan_policy: &str,
    threads: usize,
) -> PyResult<(f64, usize, bool)> {
    let policy = self::nan_policy(nan_policy)?;
    let out: Spearman = with_floats!(x, "x", |xs| with_floats!(y, "y", |ys| run(py, "spearman", || {
        rank::spearman_threads(xs, ys, policy, threads)
    })))?;
    Ok((out.rho, out.n_pairs, out.undefined))
}

/// `(labels or None, rho, mean, n_defined, n_undefined, n_nan)`.
type GroupedRho<'py> = (Option<Bound<'py, PyArray1<i64>>>, Bound<'py, PyArray1<f64>>, f64, usize, usize, usize);

#[pyfunction]
#[pyo3(signature = (x, y, group_size, group_ids, nan_policy))]
fn within_group_spearman<'py>(
    py: Python<'py>,
    x: FloatArray<'py>,
    y: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    nan_policy: &str,
) -> PyResult<GroupedRho<'py>> {
    let policy = self::nan_policy(nan_policy)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = layout(group_size, ids)?;
    let out: GroupedSpearman =
        with_floats!(x, "x", |xs| with_floats!(y, "y", |ys| run(py, "within_group_spearman", || {
            rank::within_group_spearman(xs, ys, layout, policy)
        })))?;
    Ok((
        out.labels.map(|l| l.into_pyarray(py)),
        out.rho.into_pyarray(py),
        out.mean,
        out.n_defined,
        out.n_undefined,
        out.n_nan,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(spearman, m)?)?;
    m.add_function(wrap_pyfunction!(within_group_spearman, m)?)
}
