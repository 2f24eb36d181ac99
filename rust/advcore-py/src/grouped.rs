//! Bindings for `advcore_stats::grouped`. Per-group columns are numpy arrays the kernel writes
//! in place; other outputs are `Vec`s handed to numpy without a copy (`IntoPyArray`).

use advcore_stats::Groups;
use advcore_stats::grouped::{self, Columns, Plan, SpreadCensus, Tolerance};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArray};
use pyo3::prelude::*;

use crate::entry::{AdvcoreError, FloatArray, layout, nan_policy, run, slice, to_py};
use crate::with_floats;

/// The census as a flat tuple:
/// `(n_groups, n_singleton, n_exact_zero, n_near_zero, n_nan, exact_fraction, near_fraction)`.
type CensusTuple = (u64, u64, u64, u64, u64, f64, f64);

fn census_tuple(c: &SpreadCensus) -> CensusTuple {
    (c.n_groups, c.n_singleton, c.n_exact_zero, c.n_near_zero, c.n_nan, c.exact_fraction(), c.near_fraction())
}

/// Per-group arrays: (labels or None, count or None, mean, var, min, max, census). `count` is
/// None when every group holds the group size; `min` and `max` have the input dtype.
type GroupedArrays<'py> = (
    Option<Bound<'py, PyArray1<i64>>>,
    Option<Bound<'py, PyArray1<u64>>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyUntypedArray>,
    Bound<'py, PyUntypedArray>,
    CensusTuple,
);

fn tolerance(atol: f64, rtol: f64) -> PyResult<Tolerance> {
    let tol = Tolerance { atol, rtol };
    tol.check().map_err(to_py)?;
    Ok(tol)
}

/// `numpy.empty(len, dtype)`: numpy's allocator asks for huge pages and reuses freed blocks,
/// where fresh 4 KiB pages from a Rust `Vec` cost more in page faults than the kernel itself;
/// uninitialised, as the kernel writes every row the caller keeps.
fn empty<T: numpy::Element>(py: Python<'_>, len: usize) -> PyResult<Bound<'_, PyArray1<T>>> {
    let numpy = py.import("numpy")?;
    let array = numpy.getattr("empty")?.call1((len, numpy::dtype::<T>(py)))?;
    Ok(array.cast_into::<PyArray1<T>>()?)
}

/// Plan the scan, allocate the output columns as numpy arrays of [`Plan::max_groups`] rows,
/// and let the kernel write them in place. The arrays may be longer than the number of groups;
/// the Python layer slices them.
fn moments_into<'py, T: advcore_stats::Sample + numpy::Element>(
    py: Python<'py>,
    xs: &[T],
    layout: Groups<'_>,
    ddof: u32,
    policy: advcore_stats::NanPolicy,
    tol: Tolerance,
) -> PyResult<GroupedArrays<'py>> {
    let plan = run(py, "grouped_moments", || Plan::new(xs, layout, policy, tol))?;
    let m = plan.max_groups();
    let count = if plan.counts_vary() { Some(empty::<u64>(py, m)?) } else { None };
    let (mean, var) = (empty::<f64>(py, m)?, empty::<f64>(py, m)?);
    let (min, max) = (empty::<T>(py, m)?, empty::<T>(py, m)?);
    let info = {
        let mut c = count.as_ref().map(PyArrayMethods::readwrite);
        let [mut mean_rw, mut var_rw] = [&mean, &var].map(PyArrayMethods::readwrite);
        let [mut min_rw, mut max_rw] = [&min, &max].map(PyArrayMethods::readwrite);
        let mut sink = Columns {
            count: c.as_mut().map(|c| c.as_slice_mut()).transpose()?,
            mean: mean_rw.as_slice_mut()?,
            var: var_rw.as_slice_mut()?,
            min: min_rw.as_slice_mut()?,
            max: max_rw.as_slice_mut()?,
            ddof,
        };
        run(py, "grouped_moments", || Ok(plan.run(&mut sink)))?
    };
    let labels = info.labels.map(|l| l.into_pyarray(py));
    Ok((labels, count, mean, var, min.as_untyped().clone(), max.as_untyped().clone(), census_tuple(&info.census)))
}

