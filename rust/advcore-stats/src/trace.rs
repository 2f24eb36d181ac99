//! The per-sample stage trace: the statistics of every stage of one training step (reward,
//! baseline, return, raw / normalised / clipped advantage, ...) over the whole batch and over
//! each slice of it, in one call.
//!
//! Nothing here is a new estimator. Each statistic is the kernel of its own module run with
//! `NanPolicy::Omit`: [`crate::census`] (NaN, zeros, near-zeros, signs, distinct values,
//! change from the previous stage), [`crate::grouped`] (moments, the tied-group census and the
//! mean within-group std, all in one scan), [`crate::quantile`] (quantiles; the IQR is the
//! difference of two of them, as [`crate::robust::interquartile_range`] computes it),
//! [`crate::robust`] (MAD) and [`crate::rank`] (Spearman with the reward, global and within
//! groups). The reward is ranked once ([`RankedReference`]) and every NaN-free stage is
//! correlated with those ranks; a stage with NaN falls back to [`spearman`] with NaN omission.
//!
//! The result is a dense table `(stage, slice, statistic)`: slice 0 is the whole batch, then
//! the values of each slice label in turn. Large inputs are traced on several threads
//! ([`TraceOptions::threads`]), one (stage, slice) cell per task.

use crate::census::{ValueCounts, change_census, value_census};
use crate::checks::{CheckOptions, GroupColumns, StepChecks, Summaries, step_checks_with};
use crate::error::{Result, StatsError, check_non_empty, check_same_len};
use crate::grouped::{GroupStat, Plan, Sink, Tolerance};
use crate::groups::Groups;
use crate::moments::Moments;
use crate::quantile::{Method, Select, quantile, sorted_quantiles};
use crate::rank::{GroupedReference, RankSample, RankedReference, Spearman, spearman_threads, within_group_spearman};
use crate::robust::{median_abs_deviation, sorted_median_abs_deviation};
use crate::sample::NanPolicy;

/// The quantile probabilities of the trace (numpy's `"linear"` method).
pub const QUANTILES: [f64; 7] = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99];

/// The statistics of one (stage, slice) cell, in table order. Fractions of values are over the
/// finite values; moments, quantiles, MAD and ranks are over the non-NaN values (NaN omitted).
pub const STAT_NAMES: [&str; 30] = [
    // Counts.
    "n",
    "nan_count",
    // Moments (ddof 0) and range.
    "mean",
    "std",
    "min",
    "max",
    // Robust spread and quantiles.
    "mad",
    "iqr",
    "q01",
    "q05",
    "q25",
    "q50",
    "q75",
    "q95",
    "q99",
    // Value census.
    "n_unique",
    "zero_frac",
    "near_zero_frac",
    "pos_frac",
    "neg_frac",
    // Rank agreement with the reward.
    "spearman_reward",
    "spearman_reward_within",
    "n_groups_spearman",
    // Groups.
    "n_groups",
    "zero_variance_group_frac",
    "std_within",
    "within_var_frac",
    // Change from the previous stage.
    "changed_frac",
    "mean_abs_change",
    "max_abs_change",
];

/// Number of statistics per cell.
pub const N_STATS: usize = STAT_NAMES.len();

