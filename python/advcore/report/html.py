"""One self-contained HTML page of scan reports (``advcore report PATH... --out report.html``).

Per run: the verdict and its findings first, then one figure per stage of the signal over steps, from
the canonical per-step metrics the run holds (:data:`PANELS`: R the reward, A the value baseline, T the
advantages, U the update), one small plot per metric; each finding is drawn at its onset, with its ID,
on the plots of its stage (the metric its evidence names drawn thicker, with the threshold the detector
compared it against, ``evidence["threshold"]``, drawn across it); the phases of a run whose step
counter restarted follow one another on the step axis, every other one shaded. Per-sample runs add the per-step distribution of each stage of
their trace (the 5-95 % and 25-75 % quantile bands and the median), and, when the samples carry slice
labels, the reward's mean and tied share and the advantage spread of each slice. Several runs get an index table
first (sortable by a click on a column's head), each row linking to its run.

The figures are inline SVG drawn by matplotlib (text kept as text, long series simplified by
matplotlib's path simplification), so the page needs no network and no file beside it; ``png_dir``
also writes each figure as a PNG. Needs matplotlib (``pip install 'advcore[report]'``).
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from advcore.compare import SIGNALS, Comparison
from advcore.detectors import THRESHOLD
from advcore.errors import AdvcoreError
from advcore.scan import RunReport

__all__ = ["PANELS", "render_comparison_html", "render_html"]

#: Per stage: its title and the canonical per-step metrics drawn on its figure, in order (a run draws
#: the ones it holds; the reward components ``reward/<name>`` join R).
PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("R", "reward", ("reward_mean", "success_rate", "reward_std", "reward_std_within", "zero_variance_group_frac",
                     "truncated_frac", "response_length_mean")),
    ("A", "baseline", ("vf_explained_var", "value_loss", "value_mean", "return_mean")),
    ("T", "advantages", ("adv_std", "adv_max", "adv_min", "adv_zero_frac", "spearman_adv_reward",
                         "spearman_adv_reward_within", "adv_recompute_err")),
    ("U", "update", ("grad_norm", "kl", "kl_step", "entropy", "action_std", "clip_frac", "update_ratio",
                     "step_norm", "lr")),
)
#: Reward components drawn at most.
MAX_COMPONENTS = 6
#: Small plots per row of a figure.
COLUMNS = 3
#: Line colors of the several series of one plot (two runs compared, the slices of a run).
_LINE_COLORS = ("#1f4e8c", "#d9822b", "#2e7d32", "#8e24aa", "#c62828", "#00838f", "#6d4c41", "#546e7a")

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-top:1px solid #ccc;padding-top:.8em}
h3{font-size:1em;margin:1.2em 0 .3em}table{border-collapse:collapse;font-size:.9em}
td,th{padding:.25em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f6f6f6}.lost{color:#b00020;font-weight:600}.quiet{color:#1b5e20}
.not_judged,.unreadable{color:#777}.summary{background:#fafafa;border-left:3px solid #999;padding:.5em .8em}
.error{color:#b00020}.warn{color:#a15c00}.info{color:#555}figure{margin:.5em 0}code{font-size:.9em}
"""

#: Sorts the index table by the clicked column (numbers as numbers); no library, no network.
_SORT = """
document.querySelectorAll('table.index th').forEach((th,i)=>th.addEventListener('click',()=>{
const body=th.closest('table').tBodies[0];const rows=[...body.rows];const asc=th.dataset.asc!=='1';
const key=r=>{const t=r.cells[i].innerText;const n=parseFloat(t);return isNaN(n)?t:n};
rows.sort((a,b)=>{const x=key(a),y=key(b);return (x>y?1:x<y?-1:0)*(asc?1:-1)});
th.dataset.asc=asc?'1':'0';rows.forEach(r=>body.appendChild(r));}));
"""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise AdvcoreError("advcore report draws with matplotlib: pip install 'advcore[report]'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "path.simplify": True, "path.simplify_threshold": 0.5,
                                "font.size": 8, "axes.titlesize": 8})
    import matplotlib.pyplot as plt

    return plt


