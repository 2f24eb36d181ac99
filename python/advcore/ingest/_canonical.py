"""Map a :class:`RawLog` (trainer keys) onto a :class:`Run` (canonical names, SPEC section 4)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl

from advcore.ingest._aliases import Alias, AliasTable, reward_by_name
from advcore.ingest._slices import task_slices
from advcore.ingest._trainers import trainer_of
from advcore.model import STEP_COUNTER, STRICT_COUNTER, IngestError, RawLog, Run, counted_nonfinite
from advcore.trace import slice_frame

__all__ = ["canonicalize"]

#: one agent's metric in a multi-agent log that has no team one (on-policy MAPPO's separated runner): its
#: return, its actor's gradient norm; the team's is the agents' mean (the canonical name on the right)
_PER_AGENT = re.compile(r"^(?P<metric>reward|grad_norm)/agent(?P<i>\d+)$")
_TEAM = {"reward": "reward_mean", "grad_norm": "grad_norm"}


def _restarts(col: pl.Series) -> bool:
    """Whether the step counter ``col`` goes back at least once (a new phase, a resumed run, a loop
    that restarts its trainer's counter)."""
    steps = col.cast(pl.Float64, strict=False).drop_nulls()
    return bool((steps.diff().drop_nulls() < 0).any())


def _step_counter(raw: pl.DataFrame, unmapped: list[str], *, strict: bool = False) -> str | None:
    """The unmapped column that counts steps when no key maps to ``step`` (or the one that does
    restarts): named like a step counter (:data:`~advcore.model.STEP_COUNTER`), whole numbers that
    never decrease (an episode count, or any counter when ``strict``: that always increase), on at
    least 90 % of the rows; of several,
    the finest (most distinct values). A loop that writes one record per phase of a step
    (``{"type": "rollout", "grpo_step": 3, ...}``, then ``{"type": "train", "grpo_step": 3,
    "optimizer_step": 5, ...}``) is read by the counter every record carries."""
    best: tuple[int, str] | None = None
    for name in unmapped:
        col = raw[name]
        if not STEP_COUNTER.search(name) or not col.dtype.is_numeric():
            continue
        values = col.drop_nulls().cast(pl.Float64)
        if values.len() < 0.9 * raw.height or values.len() == 0 or not values.is_finite().all():
            continue
        steps = values.diff().drop_nulls()
        repeats = (strict or STRICT_COUNTER.search(name)) and (steps == 0).any()
        if (values != values.floor()).any() or (steps < 0).any() or repeats:
            continue
        distinct = values.n_unique()
        if best is None or distinct > best[0]:
            best = (distinct, name)
    return None if best is None else best[1]


#: Unity ML-Agents logs the lesson of each curriculum parameter as ``Environment/Lesson Number/<parameter>`` (0, 1,
#: ... as the curriculum's completion criteria are met): read as ``lesson``, whose changes are the run's phases
#: (h373-mlagents-ppo-minesweeper-8x8-time-scheduled-curriculum: mine_count 0 -> 3 over 3.1 M steps, the return
#: stepping down at each lesson and climbing within it).
_LESSON = "Environment/Lesson Number/"
#: A folder named for what its files hold has at most this many words (``Reward``, ``csv_train_rewards``); a
#: longer name describes a run (``ppo-minigrid-doorkey-llm-critic-reward-floor``), whose files hold anything.
FOLDER_WORDS = 4
#: The bare statistics a table named for the reward holds, and what each is of it.
_BARE_STATISTICS = {"mean": "reward_mean", "max": "reward_max", "min": "reward_min", "std": "reward_std"}
#: A logged step with one value on more than this many rows is no step counter.
FROZEN_STEP_ROWS = 3


#: Canonical metrics that only an update produces: a loop that logs every episode and updates every few
#: episodes writes them as 0 on the rows between updates.
UPDATE_METRICS = ("entropy", "value_loss", "kl", "kl_step", "grad_norm", "clip_frac")
#: Of those, the ones no measurement puts at exactly 0 (a stochastic policy's entropy, a trained critic's loss);
#: a gradient norm or a KL of exactly 0 is a fact (no update), never taken for a placeholder on its own.
NEVER_ZERO = ("entropy", "value_loss")
#: Stretches of such all-zero rows, each followed by a row that has an update, that make the zeros placeholders.
MIN_PLACEHOLDER_STRETCHES = 3


#: Return columns that an estimator without a critic fills with its advantages: verl's GRPO and RLOO return
#: ``(advantages, advantages)`` (verl/trainer/ppo/core_algos.py, compute_grpo_outcome_advantage), so
#: ``critic/returns/mean`` repeats ``critic/advantages/mean`` at every step.
_COPIED_RETURNS = {"return_mean": "adv_mean", "return_std": "adv_std"}


def _without_copied_returns(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The frame without the return columns equal to their advantage column wherever either is logged (a
    return a critic-free estimator filled with the advantages: no credit-assignment stage to show), and their
    names."""
    copies = [r for r, a in _COPIED_RETURNS.items() if r in frame.columns and a in frame.columns
              and frame[r].null_count() < frame.height
              and bool(frame.select((pl.col(r).is_null() == pl.col(a).is_null())
                                    & ((pl.col(r) == pl.col(a)) | pl.col(r).is_null())).to_series().all())]
    return frame.drop(copies), copies


def _without_update_placeholders(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The frame with the update metrics of placeholder rows set to null, and how many rows those are.
    A row is a placeholder when every update metric logged (at least two, one of them in
    :data:`NEVER_ZERO`) is exactly 0 there and such rows come in at least
    :data:`MIN_PLACEHOLDER_STRETCHES` stretches between rows with an update
    (h51-proteinfold-ppo-gnn-maxaction-policy-stuck-uniform: ``policy_loss,value_loss,entropy`` are
    0,0,0 on 818 of 1,000 episodes, the PPO update running every few episodes). Zeros that begin and
    stay (a run whose updates died) make one stretch, and are kept."""
    cols = [c for c in UPDATE_METRICS if c in frame.columns]
    if len(cols) < 2 or not set(cols) & set(NEVER_ZERO):
        return frame, 0
    zero = frame.select(pl.all_horizontal([pl.col(c) == 0.0 for c in cols]).fill_null(False)).to_series()
    ends = int((zero & ~zero.shift(-1, fill_value=True)).sum())  # a zero row followed by one with an update
    if ends < MIN_PLACEHOLDER_STRETCHES:
        return frame, 0
    return frame.with_columns([pl.when(zero).then(None).otherwise(pl.col(c)).alias(c) for c in cols]), int(zero.sum())


def _with_steps(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, object]]:
    """Ensure an Int64 ``step``; add ``phase`` when the step counter restarts, or else when a curriculum's
    ``lesson`` changes; merge the rows of one
    step (a training record and an evaluation record, or one record per phase of the step) into one,
    each metric the mean of its values there (a NaN among them stays NaN)."""
    notes: dict[str, object] = {}
    if "step" not in frame.columns or frame["step"].null_count() == frame.height:
        frame = frame.drop("step", strict=False).with_row_index("step", offset=1).with_columns(
            pl.col("step").cast(pl.Int64)
        )
        notes["step_inferred"] = True
        return frame, notes
    frame = frame.with_columns(pl.col("step").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False))
    frame = frame.filter(pl.col("step").is_not_null())
    restarts = (frame["step"].diff() < 0).fill_null(False)
    if not restarts.any() and "lesson" in frame.columns and frame["lesson"].drop_nulls().n_unique() > 1:
        # a curriculum's lessons on one step counter: a new lesson is a new phase, whose reward drops by design
        lesson = frame["lesson"].forward_fill().backward_fill()
        restarts = (lesson.diff() != 0).fill_null(False)
        notes["phases_from"] = "lesson"
    if restarts.any():
        frame = frame.with_columns(restarts.cum_sum().cast(pl.Int64).alias("phase"))
        notes["phases"] = int(restarts.sum()) + 1
    keys = ["phase", "step"] if "phase" in frame.columns else ["step"]
    if frame.select(keys).is_duplicated().any():
        metrics = [c for c in frame.columns if c not in keys]
        frame = frame.group_by(keys, maintain_order=True).agg(pl.col(metrics).mean())
        notes["rows_merged"] = True
    return frame, notes