/// Index of a statistic in [`STAT_NAMES`] (a compile-time lookup for the writers below).
const fn idx(name: &str) -> usize {
    let mut i = 0;
    while i < N_STATS {
        if const_eq(STAT_NAMES[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("unknown statistic")
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Tolerances of the trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceOptions {
    /// `near_zero_frac` counts `|x| <= near_zero_atol` (the census default, `1e-8`).
    pub near_zero_atol: f64,
    /// A group is tied when its spread is within this tolerance (numpy's `isclose` defaults).
    pub group_tol: Tolerance,
    /// A value changed from the previous stage when `|after - before| > change_atol` (0: not
    /// bit-equal up to the sign of zero).
    pub change_atol: f64,
    /// Worker threads for large inputs (one (stage, slice) cell per task): 0 picks
    /// `min(2, available cores)`; 1 keeps the trace on the calling thread.
    pub threads: usize,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self { near_zero_atol: 1e-8, group_tol: Tolerance::default(), change_atol: 0.0, threads: 0 }
    }
}

/// One slice label: a dense code `0..n` per sample.
#[derive(Debug, Clone, Copy)]
pub struct SliceCodes<'a> {
    /// The code of each sample.
    pub codes: &'a [u32],
    /// Number of distinct codes (slices) of the label.
    pub n: usize,
}

/// The trace of one step: `values[(stage * n_slices + slice) * N_STATS + stat]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceTable {
    /// Number of stages K.
    pub n_stages: usize,
    /// Number of slices, the whole batch included (`1 + Σ n` over the labels).
    pub n_slices: usize,
    /// The cells, row-major `(K, n_slices, N_STATS)`; NaN where a statistic is undefined.
    pub values: Vec<f64>,
}

impl TraceTable {
    /// The statistics of one cell.
    #[must_use]
    pub fn cell(&self, stage: usize, slice: usize) -> &[f64] {
        let start = (stage * self.n_slices + slice) * N_STATS;
        &self.values[start..start + N_STATS]
    }
}

/// Below this many samples (times stages) the trace runs on the calling thread when the caller
/// leaves the thread count to it (`threads = 0`). A GRPO step of 16,384 samples and two stages is
/// above it: a second thread took `trace` from 1.0 to 0.8 ms on the 2-core dev machine at load 1 (and
/// cost ~10% at load 2.5, when the other core was busy). `advcore.trace.step_row` asks for one
/// thread up to 131,072 samples: inside a trainer the other core is rarely free.
const PARALLEL_MIN: usize = 1 << 15;

/// Trace `stages` (K arrays of N values, in pipeline order) against `reward` (N values).
///
/// `groups`: the group layout of GRPO-style runs (`None`: no group statistics, NaN).
/// `slices`: slice labels; every code must be below its label's `n`.
///
/// # Errors
/// No stage; empty `reward`; a stage, `group_ids` or a slice code array of another length
/// than `reward` (the message names which); a slice code `>= n`; a bad group layout or
/// tolerance.
pub fn trace<T: RankSample + Select>(
    stages: &[&[T]],
    reward: &[T],
    groups: Option<Groups<'_>>,
    slices: &[SliceCodes<'_>],
    opts: &TraceOptions,
) -> Result<TraceTable> {
    check_inputs(stages, reward, groups, slices, opts)?;
    Ok(traced(stages, reward, groups.map(Groups::simplified), slices, opts, &[]).0)
}

/// [`trace`] and the reference checks of the step ([`crate::checks::step_checks`]) of the reward
/// and of stage `adv_stage` (the advantages, if any), grouped by `groups`. The checks read the
/// group summaries of the reward and of the advantages off the trace's own scan of the whole
/// batch instead of summarising them again.
///
/// # Errors
/// As [`trace`] and [`crate::checks::step_checks`]; `adv_stage` not a stage.
pub fn trace_checked<T: RankSample + Select>(
    stages: &[&[T]],
    reward: &[T],
    groups: Groups<'_>,
    slices: &[SliceCodes<'_>],
    opts: &TraceOptions,
    adv_stage: Option<usize>,
    check_opts: &CheckOptions,
) -> Result<(TraceTable, StepChecks)> {
    check_inputs(stages, reward, Some(groups), slices, opts)?;
    let groups = groups.simplified();
    if let Some(j) = adv_stage.filter(|&j| j >= stages.len()) {
        return Err(StatsError::invalid("adv_stage", format!("stage {j} does not exist ({} stages)", stages.len())));
    }
    let reward_stage = stages.iter().position(|s| std::ptr::eq(s.as_ptr(), reward.as_ptr()) && s.len() == reward.len());
    let keep: Vec<usize> = reward_stage.into_iter().chain(adv_stage).collect();
    let (table, mut summaries) = traced(stages, reward, Some(groups), slices, opts, &keep);
    let mut take =
        |j: Option<usize>| j.and_then(|j| summaries.iter_mut().find(|(s, _)| *s == j)).map(|(_, c)| std::mem::take(c));
    let (reward_cols, adv_cols) = (take(reward_stage), take(adv_stage));
    let known = Summaries { reward: reward_cols.as_ref(), adv: adv_cols.as_ref() };
    let checks = step_checks_with(reward, groups, adv_stage.map(|j| stages[j]), check_opts, known)?;
    Ok((table, checks))
}

/// The trace, and the group summaries of the whole batch's stages listed in `keep`.
fn traced<T: RankSample + Select>(
    stages: &[&[T]],
    reward: &[T],
    groups: Option<Groups<'_>>,
    slices: &[SliceCodes<'_>],
    opts: &TraceOptions,
    keep: &[usize],
) -> (TraceTable, Vec<(usize, GroupColumns)>) {
    let n = reward.len();
    // The views: the whole batch, then every slice as gathered copies.
    let mut views: Vec<View<'_, T>> = vec![View::whole(stages, reward, groups)];
    for s in slices {
        views.extend(View::gather(stages, reward, groups, s));
    }
    let n_slices = views.len();
    let k = stages.len();
    let mut values = vec![f64::NAN; k * n_slices * N_STATS];
    // One task per (slice, stage): the slice's reward ranks are shared by its stages.
    // A stage that is the reward array itself correlates perfectly with it wherever it varies; its
    // order statistics come from the ranking's sort.
    let is_reward: Vec<bool> = stages.iter().map(|s| std::ptr::eq(s.as_ptr(), reward.as_ptr())).collect();
    let reward_is_stage = is_reward.contains(&true);
    let refs: Vec<Option<(RankedReference, Option<Ordered>)>> = views
        .iter()
        .map(|v| {
            let r = v.reward();
            RankedReference::new_and(r, |value| reward_is_stage.then(|| order_of(value, r.len())))
        })
        .collect();
    let tasks: Vec<(usize, usize)> = (0..n_slices).flat_map(|s| (0..k).map(move |j| (s, j))).collect();
    // The reward ranked within its groups, when some other stage will be correlated with it.
    let grouped: Vec<Option<GroupedReference>> = views
        .iter()
        .map(|v| match v.groups() {
            Some(g) if is_reward.contains(&false) => GroupedReference::new(v.reward(), g).ok().flatten(),
            _ => None,
        })
        .collect();
    let run_task = |&(s, j): &(usize, usize), out: &mut [f64]| -> Option<GroupColumns> {
        let v = &views[s];
        let prev = if j == 0 { None } else { Some(v.stage(j - 1)) };
        let reward = Reward {
            values: v.reward(),
            ranks: refs[s].as_ref().map(|(r, _)| r),
            ordered: refs[s].as_ref().and_then(|(_, o)| o.as_ref()),
            grouped: grouped[s].as_ref(),
            is_stage: is_reward[j],
        };
        let mut kept = (s == 0 && keep.contains(&j)).then(GroupColumns::default);
        cell(v.stage(j), prev, &reward, v.groups(), opts, out, kept.as_mut());
        kept
    };
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(2),
        t => t,
    };
    let threads = if n * k >= PARALLEL_MIN { threads.clamp(1, tasks.len()) } else { 1 };
    // Workers take the next task from a shared counter (the whole batch's stages come first).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(t) = tasks.get(i) else { break };
            let mut out = vec![f64::NAN; N_STATS];
            let kept = run_task(t, &mut out);
            done.push((t.0 * k + t.1, out, kept));
        }
        done
    };
    let mut cells: Vec<(usize, Vec<f64>, Option<GroupColumns>)> = Vec::with_capacity(tasks.len());
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        cells.extend(work());
        for h in helpers {
            match h.join() {
                Ok(done) => cells.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    let mut summaries = Vec::new();
    for (slot, out, kept) in cells {
        let (s, j) = (slot / k, slot % k);
        let start = (j * n_slices + s) * N_STATS;
        values[start..start + N_STATS].copy_from_slice(&out);
        if let Some(cols) = kept {
            summaries.push((j, cols));
        }
    }
    (TraceTable { n_stages: k, n_slices, values }, summaries)
}

/// The samples of one slice: borrowed for the whole batch, gathered for a slice.
enum View<'a, T> {
    Whole { stages: &'a [&'a [T]], reward: &'a [T], groups: Option<Groups<'a>> },
    Part { stages: Vec<Vec<T>>, reward: Vec<T>, ids: Option<Vec<i64>> },
}

impl<'a, T: Copy> View<'a, T> {
    fn whole(stages: &'a [&'a [T]], reward: &'a [T], groups: Option<Groups<'a>>) -> Self {
        View::Whole { stages, reward, groups }
    }

    /// One view per code of `label`, each holding the samples with that code.
    fn gather(stages: &[&[T]], reward: &[T], groups: Option<Groups<'_>>, label: &SliceCodes<'_>) -> Vec<Self> {
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); label.n];
        for (i, &c) in label.codes.iter().enumerate() {
            members[c as usize].push(i as u32);
        }
        members
            .into_iter()
            .map(|m| {
                let take = |xs: &[T]| m.iter().map(|&i| xs[i as usize]).collect::<Vec<T>>();
                let ids = groups.map(|g| match g {
                    Groups::Contiguous { size } => m.iter().map(|&i| (i as usize / size) as i64).collect(),
                    Groups::Ids(ids) => m.iter().map(|&i| ids[i as usize]).collect(),
                });
                View::Part { stages: stages.iter().map(|s| take(s)).collect(), reward: take(reward), ids }
            })
            .collect()
    }

    fn stage(&self, j: usize) -> &[T] {
        match self {
            View::Whole { stages, .. } => stages[j],
            View::Part { stages, .. } => &stages[j],
        }
    }

    fn reward(&self) -> &[T] {
        match self {
            View::Whole { reward, .. } => reward,
            View::Part { reward, .. } => reward,
        }
    }

    fn groups(&self) -> Option<Groups<'_>> {
        match self {
            View::Whole { groups, .. } => *groups,
            View::Part { ids, .. } => ids.as_deref().map(Groups::Ids),
        }
    }
}

