"""advcore inside TRL: a ``TrainerCallback`` that watches a ``GRPOTrainer`` run.

Use::

    from advcore.integrations.trl import AdvcoreCallback
    trainer = GRPOTrainer(..., args=GRPOConfig(..., log_completions=True))
    AdvcoreCallback.attach(trainer)   # or GRPOTrainer(..., callbacks=[AdvcoreCallback()])

What the callback reads (checked against trl 1.16.0 with transformers 5.24.0):

* ``on_log``: the step's log dict. Keys are mapped to canonical names by the ``trl`` rows of
  ``advcore/ingest/aliases.csv`` at the installed TRL version (SPEC section 4: for example
  ``reward_std`` is the mean within-group std up to TRL 0.26 and the whole-batch std from
  0.27); the summary log at the end of ``train()`` (``train_runtime``, ...) and evaluation logs
  (``eval_*``) are skipped.
* Per-sample rewards and advantages from ``<output_dir>/completions/completions_<step:05d>.parquet``,
  which TRL writes with ``GRPOConfig(log_completions=True)``, parsed by
  :mod:`advcore.ingest.formats.trl_completions` (groups: consecutive blocks of
  ``num_generations`` rows; reward: the reward-function columns weighted by ``reward_weights``).
  TRL writes step N's table *after* the callbacks' ``on_log`` for step N, so a step's samples are
  read at the next log (or at ``on_train_end``): the per-sample ``advcore/...`` metrics added to
  the logs of step N describe step N-1 (``advcore/sample_step`` says which). On a step that did
  not generate (``steps_per_generation > 1``) TRL writes the previous batch again; it is
  recognised (same prompts, completions and rewards) and not counted twice. Without
  ``log_completions`` only the logged metrics are watched (the within-group detectors then say
  "not evaluable").

Findings go to the ``advcore`` logger (WARNING) and to ``callback``; ``stop_on="error"`` makes the
trainer stop after the step where an error-severity finding first appears. The recording is
written to ``<output_dir>/advcore_trace.parquet`` at the end of training (``advcore scan`` reads it).
Only the main process (``state.is_world_process_zero``) watches.

Importing this module does not import transformers; ``AdvcoreCallback`` does, the first time it
is asked for.
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from advcore.errors import AdvcoreError
from advcore.ingest._aliases import load_aliases
from advcore.ingest.formats.trl_completions import reward_components, same_batch, samples_of
from advcore.monitor import Monitor

__all__ = ["AdvcoreCallback", "TrlWatcher", "canonical_logs"]  # noqa: F822 (AdvcoreCallback: module __getattr__)

#: File name of the recording in ``output_dir``.
RECORDING = "advcore_trace.parquet"
#: The metrics added to the trainer's logs by default (``log_metrics="core"``), without the prefix.
CORE_METRICS = ("zero_variance_group_frac", "reward_std_within", "reward_null_frac", "adv_std", "adv_zero_frac",
                "spearman_adv_reward", "spearman_adv_reward_within", "adv_recompute_err", "findings", "errors",
                "monitor_ms", "sample_step")


def _trl_version() -> str | None:
    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return None


def canonical_logs(logs: Mapping[str, Any], version: str | None) -> dict[str, float]:
    """TRL log keys as canonical metric names (``aliases.csv``, rows for ``trl`` and ``*`` that hold
    at ``version``), values times the row's ``scale``; non-numeric and unknown keys are dropped."""
    table = load_aliases()
    out: dict[str, float] = {}
    for key, value in logs.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        hit = table.canonical(str(key), "trl", version)
        if hit is not None and hit[0] != "step":
            out[hit[0]] = float(value) * hit[1].scale
    return out


def _is_train_log(logs: Mapping[str, Any]) -> bool:
    return "train_runtime" not in logs and not any(str(k).startswith("eval_") for k in logs)