def _nonfinite_unmapped(raw: pl.DataFrame, unmapped: list[str], step_col: str | None) -> list[dict[str, object]]:
    """The first NaN or +-inf of every numeric key without a canonical name: ``{"key", "step", "value",
    "count", "recovers"}`` (``step`` as logged, else the row's position from 1; ``recovers``: a finite value
    of the key follows it). Placeholders before a key's first
    finite value are not counted (:func:`advcore.model.counted_nonfinite`), nor is a key that is never
    finite: a quantity the trainer logs although it is undefined for this run (ML-Agents' SAC trainer,
    ``ml-agents/mlagents/trainers/sac/optimizer_torch.py``, logs ``Policy/Discrete Entropy Coeff`` as the
    mean of its discrete branches, NaN at every point for an agent with continuous actions only). A
    canonical metric never finite still counts (a ``grad_norm`` NaN from the first step)."""
    out: list[dict[str, object]] = []
    numeric = [k for k in unmapped if raw[k].dtype == pl.Float64]
    if not numeric:
        return out
    # one pass says which columns hold a non-finite value; only those are searched, on their own
    # columns (a line of 16,000 keys must not cost 16,000 copies of a 16,000-column frame)
    flags = raw.select([(counted_nonfinite(k).any() & pl.col(k).is_finite().any()).alias(k) for k in numeric]).row(0)
    keep = [step_col] if step_col is not None and step_col in raw.columns else []
    for key in (k for k, flagged in zip(numeric, flags, strict=True) if flagged):
        rows = raw.select([*keep, key]).with_row_index("__row", offset=1)
        bad = rows.filter(counted_nonfinite(key))
        v = float(bad[key][0])
        step = bad[step_col][0] if step_col is not None else bad["__row"][0]
        first = int(bad["__row"][0])
        recovers = bool(rows.filter((pl.col("__row") > first) & pl.col(key).is_finite()).height)
        out.append({"key": key, "step": None if step is None else int(step),
                    "value": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"), "count": bad.height,
                    "recovers": recovers})
    return out


