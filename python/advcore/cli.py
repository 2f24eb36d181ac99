"""The ``advcore`` command line (click)."""

from __future__ import annotations

import difflib
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from advcore._core import __version__
from advcore.errors import AdvcoreError
from advcore.ingest.formats import BY_NAME as FORMATS


#: Options several commands take, defined once.
_METRIC_MAP = click.option("--metric-map", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                           help="CSV of extra aliases (trainer,key,canonical,versions,note); its rows win.")
_JOBS = click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: one per CPU).")
_ROLLOUT_N = click.option("--rollout-n", type=click.IntRange(min=1), default=None, metavar="N",
                          help="Samples per prompt, for per-sample dumps whose prompts cannot tell the groups apart "
                               "(groups are then consecutive blocks of N).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="advcore")
def cli() -> None:
    """Follow the learning signal of a policy-gradient RL run from the rewards to the update."""


@cli.command()
@click.option("--fault", default="reward_scale", show_default=True,
              help="The collapse-lab fault run end to end (see `advcore lab list`).")
@click.option("--mitigation", default=None, help="The mitigation tested against it (default: the first that targets it).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the lab recording in this folder (default: a temporary folder, removed afterwards).")
@click.option("--log", "shipped_log", is_flag=True,
              help="Instead, scan the example TRL GRPO log shipped with advcore (its signal dies by saturation).")
@click.option("--stats", "stage_stats", is_flag=True,
              help="Instead, print the stage statistics of a generated GRPO batch (the statistics core).")
@click.option("--prompts", default=512, show_default=True, help="With --stats: groups (prompts) in the batch.")
@click.option("--group-size", "-G", default=8, show_default=True, help="With --stats: completions per prompt.")
@click.option("--seed", default=0, show_default=True, help="Seed of the lab run (with --stats: of the batch).")
@click.pass_context
def demo(ctx: click.Context, fault: str, mitigation: str | None, out: Path | None, shipped_log: bool,
         stage_stats: bool, prompts: int, group_size: int, seed: int) -> None:
    """Run one collapse-lab fault end to end: record it, scan the recording (stage trace and verdict
    against the ground truth), and test a mitigation for it and one for another cause."""
    from advcore.demo import (
        DEMO_RUN,
        default_mitigations,
        render,
        render_lab_demo,
        run_demo,
        run_lab_demo,
    )

    if stage_stats:
        render(run_demo(prompts=prompts, group_size=group_size, seed=seed))
        return
    if shipped_log:
        click.echo(f"advcore scan {DEMO_RUN}  (an example TRL GRPO log shipped with advcore)\n")
        ctx.invoke(scan, paths=(str(DEMO_RUN),))
        return
    import tempfile

    try:
        right, wrong = default_mitigations(fault)
        with tempfile.TemporaryDirectory(prefix="advcore-demo-") as tmp:
            folder = out if out is not None else Path(tmp) / fault
            chosen = mitigation or right
            result = run_lab_demo(folder, fault=fault, mitigation=chosen, wrong=right if chosen == wrong else wrong,
                                  seed=seed)
            render_lab_demo(result, kept=out is not None)
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None


_SEVERITY_RANK = {"info": 0, "warn": 1, "error": 2}


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["human", "json", "markdown"]), default="human",
              show_default=True, help="Output for people (rich tables) or machines.")
@click.option("--fail-on", type=click.Choice(["none", "warn", "error"]), default="none", show_default=True,
              help="For CI: exit with 2 when an input is missing or unreadable, else with 1 when a finding of at "
                   "least this severity is raised.")
@click.option("--per-file", is_flag=True,
              help="Judge every file on its own (default: the files of one run in one folder are judged together).")
@click.option("--set", "settings", multiple=True, metavar="ID.KNOB=VALUE", help="Re-tune a detector knob.")
@click.option("--only", multiple=True, metavar="ID", help="Run only these detectors (repeat, or comma-separated).")
@click.option("--skip", multiple=True, metavar="ID", help="Do not run these detectors (repeat, or comma-separated).")
@_METRIC_MAP
@click.option("--log-format", type=click.Choice(sorted(FORMATS)), default=None, metavar="NAME",
              help=f"Force a log format instead of detecting it: {', '.join(sorted(FORMATS))}.")
