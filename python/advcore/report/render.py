"""Turn :class:`advcore.scan.RunReport` values into text for people (rich) and machines."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from advcore._escape import printable
from advcore.detectors import GROUP_BASELINE, PER_SAMPLE, REGISTRY, NotEvaluable, environment_run
from advcore.diagnose import since_step
from advcore.model import JUDGED_APART
from advcore.stages import stage_last

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from advcore.model import Run
    from advcore.scan import RunReport

__all__ = ["metrics_text", "not_evaluable_lines", "reading_notes", "render_human", "render_json", "render_markdown",
           "render_trace", "step_note", "steps_text", "totals", "verdict_notes"]

# Everything a report shows that advcore did not write itself (file names, metric keys, quoted
# lines, messages that embed them) passes through _safe (human) or _md / _cell_md (markdown):
# a log's control characters are shown escaped, never sent to the terminal.

_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan"}
_STAGES = "R reward (no contrast, or it measures something else), A credit assignment (baseline, returns), T batch transformation (normalization, clipping, grouping), U policy update"
#: Suggestions shown per run in the human report; the cards hold the rest.
_TRIES_SHOWN = 4
#: Read errors listed per run in the human and markdown reports (the JSON document lists them all).
ERRORS_SHOWN = 20
_E = TypeVar("_E")


#: Slices not judged that a run's human output names at most.
_SLICES_SHOWN = 5

def _shown_errors(errors: Sequence[_E]) -> tuple[Sequence[_E], str | None]:
    """The first :data:`ERRORS_SHOWN` of a run's read errors, and a line counting the others (or None)."""
    more = len(errors) - ERRORS_SHOWN
    return errors[:ERRORS_SHOWN], (f"... and {more} more (advcore scan --format json lists every one)"
                                   if more > 0 else None)