class TrlWatcher:
    """The transformers-free core of :class:`AdvcoreCallback`: feeds a :class:`advcore.Monitor`
    from TRL's per-step logs and completion tables.

    Parameters
    ----------
    monitor : Monitor
    output_dir : str or Path
        ``GRPOConfig.output_dir`` (the completion tables are in its ``completions/`` folder).
    num_generations : int
        ``GRPOConfig.num_generations`` (group size).
    log_completions : bool
        ``GRPOConfig.log_completions``: whether per-sample tables are written.
    reward_weights : list of float, optional
        ``GRPOConfig.reward_weights`` (None: all 1).
    version : str, optional
        The TRL version (default: the installed one).
    scale_rewards : str or bool, optional
        ``GRPOConfig.scale_rewards``. Under ``"batch"`` TRL's ``frac_reward_zero_std`` is a 0/1 flag
        for the whole batch (SPEC section 4), not the tied-group share, so it is not read.
    """

    def __init__(self, monitor: Monitor, output_dir: str | Path, num_generations: int, log_completions: bool,
                 reward_weights: list[float] | None = None, version: str | None = None,
                 scale_rewards: str | bool | None = None) -> None:
        self.batch_scaled = scale_rewards == "batch"
        self.monitor = monitor
        self.folder = Path(output_dir) / "completions"
        self.num_generations = int(num_generations)
        self.log_completions = bool(log_completions)
        self.reward_weights = None if reward_weights is None else [float(w) for w in reward_weights]
        self.version = version if version is not None else _trl_version()
        self._pending: dict[int, tuple[dict[str, float], list[str]]] = {}
        self._previous: pl.DataFrame | None = None
        #: steps whose table repeated the previous batch (observed without samples)
        self.duplicate_steps: list[int] = []
        #: steps observed with per-sample arrays
        self.sample_steps: list[int] = []

    def log(self, step: int, logs: Mapping[str, Any]) -> dict[str, float]:
        """Handle one ``on_log``; returns the ``advcore/...`` metrics to add to ``logs``."""
        if not _is_train_log(logs):
            return {}
        names = [str(k)[len("rewards/"):-len("/mean")] for k in logs
                 if str(k).startswith("rewards/") and str(k).endswith("/mean")]
        metrics = canonical_logs(logs, self.version)
        if self.batch_scaled:
            metrics.pop("zero_variance_group_frac", None)
        if not self.log_completions:
            return self.monitor.observe(step, metrics=metrics)
        out = self.flush(before=step)
        self._pending[int(step)] = (metrics, names)
        return out

    def flush(self, before: float = math.inf) -> dict[str, float]:
        """Observe the pending steps before ``before`` with their tables; returns the last step's metrics."""
        out: dict[str, float] = {}
        for step in sorted(s for s in self._pending if s < before):
            metrics, names = self._pending.pop(step)
            out = self._observe(step, metrics, names)
        return out

    def _observe(self, step: int, metrics: dict[str, float], names: list[str]) -> dict[str, float]:
        path = self.folder / f"completions_{step:05d}.parquet"
        batch = None
        if path.is_file():
            try:
                batch = pl.read_parquet(path)
            except (OSError, pl.exceptions.PolarsError) as e:
                self.monitor.fail(f"reading {path}", e)
        if batch is None or not batch.height:
            return self.monitor.observe(step, metrics=metrics)
        components = reward_components(batch, names or None)
        if self._previous is not None and same_batch(self._previous, batch, components):
            self.duplicate_steps.append(step)
            return self.monitor.observe(step, metrics=metrics)
        self._previous = batch
        try:
            weights = self.reward_weights if self.reward_weights is not None and len(self.reward_weights) == len(
                components) else None
            samples = samples_of(batch, components, self.num_generations, weights)
        except Exception as e:  # noqa: BLE001 (reported by the monitor's error policy)
            self.monitor.fail(f"parsing {path}", e)
            return self.monitor.observe(step, metrics=metrics)
        groups = samples["group"] if samples["group"].null_count() == 0 else None
        self.sample_steps.append(step)
        out = self.monitor.observe(step, rewards=samples["reward"], group_ids=groups, advantages=samples["adv"],
                                   metrics=metrics)
        out[f"{self.monitor.prefix}sample_step"] = float(step)
        return out

    def end(self) -> None:
        """Observe every pending step (the last table is written by now) and close the monitor."""
        self.flush()
        self.monitor.close()