@_ROLLOUT_N
@_JOBS
@click.option("--notify", metavar="URL", default=None,
              help="POST a summary of the scan (JSON with a Slack-compatible 'text') to this webhook URL.")
@click.option("--follow-links", is_flag=True,
              help="Follow symbolic links found in a folder or by a glob wherever they lead (default: only to "
                   "targets inside the scanned folders; the others are listed on stderr).")
@click.option("--max-line-length", "max_line", type=click.IntRange(min=1), default=None, metavar="CHARS",
              help="Console lines longer than this are reported as errors of their run and skipped, not parsed "
                   "[default: 262144].")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FLEET",
              help="Write the fleet table (one row per run: verdict, headline, onset, findings, errors) to this "
                   ".parquet or .csv file and print a summary instead of every run's report (--format is then "
                   "not used). Folders unchanged since the last such scan are not read again (a cache in the "
                   "user's cache directory).")
@click.option("--no-cache", is_flag=True, help="With --out: read every folder again, and do not keep its rows.")
@click.option("--engine", type=click.Choice(["auto", "local", "ray", "dask"]), default="auto", show_default=True,
              help="With --out: where the folders are scanned. auto: a Ray cluster when one is reachable "
                   "($RAY_ADDRESS, or inside a Ray job), else local processes; dask: $DASK_SCHEDULER_ADDRESS, "
                   "else a local cluster of --jobs workers.")
def scan(paths: tuple[str, ...], fmt: str, fail_on: str, per_file: bool, settings: tuple[str, ...],
         only: tuple[str, ...], skip: tuple[str, ...], metric_map: Path | None, log_format: str | None,
         rollout_n: int | None, jobs: int | None, notify: str | None, follow_links: bool,
         max_line: int | None, out: Path | None, no_cache: bool, engine: str) -> None:
    """Diagnose the training logs in PATHS (files, folders searched recursively, globs, tracking-store
    URIs such as sqlite:///mlflow.db).

    Exit codes: 0; 1 when no PATH matched a file; with --fail-on, 2 when a PATH matched nothing or a
    file or folder could not be read, else 1 when a finding of at least that severity was raised; 2
    also for a usage error; 141 when the output's reader closed the pipe early (| head).

    A symbolic link inside a scanned folder is followed only to a target inside the scanned folders
    (--follow-links: anywhere); no folder is walked twice, so link loops end.
    """
    from rich.console import Console
    from rich.progress import Progress

    from advcore.detectors import parse_settings
    from advcore.report import render_human, render_json, render_markdown
    from rich.markup import escape

    from advcore._escape import printable
    from advcore.model import Run
    from advcore.scan import ScanOptions, collect_paths, is_quiet_miss, judge
    from advcore.scan import scan as run_scan

    try:
        options = ScanOptions(_ids(only), _ids(skip), parse_settings(settings), metric_map, log_format, rollout_n,
                              per_file, max_line)
        _check_options(options)
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None
    collected = collect_paths(paths, follow_links=follow_links)
    files, unmatched, explicit = collected.files, collected.unmatched, collected.explicit
    err = Console(stderr=True)
    for link, to in collected.links_skipped:
        err.print(f"[yellow]not followed[/yellow] {escape(printable(str(link)))} -> {escape(printable(to))} "
                  "(a symbolic link, or a path through one, out of the scanned folders; --follow-links follows it)", highlight=False)
    # A folder that cannot be listed, and an input that does not exist or holds nothing to scan, are
    # runs that could not be read: reported in every format, so a script sees status "unreadable".
    unlistable = [judge(Run.failed(folder, f"the folder could not be listed: {why}"), options)
                  for folder, why in collected.unlistable]
    unlistable += [judge(Run.failed(target, _nothing_at(target)), options) for target in unmatched]
    if out is not None:
        try:
            _scan_fleet(files, options, out, jobs=jobs, cache=not no_cache, unlistable=unlistable, explicit=explicit,
                        fail_on=fail_on, err=err, engine=engine)
        except AdvcoreError as e:
            raise click.UsageError(str(e)) from None
        return
    show_progress = fmt == "human" and len(files) > 20 and err.is_terminal
    if show_progress:
        with Progress(console=err, transient=True) as bar:
            task = bar.add_task("scanning", total=len(files))
            reports = run_scan(files, options, jobs=jobs, progress=lambda k: bar.advance(task, k))
    else:
        reports = run_scan(files, options, jobs=jobs)
    # notes and notebooks found in a folder leave the report when nothing is read from them, unless
    # nothing at all was read: then each says why (a console log of a format we do not know)
    kept = [r for r in reports if not is_quiet_miss(r, explicit)]
    reports = (kept or reports) + unlistable
    if fmt == "json":
        click.echo(render_json(reports))
    elif fmt == "markdown":
        click.echo(render_markdown(reports), nl=False)
    else:
        render_human(reports, Console())
    if notify is not None:
        _notify(notify, reports, err)
    _exit(fail_on, scanned=bool(files or collected.unlistable), statuses=[r.verdict.status for r in reports],
          severities=[f.severity for r in reports for f in r.findings])