def _value(v: Any) -> str:
    """An evidence value as a reader wants it: floats to 4 significant digits, also inside a list
    (``[1.5, 2.25]``) or a mapping (``{entropy: 2.724}``), not Python's repr."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if v is None:
        return "n/a"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _evidence(evidence: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in evidence.items())


def _safe(text: object) -> str:
    """``text`` for rich: control characters escaped (:func:`advcore._escape.printable`), then markup."""
    from rich.markup import escape

    return escape(printable(str(text)))


def _md(text: object) -> str:
    """``text`` for a markdown line: control characters escaped, ``<`` backslash-escaped (GitHub would
    take ``reward/<name>`` for an HTML tag; ``\\<`` renders as ``<`` and still reads as one in the raw
    text, where an entity ``&lt;`` did not)."""
    return printable(str(text)).replace("<", "\\<")


def _cell_md(text: object) -> str:
    """``text`` for a markdown table cell: as :func:`_md`, and ``|`` escaped."""
    return _md(text).replace("|", "\\|")


def render_json(reports: Sequence[RunReport]) -> str:
    """The SPEC section 9 document."""
    from advcore.scan import document

    return json.dumps(document(reports), indent=2, allow_nan=False, default=_json_default)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _indented(markup: str, indent: int, style: str = "", hang: int = 0, width: int = 80) -> Any:
    """``markup`` wrapped to ``width`` columns and indented by ``indent`` on every line (and by
    ``hang`` more after the first), without trailing spaces."""
    from rich.text import Text

    plain = Text.from_markup(markup).plain
    wrapped = textwrap.fill(plain, width=max(20, width), initial_indent=" " * indent,
                            subsequent_indent=" " * (indent + hang), break_long_words=False, break_on_hyphens=False)
    return Text(wrapped, style=style)


def _headed(head_markup: str, markup: str, width: int) -> Any:
    """``head: text`` wrapped to ``width`` columns without trailing spaces, the head keeping its style."""
    from rich.text import Text

    head = Text.from_markup(head_markup)
    text = _indented(f"{head.plain}: {markup}", 0, width=width)
    for span in head.spans:
        text.stylize(span.style, span.start, span.end)
    return text


#: The detectors of what only a language-model or VLA trainer has, a group filter (SimpleVLA-RL's and DAPO's
#: accuracy filter) and a length cap on completions: on a control or game task's run they are named on one
#: line, not each with what it needs (a newcomer read "needs response_length_mean" on a MAPPO run as a gap).
_LANGUAGE_ONLY = ("FILTER_STARVATION", "ALWAYS_FILTERED", "TRUNCATION_REWARD")


def not_evaluable_lines(outcomes: Sequence[NotEvaluable], run: Run | None = None) -> list[str]:
    """One line per detector that lacked a metric, the ones that need per-sample data on one line; on a
    control or game task's run (:func:`~advcore.detectors.environment_run`), the detectors of a group filter
    and a length cap on one line too."""
    per_sample = [n.id for n in outcomes if any(PER_SAMPLE in need for need in n.needs)]
    filters = [n.id for n in outcomes if n.id in _LANGUAGE_ONLY] if run is not None and environment_run(run) else []
    grouped = [n.id for n in outcomes if n.needs == (GROUP_BASELINE,)]
    lines = [n.describe() for n in outcomes if n.id not in (*per_sample, *filters, *grouped)]
    if filters:
        lines.append(f"{', '.join(filters)}: judge a language-model or VLA trainer's group filter or length cap, "
                     "which this run's trainer does not have")
    if grouped:
        lines.append(f"{', '.join(grouped)}: need {GROUP_BASELINE}")
    if per_sample:
        lines.append(f"{', '.join(per_sample)}: {PER_SAMPLE}")
    return lines


def _fit(path: str, width: int) -> str:
    """``path`` shortened from the left to ``width`` characters, so that the file name stays visible."""
    return path if len(path) <= width or width < 8 else "…" + path[len(path) - width + 1:]


def _middle(path: str, width: int) -> str:
    """``path`` shortened in the middle to ``width`` characters: its first folder (the run's, when it fits)
    and its tail (the file name) stay, so a table cell never breaks it mid-word."""
    if len(path) <= width or width < 8:
        return path
    folder = path.split("/", 1)[0] + "/" if "/" in path else ""
    head = len(folder) if 0 < len(folder) <= width - 6 else (width - 1) // 2  # the whole folder when it fits
    return path[:head] + "…" + path[len(path) - (width - 1 - head):]


def steps_text(run: Run) -> str:
    """``335 logged steps (101 to 435, resumed from step 100)``: the count of logged steps (rows: a log written
    every 5 optimizer steps over 250 has 50), the first and last logged step (in the
    reader's ``metadata["step_unit"]`` when it knows the axis: ``0 to 32702464 frames``), and
    a resume the reader saw (verl's console says where it resumed from); ``80 logged steps in 4 phases`` when
    the step counter restarts or a curriculum's lesson moves on."""
    text = f"{run.steps} logged {'step' if run.steps == 1 else 'steps'}"
    steps = run.frame["step"].drop_nulls() if "step" in run.frame.columns else None
    phases = run.frame["phase"].n_unique() if "phase" in run.frame.columns else 1
    if phases > 1:
        # the step counter restarts (a curriculum's stages, or runs appended to one file), or the lesson moved on
        why = "a curriculum lesson each" if run.metadata.get("phases_from") == "lesson" else "the step counter restarts"
        return text + f" in {phases} phases ({why}; findings name their phase)"
    if steps is not None and len(steps) > 1:
        lo, hi = int(steps.min()), int(steps.max())  # type: ignore[arg-type]
        resumed = run.metadata.get("resumed_from_step")
        unit = step_unit(run)
        text += f" ({lo} to {hi}{f' {unit}' if unit else ''}" + (
            f", resumed from step {resumed}" if resumed is not None else "") + ")"
    return text


def step_unit(run: Run) -> str | None:
    """What the reader knows the step axis counts (rl_games' ``frames``, SB3's ``environment steps``), from its
    ``metadata["step_unit"]`` (one unit over every joined part), else None."""
    units = {str(u) for p in (run.metadata.get("parts") or [run.metadata]) if (u := p.get("step_unit"))}
    return units.pop() if len(units) == 1 else None


def _span(run: Run) -> str:
    """What the signal-by-stage line compares: the run's early and late windows, over every phase when
    the step counter restarts (the findings are judged phase by phase)."""
    # medians of windows, not two single steps (a newcomer set it against the demo's step-29 -> step-80 table)
    span = "first fifth of the steps -> last fifth; medians, or means for shares of groups"
    return f"{span}, over every phase" if "phase" in run.frame.columns else span


def _levels(r: RunReport) -> str:
    """The verdict's signal by stage on one line (``R reward range 1 -> 1  |  U grad_norm ...``)."""
    return "  |  ".join(level.describe() for level in r.verdict.signal)


#: Unread column names a report lists before "and N more".
_UNREAD_SHOWN = 8


def metrics_text(run: Run) -> str:
    """The canonical metrics, each with the key it was read from where that differs
    (``truncated_frac (truncation_rate)``), the keys that fill its gaps (``response_length_mean
    (completion_length, else completions/mean_length)``), and the built-in table's scale where it has
    one (``entropy (-1 x train/entropy_loss)``: SB3 logs minus the entropy)."""
    from advcore.ingest import load_aliases
    from advcore.ingest.formats import PER_SAMPLE as PER_SAMPLE_FORMATS

    if run.format in PER_SAMPLE_FORMATS:  # our per-step statistics of the samples, not the trainer's metrics
        read = [name for prefix, name in (("reward", "rewards"), ("adv", "advantages"), ("value", "values"),
                                          ("return", "returns")) if any(m.startswith(prefix) for m in run.metrics)]
        samples = run.metadata.get("samples")
        return (f"per-sample {', '.join(read) or 'rows'}" + (f" ({samples:,} samples)" if samples else "")
                + f", reduced per step to {len(run.metrics)} statistics (--format json lists them)")
    table = load_aliases()
    by_name = run.metadata.get("reward_by_name")  # said on its own (:func:`_by_name`)
    fallbacks = run.metadata.get("fallback_keys") or {}

    def shown(m: str) -> str:
        src = run.sources.get(m)
        if src in (None, m, by_name):
            return m
        found = table.canonical(str(src), run.trainer)
        scale = f"{found[1].scale:g} x " if found is not None and found[0] == m and found[1].scale != 1.0 else ""
        # the other keys of one name fill the first one's gaps (``completion_length, else completions/mean_length``)
        others = "".join(f", else {k}" for k in fallbacks.get(m, ()))
        return f"{m} ({scale}{src}{others})"

    return ", ".join(shown(m) for m in run.metrics) or "none"


def _unread_text(run: Run) -> str:
    """The columns of the run's files that were not read, as ``a, b and 3 more (no alias names them);
    c (text)``, or ''."""
    unread = run.unread
    out = []
    for key, why in (("unmapped", "no alias names them: --metric-map maps a key"), ("non_numeric", "text"),
                     ("placeholder", "a placeholder on every row: the trainer's fill-in, not a measurement"),
                     ("unaligned", "not one value per row, and no step to place them on"),
                     ("rounded", "0 at the console's precision on every row: a learning rate too small to print, "
                                 "not 0")):
        if names := unread[key]:
            more = len(names) > _UNREAD_SHOWN
            listed = ", ".join(names[:_UNREAD_SHOWN]) + (f" and {len(names) - _UNREAD_SHOWN} more" if more else "")
            out.append(listed + f" ({why}{'; --format json lists them all' if more else ''})")
    return "; ".join(out)


def step_note(run: Run) -> str:
    """How a reader numbered the steps when not as logged (``metadata["step"]``: the rho-GRPO records' step +
    1, TRL's step for the same batch), or ''."""
    notes = {f"{Path(str(p.get('file', run.path))).name}: {s}" for p in (run.metadata.get("parts") or [run.metadata])
             if isinstance(s := p.get("step"), str)}
    return "; ".join(sorted(notes))


def reading_notes(run: Run) -> list[tuple[str, str, bool]]:
    """What the reader says about the run beside its metrics, in the order every format shows them:
    ``(label, text, warns)`` for the columns not read, each file of its folder judged apart from it
    (``metadata["judged_apart"]``), why it has no groups, and how its steps were numbered. The label
    leads into the text (``"not read:"``, ``"judged apart from"``); ``warns`` marks the notes a reader
    should not miss (yellow in a terminal, not dim)."""
    notes = [("not read:", text, False) for text in (_unread_text(run),) if text]
    notes += [("judged apart from", str(why), True) for why in run.metadata.get(JUDGED_APART) or ()]
    notes += [("ends with an error:", text, True) for text in (run.ended_with,) if text]
    notes += [("no groups:", text, True) for text in (_ungrouped(run),) if text]
    notes += [("steps:", text, False) for text in (step_note(run),) if text]
    return notes


def _ungrouped(run: Run) -> str:
    """Why a per-sample run has no group statistics (the reader's ``metadata["ungrouped"]``: identical
    prompts without ``--rollout-n``, an ``N`` that does not divide a step, no group ids), or ''."""
    notes = {str(g) for p in (run.metadata.get("parts") or [run.metadata]) if (g := p.get("ungrouped"))}
    return "; ".join(sorted(notes))


def _reward_line(r: RunReport) -> str:
    """The reward's course (``reward (median, early -> late): -8.93 -> -7.68, rose``), or ''."""
    c = r.verdict.course
    if c is None:
        return ""
    if c.improved() or c.median_rose:
        course = "rose"
    elif c.rose:  # the rise happened inside the early window (RewardCourse.rose_first)
        course = f"rose from {c.start_text()} within the early window"
    else:
        course = (f"no rise beyond its step-to-step noise ({c.noise:.3g})" if c.late > c.early else "did not rise")
    if c.succeeded and not c.improved():
        # the windows hide a success the run gave back: its peak is the story (a newcomer read "-731 -> -830, did
        # not rise" on a run that had climbed to -290 before it collapsed)
        course += (f" at the end, after its level (a median over {c.w} logged steps) peaked at {c.level[c.peak]:.4g} "
                   f"at step {c.peak_step}")
    return f"reward (median, early -> late): {c.early:.4g} -> {c.late:.4g}, {course}"


def verdict_notes(r: RunReport) -> list[str]:
    """The lines every report prints under a run's verdict, plain text: the signal by stage (or, for a run not
    judged, the last logged step's), the accuracy filter's accounting, and a lost run's reward course."""
    run, notes = r.run, []
    if r.verdict.signal:
        notes.append(f"signal by stage ({_span(run)}): {_levels(r)}")
    elif not r.verdict.judged and (last := stage_last(run)):
        notes.append(f"at the last logged step: {'  |  '.join(last)}")
    if r.verdict.filter is not None:
        notes.append(f"accuracy filter: {r.verdict.filter.describe()}")
    if r.verdict.status == "lost" and (trend := _reward_line(r)):
        notes.append(trend)
    return notes


def _by_name(run: Run, escape: Callable[[str], str]) -> str:
    """The note on a reward read by its key's words (no alias named it), or '', the key escaped for
    the report's markup."""
    key = run.metadata.get("reward_by_name")
    return f" (reward_mean read from `{escape(str(key))}` by its name)" if key else ""


def render_human(reports: Sequence[RunReport], console: Console) -> None:
    """One block per run: where it came from, the verdict first, then each finding (what, since
    when, on what evidence), what to try, and what could not be checked."""
    for r in reports:
        run = r.run
        console.rule(f"[bold]{_safe(_fit(run.path, console.width - 6))}", align="left")
        if run.errors and run.steps == 0:
            shown, more = _shown_errors(run.errors)
            for e in [*shown, *([more] if more else [])]:
                console.print(f"[red]could not read[/red] {_safe(e)}", highlight=False)
            continue
        console.print(_indented(
            f"{_safe(run.format)} | trainer {_safe(run.trainer or 'unknown')} | "
            f"{steps_text(run)} | "
            f"metrics: {_safe(metrics_text(run))}{_by_name(run, _safe)}", 0, "dim", width=console.width),
            highlight=False)
        for label, text, warns in reading_notes(run):
            console.print(_indented(f"{label} {_safe(text)}", 0, "yellow" if warns else "dim", hang=2,
                                    width=console.width), highlight=False)
        if not r.verdict.judged:
            head = "[yellow]not judged[/yellow]"
        elif r.verdict.status != "lost":
            head = "[green]no finding[/green]"
        else:
            head = f"[bold red]{_lost(r)}[/bold red]"
        console.print()
        console.print(_headed(head, _safe(r.verdict.summary), console.width), highlight=False)
        for note in verdict_notes(r):
            console.print(_indented(_safe(note), 0, "dim", hang=2, width=console.width), highlight=False)
        console.print()
        for f in r.findings:
            since = "" if f.onset_step is None else f"  {since_step(f.onset_step, f.began_before_log)}"
            console.print(f"  [{_STYLE.get(f.severity, '')}]{f.severity.upper():5}[/] [bold]{f.id}[/bold]  stage {f.stage}{since}")
            console.print(_indented(_safe(f.message), 8, width=console.width), highlight=False)
            knobs = {k.name for k in REGISTRY[f.id].knobs} if f.id in REGISTRY else set()
            measured = {k: v for k, v in f.evidence.items() if k not in knobs}
            set_to = {k: v for k, v in f.evidence.items() if k in knobs}
            console.print(_indented(f"evidence: {_safe(_evidence(measured))}", 8, "dim", hang=2,
                                    width=console.width), highlight=False)
            if set_to:  # a newcomer could not tell the measured values from the thresholds they were held to
                console.print(_indented(f"knobs: {_safe(_evidence(set_to))} (what each means: advcore explain "
                                        f"{f.id} --full)", 8, "dim", hang=2, width=console.width), highlight=False)
        tries = r.verdict.what_to_try
        if tries:
            console.print("\n[bold]what to try first[/bold]")
            for t in tries[:_TRIES_SHOWN]:
                console.print(_indented(f"- {_safe(t)}", 2, hang=2, width=console.width), highlight=False)
            if len(tries) > _TRIES_SHOWN:
                ids = " / ".join(f.id for f in r.findings)
                console.print(_indented(f"({len(tries) - _TRIES_SHOWN} more: advcore explain {ids})", 2, "dim",
                                        hang=1, width=console.width), highlight=False)
        if r.not_evaluable:
            console.print("\n[dim]not evaluable (a missing metric is never a pass):[/dim]")
            for line in not_evaluable_lines(r.not_evaluable, r.run):
                console.print(_indented(_safe(line), 2, "dim", hang=2, width=console.width), highlight=False)
        unjudged = r.verdict.slices_not_evaluable
        if unjudged:
            console.print("\n[dim]slices not judged (too few samples per step, or a label of the samples):[/dim]")
            for u in unjudged[:_SLICES_SHOWN]:
                console.print(_indented(_safe(f"{u.name}: {u.reason}"), 2, "dim", hang=2, width=console.width),
                              highlight=False)
            if len(unjudged) > _SLICES_SHOWN:
                console.print(_indented(f"({len(unjudged) - _SLICES_SHOWN} more: --format json lists them)", 2,
                                        "dim", hang=1, width=console.width), highlight=False)
        shown, more = _shown_errors(run.errors)
        for e in [*shown, *([more] if more else [])]:
            console.print(f"[red]skipped[/red] {_safe(e)}", highlight=False)
        console.print()
    if any(r.findings for r in reports):
        console.print(_indented(f"stages: {_STAGES}", 0, "dim", width=console.width), highlight=False)
    if len(reports) > 1:
        from rich.table import Table

        import os

        paths = [r.run.path for r in reports]
        if len({os.path.isabs(p) for p in paths}) > 1:  # relative and absolute paths in one call
            paths = [os.path.abspath(p) for p in paths]
        root = os.path.commonpath([os.path.dirname(p) or "." for p in paths]) or "."
        console.print(f"[bold]summary[/bold] (paths under {_safe(root)})", highlight=False)
        table = Table()
        table.add_column("run", no_wrap=True)
        for col in ("verdict", "since", "findings"):
            table.add_column(col, overflow="fold")
        # the run's path shortened in the middle rather than folded mid-word, in what the other columns
        # leave (verdict 10, since 5, the longest finding ID 18, borders and padding 13)
        run_width = max(16, console.width - 46)
        for r, path in zip(reports, paths, strict=True):
            onset = "" if r.verdict.onset is None else ("<=" if r.verdict.onset_before_log else "") + str(r.verdict.onset)
            table.add_row(_safe(_middle(os.path.relpath(path, root), run_width)), _head(r), onset,
                          ", ".join(f.id for f in r.findings))
        console.print(table)
        console.print(f"[bold]{totals(reports)}[/bold]")


def _head(r: RunReport) -> str:
    """The verdict of one run in a word or two."""
    if r.run.errors and r.run.steps == 0:
        return "unreadable"
    if not r.verdict.judged:
        return "not judged"
    return "no finding" if r.verdict.status != "lost" else "lost" if r.verdict.stage is None else f"stage {r.verdict.stage}"


def _lost(r: RunReport) -> str:
    """"signal lost at stage X", or without a stage when only a stage-less finding (NONFINITE) says so."""
    return "signal lost" if r.verdict.stage is None else f"signal lost at stage {r.verdict.stage}"


def totals(reports: Sequence[RunReport]) -> str:
    """One line over a whole scan: how many runs lost their signal, were clean, or were not read."""
    return totals_of([r.verdict.status for r in reports])


def totals_of(statuses: Sequence[str]) -> str:
    """:func:`totals` from the runs' verdict statuses (``lost``, ``quiet``, ``not_judged``, ``unreadable``)."""
    count = {s: sum(1 for x in statuses if x == s) for s in ("lost", "quiet", "not_judged", "unreadable")}
    runs = f"{len(statuses)} run" + ("" if len(statuses) == 1 else "s")
    return (f"{runs}: {count['lost']} with a lost signal, {count['quiet']} with no finding, "
            f"{count['not_judged']} not judged, {count['unreadable']} unreadable")


def render_markdown(reports: Sequence[RunReport]) -> str:
    """A markdown report (for CI summaries and issues): a summary table, then one section per run."""
    lines = ["# advcore scan", ""]
    if len(reports) > 1:
        lines += [totals(reports) + ".", "", "| run | verdict | findings |", "| --- | --- | --- |"]
        for r in reports:
            lines.append(f"| {_cell_md(r.run.path)} | {_head(r)} | {', '.join(f.id for f in r.findings)} |")
        lines.append("")
    for r in reports:
        run = r.run
        lines += [f"## {_md(run.path)}", ""]
        shown, more = _shown_errors(run.errors)
        listed = [_md(e) for e in shown] + ([more] if more else [])
        if run.errors and run.steps == 0:
            lines += [f"- could not read: {e}" for e in listed] + [""]
            continue
        lines.append(f"{_md(run.format)}, trainer {_md(run.trainer or 'unknown')}, {steps_text(run)}{_by_name(run, _md)}; "
                     f"metrics: {_md(metrics_text(run))}.")
        lines += [f"{label[0].upper()}{label[1:]} {_md(text)}." for label, text, _ in reading_notes(run)]
        lines.append("")
        head = "not judged" if not r.verdict.judged else _head(r)
        lines.append(f"**Verdict**: {head}: {_md(r.verdict.summary)}")
        lines.append("")
        for note in verdict_notes(r):
            lines += [_md(note[0].upper() + note[1:]), ""]
        if r.findings:
            lines += ["| detector | severity | stage | onset | evidence | message |", "| --- | --- | --- | ---: | --- | --- |"]
            for f in r.findings:
                onset = "" if f.onset_step is None else str(f.onset_step)
                lines.append(f"| {f.id} | {f.severity} | {f.stage} | {onset} | {_cell_md(_evidence(f.evidence))} | "
                             f"{_cell_md(f.message)} |")
            lines.append("")
        if r.verdict.what_to_try:
            lines += ["What to try first:", ""] + [f"- {_md(t)}" for t in r.verdict.what_to_try] + [""]
        if r.not_evaluable:
            lines += ["Not evaluable (a missing metric is never a pass):", ""]
            lines += [f"- {_md(line)}" for line in not_evaluable_lines(r.not_evaluable, r.run)] + [""]
        lines += [f"- skipped: {e}" for e in listed]
    return "\n".join(lines) + "\n"


#: The columns of the stage table: (header, statistic, percent?).
_TRACE_COLUMNS = (
    ("n", "n", False), ("mean", "mean", False), ("std", "std", False), ("MAD", "mad", False),
    ("IQR", "iqr", False), ("unique", "n_unique", False), ("~0", "near_zero_frac", True),
    ("+", "pos_frac", True), ("-", "neg_frac", True), ("rho(reward)", "spearman_reward", False),
    ("rho within", "spearman_reward_within", False), ("tied groups", "zero_variance_group_frac", True),
    ("changed", "changed_frac", True),
)


def _cell(value: float | None, percent: bool) -> str:
    if value is None or value != value:
        return "-"
    return f"{100 * value:.0f}%" if percent else f"{value:.4g}"


def render_trace(trace: pl.DataFrame, step: int, console: Console) -> None:
    """The stage table of one step of a per-sample trace: one column per stage (and slice), the
    statistics that show where the signal is (spread, ties, sign balance, rank agreement with the
    reward, what each stage changed)."""
    import polars as pl
    from rich.table import Table

    rows = trace.filter(pl.col("step") == step)
    cells = {(st, sl, name): v for st, sl, name, v in rows.select("stage", "slice", "statistic", "value").iter_rows()}
    keys = list(dict.fromkeys((st, sl) for st, sl, _ in cells))
    n_steps = trace["step"].n_unique()
    stages = [(st, sl) for st, sl in keys if st != "adv_token"]
    console.print(f"[bold]stage trace at step {step} ({n_steps} {'step' if n_steps == 1 else 'steps'} traced)[/bold]")
    table = Table()
    table.add_column("statistic")
    for st, sl in stages:
        table.add_column(_safe(st if sl == "all" else f"{st} [{sl}]"), justify="right")
    for header, stat, pct in _TRACE_COLUMNS:
        # the reward's rank agreement with itself is 1 by definition: no evidence, not shown
        table.add_row(header, *(_cell(None if st == "reward" and stat.startswith("spearman_reward") else
                                      cells.get((st, sl, stat)), pct) for st, sl in stages))
    console.print(table)
    token = {name: v for (st, sl, name), v in cells.items() if st == "adv_token" and sl == "all"}
    if token:
        console.print(f"[dim]token allocation: {token.get('n_tokens', 0):.0f} tokens, "
                      f"{_cell(token.get('token_nonzero_frac'), True)} with a non-zero advantage, "
                      f"sum of token advantages / sequence advantage median {_cell(token.get('alloc_q50'), False)}, "
                      f"rho(|adv| per token, length) {_cell(token.get('spearman_abs_adv_length'), False)}[/dim]")
