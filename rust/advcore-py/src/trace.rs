//! Binding for `advcore_stats::trace`.

use advcore_stats::checks::{CheckOptions, Precision, StepChecks};
use advcore_stats::trace::{self as kernel, N_STATS, STAT_NAMES, SliceCodes, TraceOptions, TraceTable};
use advcore_stats::{Groups, grouped::Tolerance};
use numpy::{IntoPyArray, PyArray3, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::entry::{AdvcoreError, FloatArray, layout, run, slice, to_py};
use crate::with_floats;

/// Every stage as a slice of the reward's dtype `T`, or an error naming the stage.
fn same_dtype<'a, T: numpy::Element>(
    stages: &'a [FloatArray<'_>],
    pick: impl Fn(&'a FloatArray<'_>) -> Option<&'a PyReadonlyArray1<'a, T>>,
    dtype: &str,
) -> PyResult<Vec<&'a [T]>> {
    stages
        .iter()
        .enumerate()
        .map(|(k, s)| match pick(s) {
            Some(a) => slice(a, "stages"),
            None => Err(AdvcoreError::new_err(format!("`stages[{k}]` must have the dtype of `reward` ({dtype})"))),
        })
        .collect()
}

fn traced<T: advcore_stats::rank::RankSample + advcore_stats::quantile::Select>(
    py: Python<'_>,
    stages: &[&[T]],
    reward: &[T],
    groups: Option<Groups<'_>>,
    labels: &[SliceCodes<'_>],
    opts: &TraceOptions,
) -> PyResult<TraceTable> {
    run(py, "trace", || kernel::trace(stages, reward, groups, labels, opts))
}

/// The slice labels from their Python arguments: one code array (uint32) and one count per label.
fn slice_labels<'a>(slice_ids: &'a [PyReadonlyArray1<'_, u32>], n_slices: &[usize]) -> PyResult<Vec<SliceCodes<'a>>> {
    if slice_ids.len() != n_slices.len() {
        return Err(AdvcoreError::new_err("`n_slices` must give one count per `slice_ids` array"));
    }
    slice_ids.iter().zip(n_slices).map(|(a, &n)| Ok(SliceCodes { codes: slice(a, "slice_ids")?, n })).collect()
}

/// `(stat_names, table)` with `table[stage, slice, stat]` (float64, shape
/// `(len(stages), 1 + sum(n_slices), len(stat_names))`); slice 0 is the whole batch.
#[pyfunction]
#[pyo3(signature = (stages, reward, group_size, group_ids, slice_ids, n_slices, near_zero_atol, atol, rtol, change_atol, threads=0))]
#[allow(clippy::too_many_arguments)]
fn trace<'py>(
    py: Python<'py>,
    stages: Vec<FloatArray<'py>>,
    reward: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    slice_ids: Vec<PyReadonlyArray1<'py, u32>>,
    n_slices: Vec<usize>,
    near_zero_atol: f64,
    atol: f64,
    rtol: f64,
    change_atol: f64,
    threads: usize,
) -> PyResult<(Vec<&'static str>, Bound<'py, PyArray3<f64>>)> {
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let groups = if group_size.is_none() && ids.is_none() { None } else { Some(layout(group_size, ids)?) };
    let labels = slice_labels(&slice_ids, &n_slices)?;
    let opts = TraceOptions { near_zero_atol, group_tol: Tolerance { atol, rtol }, change_atol, threads };
    let table = match &reward {
        FloatArray::F32(r) => {
            let xs = same_dtype(&stages, |s| if let FloatArray::F32(a) = s { Some(a) } else { None }, "float32")?;
            traced(py, &xs, slice(r, "reward")?, groups, &labels, &opts)?
        }
        FloatArray::F64(r) => {
            let xs = same_dtype(&stages, |s| if let FloatArray::F64(a) = s { Some(a) } else { None }, "float64")?;
            traced(py, &xs, slice(r, "reward")?, groups, &labels, &opts)?
        }
    };
    let shape = [table.n_stages, table.n_slices, N_STATS];
    Ok((STAT_NAMES.to_vec(), table.values.into_pyarray(py).reshape(shape)?))
}

/// The checks' options from their Python arguments (precision names as `advcore.reference` spells them).
pub fn check_options(reward_dtype: Option<&str>, reward_input: Option<&str>, adv_rtol: f64) -> PyResult<CheckOptions> {
    let parse = |name: Option<&str>, arg| name.map(|s| Precision::parse(s, arg)).transpose().map_err(to_py);
    Ok(CheckOptions {
        reward_dtype: parse(reward_dtype, "reward_dtype")?,
        reward_input: parse(reward_input, "reward_input")?,
        adv_rtol,
    })
}

/// The checks as a dict `name -> value`, in `step_checks` order.
pub fn checks_dict<'py>(py: Python<'py>, checks: &StepChecks) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (name, value) in checks.named() {
        out.set_item(name, value)?;
    }
    Ok(out)
}