def _scan_fleet(files: list[Path], options: Any, out: Path, *, jobs: int | None, cache: bool, unlistable: list[Any],
                explicit: set[Path], fail_on: str, err: Any, engine: str) -> None:
    """``advcore scan --out FLEET``: the fleet table written to ``out``, a summary on stdout; the inputs
    that matched nothing and the folders that could not be listed are rows of their own."""
    import polars as pl
    from rich.progress import Progress

    from advcore.fleet import FleetCache, default_cache, fleet_frame, fleet_row, scan_fleet, write_fleet
    from advcore.report.render import totals_of

    if out.suffix.lower() not in (".parquet", ".csv"):
        raise click.BadParameter(f"expected a .parquet or .csv file, got {out.name!r}", param_hint="--out")
    if not out.parent.is_dir():
        raise click.BadParameter(f"the folder {out.parent} does not exist", param_hint="--out")
    store = FleetCache(default_cache()) if cache else None
    try:
        with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task("scanning", total=len(files))
            rows = scan_fleet(files, options, jobs=jobs, cache=store, progress=lambda k: bar.advance(task, k),
                              explicit=explicit, engine=engine)
    finally:
        if store is not None:
            store.close()
    frame = fleet_frame(rows + [{**fleet_row(r), "cached": False} for r in unlistable])
    write_fleet(frame, out)
    cached = int(frame["cached"].sum())
    click.echo(f"{totals_of(frame['status'].to_list())} ({cached} read from the cache, {frame.height - cached} "
               f"scanned); the fleet table is in {out}")
    for row in frame.filter(pl.col("status") == "lost").iter_rows(named=True):
        onset = f" since step {row['onset_step']}" if row["onset_step"] is not None else ""
        click.echo(f"  {row['path']}: stage {row['stage'] or '-'} {row['headline']}{onset}")
    _exit(fail_on, scanned=bool(files or unlistable), statuses=frame["status"].to_list(),
          severities=[f["severity"] for fs in frame["findings"].to_list() for f in fs])


def _exit(fail_on: str, *, scanned: bool, statuses: list[str], severities: list[str]) -> None:
    """Raise the scan's exit code (see ``advcore scan --help``): 1 (2 with ``--fail-on``) when nothing
    was scanned; with ``--fail-on``, 2 when a run is unreadable (an input that matched nothing is an
    unreadable run), else 1 when a finding reaches its severity."""
    if not scanned:
        raise SystemExit(1 if fail_on == "none" else 2)  # every input is missing
    if fail_on == "none":
        return
    if "unreadable" in statuses:
        raise SystemExit(2)
    if max((_SEVERITY_RANK[s] for s in severities), default=-1) >= _SEVERITY_RANK[fail_on]:
        raise SystemExit(1)


