"""The main job's demo: one collapse-lab fault end to end, plus the older embedded examples.

:func:`run_lab_demo` (``advcore demo``): train the lab policy with one fault switched on
(:mod:`advcore.lab`; default ``reward_scale``: the rewards are scaled by 1e-8 before the GRPO
advantage, so the advantages flatten while the rewards keep their contrast), write its recording
(per-step JSONL, per-sample Parquet, ``truth.json``) into a folder, scan the per-sample recording
as any log is scanned (:func:`advcore.scan.scan_file`: the stage trace and the verdict), set the
verdict against the ground truth, and test a mitigation that targets the cause and one that does
not (:func:`advcore.lab.compare.compare`).

:func:`run_demo` (``advcore demo --stats``): one generated GRPO batch, traced through its stages.
:data:`DEMO_RUN` (``advcore demo --log``): a shipped TRL log whose signal dies by saturation.

The batch of :func:`run_demo` is ``prompts`` groups of ``group_size`` completions with 0/1 rewards plus a small format
bonus; each prompt has its own success rate drawn from Beta(0.5, 0.5), so many groups are all-pass
or all-fail (tied) as in real math-RL runs. The advantages are computed as TRL's GRPOTrainer does
(``(r - mean_g) / (std_g + 1e-4)`` with the unbiased group std), then clipped to ``[-2, 2]`` to
show what the change census reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from advcore import stats
from advcore.errors import AdvcoreWarning

_Q = (0.05, 0.5, 0.95)


@dataclass(frozen=True, slots=True)
class StageRow:
    """The statistics of one stage's array."""

    stage: str
    name: str
    mean: float
    std: float
    mad: float
    iqr: float
    quantiles: tuple[float, ...]
    exact_zero_frac: float
    n_unique: int
    spearman_reward: float
    spearman_within: float
    changed_frac: float | None


@dataclass(frozen=True, slots=True)
class DemoResult:
    """The stage table and the group-level view of the generated batch."""

    prompts: int
    group_size: int
    seed: int
    rows: tuple[StageRow, ...]
    zero_variance: stats.ZeroVarianceFraction
    decomposition: stats.VarianceDecomposition