/// What `trace_checked` returns: the statistic names, the table and the checks by name.
type Checked<'py> = (Vec<&'static str>, Bound<'py, PyArray3<f64>>, Bound<'py, PyDict>);

/// `trace(...)` and the reference checks (`advcore_stats::checks`) of the reward and of stage
/// `adv_stage`: `(stat_names, table, checks)`.
#[pyfunction]
#[pyo3(signature = (stages, reward, group_size, group_ids, slice_ids, n_slices, near_zero_atol, atol, rtol, change_atol, adv_stage, reward_dtype, reward_input, adv_rtol, threads=0))]
#[allow(clippy::too_many_arguments)]
fn trace_checked<'py>(
    py: Python<'py>,
    stages: Vec<FloatArray<'py>>,
    reward: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    slice_ids: Vec<PyReadonlyArray1<'py, u32>>,
    n_slices: Vec<usize>,
    near_zero_atol: f64,
    atol: f64,
    rtol: f64,
    change_atol: f64,
    adv_stage: Option<usize>,
    reward_dtype: Option<&str>,
    reward_input: Option<&str>,
    adv_rtol: f64,
    threads: usize,
) -> PyResult<Checked<'py>> {
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let groups = layout(group_size, ids)?;
    let labels = slice_labels(&slice_ids, &n_slices)?;
    let opts = TraceOptions { near_zero_atol, group_tol: Tolerance { atol, rtol }, change_atol, threads };
    let check_opts = check_options(reward_dtype, reward_input, adv_rtol)?;
    let (table, checks) = match &reward {
        FloatArray::F32(r) => {
            let xs = same_dtype(&stages, |s| if let FloatArray::F32(a) = s { Some(a) } else { None }, "float32")?;
            let r = slice(r, "reward")?;
            run(py, "trace_checked", || kernel::trace_checked(&xs, r, groups, &labels, &opts, adv_stage, &check_opts))?
        }
        FloatArray::F64(r) => {
            let xs = same_dtype(&stages, |s| if let FloatArray::F64(a) = s { Some(a) } else { None }, "float64")?;
            let r = slice(r, "reward")?;
            run(py, "trace_checked", || kernel::trace_checked(&xs, r, groups, &labels, &opts, adv_stage, &check_opts))?
        }
    };
    let shape = [table.n_stages, table.n_slices, N_STATS];
    Ok((STAT_NAMES.to_vec(), table.values.into_pyarray(py).reshape(shape)?, checks_dict(py, &checks)?))
}

/// The reference checks alone (`advcore_stats::checks::step_checks`): `name -> value`.
#[pyfunction]
#[pyo3(signature = (rewards, group_size, group_ids, adv, reward_dtype, reward_input, adv_rtol))]
#[allow(clippy::too_many_arguments)]
fn step_checks<'py>(
    py: Python<'py>,
    rewards: FloatArray<'py>,
    group_size: Option<usize>,
    group_ids: Option<PyReadonlyArray1<'py, i64>>,
    adv: Option<FloatArray<'py>>,
    reward_dtype: Option<&str>,
    reward_input: Option<&str>,
    adv_rtol: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let ids = group_ids.as_ref().map(|a| slice(a, "group_ids")).transpose()?;
    let groups = layout(group_size, ids)?;
    let opts = check_options(reward_dtype, reward_input, adv_rtol)?;
    let checks = with_floats!(rewards, "rewards", |r| match &adv {
        None => run(py, "step_checks", || advcore_stats::checks::step_checks::<_, f64>(r, groups, None, &opts))?,
        Some(a) => with_floats!(a, "adv", |a| run(py, "step_checks", || advcore_stats::checks::step_checks(
            r,
            groups,
            Some(a),
            &opts
        ))?),
    });
    checks_dict(py, &checks)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_checked, m)?)?;
    m.add_function(wrap_pyfunction!(step_checks, m)?)
}