def _notify(url: str, reports: Any, err: Any) -> None:
    """POST the scan's summary to ``url`` (a failure is reported on stderr; the exit code is the scan's)."""
    from rich.markup import escape

    from advcore.alerts import post_json
    from advcore.diagnose import since_step
    from advcore.report.render import totals

    lost = [r for r in reports if r.verdict.status == "lost"]
    lines = [f"advcore scan: {totals(reports)}"]
    lines += [f"- {r.run.path}: stage {r.verdict.stage} {r.verdict.headline or ''}"
              + (f" {since_step(r.verdict.onset, r.verdict.onset_before_log)}" if r.verdict.onset is not None else "")
              for r in lost[:20]]
    text = "\n".join(lines)
    runs = [{"path": r.run.path, "status": r.verdict.status, "stage": r.verdict.stage,
             "headline": r.verdict.headline, "onset_step": r.verdict.onset} for r in reports]
    try:
        post_json(url, {"text": text, "content": text, "runs": runs})
    except Exception as e:  # noqa: BLE001 (the scan's result stands whatever the webhook does)
        err.print(f"[yellow]--notify failed[/yellow] ({type(e).__name__}: {escape(str(e)[:200])})", highlight=False)


def _nothing_at(target: str) -> str:
    """Why ``target`` gave no file to scan, for its unreadable run."""
    path = Path(target)
    if any(c in target for c in "*?["):
        return "no file matches this pattern"
    if not path.exists():
        near = difflib.get_close_matches(path.name, [p.name for p in path.parent.iterdir()] if path.parent.is_dir()
                                         else [], n=1)
        return "no such file or folder" + (f" (did you mean {str(path.parent / near[0])!r}?)" if near else "")
    return "no training log found in this folder (code, configuration and notes are skipped)"


def _ids(given: tuple[str, ...]) -> tuple[str, ...]:
    """Detector IDs given as repeated options or comma-separated (``--only A,B``), upper-cased as
    ``advcore explain`` takes them."""
    return tuple(i.strip().upper() for g in given for i in g.split(",") if i.strip())


def _check_options(options: Any) -> None:
    """Validate --only/--skip/--set against the registry, and --metric-map, before any file is read."""
    import math
    import re

    from advcore._escape import described, excerpt, printable
    from advcore.detectors import REGISTRY
    from advcore.ingest import load_aliases

    for det_id in (*options.only, *options.skip, *options.settings):
        if det_id not in REGISTRY:
            raise AdvcoreError(f"unknown detector {det_id!r} (known: {', '.join(REGISTRY)})")
    for det_id, knobs in options.settings.items():
        for knob, value in knobs.items():
            # A NaN threshold compares false with everything: it would silently turn the detector off.
            try:
                finite = math.isfinite(float(value))
            except (TypeError, ValueError):
                finite = True  # not a number at all: the knob's own validation says so
            if not finite:
                raise AdvcoreError(f"`--set {det_id}.{knob}`: expected a finite number, got {excerpt(str(value))}")
        try:
            REGISTRY[det_id].resolve(knobs)
        except (ValueError, OverflowError) as e:
            if isinstance(e, AdvcoreError):
                raise
            raise AdvcoreError(f"`--set {det_id}`: {described(e)}") from None
    if options.metric_map is not None:
        try:
            load_aliases(options.metric_map)
        except (ValueError, KeyError, UnicodeDecodeError, re.error) as e:
            raise AdvcoreError(f"--metric-map: {printable(str(e))}") from None


@cli.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--step", "at_step", type=int, default=None,
              help="The step whose stage table is shown (the human format; default: the last).")
@click.option("--format", "fmt", type=click.Choice(["human", "json"]), default="human", show_default=True,
              help="The stage table and verdict for people, or the scan document for machines.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the whole trace (every step, stage, slice and statistic; long form) to this Parquet file.")