/// Combines the group summaries of one scan into the batch moments, the mean within-group std
/// (ddof 1, groups of at least two values) and the pooled within-group sum of squares.
/// Also hands every group summary to `keep`, when set.
#[derive(Default)]
struct Pool<'a> {
    total: Moments,
    within_m2: f64,
    std_sum: f64,
    std_groups: u64,
    keep: Option<&'a mut GroupColumns>,
}

impl Sink for Pool<'_> {
    fn start(&mut self, max_groups: usize) {
        if let Some(cols) = self.keep.as_deref_mut() {
            cols.start(max_groups);
        }
    }

    fn emit(&mut self, row: usize, s: &GroupStat) {
        if let Some(cols) = self.keep.as_deref_mut() {
            cols.emit(row, s);
        }
        if s.count == 0 {
            return;
        }
        self.total = self.total.combine(&s.to_moments());
        self.within_m2 += s.m2;
        if s.count > 1 {
            self.std_sum += (s.m2 / (s.count - 1) as f64).sqrt();
            self.std_groups += 1;
        }
    }
}

/// The reward of a slice, as a cell sees it.
struct Reward<'a, T> {
    values: &'a [T],
    /// Its ranks, when it holds no NaN.
    ranks: Option<&'a RankedReference>,
    /// Its order statistics, read off the ranking's sort, when it holds no NaN and is a stage.
    ordered: Option<&'a Ordered>,
    /// Its ranks within groups, when it holds no NaN and there are groups.
    grouped: Option<&'a GroupedReference>,
    /// True when the stage being traced is this very array.
    is_stage: bool,
}