@cache
def _callback_class() -> type:
    # imported here: `import advcore` never needs transformers
    from transformers import TrainerCallback  # type: ignore[import-not-found,unused-ignore]

    class AdvcoreCallback(TrainerCallback):  # type: ignore[misc,unused-ignore]
        """Watch a TRL ``GRPOTrainer`` run with :class:`advcore.Monitor` (see :mod:`advcore.integrations.trl`).

        Keyword arguments go to :class:`advcore.Monitor` (``detectors``, ``settings``, ``callback``,
        ``min_steps``, ``detect_every``, ``strict``, ``stop_on``, ...). ``watch_every`` (default 16)
        hooks the trainer's optimizer (:meth:`advcore.Monitor.watch`) and measures every that-many-th
        step's clipped gradient and step size (0: not hooked). ``record`` (default True)
        writes ``<output_dir>/advcore_trace.parquet`` at the end of training; a path writes there;
        False writes nothing. ``log_metrics`` picks the ``advcore/...`` keys added to the trainer's
        logs: ``"core"`` (default, :data:`CORE_METRICS`) or ``"all"`` (every per-step metric, about
        35). After training, :attr:`monitor` holds the findings and every per-step metric.
        """

        def __init__(self, record: bool | str | Path = True, log_metrics: str = "core", watch_every: int = 16,
                     **monitor_kwargs: Any) -> None:
            super().__init__()
            if log_metrics not in ("core", "all"):
                raise AdvcoreError(f"`log_metrics` must be 'core' or 'all', got {log_metrics!r}")
            if isinstance(watch_every, bool) or not isinstance(watch_every, int) or watch_every < 0:
                raise AdvcoreError(f"`watch_every` must be a non-negative integer, got {watch_every!r}")
            self.monitor = Monitor(**monitor_kwargs)
            self.record = record
            self.log_metrics = log_metrics
            self.watch_every = watch_every
            self.watcher: TrlWatcher | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, optimizer: Any = None, **kwargs: Any) -> Any:
            if optimizer is not None and self.watch_every and state.is_world_process_zero:
                try:
                    self.monitor.watch(optimizer, every=self.watch_every)
                except Exception as e:  # noqa: BLE001 (an optimizer the probe cannot hook: the run goes on)
                    self.monitor.fail("watch(optimizer)", e)
            return control

        @classmethod
        def attach(cls, trainer: Any, **kwargs: Any) -> AdvcoreCallback:
            """A new callback placed first in ``trainer``'s callback list, so the reporting callbacks
            (W&B, TensorBoard, ...) that run after it see the ``advcore/...`` keys of each log."""
            cb = cls(**kwargs)
            trainer.callback_handler.callbacks.insert(0, cb)
            return cb

        def _watcher(self, args: Any) -> TrlWatcher:
            if self.watcher is None:
                if self.record is True:
                    self.monitor.record_to = Path(args.output_dir) / RECORDING
                elif self.record:
                    self.monitor.record_to = Path(self.record)
                self.watcher = TrlWatcher(self.monitor, args.output_dir, getattr(args, "num_generations", 1) or 1,
                                          bool(getattr(args, "log_completions", False)),
                                          getattr(args, "reward_weights", None),
                                          scale_rewards=getattr(args, "scale_rewards", None))
            return self.watcher

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> Any:
            if not state.is_world_process_zero or not logs:
                return control
            try:
                added = self._watcher(args).log(state.global_step, logs)
            except Exception as e:  # noqa: BLE001 (the monitor decides: log, or raise when strict)
                self.monitor.fail("on_log", e)
                added = {}
            if added and self.log_metrics == "core":
                keep = {self.monitor.prefix + k for k in CORE_METRICS}
                added = {k: v for k, v in added.items() if k in keep}
            if added:
                logs.update(added)
                if state.log_history and state.log_history[-1].get("step") == state.global_step:
                    state.log_history[-1].update(added)
            if self.monitor.should_stop:
                control.should_training_stop = True
            return control

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if state.is_world_process_zero:
                try:
                    self._watcher(args).end()
                except Exception as e:  # noqa: BLE001
                    self.monitor.fail("on_train_end", e)
            return control

    return AdvcoreCallback


def __getattr__(name: str) -> Any:
    if name == "AdvcoreCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
