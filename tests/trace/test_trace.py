"""advcore.trace: every statistic of the stage trace against numpy/scipy on random data with ties
and NaN (f32 and f64, slices, string group ids), bad input, canonical_row, the Recording (and the Monitor on it) and the
Parquet round trip."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import advcore
from advcore.errors import AdvcoreError
from advcore.ingest import load
from advcore.trace import STATISTICS, TOKEN_STATISTICS, Recording, canonical_row, trace_step

QS = {"q01": 0.01, "q05": 0.05, "q25": 0.25, "q50": 0.5, "q75": 0.75, "q95": 0.95, "q99": 0.99}


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[ok], y[ok]
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(scipy.stats.spearmanr(x, y).statistic)


def oracle(x: np.ndarray, prev: np.ndarray | None, r: np.ndarray, groups: np.ndarray | None) -> dict[str, float]:
    """Every statistic of one (stage, slice) cell, by numpy/scipy on float64."""
    x, r = x.astype(np.float64), r.astype(np.float64)
    out: dict[str, float] = {"n": float(x.size), "nan_count": float(np.isnan(x).sum())}
    v = x[~np.isnan(x)]
    fin = x[np.isfinite(x)]
    if fin.size:
        out.update(
            zero_frac=float(np.mean(fin == 0)),
            near_zero_frac=float(np.mean(np.abs(fin) <= 1e-8)),
            pos_frac=float(np.mean(fin > 0)),
            neg_frac=float(np.mean(fin < 0)),
        )
    out["n_unique"] = float(np.unique(fin).size)
    if prev is not None:
        p = prev.astype(np.float64)
        with np.errstate(invalid="ignore"):
            changed = (np.isnan(p) != np.isnan(x)) | (np.abs(x - p) > 0)
        both = np.isfinite(p) & np.isfinite(x)
        out["changed_frac"] = float(changed.mean())
        out["mean_abs_change"] = float(np.abs(x - p)[both].mean()) if both.any() else math.nan
        out["max_abs_change"] = float(np.abs(x - p)[both].max()) if both.any() else math.nan
    if v.size:
        out.update(mean=float(v.mean()), std=float(v.std()), min=float(v.min()), max=float(v.max()))
        out["mad"] = float(scipy.stats.median_abs_deviation(v))
        out["iqr"] = float(scipy.stats.iqr(v))
        for name, q in QS.items():
            out[name] = float(np.quantile(v, q))
        out["spearman_reward"] = _spearman(x, r)
    if groups is not None and v.size:
        labels = np.unique(groups)
        out["n_groups"] = float(labels.size)
        rhos, stds, tied, judged, within = [], [], 0, 0, 0.0
        for g in labels:
            gx, gr = x[groups == g], r[groups == g]
            rho = _spearman(gx, gr)
            if not math.isnan(rho):
                rhos.append(rho)
            gv = gx[~np.isnan(gx)]
            if gv.size >= 2:
                judged += 1
                lo, hi = gv.min(), gv.max()
                tied += bool(hi - lo <= 1e-8 + 1e-5 * max(abs(lo), abs(hi)))
                stds.append(gv.std(ddof=1))
            if gv.size:
                within += float(((gv - gv.mean()) ** 2).sum())
        out["spearman_reward_within"] = float(np.mean(rhos)) if rhos else math.nan
        out["n_groups_spearman"] = float(len(rhos))
        out["zero_variance_group_frac"] = tied / judged if judged else math.nan
        out["std_within"] = float(np.mean(stds)) if stds else math.nan
        total = float(((v - v.mean()) ** 2).sum())
        out["within_var_frac"] = min(within / total, 1.0) if total > 0 else math.nan
    return out


def cells(frame: pl.DataFrame) -> dict[tuple[str, str, str], float]:
    return {(a, b, c): v for a, b, c, v in frame.select("stage", "slice", "statistic", "value").iter_rows()}


def assert_cell(got: dict[tuple[str, str, str], float], stage: str, slc: str, want: dict[str, float]) -> None:
    for name in STATISTICS:
        g = got[(stage, slc, name)]
        w = want.get(name, math.nan)
        if math.isnan(w):
            assert math.isnan(g), (stage, slc, name, g)
        else:
            assert g == pytest.approx(w, rel=1e-9, abs=1e-12), (stage, slc, name, g, w)


values = st.one_of(
    st.integers(-8, 8).map(lambda v: v * 0.25),  # ties, exact zeros
    st.just(math.nan),
    st.floats(-3, 3, allow_nan=False, width=32),
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(values, values, st.integers(0, 5), st.sampled_from(["a", "b", "c"])),
                  min_size=1, max_size=120),
    f32=st.booleans(),
    string_groups=st.booleans(),
)
def test_every_statistic_against_numpy_scipy(rows: list[tuple[Any, ...]], f32: bool, string_groups: bool) -> None:
    dtype = np.float32 if f32 else np.float64
    reward = np.array([r[0] for r in rows], dtype=dtype)
    adv = np.array([r[1] for r in rows], dtype=dtype)
    clipped = np.clip(adv, -1.0, 1.0)
    gid = np.array([r[2] for r in rows])
    groups: Any = [f"uid-{g}" for g in gid] if string_groups else gid
    task = [r[3] for r in rows]
    frame = trace_step(7, rewards=reward, group_ids=groups, adv=adv, adv_clipped=clipped, slices={"task": task})
    assert frame.schema == {"step": pl.Int64, "stage": pl.String, "slice": pl.String, "statistic": pl.String,
                            "value": pl.Float64}
    assert frame["step"].unique().to_list() == [7]
    got = cells(frame)
    stages = [("reward", reward, None), ("adv", adv, reward), ("adv_clipped", clipped, adv)]
    tasks = np.array(task)
    for slc, keep in [("all", np.ones(len(rows), bool))] + [(f"task={t}", tasks == t) for t in sorted(set(task))]:
        for name, x, prev in stages:
            want = oracle(x[keep], None if prev is None else prev[keep], reward[keep], gid[keep])
            assert_cell(got, name, slc, want)
    assert {s for s in frame["slice"].unique()} == {"all", *(f"task={t}" for t in set(task))}


def test_no_groups_leaves_group_statistics_nan() -> None:
    rng = np.random.default_rng(3)
    r = rng.normal(size=500)
    a = r - r.mean()
    got = cells(trace_step(1, rewards=r, adv=a))
    assert_cell(got, "adv", "all", oracle(a, r, r, None))
    assert math.isnan(got[("reward", "all", "zero_variance_group_frac")])


def test_stage_order_and_contiguous_groups_equal_ids() -> None:
    rng = np.random.default_rng(4)
    r = (rng.random(4096) < 0.3).astype(np.float32)
    g = r.reshape(-1, 16)
    a = ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)).ravel().astype(np.float32)
    by_size = trace_step(2, rewards=r, group_size=16, adv_raw=a, baseline=r * 0.5, returns=r, adv=a,
                         adv_clipped=np.clip(a, -1, 1))
    assert by_size["stage"].unique(maintain_order=True).to_list() == ["reward", "baseline", "return", "adv_raw", "adv",
                                                                    "adv_clipped"]
    by_ids = trace_step(2, rewards=r, group_ids=np.arange(4096) // 16, adv_raw=a, baseline=r * 0.5, returns=r, adv=a,
                        adv_clipped=np.clip(a, -1, 1))
    assert by_size.equals(by_ids)
    got = cells(by_size)
    # adv equals adv_raw: nothing changed; return equals reward after baseline.
    assert got[("adv", "all", "changed_frac")] == 0.0
    assert got[("return", "all", "changed_frac")] == pytest.approx(float(np.mean(r != r * 0.5)))


def test_large_input_takes_the_parallel_path() -> None:
    rng = np.random.default_rng(5)
    n = 1 << 16
    r = rng.normal(size=n)
    a = np.round(r - np.repeat(r.reshape(-1, 16).mean(1), 16), 2)
    got = cells(trace_step(0, rewards=r, group_size=16, adv=a, adv_clipped=np.clip(a, -0.5, 0.5)))
    assert_cell(got, "adv", "all", oracle(a, r, r, np.arange(n) // 16))
    assert_cell(got, "adv_clipped", "all", oracle(np.clip(a, -0.5, 0.5), a, r, np.arange(n) // 16))


def test_inputs_polars_lists_and_torch_like() -> None:
    r = [1.0, 0.0, None, 1.0]
    frame = trace_step(1, rewards=pl.Series(r, dtype=pl.Float64), adv=[0.5, -0.5, 0.0, 0.5],
                       group_ids=pl.Series([1, 1, 2, 2]))
    got = cells(frame)
    assert got[("reward", "all", "nan_count")] == 1.0
    assert got[("reward", "all", "mean")] == pytest.approx(2 / 3)


class _TensorLike:
    """What advcore reads from a torch tensor: the DLPack protocol (torch is not a test dependency)."""

    def __init__(self, values: list[float]) -> None:
        self._a = np.array(values, dtype=np.float32)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()


def test_dlpack_input() -> None:
    t = trace_step(1, rewards=_TensorLike([1.0, 0.0, 1.0, 0.0]), adv=_TensorLike([0.5, -0.5, 0.5, -0.25]))
    got = cells(t)
    assert got[("adv", "all", "spearman_reward")] == pytest.approx(_spearman(np.array([0.5, -0.5, 0.5, -0.25]),
                                                                           np.array([1.0, 0, 1, 0])))
    assert got[("adv", "all", "mean")] == 0.0625


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"adv": np.zeros(3)}, "`adv` has length 3"),
        ({"returns": np.zeros(5)}, "`returns` has length 5"),
        ({"group_ids": np.zeros(3, dtype=np.int64)}, "`group_ids` has length 3"),
        ({"group_ids": ["a", "b", None, "c"]}, "`group_ids` holds nulls"),
        ({"group_size": 3}, "`group_size`=3 does not divide"),
        ({"group_size": 2, "group_ids": [1, 1, 2, 2]}, "at most one of `group_ids` and `group_size`"),
        ({"slices": {"task": ["a", "b"]}}, "`slices['task']` has length 2"),
        ({"token_adv": np.zeros((3, 2))}, "`token_adv` must have shape"),
        ({"token_adv": np.zeros((4, 2)), "response_mask": np.ones((4, 3))}, "`response_mask` has shape"),
        ({"adv": np.array(["x"] * 4)}, "`adv` has unsupported dtype"),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(AdvcoreError) as e:
        trace_step(1, rewards=np.array([1.0, 0.0, 1.0, 0.0]), **kwargs)
    assert needle in str(e.value)


def test_empty_rewards_and_bad_step() -> None:
    with pytest.raises(AdvcoreError, match="`rewards` is empty"):
        trace_step(1, rewards=np.zeros(0))
    with pytest.raises(AdvcoreError, match="`step` must be an integer"):
        trace_step(1.5, rewards=np.zeros(2))  # type: ignore[arg-type]


def test_token_allocation() -> None:
    rng = np.random.default_rng(6)
    n, t = 64, 12
    adv = rng.normal(size=n)
    length = rng.integers(1, t + 1, size=n)
    mask = np.arange(t)[None, :] < length[:, None]
    # Mean allocation: each response token gets adv / length (a per-sequence mean over tokens).
    tok = np.where(mask, adv[:, None] / length[:, None], rng.normal(size=(n, t)))  # padding ignored
    tok[0, 0] = 0.0 if mask[0, 0] else tok[0, 0]
    frame = trace_step(3, rewards=adv > 0, adv=adv, token_adv=tok, response_mask=mask)
    got = {s: v for _, _, s, v in frame.filter(stage="adv_token", slice="all").select(
        "stage", "slice", "statistic", "value").iter_rows()}
    assert list(got) == list(TOKEN_STATISTICS)
    ratio = np.where(mask, tok, 0).sum(1) / adv
    assert got["n_tokens"] == float(length.sum())
    assert got["alloc_mean"] == pytest.approx(ratio.mean())
    assert got["alloc_std"] == pytest.approx(ratio.std())
    assert got["alloc_q50"] == pytest.approx(np.median(ratio))
    assert got["token_nonzero_frac"] == pytest.approx(float(((tok != 0) & mask).sum()) / length.sum())
    mean_abs = np.where(mask, np.abs(tok), 0).sum(1) / length
    assert got["spearman_abs_adv_length"] == pytest.approx(scipy.stats.spearmanr(mean_abs, length).statistic)
    # The flat layout (token values + the sample of each token) gives the same numbers.
    idx = np.nonzero(mask)
    flat = trace_step(3, rewards=adv > 0, adv=adv, token_adv=tok[idx], token_sample_index=idx[0])
    assert flat.equals(frame)


def test_canonical_row_against_numpy() -> None:
    rng = np.random.default_rng(7)
    r = (rng.random(512) < 0.4).astype(np.float64)
    r[:32] = 1.0  # two tied groups of 16
    r[40] = np.nan
    g = r.reshape(-1, 16)
    a = np.nan_to_num(g - np.nanmean(g, 1, keepdims=True)).ravel()
    row = canonical_row(trace_step(9, rewards=r, group_size=16, adv=a))
    v = r[~np.isnan(r)]
    stds, tied = [], 0
    for grp in g:
        gv = grp[~np.isnan(grp)]
        stds.append(gv.std(ddof=1))
        tied += bool(gv.max() == gv.min())
    assert row["reward_mean"] == pytest.approx(v.mean())
    assert row["reward_std"] == pytest.approx(v.std())
    assert (row["reward_min"], row["reward_max"]) == (0.0, 1.0)
    assert row["reward_std_within"] == pytest.approx(np.mean(stds))
    assert row["zero_variance_group_frac"] == pytest.approx(tied / 32)
    assert row["adv_zero_frac"] == pytest.approx(np.mean(np.abs(a) <= 1e-8))
    assert row["adv_std"] == pytest.approx(a.std())
    assert row["spearman_adv_reward"] == pytest.approx(_spearman(a, r))
    assert row["reward_null_frac"] == pytest.approx(1 / 512)
    assert row["n_samples"] == 512.0
    # Without groups or adv the group and adv metrics are absent, not 0.
    bare = canonical_row(trace_step(9, rewards=r))
    assert "zero_variance_group_frac" not in bare and "adv_mean" not in bare
    with pytest.raises(AdvcoreError, match="several steps"):
        canonical_row(pl.concat([trace_step(1, rewards=r), trace_step(2, rewards=r)]))


def _grpo_step(rng: np.random.Generator, tied: bool, groups: int = 32, size: int = 8) -> dict[str, Any]:
    if tied:
        r = np.repeat((rng.random(groups) < 0.5).astype(float), size)
    else:
        r = (rng.random(groups * size) < 0.5).astype(float)
    g = r.reshape(groups, size)
    adv = ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)).ravel()
    uids = [f"prompt-{i}" for i in range(groups) for _ in range(size)]
    return {"rewards": r, "group_ids": uids, "adv": adv}


def _observe(mon: advcore.Monitor, step: int, arrays: dict[str, Any], **kw: Any) -> dict[str, float]:
    return mon.observe(step, rewards=arrays["rewards"], group_ids=arrays["group_ids"], advantages=arrays["adv"], **kw)


def test_the_monitor_reports_a_finding_once(caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(8)
    seen: list[Any] = []
    tracer = advcore.Monitor(detectors=["DEGENERATE_GROUPS"], callback=seen.append, detect_budget=None,
                             strict=True, alert_trackers=False)
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step in range(1, 31):
            _observe(tracer, step, _grpo_step(rng, tied=step > 10))
    assert [f.id for f in seen] == ["DEGENERATE_GROUPS"]
    assert [f.id for f in tracer.findings] == ["DEGENERATE_GROUPS"]
    assert 11 <= seen[0].onset_step <= 16
    assert sum("DEGENERATE_GROUPS" in r.getMessage() for r in caplog.records) == 1
    steps = tracer.steps_frame
    assert steps["step"].to_list() == list(range(1, 31))
    assert steps["zero_variance_group_frac"][-1] == 1.0
    assert tracer.run().format == "trace"


def test_the_monitor_is_quiet_on_a_healthy_run(caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(9)
    tracer = advcore.Monitor(detect_budget=None, strict=True, alert_trackers=False)
    with caplog.at_level(logging.WARNING, logger="advcore"):
        for step in range(1, 41):
            assert _observe(tracer, step, _grpo_step(rng, tied=False))["advcore/findings"] == 0
    assert tracer.findings == [] and not caplog.records


def test_monitor_and_recording_arguments() -> None:
    with pytest.raises(AdvcoreError, match="unknown detector"):
        advcore.Monitor(detectors=["NOPE"])
    with pytest.raises(AdvcoreError, match="min_steps"):
        advcore.Monitor(min_steps=0)
    t = Recording()
    t.add(3, rewards=np.ones(4))
    with pytest.raises(AdvcoreError, match="must increase"):
        t.add(3, rewards=np.ones(4))
    assert advcore.trace.trace_step is trace_step and not hasattr(advcore, "Tracer")


def test_parquet_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    tracer = Recording()
    for step in range(1, 9):
        arrays = _grpo_step(rng, tied=False)
        tracer.add(step, **arrays, slices={"half": np.arange(256) < 128})
    path = tmp_path / "trace.parquet"
    tracer.write_parquet(path)
    back = pl.read_parquet(path)
    assert back.filter(pl.col("stage") != "step").equals(tracer.frame)
    assert back.filter(pl.col("stage") == "step").height > 0  # the per-step metrics ride along
    assert back.filter(pl.col("stage") != "step").height == 8 * 2 * 3 * len(STATISTICS)
    run = advcore.ingest.load(path)
    assert run.format == "trace" and not run.errors
    expect = tracer.steps_frame
    assert run.frame["step"].to_list() == expect["step"].to_list()
    for col in ("reward_mean", "reward_std_within", "zero_variance_group_frac", "adv_std"):
        assert run.frame[col].to_list() == pytest.approx(expect[col].to_list())


def test_the_detectors_history_is_bounded_and_merges_older_steps_pairwise() -> None:
    tracer = Recording(history=64)
    values = [float(s) for s in range(1, 201)]
    values[10] = math.nan  # step 11
    for step, v in enumerate(values, start=1):
        tracer.add(step, metrics={"grad_norm": v})
    frame = tracer.steps_frame
    assert 32 <= frame.height <= 64 and tracer.steps_observed == 200 and tracer.last_step == 200
    # the last 32 steps are intact
    assert frame["step"].to_list()[-32:] == list(range(169, 201))
    assert frame["grad_norm"].to_list()[-32:] == values[-32:]
    # older rows: the first step of each merged run of steps, the mean of its values (NaN kept)
    steps, got = frame["step"].to_list(), frame["grad_norm"].to_list()
    bounds = [*steps, 201]
    for i, first in enumerate(steps[:-32]):
        span = values[first - 1: bounds[i + 1] - 1]
        expect = math.nan if any(math.isnan(v) for v in span) else sum(span) / len(span)
        assert (math.isnan(got[i]) and math.isnan(expect)) or got[i] == pytest.approx(expect)
    assert any(math.isnan(v) for v in got)
    with pytest.raises(AdvcoreError, match="history"):
        Recording(history=8)
    with pytest.raises(AdvcoreError, match="history"):
        advcore.Monitor(history=8)


def test_a_long_recording_is_spilled_to_parts_and_streamed_into_one_file(tmp_path: Path) -> None:
    from advcore.trace import KEEP_STEPS, SPILL_STEPS

    n = 2 * SPILL_STEPS + 10
    mon = advcore.Monitor(record_to=tmp_path / "rec.parquet", detect_every=0, alert_trackers=False)
    for step in range(1, n + 1):
        mon.observe(step, metrics={"grad_norm": float(step)})
    spilled = mon.recording._spilled  # noqa: SLF001 (the test looks at the parts the class keeps)
    assert len(spilled) == 2 and all(p.exists() for p in spilled)
    mon.close()
    assert not any(p.exists() for p in spilled)  # the temporary parts are removed
    back = load(tmp_path / "rec.parquet")
    assert back.frame["step"].to_list() == list(range(1, n + 1))
    assert back.frame["grad_norm"].to_list() == [float(s) for s in range(1, n + 1)]
    # without record_to, the recording keeps the last KEEP_STEPS to KEEP_STEPS + SPILL_STEPS steps
    tracer = Recording()
    for step in range(1, KEEP_STEPS + 2 * SPILL_STEPS + 1):
        tracer.add(step, metrics={"grad_norm": 1.0})
    kept = tracer.lazy().collect()["step"].unique().sort().to_list()
    assert kept[-1] == KEEP_STEPS + 2 * SPILL_STEPS and KEEP_STEPS <= len(kept) <= KEEP_STEPS + SPILL_STEPS


def test_spilled_parts_go_with_the_recording() -> None:
    import gc

    from advcore.trace import SPILL_STEPS

    tracer = Recording(spill=True)
    for step in range(1, SPILL_STEPS + 1):
        tracer.add(step, metrics={"grad_norm": 1.0})
    folder = tracer._spilled[0].parent  # noqa: SLF001 (the test looks at the parts the class keeps)
    assert folder.is_dir()
    del tracer
    gc.collect()
    assert not folder.exists()   # removed without close(), e.g. by a run that crashed


def test_a_recording_path_set_after_construction_keeps_every_step(tmp_path: Path) -> None:
    # the TRL callback learns the output folder at the first step and sets record_to then
    from advcore.trace import KEEP_STEPS, SPILL_STEPS

    mon = advcore.Monitor(detect_every=0, alert_trackers=False)
    mon.record_to = tmp_path / "rec.parquet"
    n = KEEP_STEPS + 2 * SPILL_STEPS
    for step in range(1, n + 1):
        mon.observe(step, metrics={"grad_norm": float(step)})
    mon.close()
    assert load(tmp_path / "rec.parquet").frame["step"].to_list() == list(range(1, n + 1))


def test_the_core_gives_the_same_table_on_one_thread_or_two() -> None:
    # step_row traces on one thread while the reference checks run beside it; the table must not depend on it
    from advcore import _core

    rng = np.random.default_rng(4)
    reward = (rng.random(1 << 15) < 0.4).astype(np.float32)
    adv = rng.standard_normal(1 << 15).astype(np.float32)
    args = ([reward, adv], reward, 16, None, [], [], 1e-8, 1e-8, 1e-5, 0.0)
    names_1, one = _core.trace(*args, 1)
    names_2, two = _core.trace(*args, 2)
    assert names_1 == names_2
    np.testing.assert_array_equal(np.asarray(one), np.asarray(two))