def _phase_layout(frame: pl.DataFrame) -> tuple[dict[int, float], list[tuple[float, float]]]:
    """For a run whose step counter restarted (its ``phase`` column): per phase, what its steps are moved by
    to follow the phase before on one axis, and the (first, last) step on that axis of every other phase
    after the first (shaded); ``({0: 0}, [])`` for a run of one phase."""
    if "phase" not in frame.columns:
        return {0: 0.0}, []
    spans = frame.group_by("phase").agg(pl.col("step").min().alias("a"), pl.col("step").max().alias("b"))
    offsets: dict[int, float] = {}
    shaded: list[tuple[float, float]] = []
    end = None
    for k, (phase, a, b) in enumerate(spans.sort("phase").iter_rows()):
        offset = 0.0 if end is None else end + 1 - a
        offsets[int(phase)] = offset
        end = b + offset
        if k % 2:
            shaded.append((a + offset, b + offset))
    return offsets, shaded


def _timeline(frame: pl.DataFrame, offsets: dict[int, float]) -> pl.DataFrame:
    """The frame with ``step`` on one axis: each phase's steps moved by its offset (:func:`_phase_layout`)."""
    if "phase" not in frame.columns:
        return frame
    return frame.with_columns(pl.col("step") + pl.col("phase").replace_strict(offsets, default=0.0))


def _series(frame: pl.DataFrame, name: str) -> tuple[list[float], list[float]]:
    """The finite points of ``name`` over ``step`` (of a timeline frame)."""
    part = frame.select("step", pl.col(name).cast(pl.Float64, strict=False)).drop_nulls()
    steps, values = part["step"].to_list(), part[name].to_list()
    kept = [(s, v) for s, v in zip(steps, values, strict=True) if math.isfinite(v)]
    return [float(s) for s, _ in kept], [v for _, v in kept]


#: One small plot: its title (the metric), steps, values, and for a per-sample stage its quantile bands
#: per step (q05, q95, q25, q75), else None.
Plot = tuple[str, list[float], list[float], "list[tuple[float, ...]] | None"]


def _plots_of(frame: pl.DataFrame, stage: str, names: tuple[str, ...]) -> list[Plot]:
    """The plots of ``names`` that ``frame`` holds points of, and for R its reward components."""
    if stage == "R":
        names = (*names, *sorted(c for c in frame.columns if c.startswith("reward/")))
    plots: list[Plot] = []
    components = 0
    for name in names:
        if name not in frame.columns or (name.startswith("reward/") and components >= MAX_COMPONENTS):
            continue
        steps, values = _series(frame, name)
        if steps:
            plots.append((name, steps, values, None))
            components += name.startswith("reward/")
    return plots


def _figure(plt: Any, panels: list[Plot], markers: list[tuple[float, str, str | None]],
            shade: list[tuple[float, float]], thresholds: Sequence[tuple[str, float, str]] = ()) -> Any:
    """A figure of small plots: (title, steps, values, quantile bands or None) each; ``markers`` (onset, ID,
    the evidence's metric) drawn on every plot, thicker on the metric named; ``thresholds`` (metric, value,
    ID) drawn across the plot of that metric."""
    cols = min(COLUMNS, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 1.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, steps, values, bands) in zip(axes.flat, panels, strict=False):
        for a, b in shade:
            ax.axvspan(a, b, color="#eeeeee", zorder=0)
        if bands:  # 5-95 %, then 25-75 % darker
            for i, (lo, hi) in enumerate(((0, 1), (2, 3))):
                ax.fill_between(steps, [q[lo] for q in bands], [q[hi] for q in bands], color="#4a78b5",
                                alpha=0.18 + 0.17 * i, linewidth=0)
        ax.plot(steps, values, color="#1f4e8c", linewidth=1.0)
        for onset, ident, metric in markers:
            named = metric == title
            ax.axvline(onset, color="#b00020", linewidth=1.6 if named else 0.8, linestyle="-" if named else "--")
            ax.annotate(ident, (onset, 1.0), xycoords=("data", "axes fraction"), fontsize=6, color="#b00020",
                        rotation=90, va="top", ha="right")
        for name, value, ident in thresholds:
            if name == title:
                ax.axhline(value, color="#b00020", linewidth=0.8, linestyle=":")
                ax.annotate(f"{ident} threshold", (0.0, value), xycoords=("axes fraction", "data"), fontsize=6,
                            color="#b00020", va="bottom")
        ax.set_title(title, loc="left")
        ax.tick_params(labelsize=6)
    fig.tight_layout(pad=0.4)
    return fig


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg"):]  # without the XML prolog and doctype: inline in the page


