//! Bindings for `advcore_stats::{quantile, robust, sketch}`.

use advcore_stats::quantile::Method;
use advcore_stats::{quantile as kernels, robust, sketch};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::entry::{FloatArray, run, slice, to_py};
use crate::with_floats;

fn method(s: &str) -> PyResult<Method> {
    Method::parse(s).map_err(to_py)
}

#[pyfunction]
#[pyo3(signature = (values, q, method, nan_policy))]
fn quantile<'py>(
    py: Python<'py>,
    values: FloatArray<'py>,
    q: PyReadonlyArray1<'py, f64>,
    method: &str,
    nan_policy: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (m, policy) = (self::method(method)?, crate::entry::nan_policy(nan_policy)?);
    let q = slice(&q, "q")?;
    let out = with_floats!(values, "values", |xs| run(py, "quantile", || kernels::quantile(xs, q, m, policy)))?;
    Ok(out.into_pyarray(py))
}

#[pyfunction]
#[pyo3(signature = (values, scale, nan_policy))]
fn median_abs_deviation(py: Python<'_>, values: FloatArray<'_>, scale: f64, nan_policy: &str) -> PyResult<f64> {
    let policy = crate::entry::nan_policy(nan_policy)?;
    with_floats!(values, "values", |xs| run(py, "median_abs_deviation", || robust::median_abs_deviation(
        xs, scale, policy
    )))
}

#[pyfunction]
#[pyo3(signature = (values, method, nan_policy))]
fn interquartile_range(py: Python<'_>, values: FloatArray<'_>, method: &str, nan_policy: &str) -> PyResult<f64> {
    let (m, policy) = (self::method(method)?, crate::entry::nan_policy(nan_policy)?);
    with_floats!(values, "values", |xs| run(py, "interquartile_range", || robust::interquartile_range(xs, m, policy)))
}

/// The native quantile sketch; `advcore.stats.QuantileSketch` wraps it.
#[pyclass(name = "QuantileSketch", module = "advcore._core")]
struct QuantileSketch {
    inner: sketch::QuantileSketch,
}

#[pymethods]
impl QuantileSketch {
    #[new]
    #[pyo3(signature = (mantissa_bits, nan_policy))]
    fn new(mantissa_bits: u32, nan_policy: &str) -> PyResult<Self> {
        let policy = crate::entry::nan_policy(nan_policy)?;
        Ok(Self { inner: sketch::QuantileSketch::new(mantissa_bits, policy).map_err(to_py)? })
    }

    fn update(&mut self, py: Python<'_>, values: FloatArray<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        with_floats!(values, "values", |xs| run(py, "QuantileSketch.update", || inner.update(xs)))
    }

    fn merge(&mut self, other: PyRef<'_, Self>) -> PyResult<()> {
        self.inner.merge(&other.inner).map_err(to_py)
    }

    fn quantile<'py>(&self, py: Python<'py>, q: PyReadonlyArray1<'py, f64>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let out = self.inner.quantile(slice(&q, "q")?).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }

    #[getter]
    fn mantissa_bits(&self) -> u32 {
        self.inner.mantissa_bits()
    }

    #[getter]
    fn relative_error(&self) -> f64 {
        self.inner.relative_error()
    }

    #[getter]
    fn count(&self) -> u64 {
        self.inner.count()
    }

    #[getter]
    fn nan_count(&self) -> u64 {
        self.inner.nan_count()
    }

    #[getter]
    fn min(&self) -> f64 {
        self.inner.min()
    }

    #[getter]
    fn max(&self) -> f64 {
        self.inner.max()
    }

    #[getter]
    fn nan_policy(&self) -> &'static str {
        match self.inner.nan_policy() {
            advcore_stats::NanPolicy::Propagate => "propagate",
            advcore_stats::NanPolicy::Omit => "omit",
            advcore_stats::NanPolicy::Raise => "raise",
        }
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(Self { inner: sketch::QuantileSketch::from_bytes(data).map_err(to_py)? })
    }

    fn copy(&self) -> Self {
        Self { inner: self.inner.clone() }
    }

    fn equals(&self, other: PyRef<'_, Self>) -> bool {
        self.inner == other.inner
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(quantile, m)?)?;
    m.add_function(wrap_pyfunction!(median_abs_deviation, m)?)?;
    m.add_function(wrap_pyfunction!(interquartile_range, m)?)?;
    m.add_class::<QuantileSketch>()
}
