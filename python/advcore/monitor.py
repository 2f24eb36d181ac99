"""advcore inside a training loop: one ``observe`` call per step, flat metrics for the tracker,
findings in the log, a recording that ``advcore scan`` reads afterwards.

:class:`Monitor` is advcore's one online class: it takes the per-sample arrays of any trainer
(numpy, Polars, torch on any device), traces them into a :class:`advcore.trace.Recording` (the
rows it keeps, in bounded memory), schedules and runs the detectors, reports each finding once, and
never stops the user's run because of its own failure (unless ``strict=True``). The TRL callback
(:mod:`advcore.integrations.trl`) and the verl function (:mod:`advcore.integrations.verl`) are thin
adapters around it.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from advcore.alerts import Alerts
from advcore.errors import AdvcoreError
from advcore.trace import Recording

if TYPE_CHECKING:
    from advcore.detectors import Finding
    from advcore.model import Run
    from advcore.integrations.torch_update import UpdateProbe

__all__ = ["PREFIX", "Monitor", "flat_metrics", "to_host"]

#: Every metric the monitor hands to a tracker starts with this.
PREFIX = "advcore/"
_RANK = {"info": 0, "warn": 1, "error": 2}
#: Findings reported on the first pass that finds them (``confirm`` does not apply): a non-finite value
#: is a fact of the log, not a reading of a window that one more step could change.
CONFIRMED_AT_ONCE = frozenset({"NONFINITE"})


def _is_device_tensor(x: Any) -> bool:
    device = getattr(x, "device", None)
    return device is not None and getattr(device, "type", "cpu") != "cpu" and hasattr(x, "to")


def to_host(arrays: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``arrays`` with every accelerator tensor copied to the host once.

    torch tensors on a GPU are detached, reduced precision (bfloat16/float16) is widened to
    float32 on the device, and all copies are queued with ``non_blocking=True`` before a single
    synchronisation (``torch.cuda.synchronize`` where available), so several tensors cost one
    wait. CPU tensors, numpy arrays, Polars Series and lists pass through unchanged (they are
    read without a copy where possible by :mod:`advcore._arrays`); CPU bfloat16 tensors are widened.
    """
    out: dict[str, Any] = {}
    moved = False
    for k, v in arrays.items():
        if v is None or not hasattr(v, "detach"):
            out[k] = v
            continue
        t = v.detach()
        if str(getattr(t, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            t = t.float()
        if _is_device_tensor(t):
            t = t.to("cpu", non_blocking=True)
            moved = True
        out[k] = t
    torch = sys.modules.get("torch")  # a device tensor was given, so torch is imported already
    if moved and torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()
    return out


def flat_metrics(row: Mapping[str, float], prefix: str = PREFIX) -> dict[str, float]:
    """A step's canonical metrics as flat tracker keys (``reward_std`` -> ``advcore/reward_std``)."""
    return {f"{prefix}{k}": float(v) for k, v in row.items() if k != "step"}


def _unknown_argument(name: str) -> str:
    """``name`` as an unknown keyword of :meth:`Monitor.observe`, with the closest known one."""
    known = [p.name for p in inspect.signature(Monitor.observe).parameters.values() if p.kind is p.KEYWORD_ONLY]
    close = difflib.get_close_matches(name, known, n=1)
    return f"an unknown argument {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


class Monitor:
    """Watch a training run's learning signal step by step.

    ``observe(step, rewards=..., group_ids=..., advantages=...)`` traces the step's per-sample
    arrays (:func:`advcore.trace.trace_step`), keeps its per-step metrics (the canonical metric names,
    plus the reference checks of :func:`advcore.reference.step_checks`) in a
    :class:`advcore.trace.Recording`, runs the detectors on the growing history and returns the
    step's metrics as flat ``advcore/...`` keys for a tracker (W&B, TensorBoard): for example
    ``advcore/zero_variance_group_frac`` (tied-group share), ``advcore/adv_std``,
    ``advcore/spearman_adv_reward``, ``advcore/adv_recompute_err`` (in units of the float32
    tolerance), ``advcore/findings`` (findings reported so far), ``advcore/errors`` (failed
    observe calls so far) and ``advcore/monitor_ms`` (the wall time of this call).

    Each finding is reported once, when it is first confirmed (``confirm``): to ``logger`` at WARNING
    (``"<ID> since step <onset> (detected at step <step>): <message>"``) and to ``callback(finding)``.

    Parameters
    ----------
    detectors : iterable of str, optional
        Detector IDs to run (default: all registered).
    settings : mapping, optional
        Knob overrides per detector ID, as ``run_detectors(settings=...)``.
    min_steps : int, default 6
        Steps observed before the first detector pass (their windows need a few points).
    history : int, default 1024
        Per-step rows the detectors see at most (:class:`advcore.trace.Recording`: older steps are
        merged pairwise, so a pass costs the same at step 100,000 as at step 1,000).
    detect_every : int, default 1
        At least this many steps between two detector passes (0: only when :meth:`detect` or
        :meth:`close` is called).
    callback : callable, optional
        Called with each new :class:`advcore.detectors.Finding`.
    logger : logging.Logger, optional
        Default ``logging.getLogger("advcore")``.
    strict : bool, default False
        Raise errors from inside the monitor (bad input, a detector failure). By default they are
        logged (the first with its traceback), counted in ``advcore/errors``, and training goes on.
    stop_on : {"error", "warn"}, optional
        Set :attr:`should_stop` once a finding of this severity or worse is reported (the TRL
        callback then asks the trainer to stop; other loops read the flag).
    detect_budget : float or None, default 0.05
        The share of wall time the detector passes may take: a pass (3 to 15 ms on the development
        machine, whatever the batch size) runs once ``detect_every`` steps have passed *and* the
        wall time since the previous pass is at least its duration over the budget. On steps of a
        second or more that is every step; on steps of a few milliseconds the findings come a few
        steps later (within about 20 pass durations of wall time at 0.05) and the monitor never
        takes more than that share of the loop. None: every ``detect_every`` steps, whatever they
        cost.
    record_to : str or Path, optional
        Write the recording (the long trace rows and every step's metrics, :meth:`write_parquet`)
        here on :meth:`close`. It is streamed to part files in a temporary folder every 256 steps
        as the run goes (memory stays flat), and joined here at the end; without ``record_to`` only
        the last 768 to 1,024 steps of it are kept for :meth:`write_parquet`.
    prefix : str, default "advcore/"
        The prefix of the flat metric keys.
    notify : str, optional
        A webhook URL (``https://hooks.slack.com/...``): each new warning or error finding is POSTed
        once as JSON with a Slack-compatible ``text`` (:mod:`advcore.alerts`), from a background
        thread with a 5 s timeout; a failure is logged, never raised.
    alert_trackers : bool, default True
        Also send each new warning or error to ``wandb.alert`` when a W&B run is active and to
        ``trackio.alert`` when Trackio is imported.
    confirm : int, default 2
        A warning or an error is reported once this many detector passes in a row have found it
        (NONFINITE on the first; the last pass, in :meth:`close`, reports what it finds): a window
        rule read on a history a few steps long can flicker for one pass (in the lab's hard
        negatives, a critic still warming up, or the reward's drop when a curriculum moves on,
        looked like a fault on one pass and not the next). An info finding is reported when it first
        appears, and again if it later becomes a warning or an error.

    Raises
    ------
    AdvcoreError
        Unknown detector IDs, a bad ``min_steps``, ``detect_every``, ``history``, ``detect_budget``,
        ``confirm`` or ``stop_on`` (at construction, whatever ``strict`` is).
    """

    def __init__(
        self,
        *,
        detectors: Iterable[str] | None = None,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        callback: Callable[[Finding], None] | None = None,
        logger: logging.Logger | None = None,
        min_steps: int = 6,
        detect_every: int = 1,
        history: int = 1024,
        detect_budget: float | None = 0.05,
        strict: bool = False,
        stop_on: Literal["error", "warn"] | None = None,
        record_to: str | Path | None = None,
        prefix: str = PREFIX,
        notify: str | None = None,
        alert_trackers: bool = True,
        confirm: int = 2,
    ) -> None:
        if stop_on is not None and stop_on not in ("error", "warn"):
            raise AdvcoreError(f"`stop_on` must be 'error', 'warn' or None, got {stop_on!r}")
        self._logger = logger or logging.getLogger("advcore")
        self._user_callback = callback
        if detect_budget is not None and (isinstance(detect_budget, bool) or not isinstance(detect_budget, (int, float))
                                          or not 0 < detect_budget <= 1):
            raise AdvcoreError(f"`detect_budget` must be a share of time in (0, 1], got {detect_budget!r}")
        self.detect_budget = None if detect_budget is None else float(detect_budget)
        from advcore.detectors import REGISTRY

        self._only = tuple(detectors) if detectors is not None else ()
        unknown = [d for d in self._only if d not in REGISTRY]
        if unknown:
            raise AdvcoreError(f"`detectors`: unknown detector IDs {unknown}; known: {sorted(REGISTRY)}")
        if isinstance(min_steps, bool) or not isinstance(min_steps, int) or min_steps < 1:
            raise AdvcoreError(f"`min_steps` must be a positive integer, got {min_steps!r}")
        self._settings = dict(settings or {})
        self.min_steps = min_steps
        #: the steps kept: the detectors' bounded history and the recording
        self.recording = Recording(history=history)
        self._findings: list[Finding] = []
        if isinstance(confirm, bool) or not isinstance(confirm, int) or confirm < 1:
            raise AdvcoreError(f"`confirm` must be a positive integer, got {confirm!r}")
        self.confirm = confirm
        #: consecutive detector passes that found each warning or error, by (ID, slice)
        self._streak: dict[tuple[str, str | None], int] = {}
        if isinstance(detect_every, bool) or not isinstance(detect_every, int) or detect_every < 0:
            raise AdvcoreError(f"`detect_every` must be a non-negative integer, got {detect_every!r}")
        self.detect_every = detect_every
        self._last_pass_at = min_steps - detect_every  # steps observed at the last pass: the first is at min_steps
        self._pass_end = time.perf_counter()
        self._pass_s = 0.0
        self.strict = bool(strict)
        self.stop_on = stop_on
        self.record_to = record_to  # the setter also switches the recording's spilling on
        self.prefix = prefix
        self.should_stop = False
        self._closing = False
        self.errors = 0
        #: finding ID -> the step being observed when it was first reported
        self.reported_at: dict[str, int] = {}
        self._probe: UpdateProbe | None = None
        self._step: int | None = None
        try:
            self._alerts = Alerts(notify, run=str(record_to or "this run"), logger=self._logger) \
                if notify is not None or alert_trackers else None
        except ValueError as e:
            raise AdvcoreError(f"`notify`: {e}") from None

    @property
    def record_to(self) -> Path | None:
        """Where :meth:`close` writes the recording; setting it (also after construction, as the TRL
        callback does once it knows the output folder) streams the recording to part files from then on."""
        return self._record_to

    @record_to.setter
    def record_to(self, path: str | Path | None) -> None:
        self._record_to = None if path is None else Path(path)
        self.recording.spill = path is not None

    def _found(self, finding: Finding) -> None:
        if self._step is not None:
            # a slice's finding under its own key: the whole run's ID keeps the step it was reported at
            self.reported_at[finding.id if finding.slice is None else f"{finding.id} [{finding.slice}]"] = self._step
        if self.stop_on is not None and _RANK[finding.severity] >= _RANK[self.stop_on] and not self.should_stop:
            self.should_stop = True
            if not self._closing:  # a finding of the last pass in close() comes after the run: nothing to stop
                self._logger.warning("stopping requested (stop_on=%r) by %s", self.stop_on, finding.id)
        if self._alerts is not None and finding.severity in ("warn", "error"):
            self._alerts.send(finding)  # queued: never blocks the step
        if self._user_callback is not None:
            self._user_callback(finding)

    def fail(self, what: str, e: Exception) -> None:
        """Count and log an error from inside the monitor or an integration (raised under ``strict``)."""
        self.errors += 1
        if self.strict:
            raise e
        self._logger.warning("%s failed (%s: %s); training goes on", what, type(e).__name__, e,
                             exc_info=self.errors == 1 and not isinstance(e, AdvcoreError))  # bad input is named

    def observe(
        self,
        step: int,
        *,
        rewards: Any = None,
        group_ids: Any = None,
        group_size: int | None = None,
        advantages: Any = None,
        adv_raw: Any = None,
        adv_clipped: Any = None,
        baseline: Any = None,
        returns: Any = None,
        token_advantages: Any = None,
        response_mask: Any = None,
        token_sample_index: Any = None,
        slices: Mapping[str, Any] | None = None,
        metrics: Mapping[str, float] | None = None,
        **unknown: Any,
    ) -> dict[str, float]:
        """Record one training step; returns its flat ``advcore/...`` metrics.

        Parameters
        ----------
        step : int
            The training step; must increase from call to call.
        rewards : array-like, shape (N,), optional
            Sequence rewards (NaN = unscored). numpy, Polars Series, torch tensors (any device,
            copied to the host once, see :func:`to_host`) or lists; float32 or float64.
        group_ids : array-like, shape (N,), optional
            The prompt of each sample (ints or strings such as verl's ``uid``); or ``group_size``
            for contiguous groups (TRL's ``num_generations``).
        advantages : array-like, shape (N,), optional
            The sequence advantages the trainer used (stage ``adv``).
        adv_raw, adv_clipped, baseline, returns, token_advantages, response_mask, token_sample_index, slices
            The other stages of :func:`advcore.trace.trace_step` (``token_advantages`` is its
            ``token_adv``).
        metrics : mapping, optional
            The trainer's own metrics of this step under canonical names (``grad_norm``,
            ``entropy``, ``kl``, ...); the samples' values win where both define a metric. A step
            with ``metrics`` only (no ``rewards``) is recorded without a trace.
        **unknown
            A keyword :meth:`observe` does not take (``reward=`` for ``rewards=``) is bad input like any
            other: logged with the closest known name and counted in ``advcore/errors``, the step not
            recorded; with ``strict=True`` it raises :class:`AdvcoreError`.

        Returns
        -------
        dict of str to float
            The step's per-sample metrics with :attr:`prefix` (the trainer's ``metrics`` are
            recorded for the detectors, not echoed), and the counters; on an error (``strict=False``) only
            ``advcore/errors``, ``advcore/findings`` and ``advcore/monitor_ms``.
        """
        t0 = time.perf_counter()
        out: dict[str, float] = {}
        recorded = False
        try:
            if unknown:  # a misspelt keyword must not raise into the trainer (unless strict)
                raise AdvcoreError("observe() got " + ", ".join(_unknown_argument(k) for k in unknown))
            arrays = to_host({"rewards": rewards, "group_ids": group_ids, "adv": advantages, "adv_raw": adv_raw,
                              "adv_clipped": adv_clipped, "baseline": baseline, "returns": returns,
                              "token_adv": token_advantages, "response_mask": response_mask,
                              "token_sample_index": token_sample_index})
            given = {k: v for k, v in arrays.items() if v is not None}
            if group_size is not None:
                given["group_size"] = group_size
            if slices is not None:
                given["slices"] = dict(to_host(slices))
            if "rewards" not in given and (given or metrics is None):
                raise AdvcoreError("`rewards` is needed with any other per-sample array (or pass `metrics` alone)")
            self._step = int(step) if isinstance(step, (int, np.integer)) and not isinstance(step, bool) else None
            if self._probe is not None and (update := self._probe.collect()):
                metrics = {**update, **(metrics or {})}
            self.recording.add(step, metrics=metrics, **given)
            recorded = True
            out = flat_metrics(self.recording.last_row, self.prefix)
        except Exception as e:  # noqa: BLE001 (a monitor must not stop the run it watches)
            self.fail(f"observe(step={step!r})", e)
        finally:
            self._step = None
        if recorded:
            self._scheduled_pass()
        out[f"{self.prefix}findings"] = float(len(self._findings))
        out[f"{self.prefix}errors"] = float(self.errors)
        out[f"{self.prefix}monitor_ms"] = (time.perf_counter() - t0) * 1e3
        return out

    def _scheduled_pass(self) -> None:
        """The one schedule of the detector passes: once ``detect_every`` steps have passed since the
        last pass *and* the wall time since it is at least its duration over ``detect_budget``, or
        ``detect_every`` steps after a pass that found a warning not yet confirmed (``confirm``): the
        pass that confirms it is not held back by the budget."""
        n = self.recording.steps_observed
        if not self.detect_every or n < self.min_steps or n - self._last_pass_at < self.detect_every:
            return
        now = time.perf_counter()
        reported = self._reported_keys()
        confirming = any(k not in reported for k in self._streak)
        if confirming or self.detect_budget is None or now - self._pass_end >= self._pass_s / self.detect_budget:
            self._last_pass_at = n
            self.detect()
            self._pass_end = time.perf_counter()
            self._pass_s = self._pass_end - now

    def watch(self, optimizer: Any, *, every: int = 16) -> UpdateProbe:
        """Measure the update stage from the optimizer itself (torch): the gradient norm it receives
        (after clipping), the step it takes relative to the parameters, and non-finite gradients, on
        every ``every``-th optimizer step (:class:`advcore.integrations.torch_update.UpdateProbe`).
        Each :meth:`observe` adds the means since the previous one to the step's metrics, so
        UPDATE_SUPPRESSED sees an over-tight gradient clip or a learning rate of ~0 even when the
        trainer logs nothing of the update. Returns the probe (``probe.remove()`` takes it off)."""
        from advcore.integrations.torch_update import UpdateProbe

        if self._probe is not None:
            self._probe.remove()
        self._probe = UpdateProbe(optimizer, every=every)
        return self._probe

    def detect(self) -> list[Finding]:
        """Run the detectors on the steps so far now (the schedule of :meth:`observe` calls this too,
        :meth:`close` at the end of training); report the findings not seen before, each once, and
        return them."""
        from advcore.detectors import CAUSAL_ORDER, run_detectors

        try:
            if not self.recording.steps_observed:
                return []
            self._step = self.recording.last_step
            found, _ = run_detectors(self.recording.run(), only=self._only, settings=self._settings)
            # the findings of one pass in causal order, so the cause is reported (and stops the run) before what
            # follows from it: tied groups (R) before the advantages they zero (T)
            found.sort(key=lambda f: CAUSAL_ORDER.index(f.stage))
            alarms = {(f.id, f.slice) for f in found if f.severity != "info"}
            self._streak = {k: self._streak.get(k, 0) + 1 for k in alarms}
            reported = {(f.id, f.slice): i for i, f in enumerate(self._findings)}
            new: list[Finding] = []
            for f in found:
                key = (f.id, f.slice)
                at = reported.get(key)
                if at is not None and _RANK[f.severity] <= _RANK[self._findings[at].severity]:
                    continue  # reported already, at this severity or a worse one
                if (f.severity != "info" and f.id not in CONFIRMED_AT_ONCE and not self._closing
                        and self._streak[key] < self.confirm):
                    continue  # not yet found on `confirm` passes in a row
                if at is None:
                    self._findings.append(f)
                else:
                    self._findings[at] = f  # an info finding that became a warning or an error
                new.append(f)
                self._logger.warning("%s since step %s (detected at step %s): %s", f.id, f.onset_step,
                                     self.recording.last_step, f.message)
                self._found(f)
            return new
        except Exception as e:  # noqa: BLE001
            self.fail("detect()", e)
            return []
        finally:
            self._step = None

    def _reported_keys(self) -> set[tuple[str, str | None]]:
        """The (ID, slice) of every finding reported as a warning or an error."""
        return {(f.id, f.slice) for f in self._findings if f.severity != "info"}

    @property
    def findings(self) -> list[Finding]:
        """The findings reported so far, in order of first appearance."""
        return list(self._findings)

    @property
    def last_metrics(self) -> dict[str, float]:
        """The flat per-sample metrics of the last step recorded (empty before the first or
        after a step with ``metrics`` only)."""
        return flat_metrics(self.recording.last_row, self.prefix)

    @property
    def steps_frame(self) -> pl.DataFrame:
        """The detectors' history: one row per observed step (older steps merged, see
        :class:`advcore.trace.Recording`), ``step`` and every per-step metric."""
        return self.recording.steps_frame

    def run(self) -> Run:
        """The per-step :class:`advcore.model.Run` of the steps so far (what the detectors see)."""
        return self.recording.run()

    def write_parquet(self, path: str | Path) -> None:
        """Write the recording (long trace rows of the steps with samples, and every step's metrics) to
        Parquet; read it back with ``advcore scan PATH``."""
        self.recording.write_parquet(path)

    def close(self) -> None:
        """A last detector pass, the recording written to ``record_to`` if set (errors logged), and the
        queued alerts given a few seconds to go out."""
        self._closing = True
        self.detect()
        if self._alerts is not None:
            self._alerts.close()
        if self.record_to is not None:
            try:
                self.record_to.parent.mkdir(parents=True, exist_ok=True)
                self.write_parquet(self.record_to)
            except Exception as e:  # noqa: BLE001
                self.fail(f"writing {self.record_to}", e)
            finally:
                self.recording.close()
