//! `advcore._core`: the PyO3 extension over `advcore-stats`. Converts arrays, releases the GIL,
//! maps errors; nothing statistical lives here. The typed public API is `advcore.stats`.

mod census;
mod entry;
mod grouped;
mod quantile;
mod rank;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    grouped::register(m)?;
    rank::register(m)?;
    quantile::register(m)?;
    census::register(m)?;
    Ok(())
}
