"""NONFINITE (error, any stage): a NaN or an infinity in a per-step metric.

Rule: any numeric key of the run (its canonical metric columns, ``step`` and ``phase`` excluded,
and the keys without a canonical name as ingest recorded them; not ``vf_explained_var``, which SB3
sets to NaN by design) holds a value that is not null and not finite, after that key's first finite
value (a NaN or -inf before it is the metric not defined yet: a running best initialised to -inf, the
mean of no episodes; a canonical metric that is never finite counts from its first row, a key without
a canonical name that is never finite is a quantity undefined for this run and does not). The finding
names the *first* non-finite value in log order (its metric, step, phase and value ``nan``/``inf``/``-inf``;
several metrics when they went non-finite on the same row), the last finite value that metric had before it,
and every other metric that went non-finite later (``evidence["then"]``, with its first step), so that the
cause is read ahead of its consequences; :func:`advcore.diagnose.diagnose` orders this finding before what
began at or after it. When only keys without a canonical name went non-finite, none part of the update
(:data:`UPDATE_WORDS`), each finite again after, the finding is info: a quantity the loop could not compute
on some steps.

Ingest keeps NaN and +-inf as float values (one parser for every format); a value a format writes
as "missing" (an empty CSV cell) stays null and is not counted here, but a trainer convention that
writes NaN as ``null`` (verl's JSONL file logger) is read as NaN by its format. Every numeric key is
judged: canonical metrics in the run's frame, and keys without a canonical name through
``metadata["nonfinite_unmapped"]`` (ingest records their first non-finite value; ``critic/vf_loss:
nan`` in a console). Not evaluable:
a run without any metric column, or whose metrics are all finite and none of them is read by
another detector (a log of ``lr`` only): such a run is reported as not judged, not as clean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

import polars as pl

from advcore.detectors._base import Card, DetectorSpec, Finding, NotEvaluable, Outcome
from advcore.model import Run, counted_nonfinite

__all__ = ["detect", "spec"]

ID = "NONFINITE"

#: On a control or game task (:func:`advcore.detectors._reward.environment_run`).
CONTROL_TRIES = (
    "Start from the first non-finite metric: what is computed from it afterwards (loss, grad norm, then the weights "
    "and every later metric) is a consequence, not a cause.",
    "NaN/inf `grad_norm` or loss: lower the learning rate, clip the gradient norm, normalise observations and "
    "returns, and look for a division by a std that can be 0 or the log-probability of a Gaussian whose std "
    "collapsed to 0.",
    "NaN/inf rewards or observations: the environment returns them (a physics step that explodes, a division by 0 "
    "in a shaped reward): run it with a random policy and guard or clip what it returns.",
)

WHAT_TO_TRY = (
    "Start from the first non-finite metric: what is computed from it afterwards (loss, grad norm, then the weights "
    "and every later metric) is a consequence, not a cause.",
    "NaN/inf `grad_norm` or loss: lower the learning rate, check that gradient clipping is on, prefer bf16 to fp16 "
    "(or check the fp16 loss scaler), and look for a division by a zero std (advantage normalisation without eps) "
    "or a log of 0 in the loss.",
    "NaN rewards: the reward function fails on some completions (empty, unparsable, a timeout) and returns NaN; "
    "score them explicitly and count them (REWARD_MISSING).",
    "NaN/inf `kl` or `entropy`: a log-probability of -inf (a masked or zero-probability token, a tokenizer mismatch "
    "between the rollout engine and the trainer).",
)


#: For a quantity outside the update that the loop could not compute on some steps (the info finding).
NOT_COMPUTED_TRIES = (
    "Nothing in the update blew up: log an undefined value (a mean error of answers that did not parse) as "
    "missing, and count those cases as a metric of their own, so that a real NaN stays visible.",
)
#: The cases of a finding's remedies, as the card lists them.
TRIES_CASES = (("A NaN or inf that spreads, or in the update", WHAT_TO_TRY),
               ("A quantity outside the update, finite again after", NOT_COMPUTED_TRIES))
_NEEDS = ("any metric another detector reads",)

#: Metrics a trainer sets to NaN by design when they are undefined, not because a number blew up:
#: an explained variance of returns that do not vary (SB3 ``explained_variance`` returns NaN when
#: ``var(y) == 0``: sb3-chess-legal-moves-learns logs 3 such NaNs when every episode scored alike).
UNDEFINED_BY_DESIGN = frozenset({"vf_explained_var"})


#: Words of a key that is part of the update (a loss, a gradient, a KL, an entropy): non-finite there is a fault.
UPDATE_WORDS = ("loss", "grad", "kl", "entropy")


def _value(text: str) -> float:
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[text]


def _text(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def detect(run: Run, knobs: Mapping[str, float | int], read_elsewhere: frozenset[str] = frozenset()) -> Outcome:
    """Evaluate NONFINITE on ``run`` (no knobs: one non-finite value is already a finding). A run whose
    metrics are all finite passes only when one of them is read by another detector
    (``read_elsewhere``, their key metrics; a ``reward/<name>`` counts as ``reward``): a log of only
    bookkeeping columns (``lr``) is "not evaluable" rather than passed, so that a run no detector can
    read is still reported as not judged."""
    frame = run.frame
    names = [c for c in frame.columns if c not in ("step", "phase") and frame[c].dtype == pl.Float64]
    judged = [c for c in names if c not in UNDEFINED_BY_DESIGN]
    if not names or frame.height == 0:
        return NotEvaluable(ID, _NEEDS)
    has_phase = "phase" in frame.columns and frame["phase"].null_count() < frame.height
    rows = frame.with_row_index("__row")
    # (row, metric, value, count) of each metric's first non-finite value
    firsts: list[tuple[int, str, float, int]] = []
    # one pass over every column says which hold a non-finite value; only those are searched row by row
    flags = frame.select([counted_nonfinite(c).any().alias(c) for c in judged])
    for name in (c for c in judged if flags[c][0]):
        bad = rows.filter(counted_nonfinite(name)).select("__row", name)
        if bad.height:
            firsts.append((int(bad["__row"][0]), name, float(bad[name][0]), bad.height))
    # keys without a canonical name, as ingest found them: placed at the first row of their step,
    # after the canonical metrics of that row
    steps = frame["step"].to_list()
    unmapped = run.metadata.get("nonfinite_unmapped", ())
    # only keys without a canonical name went non-finite, none of them part of the update, and each was finite
    # again after: a quantity the loop could not compute on some steps (h267's mean error of answers, inf when one
    # did not parse), never fed to the loss. A loss that is NaN on some steps is a fault even when the loop skips
    # those updates (h26-cs285-hw2-pg-cartpole-nan-after-saturation: Actor_Loss NaN at 78 of 100 iterations).
    sentinel = not firsts and bool(unmapped) and all(
        item.get("recovers") and not any(w in str(item["key"]).lower() for w in UPDATE_WORDS) for item in unmapped)
    for item in unmapped:
        step = item["step"]
        row = next((i for i, s in enumerate(steps) if s is not None and step is not None and s >= step), len(steps) - 1)
        firsts.append((row, str(item["key"]), _value(str(item["value"])), int(item["count"])))
    if not firsts:
        judged_elsewhere = any(n in read_elsewhere or n.split("/", 1)[0] in read_elsewhere for n in names)
        return None if judged_elsewhere else NotEvaluable(ID, _NEEDS)
    firsts.sort(key=lambda t: (t[0], t[1] not in names))
    row, metric, value, _ = firsts[0]

    def where(r: int) -> dict[str, Any]:
        out: dict[str, Any] = {"step": frame["step"][r]}
        if has_phase:
            out["phase"] = frame["phase"][r]
        return out

    at_onset = [name for r, name, _, _ in firsts if r == row]
    before = (rows.filter((pl.col("__row") < row) & pl.col(metric).is_not_null() & pl.col(metric).is_finite())
              if metric in names else rows.clear())
    onset = where(row)
    evidence: dict[str, Any] = {
        "metric": metric,
        "value": _text(value),
        "onset_step": onset["step"],
        **({"onset_phase": onset["phase"]} if has_phase else {}),
        "metrics_at_onset": at_onset,
        # None for a key without a canonical name (ingest keeps only its first non-finite value)
        "last_finite_value": float(before[metric][-1]) if before.height else None,
        "then": [{"metric": name, **where(r), "value": _text(v)} for r, name, v, _ in firsts if r != row],
        "nonfinite_counts": {name: n for _, name, _, n in firsts},
    }
    others = "" if len(at_onset) == 1 else f" (with {', '.join(n for n in at_onset if n != metric)})"
    later = [t["metric"] for t in evidence["then"]]
    then = f"; then {', '.join(later)}" if later else ""
    if sentinel:
        counts = ", ".join(f"{n} at {c} steps" for n, c in evidence["nonfinite_counts"].items())
        return Finding(
            ID, "info", "any", onset["step"], {**evidence, "recovers": True},
            f"{metric} is {_text(value)} at step {onset['step']} ({counts}), with finite values between and every "
            "metric advcore reads finite: a quantity the loop could not compute on those steps, not a blow-up.",
            NOT_COMPUTED_TRIES,
        )
    return Finding(
        ID, "error", "any", onset["step"], evidence,
        f"{metric} is {_text(value)} at step {onset['step']}{others}, the first non-finite value of the run{then}: "
        "what follows it is a consequence, start from here.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="a NaN or an infinity in the per-step metrics",
    key_metrics_note="every canonical metric is read; these are the most often non-finite",
    happening="""
        Somewhere in the run a quantity became NaN or infinite: a gradient overflowed (fp16 without a
        working loss scaler, a learning rate too high), a division by a zero standard deviation
        (advantage normalisation of a tied group without eps), a log of 0 (a log-probability of a token
        the policy gives zero mass, a masked token), or a reward function that returns NaN on some
        completions. Once a NaN reaches the loss it reaches the weights, and from there every later
        metric: the first non-finite value is the cause, the rest are consequences.
    """,
    looks_like="""
        `grad_norm: nan` (TRL prints `'grad_norm': nan`), `actor/pg_loss:nan` in a verl console line,
        `NaN`/`Infinity` in a `trainer_state.json`, `inf` in a CSV cell; often a rising `grad_norm` in
        the steps before, then NaN spreading to `kl`, `entropy` and the loss. A verl JSONL file logger
        writes NaN as `null` (verl-elastic-ppo-filelogger-broken: the `rollout_corr/*` log-perplexity
        statistics are null from step 2, `actor/pg_loss` and `actor/ppo_kl` at step 3).
    """,
    decides="""
        Ingest keeps NaN and ±inf as values in every format (one scalar parser for all of them); a value
        the format itself writes as missing (JSON `null`, an empty CSV cell, a Parquet null) stays null,
        except where the trainer writes NaN as `null`: verl's JSONL file logger, whose `null` in a key
        that is a number on another line is read as NaN. The detector scans every numeric key — the
        canonical metric columns and, through the first non-finite value ingest recorded for each, the
        keys without a canonical name — and fires on the first non-finite value in log order (a
        canonical metric before an unnamed key of the same step). A NaN that a trainer writes by design
        for an undefined value is not counted: SB3's `explained_variance` is NaN when the returns do not
        vary (sb3-chess-legal-moves-learns, a run that learns, logs three). Nor is a placeholder
        before a metric's first finite value: the CS294 DQN logger starts `best_mean_reward` at `-inf`
        until 100 episodes have ended (h79-cs294-dqn-pong-pixels-slow-start-learns: four rows), and a
        notebook loop prints `Avg reward: nan` at epoch 0, the mean of no episodes
        (h82-ppo-unity-reacher20-learns-std-decays). A canonical metric that is never finite counts from
        its first row (`grad_norm` is NaN at all 20 steps of
        h140-unsloth-trl-grpo-qwen3-4b-dapo-math-gradnorm-nan-kl0); a key without a canonical name that is
        never finite does not (ML-Agents' SAC logs `Policy/Discrete Entropy Coeff`, the mean over no
        discrete action branches, as NaN at every point of a continuous-action run); every non-finite
        value after a finite one counts. The evidence names that metric, its step (and phase), its value
        (`nan`, `inf`, `-inf`), the other metrics that went non-finite on the same row, the last
        finite value of the metric before it, every metric that went non-finite afterwards with its
        first step (`then`), and the count per metric. When only keys without a canonical name went
        non-finite, none named like part of the update (`loss`, `grad`, `kl`, `entropy`), and each is finite
        again afterwards, the finding is info: a quantity the loop could not compute on some steps, never
        fed to the loss (h267's `metrics/mae`, the mean pose error of the answers, `Infinity` on the 77 of
        292 rounds where an answer did not parse, with every training metric finite); an `Actor_Loss` NaN
        on 78 of 100 iterations stays an error though the loop skips those updates
        (h26-cs285-hw2-pg-cartpole-nan-after-saturation). `advcore.diagnose` orders this finding before
        every finding that began at or after it (what began earlier, a reward at its floor from the
        first step, leads it). Not evaluable: a log with no metric column, or whose metrics are all
        finite and none of them is read by another detector (a log of `lr` only), so that such a run
        is reported as not judged rather than clean.
    """,
    knobs_note="""
        No knobs: one non-finite value is already a finding. Of the 36 shared real logs (31 runs) only
        verl-elastic-ppo-filelogger-broken has one (written as `null`), so there is no noise floor to tune
        against.
    """,
    related="""
        Reported ahead of everything else: the other detectors read only finite values, so a collapse
        they report after the onset here may be a consequence. REWARD_MISSING covers null and NaN rewards
        per sample; UPDATE_SUPPRESSED an update that silently stops without a NaN.
    """,
)


def spec(read_elsewhere: frozenset[str]) -> DetectorSpec:
    """NONFINITE's spec, given the key metrics the other registered detectors read."""
    return DetectorSpec(
        id=ID,
        severity="error",
        stage="any",
        summary="NaN or inf in a per-step metric; the first occurrence is reported ahead of its consequences",
        key_metrics=("grad_norm", "kl", "entropy", "reward_mean", "adv_std"),
        fn=partial(detect, read_elsewhere=read_elsewhere),
        knobs=(),
        what_to_try_cases=TRIES_CASES,
        what_to_try_control=CONTROL_TRIES,
        card=CARD,
    )