@_ROLLOUT_N
@click.option("--set", "settings", multiple=True, metavar="ID.KNOB=VALUE", help="Re-tune a detector knob.")
def trace(path: Path, at_step: int | None, fmt: str, out: Path | None, rollout_n: int | None,
          settings: tuple[str, ...]) -> None:
    """Trace a per-sample dump stage by stage (reward -> baseline/return -> advantage) and diagnose it.

    PATH is a per-sample file: the canonical long format (step, group, reward, adv, ...; Parquet
    or JSONL), a verl rollout_data_dir JSONL, a TRL completions Parquet (or its completions/
    folder), or a DAPO-VLM rollout_results.md.
    """
    from rich.console import Console
    from rich.markup import escape

    from advcore.detectors import parse_settings
    from advcore.report import render_human, render_json, render_trace
    from advcore._escape import printable
    from advcore.scan import ScanOptions, scan_file

    try:
        options = ScanOptions(settings=parse_settings(settings), rollout_n=rollout_n)
        _check_options(options)
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None
    if out is not None and not out.parent.is_dir():  # before the work, not after it
        raise click.BadParameter(f"the folder {printable(str(out.parent))} does not exist", param_hint="--out")
    report = scan_file(path, options)
    run = report.run
    if run.trace is None or run.trace.is_empty():
        why = "; ".join(str(e) for e in run.errors) or f"it reads as a per-step log ({run.format}): use advcore scan"
        raise click.ClickException(printable(f"{path} is not a per-sample dump: {why}"))
    steps = run.trace["step"].unique(maintain_order=True).to_list()
    if at_step is not None and at_step not in steps:
        raise click.BadParameter(f"step {at_step} is not in the dump (steps {steps[0]}..{steps[-1]})",
                                 param_hint="--step")
    if out is not None:
        try:
            run.trace.write_parquet(out)
        except OSError as e:
            raise click.ClickException(f"--out {printable(str(out))}: could not be written ({e.strerror or e})") from None
    if fmt == "json":
        click.echo(render_json([report]))
        return
    console = Console()
    render_trace(run.trace, steps[-1] if at_step is None else at_step, console)
    if "zero_variance_group_frac" not in run.metrics:
        why = run.metadata.get("groups", "no group ids")
        console.print(f"[yellow]no groups[/yellow] ({escape(str(why))}): within-group statistics are left out; "
                      "--rollout-n N groups consecutive blocks of N samples", highlight=False)
    render_human([report], console)


@cli.command()
@click.argument("detector_id", required=False)
@click.option("--full", is_flag=True, help="Also how the detector decides and its knobs (with their calibration runs).")
def explain(detector_id: str | None, full: bool) -> None:
    """Print the card of a detector (what it means, what it looks like, what to try; --full: how it
    decides and its knobs); without an ID, list the detectors."""
    from advcore.detectors import REGISTRY
    from advcore.detectors.cards import render_card

    if detector_id is None:
        width = max(len(i) for i in REGISTRY)
        for listed in REGISTRY.values():
            head = f"{listed.id:{width}} {listed.severity:5} stage {listed.stage:4} "
            click.echo(textwrap.fill(listed.summary, 80, initial_indent=head, subsequent_indent=" " * len(head)))
        click.echo("\nThe severity is a detector's highest: a finding says its own (DEAD_FROM_START's no-rise sign "
                   "is a warning,\na sharpening entropy is info). `advcore explain ID` prints a detector's card.")
        return
    spec = REGISTRY.get(detector_id.upper())
    if spec is None:
        near = difflib.get_close_matches(detector_id.upper(), list(REGISTRY), n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        raise click.UsageError(f"unknown detector {detector_id!r} ({hint}known: {', '.join(REGISTRY)})")
    card = render_card(spec, full=full)
    if not sys.stdout.isatty():  # piped or redirected: the card's markdown as written (docs/detectors/)
        click.echo(card, nl=False)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(card))


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, metavar="REPORT.html",
              help="The page to write: one self-contained HTML file.")
