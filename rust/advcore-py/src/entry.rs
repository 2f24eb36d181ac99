//! The one entry path of every native function: borrow the arrays as slices (errors name the
//! argument), run the kernel with the GIL released, and turn kernel errors and panics into
//! `advcore.AdvcoreError`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use advcore_stats::{Groups, NanPolicy, StatsError};
use numpy::{Element, PyReadonlyArray1};
use pyo3::prelude::*;

pyo3::import_exception!(advcore.errors, AdvcoreError);

/// A 1-D float array of either supported dtype, borrowed read-only from numpy.
#[derive(FromPyObject)]
pub enum FloatArray<'py> {
    /// float32 input.
    F32(PyReadonlyArray1<'py, f32>),
    /// float64 input.
    F64(PyReadonlyArray1<'py, f64>),
}

/// Borrow a float array as a slice and call `$body` with it bound to `$s` (generic over the dtype).
#[macro_export]
macro_rules! with_floats {
    ($arr:expr, $name:expr, |$s:ident| $body:expr) => {
        match &$arr {
            $crate::entry::FloatArray::F32(a) => {
                let $s: &[f32] = $crate::entry::slice(a, $name)?;
                $body
            }
            $crate::entry::FloatArray::F64(a) => {
                let $s: &[f64] = $crate::entry::slice(a, $name)?;
                $body
            }
        }
    };
}

/// The contiguous data of a 1-D array, or an error naming the argument.
pub fn slice<'a, T: Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| AdvcoreError::new_err(format!("`{name}` must be a C-contiguous 1-D array")))
}

/// Resolve the two ways of giving groups (the Python layer has checked that exactly one is set).
pub fn layout(group_size: Option<usize>, ids: Option<&[i64]>) -> PyResult<Groups<'_>> {
    match (group_size, ids) {
        (Some(size), None) => Ok(Groups::Contiguous { size }),
        (None, Some(ids)) => Ok(Groups::Ids(ids)),
        _ => Err(AdvcoreError::new_err("give exactly one of `group_size` and `group_ids`")),
    }
}

/// Convert a kernel error to the Python exception.
pub fn to_py(e: StatsError) -> PyErr {
    AdvcoreError::new_err(e.to_string())
}

/// Parse `nan_policy`.
pub fn nan_policy(s: &str) -> PyResult<NanPolicy> {
    NanPolicy::parse(s).map_err(to_py)
}

/// Run `kernel` with the GIL released; its error or panic becomes an `AdvcoreError`.
pub fn run<T, F>(py: Python<'_>, name: &str, kernel: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> advcore_stats::Result<T> + Send,
{
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(kernel)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(to_py(e)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(AdvcoreError::new_err(format!("internal error in advcore kernel `{name}` (please report it): {msg}")))
        }
    }
}