def generate_batch(
    prompts: int, group_size: int, seed: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Rewards (float32, shape ``(prompts * group_size,)``) and TRL-style GRPO advantages."""
    rng = np.random.default_rng(seed)
    success = rng.beta(0.5, 0.5, size=prompts)
    correct = rng.random((prompts, group_size)) < success[:, None]
    # The format bonus is earned by almost every completion, so it rarely breaks a tie.
    bonus = 0.1 * (rng.random((prompts, group_size)) < 0.97)
    rewards = (correct + bonus).astype(np.float32)
    mean = rewards.mean(axis=1, keepdims=True)
    std = rewards.std(axis=1, ddof=1, keepdims=True)
    advantages = ((rewards - mean) / (std + 1e-4)).astype(np.float32)
    return rewards.ravel(), advantages.ravel()


def _row(
    stage: str,
    name: str,
    x: npt.NDArray[np.float32],
    rewards: npt.NDArray[np.float32],
    group_size: int,
    previous: npt.NDArray[np.float32] | None,
) -> StageRow:
    census = stats.value_census(x)
    moments = stats.grouped_moments(x, group_size=x.shape[0])  # one group: the whole batch
    spearman = stats.spearman(x, rewards) if name != "reward" else 1.0
    within = stats.within_group_spearman(x, rewards, group_size=group_size)
    changed = None if previous is None else stats.change_census(previous, x).changed_frac
    return StageRow(
        stage=stage,
        name=name,
        mean=float(moments.mean[0]),
        std=float(moments.std[0]),
        mad=stats.median_abs_deviation(x),
        iqr=stats.interquartile_range(x),
        quantiles=tuple(float(v) for v in np.atleast_1d(stats.quantile(x, list(_Q)))),
        exact_zero_frac=census.exact_zero_frac,
        n_unique=census.n_unique,
        spearman_reward=spearman,
        spearman_within=within.mean,
        changed_frac=changed,
    )


def run_demo(prompts: int = 512, group_size: int = 8, seed: int = 0) -> DemoResult:
    """Generate the batch and compute every stage's statistics."""
    rewards, advantages = generate_batch(prompts, group_size, seed)
    clipped = np.clip(advantages, -2.0, 2.0)
    rows = (
        _row("R", "reward", rewards, rewards, group_size, None),
        _row("T", "advantage (GRPO, TRL)", advantages, rewards, group_size, None),
        _row("T", "advantage clipped [-2, 2]", clipped, rewards, group_size, advantages),
    )
    import warnings

    with warnings.catch_warnings():
        # Tied groups are the point of the demo; their undefined statistics are expected.
        warnings.simplefilter("ignore", AdvcoreWarning)
        zero_variance = stats.zero_variance_fraction(rewards, group_size=group_size)
    decomposition = stats.variance_decomposition(rewards, group_size=group_size)
    return DemoResult(prompts, group_size, seed, rows, zero_variance, decomposition)


def render(result: DemoResult) -> None:
    """Print the demo with rich."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(
        f"[bold]advcore demo[/bold]: a generated GRPO batch of {result.prompts} prompts x "
        f"{result.group_size} completions (0/1 reward + 0.1 format bonus, seed {result.seed})"
    )
    zv, dec = result.zero_variance, result.decomposition
    console.print(
        f"groups with zero reward variance: [bold]{zv.exact_frac:.1%}[/bold] "
        f"({zv.n_exact_zero} of {zv.n_groups - zv.n_singleton}); these get advantage 0 for every sample"
    )
    console.print(
        f"reward variance {dec.total:.4f} = within-group {dec.within:.4f} + between-group "
        f"{dec.between:.4f}: GRPO can learn from the within part, {dec.within_frac:.1%}"
    )
    table = Table(title="stage statistics (one column per stage's array)")
    table.add_column("statistic")
    for r in result.rows:
        table.add_column(f"{r.stage}: {r.name}", justify="right")
    lines: list[tuple[str, list[str]]] = [
        ("mean", [f"{r.mean:+.3f}" for r in result.rows]),
        ("std", [f"{r.std:.3f}" for r in result.rows]),
        ("MAD / IQR", [f"{r.mad:.3f} / {r.iqr:.3f}" for r in result.rows]),
        ("q05 / q50 / q95", [" / ".join(f"{v:+.2f}" for v in r.quantiles) for r in result.rows]),
        ("exactly zero", [f"{r.exact_zero_frac:.1%}" for r in result.rows]),
        ("unique values", [str(r.n_unique) for r in result.rows]),
        ("Spearman with reward", [f"{r.spearman_reward:+.3f}" for r in result.rows]),
        ("mean Spearman within groups", [f"{r.spearman_within:+.3f}" for r in result.rows]),
        ("changed from previous stage", ["" if r.changed_frac is None else f"{r.changed_frac:.1%}" for r in result.rows]),
    ]
    for label, cells in lines:
        table.add_row(label, *cells)
    console.print(table)


# The main job's embedded default: a TRL GRPO run whose learning signal dies by saturation.

DEMO_RUN = Path(__file__).with_name("data") / "demo_grpo_collapse" / "trainer_state.json"


def collapsed_run_log(steps: int = 120, group_size: int = 8, seed: int = 7) -> dict[str, object]:
    """A ``trainer_state.json`` document as TRL's GRPOTrainer writes it (``logging_steps=1``),
    computed from simulated per-sample rewards: each prompt's success rate climbs with training
    until nearly every group is all-correct, so the groups tie, the advantages vanish, and the
    gradient dies while the reward curve looks like success.

    The metrics are those TRL logs, computed the way it computes them: ``reward`` the batch
    mean, ``reward_std`` the mean of the per-group unbiased std (TRL <= 0.26),
    ``frac_reward_zero_std`` the share of groups with zero std.
    """
    rng = np.random.default_rng(seed)
    prompts = 16
    history: list[dict[str, object]] = []
    for step in range(1, steps + 1):
        skill = 1.0 / (1.0 + np.exp(-(step - 60) / 9.0))  # about 0 -> 1 around step 60
        success = np.clip(rng.beta(2, 2, size=prompts) * 0.8 + 0.1 + 1.2 * skill, 0.0, 1.0)
        correct = (rng.random((prompts, group_size)) < success[:, None]).astype(np.float32)
        groups = stats.grouped_moments(correct.ravel(), group_size=group_size, ddof=1)
        frac_zero = groups.zero_variance.exact_frac
        live = 1.0 - frac_zero
        history.append({
            "step": step,
            "epoch": round(step / steps, 4),
            "loss": round(float(rng.normal(0, 0.002) * live), 6),
            "grad_norm": round(float(0.02 + 0.5 * live * rng.uniform(0.8, 1.2)), 6),
            "learning_rate": 1e-6,
            "reward": round(float(correct.mean()), 6),
            "reward_std": round(float(np.nanmean(groups.std)), 6),
            "frac_reward_zero_std": round(frac_zero, 6),
            "rewards/accuracy_reward/mean": round(float(correct.mean()), 6),
            "completions/mean_length": round(float(180 - 60 * skill + rng.normal(0, 4)), 2),
            "kl": round(float(0.002 * step * live + 0.001), 6),
        })
    return {"global_step": steps, "max_steps": steps, "logging_steps": 1, "log_history": history}


def write_collapsed_run(path: Path = DEMO_RUN) -> Path:
    """Write :func:`collapsed_run_log` as JSON to ``path`` (the file shipped with the package)."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(collapsed_run_log(), indent=1) + "\n")
    return path


# The main job's demo: one lab fault end to end.

#: Trace statistics of the demo's before/after table: statistic -> label.
_TRACE_VIEW = {"std": "std", "zero_variance_group_frac": "tied share", "spearman_reward": "Spearman w/ reward"}


@dataclass(frozen=True, slots=True)
class LabDemo:
    """One lab fault end to end.

    Attributes
    ----------
    truth : dict
        The lab's ground truth (:func:`advcore.lab.run.truth`).
    files : dict of str to Path
        The recording (``steps``, ``samples``, ``truth``).
    report : advcore.scan.RunReport
        The scan of the per-sample recording (its ``run.trace`` is the stage trace).
    before, after : int
        The steps the trace is shown at (the last healthy step and the last step).
    comparison, wrong : advcore.lab.compare.Comparison
        The mitigation that targets the fault's cause, and one that does not.
    """

    truth: dict[str, Any]
    files: dict[str, Path]
    report: Any
    before: int
    after: int
    comparison: Any
    wrong: Any


def default_mitigations(fault: str) -> tuple[str, str]:
    """The first mitigation that targets ``fault`` and the first that does not (registry order).

    Raises
    ------
    AdvcoreError
        ``fault`` is unknown or no mitigation targets it.
    """
    from advcore.errors import AdvcoreError
    from advcore.lab.faults import get_fault
    from advcore.lab.mitigations import MITIGATIONS

    f = get_fault(fault)
    right = [m.name for m in MITIGATIONS.values() if f is not None and f.name in m.targets]
    if not right:
        raise AdvcoreError(f"`fault`: no mitigation targets {fault!r} (see advcore lab list)")
    wrong = next(m.name for m in MITIGATIONS.values() if m.name not in right)
    return right[0], wrong


def run_lab_demo(out: Path | str, *, fault: str = "reward_scale", mitigation: str = "reward_unscaled",
                 wrong: str = "dynamic_sampling", estimator: str = "grpo", seed: int = 0, seeds: int = 3) -> LabDemo:
    """Run ``fault`` in the lab, record it into ``out``, scan it and compare the mitigations.

    Parameters
    ----------
    out : path
        Folder the recording is written into (created; nothing is written elsewhere).
    fault, estimator, seed : str, str, int
        The lab run (:class:`advcore.lab.LabConfig`, 80 steps, onset 30).
    mitigation, wrong : str
        A mitigation that targets the fault and one that does not (:mod:`advcore.lab.mitigations`).
    seeds : int
        Seeds per arm of each comparison (at least 2).

    Raises
    ------
    AdvcoreError
        Unknown fault, estimator or mitigation (naming the argument).
    """
    from advcore.lab import run, write
    from advcore.lab.compare import compare
    from advcore.scan import ScanOptions, scan_file

    result = run(estimator=estimator, fault=fault, seed=seed)
    files = write(result, out, fmt="jsonl")
    report = scan_file(files["samples"], ScanOptions())
    onset = int(result.truth["onset_step"] or 1)
    before, after = max(onset - 1, 1), result.config.steps
    right = compare(fault, mitigation, estimator=estimator, seeds=seeds)
    other = compare(fault, wrong, estimator=estimator, seeds=seeds)
    return LabDemo(result.truth, files, report, before, after, right, other)


def render_lab_demo(demo: LabDemo, console: Any = None, *, kept: bool = True) -> None:
    """Print :func:`run_lab_demo`'s result with rich (``kept``: the recording stays where it was
    written; otherwise the report says how to keep it)."""
    import polars as pl
    from rich.console import Console
    from rich.table import Table

    from advcore.lab.compare import render as render_comparison
    from advcore.report import render_human

    con = console if console is not None else Console()
    t = demo.truth
    con.print(f"[bold]advcore demo[/bold]: the collapse lab, fault [bold]{t['fault']}[/bold] "
              f"({t['estimator']}, seed {t['seed']}): {t['description']}")
    where = f"{demo.files['samples'].parent}/" if kept else "a temporary folder, removed on exit (--out DIR keeps it)"
    con.print(f"recording: {where} ({', '.join(p.name for p in demo.files.values())})\n")
    trace = demo.report.run.trace
    if trace is not None and not trace.is_empty():
        table = Table(title=f"stage trace of the recording: step {demo.before} (before the fault) -> "
                            f"step {demo.after}",
                      caption="stages in the order the trainer computes them (adv_raw: before the normaliser, adv: "
                              "after it); tied share: the share of groups whose values at that stage are equal up "
                              "to rounding (a spread of 1e-9 is a tie)")
        table.add_column("stage")
        for label in _TRACE_VIEW.values():
            table.add_column(label, justify="right")
        rows = trace.filter(pl.col("slice") == "all")
        cell = {(st, stat, int(step)): v for step, st, stat, v in
                rows.select("step", "stage", "statistic", "value").iter_rows()}
        for stage in rows["stage"].unique(maintain_order=True).to_list():
            table.add_row(stage, *(f"{cell.get((stage, stat, demo.before), float('nan')):.3g} -> "
                                   f"{cell.get((stage, stat, demo.after), float('nan')):.3g}" for stat in _TRACE_VIEW))
        con.print(table)
    con.print(f"advcore scan {demo.files['samples'] if kept else demo.files['samples'].name}")
    render_human([demo.report], con)
    verdict = demo.report.verdict
    found = verdict.stage == t["stage"]
    con.print(f"ground truth (truth.json): stage {t['stage']} since step {t['onset_step']}; the verdict names stage "
              f"{verdict.stage or '-'}: " + ("[green]right stage[/green]" if found else "[red]wrong stage[/red]") + "\n")
    render_comparison(demo.comparison, con, compact=True)
    c = demo.wrong
    kind = "another hypothesis for this fault" if c.on_target else "a hypothesis about another cause"
    con.print(f"\n[bold]{kind}[/bold]: {c.mitigation} ({c.hypothesis}) on {c.fault}: {c.verdict}")
