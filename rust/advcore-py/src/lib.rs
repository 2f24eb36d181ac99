//! `advcore._core`: the PyO3 extension over `advcore-stats`. Converts arrays, releases the GIL,
//! maps errors; nothing statistical lives here. The typed public API is `advcore.stats`.

// PyO3 extracts arguments by value (`PyReadonlyArray1`, `Option<...>`); borrowing them is not an option.
#![allow(clippy::needless_pass_by_value)]

mod census;
mod entry;
mod grouped;
mod quantile;
mod rank;
mod trace;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    grouped::register(m)?;
    rank::register(m)?;
    quantile::register(m)?;
    census::register(m)?;
    trace::register(m)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}

/// Panic inside the guarded entry path. It exists so that the test suite can check that a Rust
/// panic reaches Python as an `AdvcoreError` instead of aborting the interpreter.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    entry::run(py, "_panic_for_tests", || -> advcore_stats::Result<()> {
        panic!("deliberate panic for the test suite")
    })
}