#: Unity ML-Agents' TensorBoard returns (mlagents/trainers/stats.py): an agent's own, and its group's under POCA.
_AGENT_RETURN, _GROUP_RETURN = "Environment/Cumulative Reward", "Environment/Group Cumulative Reward"


def _filter_shares(columns: dict[str, list[pl.Expr]], sources: dict[str, str]) -> None:
    """A group filter logged as the shares of the sampled groups it removed at each bound
    (``filter/all_success_frac``, ``filter/all_fail_frac``) gives the share it kept, and with the number
    of groups sampled the counts it removed, as the filter accounting reads them
    (:mod:`advcore.detectors.filter_starvation`)."""
    if "filter/kept_frac" in columns or not {"filter/all_success_frac", "filter/all_fail_frac"} <= columns.keys():
        return
    good, bad = (pl.coalesce(columns[k]) for k in ("filter/all_success_frac", "filter/all_fail_frac"))
    sources["filter/kept_frac"] = f"1 - {sources['filter/all_success_frac']} - {sources['filter/all_fail_frac']}"
    columns["filter/kept_frac"] = [1.0 - good - bad]
    if "filter/groups_sampled" in columns:
        n = pl.coalesce(columns["filter/groups_sampled"])
        for name, share in (("filter/removed_all_success", good), ("filter/removed_all_fail", bad)):
            sources[name] = f"{sources['filter/groups_sampled']} x {sources[name.replace('removed_', '') + '_frac']}"
            columns[name] = [(share * n).round(0)]
        sources["filter/groups_removed"] = f"{sources['filter/groups_sampled']} x (1 - filter/kept_frac)"
        columns["filter/groups_removed"] = [((good + bad) * n).round(0)]


