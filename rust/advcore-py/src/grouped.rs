//! Bindings for `advcore_stats::grouped`.

use advcore_stats::Groups;
use advcore_stats::grouped::{self, GroupedMoments};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::entry::{FloatArray, run, slice};
use crate::with_floats;

/// Per-group arrays: (labels or None, count, mean, var, min, max).
type GroupedArrays<'py> = (
    Option<Bound<'py, PyArray1<i64>>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Resolve the two ways of giving groups; the Python layer has checked that exactly one is set.
fn groups<'a>(group_size: Option<usize>, ids: Option<&'a [i64]>) -> PyResult<Groups<'a>> {
    match (group_size, ids) {
        (Some(size), None) => Ok(Groups::Contiguous { size }),
        (None, Some(ids)) => Ok(Groups::Ids(ids)),
        _ => Err(crate::entry::AdvcoreError::new_err("give exactly one of `group_size` and `group_ids`")),
    }
}

#[pyfunction]
#[pyo3(signature = (values, group_size, group_ids, ddof, nan_policy))]
fn grouped_moments<'py>(
    py: Python<'py>,
    values: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    ddof: u32,
    nan_policy: &str,
) -> PyResult<GroupedArrays<'py>> {
    let policy = crate::entry::nan_policy(nan_policy)?;
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let layout = groups(group_size, ids)?;
    let out: GroupedMoments =
        with_floats!(values, "values", |xs| run(py, "grouped_moments", || grouped::grouped_moments(xs, layout, policy)))?;
    let n = out.moments.len();
    let (mut count, mut mean, mut var, mut min, mut max) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for m in &out.moments {
        count.push(m.count);
        mean.push(m.mean().unwrap_or(f64::NAN));
        var.push(m.variance(ddof).unwrap_or(f64::NAN));
        min.push(if m.count == 0 { f64::NAN } else { m.min });
        max.push(if m.count == 0 { f64::NAN } else { m.max });
    }
    Ok((
        out.labels.map(|l| l.into_pyarray(py)),
        count.into_pyarray(py),
        mean.into_pyarray(py),
        var.into_pyarray(py),
        min.into_pyarray(py),
        max.into_pyarray(py),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(grouped_moments, m)?)
}