def _trace_panels(report: RunReport) -> list[Plot]:
    """Per stage of a per-sample trace (whole batch, slice ``all``): the median over steps with the
    quantile bands."""
    trace = report.run.trace
    if trace is None or trace.is_empty():
        return []
    wanted = ["q05", "q95", "q25", "q75", "q50"]
    part = trace.filter(pl.col("slice") == "all", pl.col("statistic").is_in(wanted))
    out: list[Plot] = []
    for (stage,), rows in part.group_by(["stage"], maintain_order=True):
        wide = rows.pivot(on="statistic", index="step", values="value").sort("step").drop_nulls()
        if wide.is_empty() or not set(wanted) <= set(wide.columns):
            continue
        bands = list(zip(*(wide[c].to_list() for c in wanted[:4]), strict=True))
        out.append((f"{stage} per sample (median, 25-75 %, 5-95 %)", [float(s) for s in wide["step"]],
                    wide["q50"].to_list(), bands))
    return out


#: Per-slice plots: (trace stage, statistic, title); the slices drawn at most (the most sampled first).
_SLICE_PLOTS = (("reward", "mean", "reward mean"), ("reward", "zero_variance_group_frac", "tied groups"),
                ("adv", "std", "advantage std"))
MAX_SLICES = len(_LINE_COLORS)


def _slice_plots(report: RunReport) -> list[tuple[str, list[tuple[str, list[float], list[float]]]]]:
    """Per labelled slice of a per-sample trace (``slice_<label>`` columns): the reward's mean and tied
    share and the advantage spread over steps, one line per slice."""
    trace = report.run.trace
    if trace is None or trace.is_empty():
        return []
    sliced = trace.filter(pl.col("slice") != "all")
    if sliced.is_empty():
        return []
    sizes = (sliced.filter(pl.col("statistic") == "n").group_by("slice").agg(pl.col("value").sum())
             .sort("value", descending=True))
    slices = sizes["slice"].to_list()[:MAX_SLICES]
    out = []
    for stage, statistic, title in _SLICE_PLOTS:
        part = sliced.filter(pl.col("stage") == stage, pl.col("statistic") == statistic)
        lines = []
        for name in slices:
            rows = part.filter(pl.col("slice") == name).sort("step").drop_nulls("value")
            rows = rows.filter(pl.col("value").is_finite())
            if rows.height:
                lines.append((name, [float(v) for v in rows["step"]], rows["value"].to_list()))
        if lines:
            out.append((f"{title} by slice", lines))
    return out


def _slug(i: int) -> str:
    return f"run-{i}"


def _findings_table(report: RunReport) -> str:
    if not report.findings:
        return ""
    rows = "".join(f"<tr><td class='{f.severity}'>{f.severity.upper()}</td><td><code>{html.escape(f.id)}</code></td>"
                   f"<td>{f.stage}</td><td>{'' if f.onset_step is None else f.onset_step}</td>"
                   f"<td>{html.escape(f.message)}</td></tr>" for f in report.findings)
    return ("<table class='findings'><thead><tr><th>severity</th><th>finding</th><th>stage</th><th>since</th>"
            f"<th>what</th></tr></thead><tbody>{rows}</tbody></table>")


