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

The figures are inline SVG drawn by matplotlib (text kept as text, fixed margins, a series of more than
:data:`MAX_POINTS` points thinned to the lowest and highest value of each stretch), so the page needs no
network and no file beside it; ``png_dir`` also writes each figure as a PNG. A run's figures are held as
text in an inert ``<script>`` until its section comes near the screen, then drawn by the page's script:
a page of 1,000 runs (44 MB) reaches its load event in about 1.4 s in headless Chromium and shows its
first screen in under 3 s (bench/bench_report.py). Many runs are drawn on several processes. Needs
matplotlib (``pip install 'advcore[report]'``).
"""

from __future__ import annotations

import html
import io
import math
import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from advcore._workers import pool_map
from advcore.compare import SIGNALS, Comparison
from advcore.detectors import THRESHOLD
from advcore.errors import AdvcoreError
from advcore.report.render import (metrics_text, not_evaluable_lines, reading_notes, step_unit, steps_text,
                                   verdict_notes)
from advcore.scan import RunReport
from advcore.stages import stage_of

__all__ = ["PANELS", "render_comparison_html", "render_html"]

#: Per stage: its title and the canonical per-step metrics drawn on its figure, in order (a run draws
#: the ones it holds; the reward components ``reward/<name>`` join R).
PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("R", "reward", ("reward_mean", "success_rate", "val_score", "elo", "reward_std", "reward_std_within",
                     "zero_variance_group_frac", "filter/kept_frac", "truncated_frac", "response_length_mean")),
    ("A", "baseline", ("vf_explained_var", "value_loss", "value_mean", "return_mean")),
    ("T", "advantages", ("adv_std", "adv_max", "adv_min", "adv_zero_frac", "spearman_adv_reward",
                         "spearman_adv_reward_within", "adv_recompute_err")),
    ("U", "update", ("grad_norm", "kl", "kl_step", "entropy", "action_std", "clip_frac", "update_ratio",
                     "step_norm", "lr")),
)
#: Points of one series drawn at most (:func:`_thin`).
MAX_POINTS = 800
#: A per-step series of at least this many points is drawn faint under its level (:func:`_level`): a
#: newcomer saw only a solid band where 3,364 noisy steps of a reward component fell by half.
LEVEL_FROM = 200
#: The level's trailing median covers this share of the points (at least 5).
LEVEL_SHARE = 0.02
#: Points of a level drawn at most (every k-th: it is smooth over a fiftieth of the series, so four
#: points a window draw it; fewer points keep an archive's page short).
LEVEL_POINTS = 200
#: Runs from which the figures are drawn on several processes.
PARALLEL_FROM = 24
#: Reward components drawn at most.
MAX_COMPONENTS = 6
#: Onsets closer than this share of the steps drawn share one label.
LABEL_GAP = 0.04
#: An onset label sits right of its line when the line lies within this share of the plot from its left edge.
LABEL_INSIDE = 0.1
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
.not_judged,.unreadable{color:#777}.dim{color:#666;font-size:.92em}.summary{background:#fafafa;border-left:3px solid #999;padding:.5em .8em}
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

#: Draws a section's figures (held as text in its inert script) when it comes within two screens of the
#: view — those of the first two screens at once, as the page loads, so the first paint already shows
#: them; every figure at once before printing, or when the address ends in ``#all``.
_DRAW = """
const draw=d=>{const s=d.querySelector('script[type="text/html"]');if(!s)return;
d.insertAdjacentHTML('beforeend',s.textContent.replaceAll('<\\\\/script','<'+'/script'));s.remove();d.style.minHeight='';};
const boxes=document.querySelectorAll('div.figures');
const drawAll=()=>boxes.forEach(draw);
if(location.hash==='#all'||!('IntersectionObserver' in window)){drawAll();}else{
const seen=new IntersectionObserver(es=>es.forEach(e=>{if(e.isIntersecting){draw(e.target);seen.unobserve(e.target);}}),
{rootMargin:'200% 0px'});let near=true;
boxes.forEach(b=>{if(near&&b.getBoundingClientRect().top<2*innerHeight){draw(b);}else{near=false;seen.observe(b);}});}
addEventListener('beforeprint',drawAll);
"""


def _status_word(status: str) -> str:
    """A verdict's status as the page shows it: the JSON's word, and for a quiet run the scan's words too
    ("no finding"), so that the terminal and the page read alike."""
    return "quiet (no finding)" if status == "quiet" else status.replace("_", " ")


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
    kept = [(float(s), v) for s, v in zip(steps, values, strict=True) if math.isfinite(v)]
    return _thin([s for s, _ in kept], [v for _, v in kept])


def _level(frame: pl.DataFrame, name: str) -> tuple[list[float], list[float]] | None:
    """The level of ``name`` over ``step`` (of a timeline frame): the trailing median of its finite
    points over ``LEVEL_SHARE`` of them (at least 5), every k-th point kept past :data:`LEVEL_POINTS`;
    None under :data:`LEVEL_FROM` points."""
    part = frame.select("step", pl.col(name).cast(pl.Float64, strict=False).alias("v")).drop_nulls()
    part = part.filter(pl.col("v").is_finite())
    if part.height < LEVEL_FROM:
        return None
    window = max(5, int(LEVEL_SHARE * part.height))
    level = part.select("step", pl.col("v").rolling_median(window, min_samples=1).alias("v"))
    level = level.gather_every(math.ceil(level.height / LEVEL_POINTS))
    return [float(s) for s in level["step"]], level["v"].to_list()


def _thin(steps: list[float], values: list[float]) -> tuple[list[float], list[float]]:
    """At most :data:`MAX_POINTS` points of a series: past that, the lowest and the highest value of each
    run of consecutive points, in step order, so a one-step spike still shows (a longer series is not
    drawn any finer in a plot 3.6 inches wide, and makes the page longer to open)."""
    n = len(steps)
    if n <= MAX_POINTS:
        return steps, values
    buckets = MAX_POINTS // 2
    out_s: list[float] = []
    out_v: list[float] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        part = range(lo, hi)
        low = min(part, key=values.__getitem__)
        high = max(part, key=values.__getitem__)
        for i in sorted({low, high}):
            out_s.append(steps[i])
            out_v.append(values[i])
    return out_s, out_v


#: One small plot: its title (the metric), steps, values, for a per-sample stage its quantile bands per
#: step (q05, q95, q25, q75), else None, and for a long per-step series its level (:func:`_level`), else None.
Plot = tuple[str, list[float], list[float], "list[tuple[float, ...]] | None", "tuple[list[float], list[float]] | None"]


def _moved(frame: pl.DataFrame, name: str) -> float:
    """How far ``name`` moved over the run: its last fifth's mean against its first fifth's, over its range."""
    values = frame[name].drop_nulls().cast(pl.Float64)
    values = values.filter(values.is_finite())
    if values.len() < 2:
        return 0.0
    k = max(1, values.len() // 5)
    span = float(values.max()) - float(values.min())  # type: ignore[arg-type]
    return abs(float(values.tail(k).mean()) - float(values.head(k).mean())) / span if span > 0 else 0.0  # type: ignore[arg-type]


def _reward_components(frame: pl.DataFrame) -> tuple[list[str], int]:
    """The reward components (``reward/<name>``) a figure draws, at most :data:`MAX_COMPONENTS`: those that
    moved most over the run (a newcomer missed a success component that doubled, drawn after six that did not),
    in name order; and how many the run has."""
    names = [c for c in frame.columns if c.startswith("reward/") and frame[c].null_count() < frame.height]
    drawn = sorted(names, key=lambda c: -_moved(frame, c))[:MAX_COMPONENTS]
    return sorted(drawn), len(names)


def _plots_of(frame: pl.DataFrame, stage: str, names: tuple[str, ...]) -> list[Plot]:
    """The plots of ``names`` that ``frame`` holds points of, each followed by its agent groups' (``entropy/ghas``:
    a multi-agent trainer's per-group metrics), and for R its reward components (:func:`_reward_components`)."""
    if stage == "R":
        names = (*names, *_reward_components(frame)[0])
    plots: list[Plot] = []
    for base in names:
        for name in (base, *sorted(c for c in frame.columns if c.startswith(f"{base}/"))):
            if name not in frame.columns:
                continue
            steps, values = _series(frame, name)
            if steps:
                plots.append((name, steps, values, None, _level(frame, name)))
    return plots