def canonicalize(raw: RawLog, path: Path | str, aliases: AliasTable, *, canonical: bool = False) -> Run:
    """Rename the trainer's keys to canonical names; keys without an alias are dropped (their
    names are kept in ``metadata["unmapped"]``, and the first non-finite value of each numeric one in
    ``metadata["nonfinite_unmapped"]``, for NONFINITE). With ``canonical`` (a per-sample format, whose
    reduction emits canonical names) every column keeps its name and the alias table is not consulted. When several keys map to one name, the first
    non-null value of each row wins: the trainer's own rows in the alias table's order, then the rows for any
    trainer in column order (the keys after the first in ``metadata["fallback_keys"]``). A log whose format names no trainer is read
    with the aliases of the trainer its keys belong to (a TensorBoard file of a verl run is verl's).
    When no key maps to ``reward_mean`` (``grad_norm``), it is the mean of the agents' returns (actor
    gradient norms) where each agent's is logged (``reward/agent<i>``, ``grad_norm/agent<i>``: on-policy
    MAPPO's separated runner logs no team one); else, for the reward, a key whose words name a mean
    training reward is read as it (:func:`~advcore.ingest._aliases.reward_by_name`; the key in
    ``metadata["reward_by_name"]``). A group filter's removed shares give its kept share
    (:func:`_filter_shares`). A column the reader derived from others (``metadata["derived"]``: name ->
    formula over their keys) has that formula as its source, and those keys count as read."""
    trainer = raw.trainer or trainer_of(raw.frame.columns)
    version = raw.metadata.get("trainer_version")
    version = str(version) if version is not None else None
    sources: dict[str, str] = {}
    columns: dict[str, list[pl.Expr]] = {}
    #: every key each name was read from: the first is its source, the others fill its nulls
    read_as: dict[str, list[str]] = {}
    unmapped: list[str] = []
    hits: list[tuple[tuple[int, int], str, Alias | None, str]] = []
    for i, col in enumerate(raw.frame.columns):
        hit = (col, None) if canonical else aliases.canonical(col, trainer, version)
        if hit is None:
            unmapped.append(col)
            continue
        name, row = hit
        # of two keys read as one name, the trainer's own rows come first, in the table's order (SB3 PPO's
        # train/value_loss before the train/loss that is a DQN's TD loss); the rows for any trainer in column order
        priority = (0, aliases.rank(row)) if row is not None and row.trainer != "*" else (1, i)
        hits.append((priority, name, row, col))
    for _, name, row, col in sorted(hits, key=lambda h: h[0]):
        sources.setdefault(name, col)
        read_as.setdefault(name, []).append(col)
        dtype = pl.Int64 if name == "step" else pl.Float64
        expr = pl.col(col).cast(dtype, strict=False)
        if row is not None and row.scale != 1.0:
            expr = expr * row.scale
        columns.setdefault(name, []).append(expr + row.offset if row is not None and row.offset else expr)
    _filter_shares(columns, sources)
    if _GROUP_RETURN in raw.frame.columns and sources.get("reward_mean") == _AGENT_RETURN:
        # ML-Agents' POCA pays a group of agents as one (AddGroupReward): an agent's return is its own rewards and
        # its group's, and a trainer that pays only the group logs an individual return of exactly 0
        # (h186-mlagents-poca-object-collector: 0 at all 333 summaries, the group's 21.5 -> 11.6)
        sources["reward_mean"] = f"{_AGENT_RETURN} + {_GROUP_RETURN}"
        columns["reward_mean"] = [pl.coalesce(columns["reward_mean"]).fill_null(0.0)
                                  + pl.col(_GROUP_RETURN).cast(pl.Float64, strict=False)]
        unmapped.remove(_GROUP_RETURN)
    for metric, team in _TEAM.items():
        agents = sorted((m for c in columns if (m := _PER_AGENT.match(c)) and m["metric"] == metric),
                        key=lambda m: int(m["i"]))
        if team not in columns and len(agents) >= 2:
            # each agent's is logged, the team's is not: the team's is the agents' mean
            sources[team] = "mean of " + ", ".join(sources[m.string] for m in agents)
            columns[team] = [pl.mean_horizontal([pl.coalesce(columns[m.string]) for m in agents])]
    for name, formula in raw.metadata.get("derived", {}).items():
        # a column the reader computed from others (``metadata["derived"]``: its formula over their keys) names
        # them as its source, and they count as read
        if sources.get(name) == name:
            sources[name] = formula
            unmapped = [c for c in unmapped if c not in formula.replace("(", " ").replace(")", " ").split()]
    stems = raw.metadata.get("headerless", ())  # a headerless table's series is named by its file
    if not stems and len(unmapped) == 1 and set(columns) <= {"step"}:
        # a log of one series: its key is a name given to the run's one curve, whatever else it says
        # (h307's SAC scheduler: TensorBoard's 'profile4 Episode Reward 2023-08-06-13-17-31' and nothing else)
        stems = tuple(unmapped)
    # a TensorBoard download renamed after its run (PPO_3.csv) holds whichever tag was downloaded
    run_named = raw.metadata.get("layout") != "tensorboard_csv"
    guessed = reward_by_name(unmapped, stems, run_named=run_named) if "reward_mean" not in columns else None
    named_as = guessed
    folder = Path(path).parent.name
    if (guessed is None and "reward_mean" not in columns and len(stems) == 1 and stems[0] in unmapped
            and len(re.findall(r"[A-Za-z]+", folder)) <= FOLDER_WORDS):
        # a file whose name says nothing of what it holds, in a folder named for what it holds (a TensorBoard
        # export renamed by hand: data/Reward/ddpg.csv, csv_train_rewards/log_c51_defend_the_center_50_....csv)
        in_folder = f"{folder}/{stems[0]}"
        named_as = reward_by_name([in_folder], [in_folder])
        guessed = stems[0] if named_as is not None else None
    stem = Path(path).stem
    if (guessed is None and "reward_mean" not in columns and "mean" in unmapped
            and reward_by_name([stem], [stem]) is not None):
        # a table of bare statistics, named by its file for what they describe (an OpenEnv run's reward_curve.json:
        # step, mean, max, min of the batch's rewards at each step)
        for stat, name in _BARE_STATISTICS.items():
            if stat in unmapped and name not in columns:
                unmapped.remove(stat)
                sources[name] = stat
                columns[name] = [pl.col(stat).cast(pl.Float64, strict=False)]
        named_as = stem
    if guessed is not None:
        unmapped.remove(guessed)
        sources["reward_mean"] = guessed
        columns["reward_mean"] = [pl.col(guessed).cast(pl.Float64, strict=False)]
    lessons = [c for c in unmapped if c.startswith(_LESSON)]
    if lessons:
        # each curriculum parameter's lesson, summed: the sum moves when any of them moves on
        unmapped = [c for c in unmapped if c not in lessons]
        sources["lesson"] = " + ".join(lessons)
        columns["lesson"] = [pl.sum_horizontal([pl.col(c).cast(pl.Float64, strict=False) for c in lessons])]
    restarts = "step" in sources and _restarts(raw.frame[sources["step"]])
    # a logged step that never moves, on more than a few rows, counts nothing (one-step episodes of a
    # hand-written Keras DQN: 'Episode,Step,...' with Step 0 on each of 5,000 rows, h273-keras-dqn-carrier-
    # on-off-5-users-learns-best-switching-action-and-holds)
    frozen = ("step" in sources and raw.frame.height > FROZEN_STEP_ROWS
              and raw.frame[sources["step"]].drop_nulls().n_unique() == 1)
    counter = (_step_counter(raw.frame, unmapped, strict=restarts)
               if "step" not in sources or restarts or frozen else None)
    if counter is not None:
        # a logged step that restarts (SB3's time/total_timesteps counts from 0 at every learn() call of a
        # loop that calls it 2,000 times, h39-sb3-a2c-breakout-entropy-collapse-plateau) or never moves
        # yields to a counter that does (train/n_updates)
        if restarts or frozen:
            unmapped.append(sources["step"])
        unmapped.remove(counter)
        sources["step"] = counter
        columns["step"] = [pl.col(counter).cast(pl.Int64, strict=False)]
    exprs = [pl.coalesce(e).alias(name) if len(e) > 1 else e[0].alias(name) for name, e in columns.items()]
    frame = raw.frame.select(exprs) if exprs else pl.DataFrame()
    step_key = sources.get("step")
    # a step that is not a whole number within Int64 (2**63, inf) costs its row, and says so
    unusable_steps = 0
    if "step" in frame.columns and step_key in raw.frame.columns:
        unusable_steps = frame["step"].null_count() - raw.frame[step_key].null_count()
    # Rows where no metric has a value (a progress line, a log line between steps) carry nothing.
    metric_cols = [c for c in frame.columns if c != "step"]
    if metric_cols:
        frame = frame.filter(pl.any_horizontal(pl.col(metric_cols).is_not_null()))
    nonfinite = _nonfinite_unmapped(raw.frame, unmapped, step_key)
    errors = raw.errors
    if unusable_steps:
        errors = (*errors, IngestError(str(path), f"{unusable_steps} row(s) with a `{step_key}` that is not a whole "
                                                  "number within +-2**63 were left out"))
    frame, notes = _with_steps(frame)
    frame, placeholders = _without_update_placeholders(frame)
    if placeholders:
        notes["update_placeholder_rows"] = placeholders
    frame, copies = _without_copied_returns(frame)
    if copies:
        # the trainer's fill-in for returns it does not compute: listed among the placeholders, not read
        notes["placeholder"] = [*raw.metadata.get("placeholder", ()), *(sources.pop(c) for c in copies)]
        notes["copied_returns"] = {c: _COPIED_RETURNS[c] for c in copies}
    if nonfinite:
        notes["nonfinite_unmapped"] = nonfinite
    if named_as is not None:
        notes["reward_by_name"] = named_as
    fallbacks = {name: keys[1:] for name, keys in read_as.items() if len(keys) > 1 and name in frame.columns}
    if fallbacks:
        notes["fallback_keys"] = fallbacks
    order = ["step", *(["phase"] if "phase" in frame.columns else []), *sorted(c for c in frame.columns if c not in ("step", "phase"))]
    metadata = {**raw.metadata, **notes, "unmapped": unmapped}
    slices = slice_frame(raw.trace)
    per_task = task_slices(raw.frame, sources.get("step"))
    if per_task is not None:
        slices = per_task if slices is None else pl.concat([slices, per_task], how="diagonal_relaxed")
    return Run(str(path), raw.format, trainer, frame.select(order), sources, metadata, errors, raw.trace,
               slices=slices)