/// The quantiles ([`QUANTILES`]) and, when their median is finite, the MAD of a sorted sample.
type Ordered = (Vec<f64>, Option<f64>);

/// The argument checks of [`trace`].
fn check_inputs<T>(
    stages: &[&[T]],
    reward: &[T],
    groups: Option<Groups<'_>>,
    slices: &[SliceCodes<'_>],
    opts: &TraceOptions,
) -> Result<()> {
    check_non_empty("reward", reward.len())?;
    if stages.is_empty() {
        return Err(StatsError::Empty { arg: "stages" });
    }
    let n = reward.len();
    for (k, s) in stages.iter().enumerate() {
        if s.len() != n {
            return Err(StatsError::invalid(
                "stages",
                format!(
                    "stage {k} has length {} but `reward` has length {n}; they must be paired element by element",
                    s.len()
                ),
            ));
        }
    }
    if let Some(g) = groups {
        g.check("reward", n)?;
    }
    opts.group_tol.check()?;
    for (name, v) in [("near_zero_atol", opts.near_zero_atol), ("change_atol", opts.change_atol)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(StatsError::invalid(name, format!("must be a finite non-negative number, got {v}")));
        }
    }
    for s in slices {
        check_same_len("reward", n, "slice_ids", s.codes.len())?;
        if let Some(&bad) = s.codes.iter().find(|&&c| c as usize >= s.n) {
            return Err(StatsError::invalid("slice_ids", format!("code {bad} is not below n_slices = {}", s.n)));
        }
    }
    Ok(())
}

/// The order statistics of `n` sorted values, `value(i)` the one of rank `i`.
fn order_of(value: &dyn Fn(usize) -> f64, n: usize) -> Ordered {
    (sorted_quantiles(value, n, &QUANTILES, Method::Linear), sorted_median_abs_deviation(value, n))
}

/// Spearman's rho of `x` with the ranked reward and the distinct count of `x`, and the order
/// statistics of `x` read off the same sort; `(None, None)` without a ranked reward or when `x`
/// holds NaN (the kernels then sort or select on their own).
fn ranked_and_ordered<T: RankSample>(
    x: &[T],
    ranks: Option<&RankedReference>,
) -> (Option<(Spearman, u64)>, Option<Ordered>) {
    let found = ranks.and_then(|r| r.spearman_distinct_and(x, |value| order_of(value, x.len())).ok().flatten());
    match found {
        Some((s, distinct, ordered)) => (Some((s, distinct)), Some(ordered)),
        None => (None, None),
    }
}