@click.option("--png", "png_dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Also write each figure as a PNG into DIR.")
@_METRIC_MAP
@_ROLLOUT_N
@_JOBS
def report(paths: tuple[str, ...], out: Path, png_dir: Path | None, metric_map: Path | None,
           rollout_n: int | None, jobs: int | None) -> None:
    """Draw the runs in PATHS (files, folders, globs) as one HTML page: the verdict first, then the signal
    stage by stage over steps with each finding marked where it started."""
    from advcore.report.html import render_html
    from advcore.scan import ScanOptions, collect_paths, is_quiet_miss
    from advcore.scan import scan as scan_runs

    collected = collect_paths(list(paths))
    if not collected.files:
        raise click.UsageError(f"nothing to draw: {', '.join(collected.unmatched or paths)} matched no file")
    options = ScanOptions(metric_map=metric_map, rollout_n=rollout_n, keep_trace=True)
    reports = [r for r in scan_runs(collected.files, options, jobs=jobs) if not is_quiet_miss(r, collected.explicit)]
    if png_dir is not None:
        png_dir.mkdir(parents=True, exist_ok=True)
    try:
        page = render_html(reports, title=f"advcore report: {', '.join(paths)}", png_dir=png_dir, jobs=jobs)
    except AdvcoreError as e:
        raise click.ClickException(str(e)) from None
    out.write_text(page, encoding="utf-8")
    lost = sum(r.verdict.status == "lost" for r in reports)
    click.echo(f"{out}: {len(reports)} run(s), {lost} with a lost learning signal ({len(page) / 1e6:.1f} MB)")


@cli.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--format", "fmt", type=click.Choice(["human", "json"]), default="human", show_default=True)
@_METRIC_MAP
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="PAGE.html",
              help="Also write the two runs side by side as one HTML page (needs advcore[report]).")
def compare(run_a: str, run_b: str, fmt: str, metric_map: Path | None, out: Path | None) -> None:
    """Where RUN_B parts from RUN_A (a file or a folder each): aligned on their common steps, per stage
    the first step where the two differ beyond their own noise, and the stage that parted first."""
    import json

    from rich.console import Console
    from rich.table import Table

    from advcore.compare import compare_runs
    from advcore.scan import ScanOptions, collect_paths, is_quiet_miss
    from advcore.scan import scan as scan_runs

    def one(target: str) -> Any:
        collected = collect_paths([target])
        reports = [r for r in scan_runs(collected.files, ScanOptions(metric_map=metric_map))
                   if not is_quiet_miss(r, collected.explicit)]
        if len(reports) != 1:
            found = ", ".join(r.run.path for r in reports[:4]) or "no run"
            raise click.UsageError(f"{target}: expected one run, found {len(reports)} ({found}); name one file")
        return reports[0]

    a, b = one(run_a), one(run_b)
    result = compare_runs(a.run, b.run)
    if out is not None:
        from advcore.report.html import render_comparison_html

        try:
            out.write_text(render_comparison_html(a, b, result), encoding="utf-8")
        except AdvcoreError as e:
            raise click.ClickException(str(e)) from None
    if fmt == "json":
        click.echo(json.dumps({**result.to_json(), "verdicts": [a.verdict.to_json(), b.verdict.to_json()]}, indent=2))
        return
    console = Console(highlight=False)
    first = result.first
    for tag, r in (("A", a), ("B", b)):
        console.print(f"{tag} {r.run.path}: {r.verdict.status.replace('_', ' ')}"
                      + (f", stage {r.verdict.stage}" if r.verdict.stage else ""))
    console.print(f"{result.common_steps} common steps; " + (
        f"they part first at stage {first.stage}, step {first.step} ({first.metric})" if first is not None else
        "no signal parts beyond its noise"))
    table = Table(box=None, pad_edge=False)
    for name in ("stage", "metric", "parts at", "B - A at start", "B - A after"):
        table.add_column(name, justify="left" if name in ("stage", "metric") else "right")
    for d in result.divergences:
        table.add_row(d.stage, d.metric, "-" if d.step is None else str(d.step) + (" (nan)" if d.nonfinite else ""),
                      f"{d.offset:.3g}", "" if d.step is None else f"{d.after:.3g}")
    console.print(table)


@cli.command()
@click.option("--success", "-p", "success", type=click.FloatRange(0.0, 1.0), multiple=True, metavar="P",
              help="A prompt's success rate (repeat for several prompts).")
@click.option("--success-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Per-prompt success rates: one per line, or a CSV with a success (success_rate, pass_rate, "
                   "accuracy, p) column.")