#[pyfunction]
#[pyo3(signature = (values, group_size, group_ids, ddof, nan_policy, atol, rtol))]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
fn grouped_moments<'py>(
    py: Python<'py>,
    values: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    ddof: u32,
    nan_policy: &str,
    atol: f64,
    rtol: f64,
) -> PyResult<GroupedArrays<'py>> {
    let policy = self::nan_policy(nan_policy)?;
    let tol = tolerance(atol, rtol)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = layout(group_size, ids)?;
    with_floats!(values, "values", |xs| moments_into(py, xs, layout, ddof, policy, tol))
}

#[pyfunction]
#[pyo3(signature = (values, group_size, group_ids, atol, rtol, nan_policy))]
fn zero_variance_fraction<'py>(
    py: Python<'py>,
    values: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    atol: f64,
    rtol: f64,
    nan_policy: &str,
) -> PyResult<CensusTuple> {
    let policy = self::nan_policy(nan_policy)?;
    let tol = tolerance(atol, rtol)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = layout(group_size, ids)?;
    let census = with_floats!(values, "values", |xs| run(py, "zero_variance_fraction", || {
        grouped::zero_variance_fraction(xs, layout, tol, policy)
    }))?;
    Ok(census_tuple(&census))
}

/// `(total, within, between, within_fraction, count, n_groups)`.
type DecompositionTuple = (f64, f64, f64, f64, u64, u64);

#[pyfunction]
#[pyo3(signature = (values, group_size, group_ids, nan_policy))]
fn variance_decomposition<'py>(
    py: Python<'py>,
    values: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    nan_policy: &str,
) -> PyResult<DecompositionTuple> {
    let policy = self::nan_policy(nan_policy)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = layout(group_size, ids)?;
    let d = with_floats!(values, "values", |xs| run(py, "variance_decomposition", || {
        grouped::variance_decomposition(xs, layout, policy)
    }))?;
    Ok((d.total, d.within, d.between, d.within_fraction(), d.count, d.n_groups))
}

/// `(overall, overall_undefined, labels or None, per-group or None, n_undefined_groups)`.
type ExplainedTuple<'py> = (f64, bool, Option<Bound<'py, PyArray1<i64>>>, Option<Bound<'py, PyArray1<f64>>>, u64);

#[pyfunction]
#[pyo3(signature = (returns, values, group_size, group_ids, nan_policy))]
fn explained_variance<'py>(
    py: Python<'py>,
    returns: FloatArray<'py>,
    values: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    nan_policy: &str,
) -> PyResult<ExplainedTuple<'py>> {
    let policy = self::nan_policy(nan_policy)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = match (group_size, ids) {
        (None, None) => None,
        (size, ids) => Some(layout(size, ids)?),
    };
    let ev = match (&returns, &values) {
        (FloatArray::F32(r), FloatArray::F32(v)) => {
            let (r, v) = (slice(r, "returns")?, slice(v, "values")?);
            run(py, "explained_variance", || grouped::explained_variance(r, v, layout, policy))?
        }
        (FloatArray::F64(r), FloatArray::F64(v)) => {
            let (r, v) = (slice(r, "returns")?, slice(v, "values")?);
            run(py, "explained_variance", || grouped::explained_variance(r, v, layout, policy))?
        }
        _ => return Err(AdvcoreError::new_err("`values` must have the dtype of `returns`")),
    };
    Ok(match ev.per_group {
        Some(g) => (
            ev.overall,
            ev.overall_undefined,
            g.labels.map(|l| l.into_pyarray(py)),
            Some(g.explained.into_pyarray(py)),
            g.n_undefined,
        ),
        None => (ev.overall, ev.overall_undefined, None, None, 0),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(grouped_moments, m)?)?;
    m.add_function(wrap_pyfunction!(zero_variance_fraction, m)?)?;
    m.add_function(wrap_pyfunction!(variance_decomposition, m)?)?;
    m.add_function(wrap_pyfunction!(explained_variance, m)?)
}