def _run_section(plt: Any, i: int, report: RunReport, png_dir: Path | None) -> str:
    run, verdict = report.run, report.verdict
    status = verdict.status
    parts = [f"<h2 id='{_slug(i)}'>{html.escape(run.path)}</h2>",
             f"<p>{html.escape(run.format)} | trainer {html.escape(str(run.trainer or 'unknown'))} | {run.steps} steps"
             f" | <span class='{status}'>{status.replace('_', ' ')}</span>"
             + (f", stage {verdict.stage}" if verdict.stage else "") + "</p>",
             f"<p class='summary'>{html.escape(verdict.summary)}</p>", _findings_table(report)]
    if verdict.what_to_try:
        parts.append("<h3>What to try first</h3><ul>" + "".join(f"<li>{html.escape(t)}</li>"
                                                                   for t in verdict.what_to_try[:4]) + "</ul>")
    if "step" not in run.frame.columns:
        return "\n".join(p for p in parts if p)
    offsets, shade = _phase_layout(run.frame)
    frame = _timeline(run.frame, offsets)
    for stage, title, names in PANELS:
        panels = _plots_of(frame, stage, names)
        if not panels:
            continue
        markers = [(f.onset_step + offsets.get(int(f.evidence.get("onset_phase") or 0), 0.0), f.id,
                    f.evidence.get("metric")) for f in report.findings if f.stage == stage and f.onset_step is not None]
        # a threshold on the series the detector judged (not on a proxy the run does not log)
        thresholds = [(str(f.evidence["metric"]), float(f.evidence[THRESHOLD]), f.id) for f in report.findings
                      if f.stage == stage and isinstance(f.evidence.get(THRESHOLD), (int, float))
                      and "proxy" not in f.evidence and math.isfinite(f.evidence[THRESHOLD])]
        parts.append(_figure_html(plt, f"{stage} {title}", panels, markers, shade, png_dir, f"{i}-{stage}",
                                  thresholds))
    trace_panels = _trace_panels(report)
    if trace_panels:
        parts.append(_figure_html(plt, "per-sample distributions", trace_panels, [], shade, png_dir, f"{i}-samples"))
    slice_plots = _slice_plots(report)
    if slice_plots:
        fig = _lines_figure(plt, slice_plots)
        parts.append(_save_figure(plt, fig, "per slice", len(slice_plots), 0, png_dir, f"{i}-slices"))
    return "\n".join(p for p in parts if p)


def _figure_html(plt: Any, caption: str, panels: list[Plot], markers: list[tuple[float, str, str | None]],
                 shade: list[tuple[float, float]], png_dir: Path | None, name: str,
                 thresholds: Sequence[tuple[str, float, str]] = ()) -> str:
    fig = _figure(plt, panels, markers, shade, thresholds)
    return _save_figure(plt, fig, caption, len(panels), len(markers), png_dir, name)


def _save_figure(plt: Any, fig: Any, caption: str, plots: int, markers: int, png_dir: Path | None, name: str) -> str:
    """The figure as an inline ``<figure>`` of SVG (and as ``png_dir/<name>.png``), then closed."""
    try:
        svg = _svg(fig)
        if png_dir is not None:
            fig.savefig(png_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png", format="png", dpi=110)
    finally:
        plt.close(fig)
    return (f"<figure data-stage='{html.escape(caption)}' data-plots='{plots}' "
            f"data-markers='{markers}'><figcaption><h3>{html.escape(caption)}</h3></figcaption>{svg}</figure>")


def _index(reports: Sequence[RunReport]) -> str:
    rows = "".join(
        f"<tr><td><a href='#{_slug(i)}'>{html.escape(r.run.path)}</a></td>"
        f"<td class='{r.verdict.status}'>{r.verdict.status.replace('_', ' ')}</td><td>{r.verdict.stage or ''}</td>"
        f"<td>{html.escape(r.verdict.headline or '')}</td>"
        f"<td>{'' if r.verdict.onset is None else r.verdict.onset}</td><td>{r.run.steps}</td></tr>"
        for i, r in enumerate(reports))
    return ("<table class='index'><thead><tr><th>run</th><th>verdict</th><th>stage</th><th>headline</th>"
            f"<th>since step</th><th>steps</th></tr></thead><tbody>{rows}</tbody></table>")


def render_html(reports: Sequence[RunReport], *, title: str = "advcore report", png_dir: Path | None = None) -> str:
    """The page (a string of HTML) for ``reports``; with ``png_dir`` (an existing folder) each figure is
    also written there as ``<run index>-<stage>.png``. Raises :class:`AdvcoreError` when matplotlib is
    not installed."""
    plt = _pyplot()
    lost = sum(r.verdict.status == "lost" for r in reports)
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(reports)} run{'s' if len(reports) != 1 else ''}, {lost} with a lost learning signal.</p>"]
    if len(reports) > 1:
        body.append(_index(reports))
    body += [_run_section(plt, i, r, png_dir) for i, r in enumerate(reports)]
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}<script>{_SORT}</script></body></html>")


