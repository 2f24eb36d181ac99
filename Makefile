# advcore — one Makefile whose targets CI calls too. `make help` lists them.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: help install demo test test-rust test-python test-integration fuzz fuzz-rust lint cards bench score wheel

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

# The versions tests/fixtures/trl_grpo_cpu was made with. PyPI's torch wheel for Linux is the CUDA build
# (about 4 GB with its nvidia-* wheels); it runs on the CPU. The tracking libraries whose stores are read,
# the engines a fleet scan runs on, and matplotlib for the report opened in Chromium.
INTEGRATION_PINS := torch==2.13.0 trl==1.16.0 transformers==5.24.0 accelerate==1.15.0 datasets==5.2.0 \
	mlflow==3.17.2 trackio==0.43.0 wandb==0.31.0 'dask[distributed]==2026.8.0' ray==2.60.0 matplotlib==3.11.2
# Outside the clone, so that a machine that ran it once does not download torch again (about 4 min cold).
INTEGRATION_VENV ?= $(HOME)/.cache/advcore/venv-integration

test-integration:  ## slow real-client tests (TRL GRPOTrainer on the CPU + advcore callback; MLflow and Trackio stores; the report in headless Chromium); pinned trainers in a venv, after make install
	command -v chromium >/dev/null || apt-get install -y -q chromium >/dev/null 2>&1 || \
		(apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1) || \
		echo "chromium could not be installed: the browser test of advcore report skips"
	test -x $(INTEGRATION_VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(INTEGRATION_VENV)
	$(INTEGRATION_VENV)/bin/python -m pip install --quiet $(INTEGRATION_PINS)
	$(INTEGRATION_VENV)/bin/python -m pytest -q -m "slow or not slow" -p no:cacheprovider tests/integrations

# make test runs the same module with 100 seeds per fixture (300 inputs).
FUZZ_SEEDS ?= 2000
FUZZ_API ?= 300

fuzz:  ## the scan fuzzing (tests/test_fuzz_scan.py, FUZZ_SEEDS seeds per fixture: 6,000 inputs alone and in folders) and the API fuzzing (tests/test_fuzz_api.py, FUZZ_API examples per function: 5,400 calls)
	ADVCORE_FUZZ_SEEDS=$(FUZZ_SEEDS) ADVCORE_FUZZ_API=$(FUZZ_API) $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_fuzz_scan.py tests/test_fuzz_api.py

FUZZ_TIME ?= 120
fuzz-rust:  ## libFuzzer on QuantileSketch.from_bytes for FUZZ_TIME seconds (needs a nightly toolchain; cargo install cargo-fuzz)
	cd rust/fuzz && cargo +nightly fuzz run sketch_from_bytes -- -max_total_time=$(FUZZ_TIME)

lint:  ## rustfmt, clippy (pedantic, warnings are errors) and mypy (strict)
	cargo fmt --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m mypy

cards:  ## regenerate the detector cards (docs/detectors) from the detector modules
	$(PYTHON) -m advcore.detectors.cards

bench: install  ## benchmarks: ratios against numpy, scipy and Polars in the same process
	$(PYTHON) bench/run.py

score:  ## the evaluation (issue 18): lab score card, hard negatives, detection delay, per-detector precision/recall (lab and real corpus), the ACR sweep; rewrites docs/evaluation.md (which states how long the run took)
	$(PYTHON) bench/score_card.py --full --jobs 2 --doc docs/evaluation.md

wheel:  ## a release wheel in target/wheels
	maturin build --release
