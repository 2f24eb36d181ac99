"""Tracking stores written by the real libraries (mlflow 3.17.2, trackio 0.43.0, wandb 0.31.0; pinned
in the Makefile's integration venv): a short synthetic GRPO run, one healthy and one whose groups all
tie from step 20, logged through each library's public API into one folder (an MLflow SQLite store,
an MLflow folder store, a Trackio project, W&B offline run folders), then read back by one
``advcore scan``. The oracle is the
values logged: every step and value must come back exactly. Run with ``make test-integration``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

pytest.importorskip("mlflow")
pytest.importorskip("trackio")
pytest.importorskip("wandb")

STEPS = 40
#: verl's keys (its MLflow logger) and TRL's (its Trackio reporting), as the trainers name them.
VERL = {"reward": "critic/score/mean", "max": "critic/score/max", "min": "critic/score/min", "grad": "actor/grad_norm"}
TRL = {"reward": "train/reward", "max": "train/reward_max", "min": "train/reward_min", "grad": "train/grad_norm"}


def history(dies: bool, keys: dict[str, str]) -> list[dict[str, float]]:
    """Per step: the mean reward rises; its spread (max - min) and the gradient vanish from step 20 when ``dies``."""
    out = []
    for s in range(STEPS):
        tied = dies and s >= 20
        mean = 0.2 + 0.01 * s + 0.013 * math.sin(s)
        spread = 0.0 if tied else 0.4 + 0.05 * math.cos(s)
        out.append({keys["reward"]: mean, keys["max"]: mean + spread / 2, keys["min"]: mean - spread / 2,
                    keys["grad"]: 0.0 if tied else 0.5 + 0.1 * math.sin(3 * s)})
    return out


LOGGER = """
import json, os, sys
plan = json.load(open(sys.argv[1]))
if plan["library"] == "mlflow":
    import mlflow
    mlflow.set_tracking_uri(plan["uri"])
    mlflow.set_experiment("grpo")
    for name, rows in plan["runs"].items():
        with mlflow.start_run(run_name=name):
            for step, row in enumerate(rows):
                mlflow.log_metrics(row, step=step)
elif plan["library"] == "wandb":
    import wandb
    for name, rows in plan["runs"].items():
        run = wandb.init(project="grpo", name=name, dir=plan["uri"], mode="offline")
        for step, row in enumerate(rows):
            run.log(row, step=step)
        run.finish()
else:
    import trackio
    for name, rows in plan["runs"].items():
        trackio.init(project="grpo", name=name)
        for step, row in enumerate(rows):
            trackio.log(row, step=step)
        trackio.finish()
"""


def log_with(library: str, uri: str, keys: dict[str, str], tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    runs = {"healthy": history(False, keys), "dies": history(True, keys)}
    plan = tmp / f"{library}-{abs(hash(uri))}.json"
    plan.write_text(json.dumps({"library": library, "uri": uri, "runs": runs}))
    subprocess.run([sys.executable, "-c", LOGGER, str(plan)], check=True, env={**os.environ, **env},
                   capture_output=True, timeout=300)
    return runs


def test_one_scan_reads_every_store_exactly(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    logged = {
        "mlruns.db": log_with("mlflow", f"sqlite:///{folder / 'mlruns.db'}", VERL, tmp_path, {}),
        "mlruns": log_with("mlflow", (folder / "mlruns").as_uri(), VERL, tmp_path, {"MLFLOW_ALLOW_FILE_STORE": "true"}),
        "grpo.db": log_with("trackio", "", TRL, tmp_path, {"TRACKIO_DIR": str(folder / "trackio")}),
        "wandb": log_with("wandb", str(folder), TRL, tmp_path, {"WANDB_SILENT": "true"}),
    }
    out = subprocess.run([sys.executable, "-m", "advcore", "scan", str(folder), "--format", "json"],
                         capture_output=True, text=True, check=False)
    runs = {r["path"]: r for r in json.loads(out.stdout)["runs"]}
    assert len(runs) == 8, sorted(runs)  # 4 stores x 2 runs, nothing else (no sidecar or client log read as a run)
    for path, run in runs.items():
        assert run["steps"] == STEPS and not run["errors"], path
        if "#" in path:
            assert path.split("#")[1] in ("grpo/healthy", "grpo/dies"), path  # named <experiment or project>/<run name>
        else:
            assert path.endswith(".wandb"), path

    from advcore.ingest import load_runs

    for store, by_name in logged.items():
        target = folder / "trackio" / store if store.endswith("grpo.db") else folder / store
        if store == "mlruns":
            read = [r for run_dir in sorted((folder / "mlruns").glob("*/*")) if run_dir.is_dir() for r in load_runs(run_dir)]
        elif store == "wandb":
            read = [r for f in sorted((folder / "wandb").glob("offline-run-*/run-*.wandb")) for r in load_runs(f)]
        else:
            read = load_runs(target)
        assert len(read) == 2
        for run in read:
            rows = by_name[run.metadata["wandb_run"] if store == "wandb" else run.path.rsplit("/", 1)[1]]
            assert run.frame["step"].to_list() == list(range(STEPS))
            for canonical, kind in (("reward_mean", "reward"), ("reward_max", "max"), ("reward_min", "min"),
                                    ("grad_norm", "grad")):
                key = (VERL if run.format == "mlflow" else TRL)[kind]
                assert run.frame[canonical].to_list() == [row[key] for row in rows], (store, run.path, canonical)


def test_the_dying_run_is_found_and_the_healthy_one_stays_quiet(tmp_path: Path) -> None:
    log_with("mlflow", f"sqlite:///{tmp_path / 'mlruns.db'}", VERL, tmp_path, {})
    out = subprocess.run([sys.executable, "-m", "advcore", "scan", str(tmp_path / "mlruns.db"), "--format", "json"],
                         capture_output=True, text=True, check=False)
    verdicts = {r["path"].rsplit("/", 1)[1]: r["verdict"] for r in json.loads(out.stdout)["runs"]}
    assert verdicts["healthy"]["status"] == "quiet"
    assert verdicts["dies"]["status"] == "lost" and verdicts["dies"]["stage"] in ("R", "T", "U")
    assert 18 <= verdicts["dies"]["onset_step"] <= 24