/// Write the quantiles, the IQR and the MAD of `x` into `out`: from `ordered` where the Spearman's
/// sort gave them, else from the selection kernels.
fn order_stats<T: Select>(x: &[T], ordered: Option<Ordered>, out: &mut [f64]) {
    let (q, mad) = match ordered {
        Some((q, mad)) => (Some(q), mad),
        None => (quantile(x, &QUANTILES, Method::Linear, NanPolicy::Omit).ok(), None),
    };
    if let Some(q) = q {
        for (name, v) in ["q01", "q05", "q25", "q50", "q75", "q95", "q99"].into_iter().zip(&q) {
            out[idx(name)] = *v;
        }
        out[idx("iqr")] = q[4] - q[2];
    }
    if let Some(mad) = mad.or_else(|| median_abs_deviation(x, 1.0, NanPolicy::Omit).ok()) {
        out[idx("mad")] = mad;
    }
}

/// Fill one cell (`out`, [`N_STATS`] long, NaN on entry).
fn cell<T: RankSample + Select>(
    x: &[T],
    prev: Option<&[T]>,
    reward: &Reward<'_, T>,
    groups: Option<Groups<'_>>,
    opts: &TraceOptions,
    out: &mut [f64],
    keep: Option<&mut GroupColumns>,
) {
    let n = x.len();
    out[idx("n")] = n as f64;
    if n == 0 {
        return;
    }
    // Every kernel below is given valid arguments (checked by `trace`); an error here would be
    // a bug, and leaves the statistics it would have given NaN.
    // The distinct count needs a sort of `x`; the Spearman against the ranked reward sorts `x`
    // anyway and counts it on the way (x without NaN), else the census kernel sorts.
    let (ranked, ordered) =
        if reward.is_stage { (None, reward.ordered.cloned()) } else { ranked_and_ordered(x, reward.ranks) };
    let c = ValueCounts::from_slice(x, opts.near_zero_atol);
    // The reward's own distinct count comes from its ranking's sort (infinities left out).
    let own = reward
        .ranks
        .filter(|_| reward.is_stage)
        .map(|r| r.distinct() - u64::from(c.n_posinf > 0) - u64::from(c.n_neginf > 0));
    let n_unique = match ranked.map(|(_, d)| d).or(own) {
        Some(distinct) => distinct,
        None => match value_census(x, opts.near_zero_atol) {
            Ok(census) => census.n_unique,
            Err(_) => return,
        },
    };
    out[idx("nan_count")] = c.n_nan as f64;
    out[idx("n_unique")] = n_unique as f64;
    for (name, count) in
        [("zero_frac", c.n_zero), ("near_zero_frac", c.n_near_zero), ("pos_frac", c.n_pos), ("neg_frac", c.n_neg)]
    {
        out[idx(name)] = c.finite_frac(count).unwrap_or(f64::NAN);
    }
    if let Some(before) = prev
        && let Ok(ch) = change_census(before, x, opts.change_atol)
    {
        out[idx("changed_frac")] = ch.changed_frac().unwrap_or(f64::NAN);
        out[idx("mean_abs_change")] = ch.mean_abs_change().unwrap_or(f64::NAN);
        out[idx("max_abs_change")] = ch.max_abs_change().unwrap_or(f64::NAN);
    }
    if c.n_nan == c.n {
        return;
    }
    // Moments and groups in one scan; without groups the batch is one group.
    let layout = groups.unwrap_or(Groups::Contiguous { size: n });
    let mut spread = None;
    if let Ok(plan) = Plan::new(x, layout, NanPolicy::Omit, opts.group_tol) {
        let mut pool = Pool { keep, ..Pool::default() };
        let info = plan.run(&mut pool);
        if let Some(cols) = pool.keep.as_deref_mut() {
            cols.truncate(info.census.n_groups as usize);
        }
        spread = Some(info.census);
        let m = pool.total;
        out[idx("mean")] = m.mean;
        out[idx("std")] = (m.m2 / m.count as f64).sqrt();
        out[idx("min")] = m.min;
        out[idx("max")] = m.max;
        if groups.is_some() {
            out[idx("n_groups")] = info.census.n_groups as f64;
            out[idx("zero_variance_group_frac")] = info.census.near_fraction();
            out[idx("std_within")] = if pool.std_groups > 0 { pool.std_sum / pool.std_groups as f64 } else { f64::NAN };
            out[idx("within_var_frac")] = if m.m2 > 0.0 { (pool.within_m2 / m.m2).min(1.0) } else { f64::NAN };
        }
    }
    order_stats(x, ordered, out);
    if reward.is_stage {
        // Identical rankings: rho is 1 wherever the values vary (at least two distinct non-NaN
        // values), undefined elsewhere; a group varies unless its spread is exactly zero.
        let distinct = n_unique + u64::from(c.n_posinf > 0) + u64::from(c.n_neginf > 0);
        out[idx("spearman_reward")] = if distinct >= 2 { 1.0 } else { f64::NAN };
        if let (Some(_), Some(sc)) = (groups, spread) {
            let varying = sc.n_judged() - sc.n_exact_zero;
            out[idx("spearman_reward_within")] = if varying > 0 { 1.0 } else { f64::NAN };
            out[idx("n_groups_spearman")] = varying as f64;
        }
        return;
    }
    let rho = match ranked {
        Some((s, _)) => Some(s),
        None => spearman_threads(x, reward.values, NanPolicy::Omit, 1).ok(),
    };
    if let Some(s) = rho {
        out[idx("spearman_reward")] = s.rho;
    }
    let within = match (groups, reward.grouped.map(|r| r.within(x))) {
        (_, Some(Ok(Some(w)))) => Some(w),
        (Some(g), _) => within_group_spearman(x, reward.values, g, NanPolicy::Omit).ok(),
        (None, _) => None,
    };
    if let Some(w) = within {
        out[idx("spearman_reward_within")] = w.mean;
        out[idx("n_groups_spearman")] = w.n_defined as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grouped::grouped_moments;
    use crate::robust::interquartile_range;
    use proptest::prelude::*;

    fn get(t: &TraceTable, stage: usize, slice: usize, name: &str) -> f64 {
        t.cell(stage, slice)[idx(name)]
    }

    /// NaN-equal comparison with a relative tolerance.
    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rel * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn hand_computed_cell() {
        // reward 0/1 in two groups of 4; adv = reward - group mean.
        let reward = [1.0f64, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let adv = [0.75f64, -0.25, -0.25, -0.25, 0.0, 0.0, 0.0, 0.0];
        let t = trace(&[&reward, &adv], &reward, Some(Groups::Contiguous { size: 4 }), &[], &TraceOptions::default())
            .unwrap();
        assert_eq!((t.n_stages, t.n_slices, t.values.len()), (2, 1, 2 * N_STATS));
        assert_eq!(get(&t, 0, 0, "mean"), 0.625);
        assert_eq!(get(&t, 0, 0, "zero_variance_group_frac"), 0.5);
        assert_eq!(get(&t, 0, 0, "n_groups"), 2.0);
        assert_eq!(get(&t, 0, 0, "spearman_reward"), 1.0);
        assert!(get(&t, 0, 0, "changed_frac").is_nan());
        assert_eq!(get(&t, 1, 0, "zero_frac"), 0.5);
        assert_eq!(get(&t, 1, 0, "pos_frac"), 0.125);
        assert_eq!(get(&t, 1, 0, "neg_frac"), 0.375);
        assert_eq!(get(&t, 1, 0, "n_unique"), 3.0);
        assert_eq!(get(&t, 1, 0, "changed_frac"), 1.0);
        // |adv - reward|: 0.25 on every sample of group 0 and 1.0 on group 1.
        assert_eq!(get(&t, 1, 0, "mean_abs_change"), 0.625);
        // Group 0 has rho 1; group 1 is tied, so one group counts.
        assert_eq!(get(&t, 1, 0, "spearman_reward_within"), 1.0);
        assert_eq!(get(&t, 1, 0, "n_groups_spearman"), 1.0);
        // std within (ddof 1): group 0 std of [0.75, -0.25 x3] = 0.5, group 1: 0 -> mean 0.25.
        assert_eq!(get(&t, 1, 0, "std_within"), 0.25);
        assert_eq!(get(&t, 1, 0, "within_var_frac"), 1.0);
    }

    #[test]
    fn bad_input_names_the_argument() {
        let r = [1.0f32, 2.0, 3.0];
        let o = TraceOptions::default();
        let e = trace(&[&r[..2]], &r, None, &[], &o).unwrap_err();
        assert_eq!(e.arg(), "stages");
        assert!(e.to_string().contains("stage 0 has length 2"));
        assert_eq!(trace::<f32>(&[], &r, None, &[], &o).unwrap_err().arg(), "stages");
        assert_eq!(trace(&[&r], &r, Some(Groups::Ids(&[1, 2])), &[], &o).unwrap_err().arg(), "group_ids");
        assert_eq!(trace(&[&r], &r, Some(Groups::Contiguous { size: 2 }), &[], &o).unwrap_err().arg(), "group_size");
        let bad = [SliceCodes { codes: &[0, 1, 2], n: 2 }];
        assert_eq!(trace(&[&r], &r, None, &bad, &o).unwrap_err().arg(), "slice_ids");
        let short = [SliceCodes { codes: &[0, 1], n: 2 }];
        assert_eq!(trace(&[&r], &r, None, &short, &o).unwrap_err().arg(), "slice_ids");
        let empty: [f32; 0] = [];
        assert_eq!(trace(&[&empty], &empty, None, &[], &o).unwrap_err().arg(), "reward");
    }

    #[test]
    fn distinct_count_from_the_spearman_sort_skips_infinities() {
        let r = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let x = [f64::INFINITY, f64::NEG_INFINITY, 1.0, 1.0, -0.0, 0.0];
        let t = trace(&[&r, &x], &r, None, &[], &TraceOptions::default()).unwrap();
        assert_eq!(get(&t, 1, 0, "n_unique"), value_census(&x, 1e-8).unwrap().n_unique as f64);
        assert_eq!(get(&t, 1, 0, "n_unique"), 2.0);
        assert_eq!(get(&t, 0, 0, "n_unique"), 6.0);
    }

    #[test]
    fn all_nan_stage_and_empty_slice() {
        let r = [1.0f64, 2.0, 3.0, 4.0];
        let x = [f64::NAN; 4];
        let codes = [0u32, 0, 2, 2];
        let t = trace(&[&x], &r, None, &[SliceCodes { codes: &codes, n: 3 }], &TraceOptions::default()).unwrap();
        assert_eq!(get(&t, 0, 0, "nan_count"), 4.0);
        assert!(get(&t, 0, 0, "mean").is_nan() && get(&t, 0, 0, "spearman_reward").is_nan());
        assert_eq!(get(&t, 0, 2, "n"), 0.0);
        assert!(get(&t, 0, 2, "nan_count").is_nan());
        assert_eq!(get(&t, 0, 3, "n"), 2.0);
    }

    /// The reference values of one cell, straight from the individual kernels.
    fn expected(x: &[f64], prev: Option<&[f64]>, reward: &[f64], ids: &[i64]) -> Vec<(&'static str, f64)> {
        let finite: Vec<f64> = x.iter().copied().filter(|v| !v.is_nan()).collect();
        let c = ValueCounts::from_slice(x, 1e-8);
        let mut e = vec![
            ("nan_count", c.n_nan as f64),
            ("n_unique", value_census(x, 1e-8).unwrap().n_unique as f64),
            ("near_zero_frac", c.finite_frac(c.n_near_zero).unwrap_or(f64::NAN)),
            ("pos_frac", c.finite_frac(c.n_pos).unwrap_or(f64::NAN)),
        ];
        if let Some(p) = prev {
            let ch = change_census(p, x, 0.0).unwrap();
            e.push(("changed_frac", ch.changed_frac().unwrap()));
            e.push(("mean_abs_change", ch.mean_abs_change().unwrap_or(f64::NAN)));
        }
        if finite.is_empty() {
            return e;
        }
        let m = Moments::from_slice(&finite);
        e.push(("mean", m.mean));
        e.push(("std", (m.m2 / m.count as f64).sqrt()));
        e.push(("min", m.min));
        e.push(("max", m.max));
        e.push(("iqr", interquartile_range(x, Method::Linear, NanPolicy::Omit).unwrap()));
        e.push(("q99", quantile(x, &[0.99], Method::Linear, NanPolicy::Omit).unwrap()[0]));
        e.push(("mad", median_abs_deviation(x, 1.0, NanPolicy::Omit).unwrap()));
        e.push(("spearman_reward", spearman_threads(x, reward, NanPolicy::Omit, 1).map_or(f64::NAN, |s| s.rho)));
        let w = within_group_spearman(x, reward, Groups::Ids(ids), NanPolicy::Omit).unwrap();
        e.push(("spearman_reward_within", w.mean));
        e.push(("n_groups_spearman", w.n_defined as f64));
        let g = grouped_moments(x, Groups::Ids(ids), 1, NanPolicy::Omit, Tolerance::default()).unwrap();
        e.push(("zero_variance_group_frac", g.census.near_fraction()));
        let stds: Vec<f64> = (0..g.n_groups()).filter(|&k| g.count[k] > 1).map(|k| g.var[k].sqrt()).collect();
        let std_within = if stds.is_empty() { f64::NAN } else { stds.iter().sum::<f64>() / stds.len() as f64 };
        e.push(("std_within", std_within));
        e
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![6 => (-20i32..20).prop_map(|v| f64::from(v) * 0.25), 1 => Just(f64::NAN), 2 => -3.0f64..3.0]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn agrees_with_the_individual_kernels(
            rows in prop::collection::vec((value(), value(), 0i64..6, 0u32..3), 1..200),
            f32_input in any::<bool>(),
        ) {
            let reward: Vec<f64> = rows.iter().map(|r| if r.0.is_nan() { 0.5 } else { r.0 }).collect();
            let adv: Vec<f64> = rows.iter().map(|r| r.1).collect();
            let clipped: Vec<f64> = adv.iter().map(|v| v.clamp(-1.0, 1.0)).collect();
            let ids: Vec<i64> = rows.iter().map(|r| r.2).collect();
            let codes: Vec<u32> = rows.iter().map(|r| r.3).collect();
            let label = [SliceCodes { codes: &codes, n: 3 }];
            let o = TraceOptions::default();
            let stages_f64: [&[f64]; 3] = [&reward, &adv, &clipped];
            // f32 input: the oracles get the same values widened, which is what the kernels read.
            let narrow = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
            let widen = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
            let (t, stages): (TraceTable, Vec<Vec<f64>>) = if f32_input {
                let s32: Vec<Vec<f32>> = stages_f64.iter().map(|s| narrow(s)).collect();
                let refs: Vec<&[f32]> = s32.iter().map(Vec::as_slice).collect();
                let t = trace(&refs, &s32[0], Some(Groups::Ids(&ids)), &label, &o).unwrap();
                (t, s32.iter().map(|s| widen(s)).collect())
            } else {
                (trace(&stages_f64, &reward, Some(Groups::Ids(&ids)), &label, &o).unwrap(),
                 stages_f64.iter().map(|s| s.to_vec()).collect())
            };
            prop_assert_eq!(t.n_slices, 4);
            for slice in 0..4usize {
                let keep: Vec<usize> = (0..rows.len()).filter(|&i| slice == 0 || codes[i] as usize == slice - 1).collect();
                prop_assert_eq!(get(&t, 0, slice, "n"), keep.len() as f64);
                if keep.is_empty() { continue; }
                let pick = |v: &[f64]| keep.iter().map(|&i| v[i]).collect::<Vec<f64>>();
                let sub_ids: Vec<i64> = keep.iter().map(|&i| ids[i]).collect();
                let r = pick(&stages[0]);
                for j in 0..3 {
                    let x = pick(&stages[j]);
                    let prev = (j > 0).then(|| pick(&stages[j - 1]));
                    for (name, want) in expected(&x, prev.as_deref(), &r, &sub_ids) {
                        let got = get(&t, j, slice, name);
                        prop_assert!(close(got, want, 1e-9), "stage {} slice {} {}: {} != {}", j, slice, name, got, want);
                    }
                }
            }
        }
    }

    #[test]
    fn parallel_path_matches_serial() {
        // Large enough for two threads; a continuous reward exercises the reference ranks.
        let n = 1 << 17;
        let reward: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1009) as f32 * 0.01).collect();
        let adv: Vec<f32> = reward.iter().enumerate().map(|(i, r)| r - (i % 16) as f32 * 0.1).collect();
        let clipped: Vec<f32> = adv.iter().map(|v| v.clamp(-0.5, 0.5)).collect();
        let o = TraceOptions::default();
        let g = Some(Groups::Contiguous { size: 16 });
        let t = trace(&[&reward, &adv, &clipped], &reward, g, &[], &o).unwrap();
        let serial = trace(&[&reward, &adv, &clipped], &reward, g, &[], &TraceOptions { threads: 1, ..o }).unwrap();
        let wide = trace(&[&reward, &adv, &clipped], &reward, g, &[], &TraceOptions { threads: 5, ..o }).unwrap();
        for other in [&serial, &wide] {
            assert!(t.values.iter().zip(&other.values).all(|(&a, &b)| close(a, b, 0.0)));
        }
        for (j, x) in [&reward, &adv, &clipped].into_iter().enumerate() {
            let alone = trace(&[x.as_slice()], &reward, g, &[], &o).unwrap();
            for name in STAT_NAMES.iter().filter(|s| !s.contains("change")) {
                assert!(close(get(&t, j, 0, name), get(&alone, 0, 0, name), 0.0), "{name}");
            }
            let rho = spearman_threads(x, &reward, NanPolicy::Omit, 1).unwrap().rho;
            assert!(close(get(&t, j, 0, "spearman_reward"), rho, 1e-12));
        }
    }
}
