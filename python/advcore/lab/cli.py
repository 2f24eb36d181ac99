"""``advcore lab``: run the collapse lab from the command line (``lab run``, ``lab list``, ``lab compare``)."""

from __future__ import annotations

from pathlib import Path

import click

from advcore.errors import AdvcoreError


@click.group()
def lab() -> None:
    """The collapse lab: reproduce a collapse regime in a small policy trained in about a second."""


@lab.command("list")
def list_() -> None:
    """List the faults (stage, onset kind, expected detectors, estimators) and the estimators."""
    from advcore.lab.estimators import ESTIMATORS
    from advcore.lab.faults import FAULTS

    click.echo("faults (--fault NAME; 'none' = the healthy run):")
    for f in FAULTS.values():
        click.echo(f"  {f.name:17} stage {f.stage:4} onset {f.onset:6} expects {', '.join(f.detectors)}")
        click.echo(f"  {'':17} {f.description}")
        click.echo(f"  {'':17} estimators: {', '.join(f.estimators)}")
    from advcore.lab.faults import SLICE_FAULTS

    click.echo("single-slice faults of the vla pool (the aggregate stays alive; the healthy run: --pool vla):")
    for f in SLICE_FAULTS.values():
        click.echo(f"  {f.name:17} stage {f.stage:4} slice {f.slice} expects {', '.join(f.detectors)}")
        click.echo(f"  {'':17} {f.description}")
    click.echo("estimators (--estimator NAME):")
    for e in ESTIMATORS.values():
        click.echo(f"  {e.name:17} {e.description}")
    from advcore.lab.mitigations import MITIGATIONS

    click.echo("mitigations (advcore lab compare --fault NAME --mitigation NAME):")
    for m in MITIGATIONS.values():
        click.echo(f"  {m.name:17} targets {', '.join(m.targets)}: {m.action}")
        click.echo(f"  {'':17} hypothesis: {m.hypothesis}")


@lab.command("run")
@click.option("--fault", default="none", show_default=True, help="Fault to switch on (see `advcore lab list`).")
@click.option("--estimator", default="grpo", show_default=True, help="Advantage estimator.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write the recording into (created; nothing is written elsewhere).")
@click.option("--seed", default=0, show_default=True, help="Seed of the tasks and the sampling.")
@click.option("--steps", default=80, show_default=True, help="Training steps.")
@click.option("--onset", default=30, show_default=True, help="First step with the fault on.")
@click.option("--log-format", "fmt", type=click.Choice(["jsonl", "trl", "verl"]), default="jsonl",
              show_default=True, help="Per-step format: canonical JSONL, TRL trainer_state.json or verl console.")
@click.option("--knob", "knobs", multiple=True, metavar="NAME=VALUE",
              help="Override a setting of the fault's switch (e.g. grouping=singleton, kl_coef=5).")
@click.option("--pool", type=click.Choice(["standard", "vla"]), default="standard", show_default=True,
              help="Task pool of the healthy run: the standard curriculum, or VLA-shaped tasks whose families, "
                   "horizons and visual variations are slice labels (the single-slice faults set it themselves).")
def run_cmd(fault: str, estimator: str, out: Path, seed: int, steps: int, onset: int, fmt: str,
            knobs: tuple[str, ...], pool: str) -> None:
    """Train the lab policy with ESTIMATOR and FAULT and write its recording into OUT."""
    from advcore.lab.faults import Setting
    from advcore.lab.record import write
    from advcore.lab.run import LabConfig, run

    overrides: dict[str, str] = {}
    for item in knobs:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.UsageError(f"`--knob {item}`: expected NAME=VALUE, e.g. kl_coef=5")
        overrides[name.strip()] = value.strip()
    try:
        result = run(LabConfig(estimator=estimator, fault=fault, seed=seed, steps=steps, onset=onset,
                               knobs=overrides, base=Setting(pool=pool)))
        files = write(result, out, fmt=fmt)
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None
    s = result.steps
    t = result.truth
    click.echo(f"lab run: fault {t['fault'] or 'none'} (stage {t['stage'] or '-'}, onset step {t['onset_step'] or '-'})"
               f", estimator {estimator}, seed {seed}, {s.height} steps")
    click.echo(f"  held-out success {s['heldout_success'][0]:.3f} -> {s['heldout_success'][-1]:.3f}, "
               f"reward {s['reward_mean'][0]:.3f} -> {s['reward_mean'][-1]:.3f}")
    for role, path in files.items():
        click.echo(f"  {role:8} {path}")


@lab.command("compare")
@click.option("--fault", required=True, help="The fault (see `advcore lab list`).")
@click.option("--mitigation", required=True, help="The mitigation to test against it (see `advcore lab list`).")
@click.option("--estimator", default=None, help="Advantage estimator (default: grpo, or the fault's first).")
@click.option("--seeds", default=3, show_default=True, type=click.IntRange(min=2), help="Seeds 0..N-1 per arm.")
@click.option("--steps", default=80, show_default=True, help="Training steps.")
@click.option("--onset", default=30, show_default=True, help="First step with the fault (and the mitigation) on.")
@click.option("--format", "fmt", type=click.Choice(["human", "json"]), default="human", show_default=True,
              help="Side-by-side tables for people, or one JSON document.")
def compare_cmd(fault: str, mitigation: str, estimator: str | None, seeds: int, steps: int, onset: int,
                fmt: str) -> None:
    """Test MITIGATION as a hypothesis about FAULT: both arms (and a healthy reference) at matched
    rollout and update budgets over several seeds; the verdict counts the mitigation only if the
    signal is restored and held-out success improves (for a single-slice fault: held-out success
    improves in every affected slice beyond the seed spread and regresses in none)."""
    import json

    from advcore.lab.compare import compare, render

    try:
        result = compare(fault, mitigation, estimator=estimator, seeds=seeds, steps=steps, onset=onset)
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=1))
        return
    render(result)
