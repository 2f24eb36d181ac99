# advcore — one Makefile whose targets CI calls too. `make help` lists them.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: help install demo test test-rust test-python lint bench wheel

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

install:  ## build the Rust extension and install advcore with its test extras (editable)
	$(PIP) install --quiet -e '.[test,bench]'

demo: install  ## the main job on its embedded default
	$(PYTHON) -m advcore demo

test: install test-rust test-python  ## every test: cargo (core kernels) and pytest

test-rust:  ## Rust unit and property tests of the core crate (no libpython needed)
	cargo test --quiet -p advcore-stats

test-python:  ## pytest against numpy/scipy oracles, and the stub check
	$(PYTHON) -m pytest -q
	$(PYTHON) -m mypy.stubtest advcore._core

lint:  ## rustfmt, clippy (pedantic, warnings are errors) and mypy (strict)
	cargo fmt --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m mypy

bench: install  ## benchmarks: ratios against numpy, scipy and Polars in the same process
	$(PYTHON) bench/run.py

wheel:  ## a release wheel in target/wheels
	maturin build --release