def _grid(plt: Any, n: int, xlabel: str) -> tuple[Any, list[Any]]:
    """A figure of ``n`` small plots, :data:`COLUMNS` per row, with fixed margins in inches (laying the
    text out to fit, ``tight_layout``, took most of a figure's drawing time) and few ticks; the lowest plot
    of each column says what its x-axis counts (``xlabel``)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    cols = min(COLUMNS, n)
    rows = math.ceil(n / cols)
    width, height = 3.6 * cols, 1.9 * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    left, right, bottom, top, gap_x, gap_y = 0.6, 0.1, 0.45, 0.25, 0.65, 0.55  # inches
    ax_w = (width - left - right - (cols - 1) * gap_x) / cols
    ax_h = (height - bottom - top - (rows - 1) * gap_y) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=gap_x / ax_w, hspace=gap_y / ax_h)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax in axes.flat[:n]:
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.yaxis.set_major_locator(MaxNLocator(4))
        # values as they are (4.5e-06), not an offset text above the plot, where the title is
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
        ax.tick_params(labelsize=7)
    for i in range(max(0, n - cols), n):  # no plot below these
        axes.flat[i].set_xlabel(xlabel, fontsize=7, labelpad=1)
    return fig, list(axes.flat[:n])


def _figure(plt: Any, panels: list[Plot], markers: list[tuple[float, str, str | None]],
            shade: list[tuple[float, float]], thresholds: Sequence[tuple[str, float, str]] = (),
            xlabel: str = "step") -> Any:
    """A figure of small plots: (title, steps, values, quantile bands or None) each; ``markers`` (onset, ID,
    the evidence's metric) drawn on every plot, thicker on the metric named; ``thresholds`` (metric, value,
    ID) drawn across the plot of that metric."""
    fig, axes = _grid(plt, len(panels), xlabel)
    labels = _marker_labels(markers, [s for _, steps, _, _, _ in panels for s in steps[:1] + steps[-1:]])
    for ax, (title, steps, values, bands, level) in zip(axes, panels, strict=True):
        for a, b in shade:
            ax.axvspan(a, b, color="#eeeeee", zorder=0)
        if bands:  # 5-95 %, then 25-75 % darker
            for i, (lo, hi) in enumerate(((0, 1), (2, 3))):
                ax.fill_between(steps, [q[lo] for q in bands], [q[hi] for q in bands], color="#4a78b5",
                                alpha=0.18 + 0.17 * i, linewidth=0)
        if level is None:
            ax.plot(steps, values, color="#1f4e8c", linewidth=1.0)
        else:  # the points faint, their level on top
            ax.plot(steps, values, color="#1f4e8c", linewidth=0.6, alpha=0.3)
            ax.plot(*level, color="#1f4e8c", linewidth=1.5)
        for onset, ident, metric in markers:
            named = metric == title
            ax.axvline(onset, color="#b00020", linewidth=1.6 if named else 0.8, linestyle="-" if named else "--")
        lo, hi = ax.get_xlim()
        for onset, label in labels:
            # left of its line, unless the line is near the plot's left edge, where the label would be cut off
            near_start = onset - lo < LABEL_INSIDE * (hi - lo)
            # on a pale box: a newcomer could not read labels drawn over the data they start on
            ax.annotate(label, (onset, 1.0), xycoords=("data", "axes fraction"), fontsize=6.5, color="#b00020",
                        rotation=90, va="top", ha="left" if near_start else "right",
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.75})
        for name, value, ident in thresholds:
            if name == title:
                ax.axhline(value, color="#b00020", linewidth=0.8, linestyle=":")
                ax.annotate(f"{ident} threshold", (0.0, value), xycoords=("axes fraction", "data"), fontsize=6,
                            color="#b00020", va="bottom")
        # the last value beside the name: a series pinned above the top tick (a tied share at 0.998 under a tick at
        # 0.96) reads at once
        last = next((v for v in reversed(values) if math.isfinite(v)), None)
        ax.set_title(title if last is None else f"{title}  (last {last:.4g})", loc="left")
    return fig


def _marker_labels(markers: Sequence[tuple[float, str, str | None]], ends: Sequence[float]) -> list[tuple[float, str]]:
    """One label per cluster of onsets closer than :data:`LABEL_GAP` of the steps drawn (``ends``: the first and
    last step of each plot): the IDs of findings that started together, one line each at the first onset, rather than
    printed over one another."""
    span = (max(ends) - min(ends)) if ends else 0.0
    out: list[tuple[float, list[str]]] = []
    for onset, ident, _ in sorted(markers, key=lambda m: (m[0], m[1])):
        if out and onset - out[-1][0] <= LABEL_GAP * span:
            if ident not in out[-1][1]:
                out[-1][1].append(ident)
        else:
            out.append((onset, [ident]))
    return [(onset, "\n".join(ids)) for onset, ids in out]


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
        wide = wide.gather_every(math.ceil(wide.height / MAX_POINTS))
        bands = list(zip(*(wide[c].to_list() for c in wanted[:4]), strict=True))
        out.append((f"{stage} per sample (median, 25-75 %, 5-95 %)", [float(s) for s in wide["step"]],
                    wide["q50"].to_list(), bands, None))
    return out


#: Per-slice plots: (per-step metric of the slice, title); the slices of one label drawn at most (the lost
#: ones first, then the most sampled).
_SLICE_PLOTS = (("reward_mean", "reward mean"), ("zero_variance_group_frac", "tied groups"), ("adv_std", "advantage std"))
MAX_SLICES = len(_LINE_COLORS)
SlicePlot = tuple[str, list[tuple[str, list[float], list[float]]]]


def _slice_plots(report: RunReport) -> tuple[list[SlicePlot], dict[str, int | None]]:
    """Per slice label (``slice_<label>`` columns of the samples, or a trainer's per-task keys): the
    reward's mean and tied share and the advantage spread of each of its slices over steps, one line per
    slice, three plots per label (those of a label with a lost slice first, titled with it); and, per plot
    of such a label, the onset step of its first lost slice (drawn as a mark)."""
    frame = report.run.slices
    if frame is None or frame.is_empty():
        return [], {}
    lost = {s.slice: s for s in report.verdict.slices}
    frame = frame.with_columns(pl.col("slice").str.split_exact("=", 1).struct.field("field_0").alias("__label"))
    sizes = frame.group_by("slice", "__label").agg(
        (pl.col("n_samples").sum() if "n_samples" in frame.columns else pl.len()).alias("size"))
    labels = sorted(sizes["__label"].unique().to_list(),
                    key=lambda lab: (not any(k.startswith(f"{lab}=") for k in lost), lab))
    out: list[SlicePlot] = []
    marks: dict[str, int | None] = {}
    for label in labels:
        mine = sizes.filter(pl.col("__label") == label)
        names = sorted(mine["slice"].to_list(), key=lambda n: (n not in lost, -float(
            mine.filter(pl.col("slice") == n)["size"][0] or 0), n))[:MAX_SLICES]
        dead = [n for n in names if n in lost]
        suffix = f" (lost: {', '.join(dead)})" if dead else ""
        for metric, title in _SLICE_PLOTS:
            if metric not in frame.columns:
                continue
            lines = []
            for name in names:
                rows = frame.filter(pl.col("slice") == name).sort("step").drop_nulls(metric)
                rows = rows.filter(pl.col(metric).is_finite())
                if rows.height:
                    lines.append((name, *_thin([float(v) for v in rows["step"]], rows[metric].to_list())))
            if lines:
                plot_title = f"{label}: {title}{suffix}"
                out.append((plot_title, lines))
                if dead:
                    marks[plot_title] = lost[dead[0]].onset
    return out, marks


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


#: One figure of a run: its ``<figure>`` HTML and its height in inches.
Figure = tuple[str, float]


def _run_head(i: int, report: RunReport) -> str:
    """A run's heading, verdict, findings and what to try: the text of its section."""
    run, verdict = report.run, report.verdict
    status = verdict.status
    notes = [f"{label} {text}" for label, text, _ in reading_notes(run)]
    parts = [f"<h2 id='{_slug(i)}'>{html.escape(run.path)}</h2>",
             f"<p>{html.escape(run.format)} | trainer {html.escape(str(run.trainer or 'unknown'))} | "
             f"{html.escape(steps_text(run))} | <span class='{status}'>{_status_word(status)}</span>"
             + (f", stage {verdict.stage}" if verdict.stage else "") + "</p>",
             f"<p class='dim'>metrics: {html.escape(metrics_text(run))}</p>",
             *(f"<p class='dim'>{html.escape(n)}</p>" for n in notes),
             f"<p class='summary'>{html.escape(verdict.summary)}</p>",
             # as the terminal prints them (a newcomer missed the signal by stage and the reward's course here)
             *(f"<p class='dim'>{html.escape(note[0].upper() + note[1:])}</p>" for note in verdict_notes(report)),
             _findings_table(report)]
    if verdict.what_to_try:
        parts.append("<h3>What to try first</h3><ul>" + "".join(f"<li>{html.escape(t)}</li>"
                                                                   for t in verdict.what_to_try) + "</ul>")
    if report.not_evaluable:
        parts.append("<h3>Not evaluable (a missing metric is never a pass)</h3><ul class='dim'>" + "".join(
            f"<li>{html.escape(line)}</li>" for line in not_evaluable_lines(report.not_evaluable, report.run)) + "</ul>")
    return "\n".join(p for p in parts if p)


def _run_figures(plt: Any, i: int, report: RunReport, png_dir: Path | None) -> list[Figure]:
    """A run's figures: one per stage it has metrics of, its per-sample distributions, its slices."""
    run = report.run
    if "step" not in run.frame.columns:
        return []
    offsets, shade = _phase_layout(run.frame)
    frame = _timeline(run.frame, offsets)
    # what the x-axis counts (a newcomer's PNGs had no axis label): the reader's unit, phases laid end to end
    xlabel = (step_unit(run) or "step") + (" (phases laid end to end)" if len(offsets) > 1 else "")
    stem = Path(run.path).stem  # a PNG's name says whose it is (a newcomer had to guess which run 0-U.png was)
    figures = []
    for stage, title, names in PANELS:
        panels = _plots_of(frame, stage, names)
        if not panels:
            continue
        # a slice's finding is drawn on the per-slice panels, not on the whole run's series
        whole = [f for f in report.findings if f.slice is None]
        markers = [(f.onset_step + offsets.get(int(f.evidence.get("onset_phase") or 0), 0.0), f.id,
                    f.evidence.get("metric")) for f in whole if f.stage == stage and f.onset_step is not None]
        # a threshold on the series the detector judged (not on a proxy the run does not log)
        thresholds = [(str(f.evidence["metric"]), float(f.evidence[THRESHOLD]), f.id) for f in whole
                      if f.stage == stage and isinstance(f.evidence.get(THRESHOLD), (int, float))
                      and "proxy" not in f.evidence and math.isfinite(f.evidence[THRESHOLD])]
        fig = _figure(plt, panels, markers, shade, thresholds, xlabel)
        drawn = sum(name.startswith("reward/") for name, *_ in panels)
        # the components are the reward's stage's (a newcomer read "U update (0 of its 1 reward components drawn)")
        components = sum(c.startswith("reward/") and frame[c].null_count() < frame.height for c in frame.columns
                         if stage_of(c) == stage)
        left_out = (f" ({drawn} of its {components} reward components drawn: those that moved most)"
                    if components > drawn else "")
        figures.append(_save_figure(plt, fig, f"{stage} {title}{left_out}", len(panels), len(markers), png_dir,
                                    f"{i}-{stem}-{stage}"))
    trace_panels = _trace_panels(report)
    if trace_panels:
        fig = _figure(plt, trace_panels, [], shade, xlabel=xlabel)
        figures.append(_save_figure(plt, fig, "per-sample distributions", len(trace_panels), 0, png_dir,
                                    f"{i}-{stem}-samples"))
    slice_plots, slice_marks = _slice_plots(report)
    if slice_plots:
        legends = {title for title, _ in slice_plots if title.split(": ", 1)[-1].startswith(_SLICE_PLOTS[0][1])}
        fig = _lines_figure(plt, slice_plots, slice_marks, mark_text="lost at", legends=legends, xlabel=xlabel)
        figures.append(_save_figure(plt, fig, "per slice", len(slice_plots), 0, png_dir, f"{i}-{stem}-slices"))
    return figures


def _save_figure(plt: Any, fig: Any, caption: str, plots: int, markers: int, png_dir: Path | None,
                 name: str) -> Figure:
    """The figure as an inline ``<figure>`` of SVG (and as ``png_dir/<name>.png``), then closed."""
    try:
        svg = _svg(fig)
        height = float(fig.get_figheight())
        if png_dir is not None:
            fig.savefig(png_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png", format="png", dpi=110)
    finally:
        plt.close(fig)
    return (f"<figure data-stage='{html.escape(caption)}' data-plots='{plots}' "
            f"data-markers='{markers}'><figcaption><h3>{html.escape(caption)}</h3></figcaption>{svg}</figure>", height)


def _drawn(job: tuple[int, RunReport, Path | None]) -> list[Figure]:
    """:func:`_run_figures` of one run, in a worker process."""
    return _run_figures(_pyplot(), *job)


def _all_figures(reports: Sequence[RunReport], png_dir: Path | None, jobs: int | None) -> list[list[Figure]]:
    """Every run's figures, drawn on ``jobs`` processes (default: every core) from :data:`PARALLEL_FROM`
    runs on (a figure takes tens of milliseconds; a worker takes about two seconds to start)."""
    jobs = jobs or os.cpu_count() or 1
    work = [(i, r, png_dir) for i, r in enumerate(reports)]
    if jobs == 1 or len(reports) < PARALLEL_FROM:
        plt = _pyplot()
        return [_run_figures(plt, *job) for job in work]
    return pool_map(_drawn, work, jobs, chunksize=max(1, len(work) // (jobs * 8)))


def _section(i: int, report: RunReport, figures: list[Figure]) -> str:
    """A run's section: its text, then its figures as HTML text in an inert ``<script>`` the page's script
    draws when the section comes near the screen (:data:`_DRAW`), so a page of a thousand runs opens as
    fast as its text; the placeholder has the figures' height, so the page does not jump as they come."""
    head = _run_head(i, report)
    if not figures:
        return f"<section>{head}</section>"
    inches = sum(h for _, h in figures)
    body = "".join(f for f, _ in figures).replace("</script", "<\\/script")  # never in matplotlib's SVG
    return (f"<section>{head}<div class='figures' style='min-height:{round(inches * 96 + 45 * len(figures))}px'>"
            f"<script type='text/html'>{body}</script></div></section>")


def _index(reports: Sequence[RunReport]) -> str:
    rows = "".join(
        f"<tr><td><a href='#{_slug(i)}'>{html.escape(r.run.path)}</a></td>"
        f"<td class='{r.verdict.status}'>{_status_word(r.verdict.status)}</td><td>{r.verdict.stage or ''}</td>"
        f"<td>{html.escape(r.verdict.headline or '')}</td>"
        f"<td>{'' if r.verdict.onset is None else r.verdict.onset}</td><td>{r.run.steps}</td></tr>"
        for i, r in enumerate(reports))
    return ("<table class='index'><thead><tr><th>run</th><th>verdict</th><th>stage</th><th>headline</th>"
            f"<th>since step</th><th>steps</th></tr></thead><tbody>{rows}</tbody></table>")


def render_html(reports: Sequence[RunReport], *, title: str = "advcore report", png_dir: Path | None = None,
                jobs: int | None = None) -> str:
    """The page (a string of HTML) for ``reports``; with ``png_dir`` (an existing folder) each figure is
    also written there as ``<run index>-<file stem>-<stage>.png``; figures are drawn on ``jobs`` processes (default:
    every core) when there are many runs. Raises :class:`AdvcoreError` when matplotlib is not installed."""
    _pyplot()  # before any work: the error says what to install
    figures = _all_figures(reports, png_dir, jobs)
    lost = sum(r.verdict.status == "lost" for r in reports)
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(reports)} run{'s' if len(reports) != 1 else ''}, {lost} with a lost learning signal.</p>",
            "<noscript><p>The figures are drawn by the page's script: allow JavaScript to see them.</p></noscript>"]
    if len(reports) > 1:
        body.append(_index(reports))
    body += [_section(i, r, f) for i, (r, f) in enumerate(zip(reports, figures, strict=True))]
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}<script>{_SORT}{_DRAW}</script></body></html>")


def _lines_figure(plt: Any, plots: list[tuple[str, list[tuple[str, list[float], list[float]]]]],
                  marks: dict[str, int | None] | None = None, *, mark_text: str = "parts at",
                  legends: Collection[str] | None = None, xlabel: str = "step") -> Any:
    """Small plots of several labelled series each (title, [(label, steps, values)]); ``marks`` (title ->
    step) draws where two runs part (or, with ``mark_text``, where a slice was lost); ``legends``: the
    titles of the plots that get a legend (default the first)."""
    fig, axes = _grid(plt, len(plots), xlabel)
    for ax, (title, lines) in zip(axes, plots, strict=True):
        for (label, steps, values), color in zip(lines, _LINE_COLORS, strict=False):
            ax.plot(steps, values, color=color, linewidth=1.0, label=label)
        if (step := (marks or {}).get(title)) is not None:
            ax.axvline(step, color="#b00020", linewidth=1.2)
            ax.annotate(f"{mark_text} {step}", (step, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                        color="#b00020", rotation=90, va="top", ha="right")
        ax.set_title(title, loc="left")
    for ax, (title, _) in zip(axes, plots, strict=True):
        if (title in legends) if legends is not None else ax is axes[0]:
            ax.legend(fontsize=6, loc="best")
    return fig


def render_comparison_html(a: RunReport, b: RunReport, comparison: Comparison) -> str:
    """A page of two runs side by side (:func:`advcore.compare.compare_runs`): both verdicts, where each
    stage's signals part, and per stage the signals of A and B on the same plots with the parting step
    marked. Raises :class:`AdvcoreError` when matplotlib is not installed."""
    plt = _pyplot()
    first = comparison.first
    head = [f"<h1>advcore compare</h1><p>A <code>{html.escape(a.run.path)}</code>: "
            f"<span class='{a.verdict.status}'>{_status_word(a.verdict.status)}</span><br>B "
            f"<code>{html.escape(b.run.path)}</code>: <span class='{b.verdict.status}'>"
            f"{_status_word(b.verdict.status)}</span></p>",
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
        head.append(_save_figure(plt, fig, stage, len(shown), 0, None, stage)[0])
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>advcore compare</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(head)}<script>{_SORT}</script></body></html>")