@click.option("--group-size", "-G", "group_sizes", type=click.IntRange(min=1), multiple=True, metavar="G",
              help="Completions per prompt (repeat to compare; default 4, 8, 16, 32).")
@click.option("--prompts", type=click.IntRange(min=1), default=64, show_default=True,
              help="Prompts (groups) per batch.")
@click.option("--target-tied", type=click.FloatRange(0.0, 1.0), default=None, metavar="SHARE",
              help="Also name the smallest group size whose expected tied share is at most SHARE.")
@click.option("--format", "fmt", type=click.Choice(["human", "json"]), default="human", show_default=True)
def plan(success: tuple[float, ...], success_file: Path | None, group_sizes: tuple[int, ...], prompts: int,
         target_tied: float | None, fmt: str) -> None:
    """Before a GRPO run: the share of groups that will tie (every completion rewarded alike, so no
    advantage) for binary rewards, by group size.

    A prompt solved with probability p ties a group of G with chance p^G + (1-p)^G. Give the success
    rates of your prompts (a base model's pass rates, say) with --success or --success-file."""
    import dataclasses
    import json

    import numpy as np

    from advcore import plan as planner

    if not success and success_file is None:
        raise click.UsageError("give the prompts' success rates: --success P (repeat) or --success-file FILE")
    try:
        rates = np.concatenate([np.asarray(success, dtype=float),
                                planner.read_success_rates(success_file) if success_file is not None else []])
        plans = [planner.plan(rates, g, prompts) for g in (group_sizes or (4, 8, 16, 32))]
        smallest = planner.smallest_group(rates, target_tied) if target_tied is not None else None
    except AdvcoreError as e:
        raise click.UsageError(str(e)) from None
    if fmt == "json":
        click.echo(json.dumps({"prompts_given": int(rates.size), "mean_success": float(rates.mean()),
                               "plans": [dataclasses.asdict(pl_) for pl_ in plans],
                               **({"target_tied": target_tied, "smallest_group_size": smallest}
                                  if target_tied is not None else {})}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    floor = plans[0].floor
    console.print(f"{rates.size} prompt success rate(s), mean {rates.mean():.3g}; {prompts} prompts per batch"
                  + (f"; {floor:.0%} of prompts never or always solved: tied at any group size" if floor else ""))
    table = Table(box=None, pad_edge=False)
    for name in ("G", "completions", "tied groups", "tied, 5-95 % of batches", "groups with an advantage"):
        table.add_column(name, justify="right")
    for pl_ in plans:
        table.add_row(str(pl_.group_size), str(pl_.completions), f"{pl_.tied_share:.1%}",
                      f"{pl_.tied_share_p05:.0%} - {pl_.tied_share_p95:.0%}", f"{pl_.informative_groups:.1f}")
    console.print(table)
    if target_tied is not None:
        console.print(f"tied share <= {target_tied:.1%}: " + (
            f"G = {smallest}" if smallest is not None else
            f"no group size reaches it (the floor is {floor:.1%}: drop or replace the prompts never or always "
            "solved)"))


from advcore.lab.cli import lab

cli.add_command(lab)  # advcore lab run / list: the collapse lab


#: The exit code when the output's reader closed the pipe early (128 + SIGPIPE, as a shell reports it).
PIPE_CLOSED = 141


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``advcore`` script; returns the exit code."""
    was_null = _stdout_is_null()
    try:
        cli.main(args=argv, prog_name="advcore", standalone_mode=False)
    except click.exceptions.Abort:
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except SystemExit as e:
        # a reader that closed the pipe (advcore scan ... | head): click then wraps stdout, rich points it
        # at the null device, and both exit 1, the code of "nothing to scan"
        closed = e.code == 1 and not was_null and _stdout_is_null()
        if type(sys.stdout).__name__ == "PacifyFlushWrapper" or closed:  # by name: click deprecates the class
            return PIPE_CLOSED
        return e.code if isinstance(e.code, int) else 1
    return 0


def _stdout_is_null() -> bool:
    """Whether standard output is the null device."""
    import os

    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False