def _lines_figure(plt: Any, plots: list[tuple[str, list[tuple[str, list[float], list[float]]]]],
                  marks: dict[str, int | None] | None = None) -> Any:
    """Small plots of several labelled series each (title, [(label, steps, values)]); ``marks`` (title ->
    step) draws where two runs part."""
    cols = min(COLUMNS, len(plots))
    rows = math.ceil(len(plots) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 1.9 * rows), squeeze=False)
    for ax in axes.flat[len(plots):]:
        ax.set_visible(False)
    for ax, (title, lines) in zip(axes.flat, plots, strict=False):
        for (label, steps, values), color in zip(lines, _LINE_COLORS, strict=False):
            ax.plot(steps, values, color=color, linewidth=1.0, label=label)
        if (step := (marks or {}).get(title)) is not None:
            ax.axvline(step, color="#b00020", linewidth=1.2)
            ax.annotate(f"parts at {step}", (step, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                        color="#b00020", rotation=90, va="top", ha="right")
        ax.set_title(title, loc="left")
        ax.tick_params(labelsize=6)
    axes.flat[0].legend(fontsize=6, loc="best")
    fig.tight_layout(pad=0.4)
    return fig


def render_comparison_html(a: RunReport, b: RunReport, comparison: Comparison) -> str:
    """A page of two runs side by side (:func:`advcore.compare.compare_runs`): both verdicts, where each
    stage's signals part, and per stage the signals of A and B on the same plots with the parting step
    marked. Raises :class:`AdvcoreError` when matplotlib is not installed."""
    plt = _pyplot()
    first = comparison.first
    head = [f"<h1>advcore compare</h1><p>A <code>{html.escape(a.run.path)}</code>: "
            f"<span class='{a.verdict.status}'>{a.verdict.status.replace('_', ' ')}</span><br>B "
            f"<code>{html.escape(b.run.path)}</code>: <span class='{b.verdict.status}'>"
            f"{b.verdict.status.replace('_', ' ')}</span></p>",
            f"<p class='summary'>{comparison.common_steps} common steps; " + (
                f"they part first at stage {first.stage}, step {first.step} ({html.escape(first.metric)})"
                if first is not None else "no signal parts beyond its noise") + "</p>"]
    rows = "".join(f"<tr><td>{d.stage}</td><td>{html.escape(d.metric)}</td><td>{'' if d.step is None else d.step}</td>"
                   f"<td>{d.offset:.3g}</td><td>{'' if d.step is None else format(d.after, '.3g')}</td></tr>"
                   for d in comparison.divergences)
    head.append("<table class='index'><thead><tr><th>stage</th><th>metric</th><th>parts at</th><th>B - A at "
                f"start</th><th>B - A after</th></tr></thead><tbody>{rows}</tbody></table>")
    frames = [_timeline(r.run.frame, _phase_layout(r.run.frame)[0]) for r in (a, b)]
    parts = {d.metric: d.step for d in comparison.divergences}
    for stage, names in SIGNALS:
        shown = [n for n in names if n in parts]
        if not shown:
            continue
        fig = _lines_figure(plt, [(n, [("A", *_series(frames[0], n)), ("B", *_series(frames[1], n))]) for n in shown],
                            parts)
        head.append(_save_figure(plt, fig, stage, len(shown), 0, None, stage))
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>advcore compare</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(head)}<script>{_SORT}</script></body></html>")
