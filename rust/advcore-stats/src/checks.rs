//! The per-step reference checks of one step's rewards and advantages: the evidence of the
//! T-stage detectors and of `REWARD_MISSING`, as `advcore.reference.step_checks` (numpy, the
//! documented reference and the oracle of the tests) defines every value.
//!
//! The rewards are summarised per group once (count, mean, variance, range of the scored
//! samples; [`crate::grouped`]'s scan), and every trainer's advantage estimator ([`Preset`]) is
//! recomputed in `f64` from those summaries, in the order of `advcore.reference.PRESETS`, until
//! one matches the logged advantages within the dtype tolerance. [`crate::trace`] hands over
//! the group summaries of the rewards and of the advantages that its own scan computed, so a
//! traced step summarises each array once ([`step_checks_with`]).
//!
//! Estimators (``m_g``, ``s_g``: mean and std with ddof 1 of the scored rewards of group `g`):
//! GRPO `(r - m_g) / (s_g + eps)` (Shao et al. 2024, arXiv:2402.03300, eq. 3), Dr. GRPO
//! `r - m_g` (Liu et al. 2025, arXiv:2503.20783), RLOO `n_g / (n_g - 1) (r - m_g)` (Ahmadian et
//! al. 2024, arXiv:2402.14740), DAPO (GRPO without tied groups, Yu et al. 2025,
//! arXiv:2503.14476), REINFORCE++ `(y - m_B) / sqrt(v_B + eps)` (Hu 2025, arXiv:2501.03262);
//! the bound of a std-scaled advantage is Samuelson's `(G - 1) / sqrt(G)` (JASA 63(324), 1968).

use crate::error::{Result, StatsError, check_non_empty, check_same_len};
use crate::grouped::{GroupStat, Plan, Sink, Tolerance};
use crate::groups::{Groups, dense_ids};
use crate::rank::with_buffers;
use crate::sample::{NanPolicy, Sample};
use crate::simd::{LANES, by_lane};

/// A floating-point precision rewards or advantages may have been held in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// bfloat16: 8 significant bits.
    BFloat16,
    /// IEEE half: 11 significant bits.
    Float16,
    /// IEEE single: 24 significant bits.
    Float32,
    /// IEEE double: 53 significant bits.
    Float64,
}

impl Precision {
    /// Parse one of `"bfloat16"`, `"float16"`, `"float32"`, `"float64"`.
    ///
    /// # Errors
    /// Any other name ([`StatsError::Invalid`] naming `arg`).
    pub fn parse(name: &str, arg: &'static str) -> Result<Self> {
        match name {
            "bfloat16" => Ok(Self::BFloat16),
            "float16" => Ok(Self::Float16),
            "float32" => Ok(Self::Float32),
            "float64" => Ok(Self::Float64),
            other => {
                Err(StatsError::invalid(arg, format!("must be bfloat16, float16, float32 or float64, got {other:?}")))
            }
        }
    }

    /// The unit roundoff (half the machine epsilon): the relative rounding error bound.
    #[must_use]
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Self::BFloat16 => 2f64.powi(-8),
            Self::Float16 => 2f64.powi(-11),
            Self::Float32 => 2f64.powi(-24),
            Self::Float64 => 2f64.powi(-53),
        }
    }

    fn is_low(self) -> bool {
        matches!(self, Self::BFloat16 | Self::Float16)
    }
}

/// What the values alone do not say about the inputs of [`step_checks`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckOptions {
    /// The precision the rewards were declared to be held in (`reward_dtype`), if any.
    pub reward_dtype: Option<Precision>,
    /// The low precision of the reward input itself (a float16 array, a bfloat16 or float16
    /// tensor widened on the way), if any.
    pub reward_input: Option<Precision>,
    /// Relative tolerance of the advantage comparison: `advcore.reference.dtype_rtol` of the
    /// advantages' precision (1e-5 for float32 and float64).
    pub adv_rtol: f64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self { reward_dtype: None, reward_input: None, adv_rtol: 1e-5 }
    }
}

/// How the advantage bound of a preset is computed (`advcore.reference.Preset.family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Divided by the group std.
    Scaled,
    /// Group-centred, not scaled (Dr. GRPO).
    Centred,
    /// Leave-one-out baseline (RLOO).
    Loo,
    /// Whitened over the batch.
    Batch,
}

/// Every trainer estimator the checks recompute, in order of preference
/// (`advcore.reference.PRESETS`, where each one's source is cited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// TRL GRPO, `scale_rewards="group"`: eps 1e-4, singleton 0.
    TrlGrpo,
    /// verl GRPO: eps 1e-6, singleton = raw score / (1 + eps).
    VerlGrpo,
    /// `OpenRLHF` `group_norm`: eps 1e-9, singleton NaN.
    OpenrlhfGroupNorm,
    /// Dr. GRPO: `r - m_g`, singleton 0.
    DrGrpo,
    /// verl without std division: singleton = raw score.
    VerlDrGrpo,
    /// RLOO, singleton 0.
    Rloo,
    /// verl's loop RLOO, singleton = raw score.
    VerlRloo,
    /// DAPO: verl GRPO with the tied groups dropped (NaN).
    Dapo,
    /// TRL `scale_rewards="batch"`: group mean, batch std + 1e-4.
    TrlGrpoBatch,
    /// REINFORCE++: rewards whitened over the batch (unbiased variance, eps 1e-8 inside the root).
    ReinforcePp,
    /// verl REINFORCE++-baseline: group-centred (a singleton's mean is 0), then whitened.
    ReinforcePpBaseline,
    /// `OpenRLHF` `reinforce_baseline`: as verl's with the biased batch variance.
    OpenrlhfReinforceBaseline,
}

impl Preset {
    /// Every preset, in order of preference.
    pub const ALL: [Preset; 12] = [
        Preset::TrlGrpo,
        Preset::VerlGrpo,
        Preset::OpenrlhfGroupNorm,
        Preset::DrGrpo,
        Preset::VerlDrGrpo,
        Preset::Rloo,
        Preset::VerlRloo,
        Preset::Dapo,
        Preset::TrlGrpoBatch,
        Preset::ReinforcePp,
        Preset::ReinforcePpBaseline,
        Preset::OpenrlhfReinforceBaseline,
    ];

    /// The name of `advcore.reference.PRESETS`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Preset::TrlGrpo => "trl_grpo",
            Preset::VerlGrpo => "verl_grpo",
            Preset::OpenrlhfGroupNorm => "openrlhf_group_norm",
            Preset::DrGrpo => "dr_grpo",
            Preset::VerlDrGrpo => "verl_dr_grpo",
            Preset::Rloo => "rloo",
            Preset::VerlRloo => "verl_rloo",
            Preset::Dapo => "dapo",
            Preset::TrlGrpoBatch => "trl_grpo_batch",
            Preset::ReinforcePp => "reinforce_pp",
            Preset::ReinforcePpBaseline => "reinforce_pp_baseline",
            Preset::OpenrlhfReinforceBaseline => "openrlhf_reinforce_baseline",
        }
    }

    /// Its family.
    #[must_use]
    pub fn family(self) -> Family {
        match self {
            Preset::TrlGrpo | Preset::VerlGrpo | Preset::OpenrlhfGroupNorm | Preset::Dapo => Family::Scaled,
            Preset::DrGrpo | Preset::VerlDrGrpo => Family::Centred,
            Preset::Rloo | Preset::VerlRloo => Family::Loo,
            Preset::TrlGrpoBatch
            | Preset::ReinforcePp
            | Preset::ReinforcePpBaseline
            | Preset::OpenrlhfReinforceBaseline => Family::Batch,
        }
    }

    /// The eps of the GRPO-style presets (added to the group std).
    fn group_eps(self) -> Option<f64> {
        match self {
            Preset::TrlGrpo => Some(1e-4),
            Preset::VerlGrpo | Preset::Dapo => Some(1e-6),
            Preset::OpenrlhfGroupNorm => Some(1e-9),
            _ => None,
        }
    }
}

/// The checks of the advantages (`advcore.reference.ADV_METRICS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdvChecks {
    /// Disagreement with the best matching preset in units of the tolerance (<= 1: a match).
    pub recompute_err: f64,
    /// 1.0 when the advantages are batch-normalised (a batch preset matched, or whitened).
    pub batch_normalized: f64,
    /// `max_g max|a_g| / b_g` over the groups with spread (`b_g` the estimator's bound).
    pub bound_excess: f64,
    /// `max_g |mean(a_g)|` over the groups of two or more scored samples, over the batch std.
    pub group_mean_max: f64,
    /// Share of the tied groups holding an advantage above the tolerance.
    pub tied_group_adv_nonzero_frac: f64,
    /// Largest deviation from the group's mean advantage in a group of rounding-noise rewards.
    pub noise_group_adv_max: f64,
    /// The best matching preset (`None` when no sample has both a finite reward and advantage).
    pub best: Option<Preset>,
}

impl AdvChecks {
    const UNDEFINED: Self = Self {
        recompute_err: f64::NAN,
        batch_normalized: f64::NAN,
        bound_excess: f64::NAN,
        group_mean_max: f64::NAN,
        tied_group_adv_nonzero_frac: f64::NAN,
        noise_group_adv_max: f64::NAN,
        best: None,
    };
}

/// The checks of one step (`advcore.reference.step_checks`); NaN where undefined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepChecks {
    /// Share of the samples whose reward is NaN or infinite.
    pub reward_null_frac: f64,
    /// Share of the samples whose reward is a 0 that looks imputed (off the reward lattice).
    pub reward_imputed_zero_frac: f64,
    /// 1.0 when the rewards were held in bfloat16 or float16.
    pub reward_low_precision: f64,
    /// `max_g u (max|r_g| + |m_g|) / s_g` over the groups with spread.
    pub reward_rounding_adv_err: f64,
    /// `max_g 2^-24 (1 + m_g² / v_g)` over the groups with spread.
    pub reward_onepass_relerr: f64,
    /// Share of the groups holding one sample.
    pub singleton_group_frac: f64,
    /// Share of the samples whose group size is not the most common one.
    pub uneven_group_frac: f64,
    /// The advantage checks, when advantages were given.
    pub adv: Option<AdvChecks>,
}

/// Names of the reward checks, in `advcore.reference.REWARD_METRICS` order.
pub const REWARD_NAMES: [&str; 7] = [
    "reward_null_frac",
    "reward_imputed_zero_frac",
    "reward_low_precision",
    "reward_rounding_adv_err",
    "reward_onepass_relerr",
    "singleton_group_frac",
    "uneven_group_frac",
];

/// Names of the advantage checks, in `advcore.reference.ADV_METRICS` order.
pub const ADV_NAMES: [&str; 6] = [
    "adv_recompute_err",
    "adv_batch_normalized",
    "adv_bound_excess",
    "adv_group_mean_max",
    "tied_group_adv_nonzero_frac",
    "noise_group_adv_max",
];

impl StepChecks {
    /// `(name, value)` of every check, reward checks first (the keys of `step_checks`).
    #[must_use]
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        let reward = [
            self.reward_null_frac,
            self.reward_imputed_zero_frac,
            self.reward_low_precision,
            self.reward_rounding_adv_err,
            self.reward_onepass_relerr,
            self.singleton_group_frac,
            self.uneven_group_frac,
        ];
        let mut out: Vec<(&'static str, f64)> = REWARD_NAMES.into_iter().zip(reward).collect();
        if let Some(a) = &self.adv {
            let adv = [
                a.recompute_err,
                a.batch_normalized,
                a.bound_excess,
                a.group_mean_max,
                a.tied_group_adv_nonzero_frac,
                a.noise_group_adv_max,
            ];
            out.extend(ADV_NAMES.into_iter().zip(adv));
        }
        out
    }
}

/// Per-group summaries as columns (rows in ascending group id order): the [`Sink`] the checks
/// read, which [`crate::trace`] also fills from its own scan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupColumns {
    /// Values per group (after omission).
    pub count: Vec<f64>,
    /// Mean (NaN for an empty group).
    pub mean: Vec<f64>,
    /// Variance with ddof 0 (NaN for an empty group).
    pub var0: Vec<f64>,
    /// Smallest value.
    pub min: Vec<f64>,
    /// Largest value.
    pub max: Vec<f64>,
}

impl GroupColumns {
    /// Number of group rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count.len()
    }

    /// True when there is no group row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }

    /// Keep the first `n` rows (the groups a scan emitted).
    pub fn truncate(&mut self, n: usize) {
        for c in [&mut self.count, &mut self.mean, &mut self.var0, &mut self.min, &mut self.max] {
            c.truncate(n);
        }
    }

    /// The summaries of `values` by `groups`, NaN omitted.
    fn of<T: Sample>(values: &[T], groups: Groups<'_>) -> Result<Self> {
        let plan = Plan::new(values, groups, NanPolicy::Omit, Tolerance::default())?;
        let mut cols = Self::default();
        let info = plan.run(&mut cols);
        cols.truncate(info.census.n_groups as usize);
        Ok(cols)
    }
}

impl Sink for GroupColumns {
    fn start(&mut self, max_groups: usize) {
        for c in [&mut self.count, &mut self.mean, &mut self.var0, &mut self.min, &mut self.max] {
            c.clear();
            c.resize(max_groups, f64::NAN);
        }
    }

    #[inline]
    fn emit(&mut self, row: usize, s: &GroupStat) {
        self.count[row] = s.count as f64;
        self.mean[row] = s.mean();
        self.var0[row] = if s.count > 0 { s.m2 / s.count as f64 } else { f64::NAN };
        self.min[row] = s.min;
        self.max[row] = s.max;
    }
}

/// The group summaries the caller already has (from the trace's scan of the same values).
#[derive(Debug, Clone, Copy, Default)]
pub struct Summaries<'a> {
    /// Of the rewards, when they hold no NaN or infinity.
    pub reward: Option<&'a GroupColumns>,
    /// Of the advantages, when neither they nor the rewards hold NaN or infinity.
    pub adv: Option<&'a GroupColumns>,
}

/// The checks of one step: `advcore.reference.step_checks(reward, groups, adv)`.
///
/// # Errors
/// Empty `reward`; `adv` of another length; a bad group layout; a bad `adv_rtol`; no preset
/// giving a finite advantage where the rewards and advantages are finite (as the reference).
pub fn step_checks<T: Sample, A: Sample>(
    reward: &[T],
    groups: Groups<'_>,
    adv: Option<&[A]>,
    opts: &CheckOptions,
) -> Result<StepChecks> {
    step_checks_with(reward, groups, adv, opts, Summaries::default())
}

/// [`step_checks`] reusing group summaries computed elsewhere (see [`Summaries`]).
///
/// # Errors
/// As [`step_checks`].
pub fn step_checks_with<T: Sample, A: Sample>(
    reward: &[T],
    groups: Groups<'_>,
    adv: Option<&[A]>,
    opts: &CheckOptions,
    known: Summaries<'_>,
) -> Result<StepChecks> {
    check_non_empty("rewards", reward.len())?;
    groups.check("rewards", reward.len())?;
    if let Some(a) = adv {
        check_same_len("rewards", reward.len(), "adv", a.len())?;
    }
    if !(opts.adv_rtol.is_finite() && opts.adv_rtol > 0.0) {
        return Err(StatsError::invalid(
            "adv_rtol",
            format!("must be a finite positive number, got {}", opts.adv_rtol),
        ));
    }
    let gr = Rewards::new(reward, groups, known.reward)?;
    let mut out = gr.reward_checks(opts, std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>());
    if let Some(a) = adv {
        out.adv = Some(gr.adv_checks(a, groups, opts.adv_rtol, known.adv)?);
    }
    Ok(out)
}

/// The group of every sample.
enum Members {
    /// Sample `i` is in group `i / size`.
    Contiguous(usize),
    /// Dense group (ascending id order) of every sample.
    Dense(Vec<u32>),
}

impl Members {
    /// Call `f(i, g)` for every sample `i` and its group `g`, in sample order.
    #[inline(always)]
    fn each(&self, n: usize, mut f: impl FnMut(usize, usize)) {
        match self {
            Members::Contiguous(size) => {
                for g in 0..n / size {
                    for i in g * size..(g + 1) * size {
                        f(i, g);
                    }
                }
            }
            Members::Dense(dense) => {
                for (i, &g) in dense.iter().enumerate() {
                    f(i, g as usize);
                }
            }
        }
    }
}

/// numpy's pairwise summation of a float64 array (`pairwise_sum` in numpy's `loops_utils.h`:
/// 8 accumulators over blocks of up to 128 values, halves above that), so that the means and
/// variances here round as numpy's `mean` and `std` do: the std of a constant sample is the same
/// rounding residue (or zero) on both sides.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n <= 128 {
        block_sum(a)
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
    }
}

/// numpy's sum of at most 128 values: sequential below 8, else 8 accumulators combined as a tree.
fn block_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, &v| s + v);
    }
    let mut r = [0.0f64; 8];
    r.copy_from_slice(&a[..8]);
    let whole = n - n % 8;
    for chunk in a[8..whole].chunks_exact(8) {
        for (acc, &v) in r.iter_mut().zip(chunk) {
            *acc += v;
        }
    }
    let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for &v in &a[whole..] {
        res += v;
    }
    res
}

/// Mean and std with `ddof` of `values` as numpy computes them (`np.mean`, `np.std`: the mean,
/// then the squared deviations summed); NaN std when too few. `values` is overwritten.
fn numpy_mean_std(values: &mut [f64], ddof: usize) -> (f64, f64) {
    let n = values.len();
    let mean = pairwise_sum(values) / n as f64;
    if n <= ddof {
        return (mean, f64::NAN);
    }
    for v in values.iter_mut() {
        *v = (*v - mean) * (*v - mean);
    }
    (mean, (pairwise_sum(values) / (n - ddof) as f64).sqrt())
}

/// Number of finite values.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_finite<T: Sample>(xs: &[T]) -> usize {
    xs.iter().map(|v| usize::from(v.to_f64().is_finite())).sum()
}

/// Number of samples whose reward and advantage are both finite.
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn count_both_finite<T: Sample, A: Sample>(x: &[T], a: &[A]) -> usize {
    x.iter().zip(a).map(|(x, a)| usize::from(x.to_f64().is_finite() & a.to_f64().is_finite())).sum()
}

/// NaN-propagating maximum (numpy's `max`).
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// The maximum of `values` as `np.max` takes it (NaN when any is NaN), `None` when empty.
fn np_max(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.reduce(max_nan)
}

/// How a preset treats a group of one scored sample.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Single {
    Zero,
    Raw,
    Nan,
}

/// One preset's advantages, sample by sample, without materialising them.
enum Reference {
    /// `(x - m_g) f_g`, and `x raw` for a scored singleton when `raw` is set.
    Affine { f: Vec<f64>, raw: Option<f64> },
    /// `(y - mu) / scale`, `y` the reward or its baseline-centred value.
    Whiten { baseline: bool, mu: f64, scale: f64 },
}

/// One step's rewards with their group summaries (`advcore.reference._Groups`).
struct Rewards<'a, T> {
    /// The rewards as given; NaN and infinities are unscored ([`Rewards::x`]).
    reward: &'a [T],
    n_finite: usize,
    members: Members,
    g: GroupColumns,
    /// Samples per group, scored or not.
    size: Vec<u64>,
    /// Variance with ddof 1 (NaN below two scored samples).
    var1: Vec<f64>,
    /// `batch_std` of (rewards, ddof 0), (rewards, 1), (baseline-centred, 0), (baseline-centred, 1).
    batch: std::cell::Cell<[Option<(f64, f64)>; 4]>,
}

impl<'a, T: Sample> Rewards<'a, T> {
    fn new(reward: &'a [T], groups: Groups<'_>, known: Option<&GroupColumns>) -> Result<Self> {
        let n = reward.len();
        let n_finite = count_finite(reward);
        let all_finite = n_finite == n;
        let members = match groups {
            Groups::Contiguous { size } => Members::Contiguous(size),
            Groups::Ids(ids) => Members::Dense(dense_ids(ids).1),
        };
        let g = match known {
            Some(cols) if all_finite && !cols.is_empty() => cols.clone(),
            _ if all_finite => GroupColumns::of(reward, groups)?,
            _ => {
                let x: Vec<f64> =
                    reward.iter().map(|v| if v.to_f64().is_finite() { v.to_f64() } else { f64::NAN }).collect();
                GroupColumns::of(&x, groups)?
            }
        };
        let k = g.len();
        let size: Vec<u64> = if all_finite {
            g.count.iter().map(|&c| c as u64).collect()
        } else {
            let mut size = vec![0u64; k];
            members.each(n, |_, grp| size[grp] += 1);
            size
        };
        let var1 =
            g.count.iter().zip(&g.var0).map(|(&c, &v)| if c > 1.0 { v * c / (c - 1.0) } else { f64::NAN }).collect();
        Ok(Self { reward, n_finite, members, g, size, var1, batch: std::cell::Cell::new([None; 4]) })
    }

    /// Reward `i`, NaN when it is not finite (unscored).
    #[inline(always)]
    fn x(&self, i: usize) -> f64 {
        let v = self.reward[i].to_f64();
        if v.is_finite() { v } else { f64::NAN }
    }

    fn n(&self) -> usize {
        self.reward.len()
    }

    fn k(&self) -> usize {
        self.g.len()
    }

    fn tied(&self, g: usize) -> bool {
        self.g.count[g] >= 2.0 && self.g.max[g] == self.g.min[g]
    }

    fn spread(&self, g: usize) -> bool {
        self.g.count[g] >= 2.0 && self.g.max[g] > self.g.min[g]
    }

    fn single(&self, g: usize) -> bool {
        self.g.count[g] == 1.0
    }

    /// `x - m_g` with a singleton's mean taken as 0 (verl's REINFORCE++-baseline).
    #[inline(always)]
    fn baseline_centred(&self, i: usize, g: usize) -> f64 {
        if self.single(g) { self.x(i) } else { self.x(i) - self.g.mean[g] }
    }

    /// Mean and std (`ddof`) over the scored samples of the rewards or of their baseline-centred
    /// values (NaN std when too few).
    fn batch_std(&self, baseline: bool, ddof: u32) -> (f64, f64) {
        let slot = usize::from(baseline) * 2 + ddof as usize;
        let mut cache = self.batch.get();
        if let Some(hit) = cache[slot] {
            return hit;
        }
        let hit = if self.n_finite == 0 {
            (f64::NAN, f64::NAN)
        } else {
            with_buffers(self.n_finite, |v: &mut [f64], _| {
                let mut len = 0;
                self.members.each(self.n(), |i, g| {
                    if self.x(i).is_finite() {
                        v[len] = if baseline { self.baseline_centred(i, g) } else { self.x(i) };
                        len += 1;
                    }
                });
                numpy_mean_std(&mut v[..len], ddof as usize)
            })
        };
        cache[slot] = Some(hit);
        self.batch.set(cache);
        hit
    }

    // --- rewards ---------------------------------------------------------------------------

    fn reward_checks(&self, opts: &CheckOptions, held_f32: bool) -> StepChecks {
        let n = self.n();
        let low = self.low_precision(opts.reward_dtype, opts.reward_input);
        let precision = low.or(opts.reward_dtype).unwrap_or_else(|| self.held_in(held_f32));
        let u = precision.unit_roundoff();
        let spread: Vec<usize> = (0..self.k()).filter(|&g| self.spread(g)).collect();
        let g = &self.g;
        let rounding = np_max(spread.iter().map(|&j| {
            let mag = g.max[j].abs().max(g.min[j].abs());
            u * (mag + g.mean[j].abs()) / self.var1[j].sqrt()
        }));
        let onepass = np_max(spread.iter().map(|&j| 2f64.powi(-24) * (1.0 + g.mean[j] * g.mean[j] / g.var0[j])));
        let singletons = self.size.iter().filter(|&&s| s == 1).count();
        // The most common group size (the smallest of equally common ones, as `np.argmax`).
        let largest = self.size.iter().copied().max().unwrap_or(0) as usize;
        let mut by_size = vec![0usize; largest + 1];
        for &s in &self.size {
            by_size[s as usize] += 1;
        }
        let mode =
            by_size.iter().enumerate().fold((0usize, 0usize), |best, (s, &c)| if c > best.1 { (s, c) } else { best }).0;
        let uneven: u64 = self.size.iter().filter(|&&s| s as usize != mode).sum();
        StepChecks {
            reward_null_frac: (n - self.n_finite) as f64 / n as f64,
            reward_imputed_zero_frac: self.imputed_zero_frac(),
            reward_low_precision: if low.is_some() { 1.0 } else { 0.0 },
            reward_rounding_adv_err: rounding.unwrap_or(f64::NAN),
            reward_onepass_relerr: onepass.unwrap_or(f64::NAN),
            singleton_group_frac: singletons as f64 / self.k() as f64,
            uneven_group_frac: uneven as f64 / n as f64,
            adv: None,
        }
    }

    /// The scored rewards.
    fn scored(&self) -> impl Iterator<Item = f64> + '_ {
        self.reward.iter().map(|v| v.to_f64()).filter(|v| v.is_finite())
    }

    /// Share of the samples whose reward is a 0 off the lattice of the non-zero reward levels.
    fn imputed_zero_frac(&self) -> f64 {
        let lo = self.g.min.iter().copied().filter(|v| !v.is_nan()).reduce(f64::min);
        let hi = self.g.max.iter().copied().filter(|v| !v.is_nan()).reduce(f64::max);
        let (Some(lo), Some(hi)) = (lo, hi) else { return f64::NAN };
        if !(lo < 0.0 && 0.0 < hi) {
            // No zero, or zero at an end of the range (a 0/1 reward's failures).
            return 0.0;
        }
        let mut zeros = 0usize;
        let mut levels: Vec<f64> = Vec::with_capacity(MAX_LEVELS + 1);
        for v in self.scored() {
            if v == 0.0 {
                zeros += 1;
            } else if levels.len() <= MAX_LEVELS && !levels.contains(&v) {
                levels.push(v);
            }
        }
        // With `lo < 0 < hi` there are at least two non-zero levels.
        if zeros == 0 || levels.len() < 2 || levels.len() > MAX_LEVELS {
            return 0.0;
        }
        levels.sort_by(f64::total_cmp);
        let d = lattice_step(&levels);
        let scale = levels.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if d <= 1e-6 * scale {
            return 0.0; // no common step: not a discrete reward
        }
        let k = -levels[0] / d;
        if (k - k.round_ties_even()).abs() <= 1e-6 * k.abs().max(1.0) {
            return 0.0; // 0 is a level the scoring rule can produce
        }
        zeros as f64 / self.n() as f64
    }

    /// bfloat16 or float16 when declared or when the input was; else bfloat16 when at least 8
    /// distinct rewards that are not multiples of 1/64 all lie on the bfloat16 grid.
    fn low_precision(&self, declared: Option<Precision>, input: Option<Precision>) -> Option<Precision> {
        if let Some(d) = declared.filter(|d| d.is_low()) {
            return Some(d);
        }
        if input.is_some() {
            return input;
        }
        if declared.is_some() {
            return None;
        }
        let mut count = 0usize;
        let mut distinct: Vec<f64> = Vec::with_capacity(8);
        for v in self.scored() {
            if is_integral(v * 64.0) {
                continue; // short dyadic levels (0, 1, 0.5, 3/64, ...) prove nothing
            }
            let f = v as f32;
            if f64::from(f) != v || f.to_bits() & 0xFFFF != 0 {
                return None;
            }
            count += 1;
            if distinct.len() < 8 && !distinct.contains(&v) {
                distinct.push(v);
            }
        }
        (count >= 8 && distinct.len() >= 8).then_some(Precision::BFloat16)
    }

    /// float32 when every scored reward is a float32 value, else float64.
    fn held_in(&self, held_f32: bool) -> Precision {
        if held_f32 || self.scored().all(|v| f64::from(v as f32) == v) {
            Precision::Float32
        } else {
            Precision::Float64
        }
    }

    // --- estimators ------------------------------------------------------------------------

    /// `(x - m_g) * factor_g` per sample, tied groups at 0 and singletons as `single` says
    /// (`Raw`: the reward times `raw`) (`advcore.reference._scaled`).
    fn scaled(&self, factor: impl Fn(usize) -> f64, single: Single, raw: f64) -> Reference {
        let f = (0..self.k())
            .map(|g| {
                if self.tied(g) {
                    0.0
                } else if single != Single::Raw && self.single(g) {
                    if single == Single::Zero { 0.0 } else { f64::NAN }
                } else {
                    factor(g)
                }
            })
            .collect();
        Reference::Affine { f, raw: (single == Single::Raw).then_some(raw) }
    }

    /// The advantages of `preset` (`advcore.reference.PRESETS[name].fn`).
    fn reference(&self, preset: Preset) -> Reference {
        match preset {
            Preset::TrlGrpo | Preset::VerlGrpo | Preset::OpenrlhfGroupNorm | Preset::Dapo => {
                let eps = preset.group_eps().unwrap_or(0.0);
                let single = match preset {
                    Preset::TrlGrpo => Single::Zero,
                    Preset::OpenrlhfGroupNorm => Single::Nan,
                    _ => Single::Raw,
                };
                let mut r = self.scaled(|g| 1.0 / (self.var1[g].sqrt() + eps), single, 1.0 / (1.0 + eps));
                if preset == Preset::Dapo
                    && let Reference::Affine { f, .. } = &mut r
                {
                    // Tied groups dropped (never singletons: those have one scored sample).
                    for (g, f) in f.iter_mut().enumerate() {
                        if self.tied(g) {
                            *f = f64::NAN;
                        }
                    }
                }
                r
            }
            Preset::DrGrpo => self.scaled(|_| 1.0, Single::Zero, 1.0),
            Preset::VerlDrGrpo => self.scaled(|_| 1.0, Single::Raw, 1.0),
            Preset::Rloo | Preset::VerlRloo => {
                let single = if preset == Preset::Rloo { Single::Zero } else { Single::Raw };
                self.scaled(|g| self.g.count[g] / (self.g.count[g] - 1.0), single, 1.0)
            }
            Preset::TrlGrpoBatch => {
                let factor = 1.0 / (self.batch_std(false, 1).1 + 1e-4);
                self.scaled(|_| factor, Single::Zero, factor)
            }
            Preset::ReinforcePp | Preset::ReinforcePpBaseline | Preset::OpenrlhfReinforceBaseline => {
                let baseline = preset != Preset::ReinforcePp;
                let ddof = u32::from(preset != Preset::OpenrlhfReinforceBaseline);
                let (mu, sd) = self.batch_std(baseline, ddof);
                Reference::Whiten { baseline, mu, scale: (sd * sd + 1e-8).sqrt() }
            }
        }
    }

    /// The reference advantage of sample `i` of group `g`.
    #[inline(always)]
    fn reference_at(&self, r: &Reference, i: usize, g: usize) -> f64 {
        match r {
            Reference::Affine { f, raw } => {
                let x = self.x(i);
                match raw {
                    Some(raw) if self.single(g) && x.is_finite() => x * raw,
                    _ => (x - self.g.mean[g]) * f[g],
                }
            }
            Reference::Whiten { baseline, mu, scale } => {
                let y = if *baseline { self.baseline_centred(i, g) } else { self.x(i) };
                (y - mu) / scale
            }
        }
    }

    /// Advantage range over reward range in group `g` (which has spread) under `preset`.
    fn range_ratio(&self, g: usize, preset: Preset) -> f64 {
        let n = self.g.count[g];
        match preset {
            Preset::DrGrpo | Preset::VerlDrGrpo => 1.0,
            Preset::Rloo | Preset::VerlRloo => n / (n - 1.0),
            Preset::TrlGrpo | Preset::VerlGrpo | Preset::OpenrlhfGroupNorm | Preset::Dapo => {
                1.0 / (self.var1[g].sqrt() + preset.group_eps().unwrap_or(0.0))
            }
            Preset::TrlGrpoBatch => 1.0 / (self.batch_std(false, 1).1 + 1e-4),
            Preset::ReinforcePp | Preset::ReinforcePpBaseline | Preset::OpenrlhfReinforceBaseline => {
                let baseline = preset != Preset::ReinforcePp;
                let sd = self.batch_std(baseline, u32::from(preset != Preset::OpenrlhfReinforceBaseline)).1;
                1.0 / (sd * sd + 1e-8).sqrt()
            }
        }
    }

    // --- advantages ------------------------------------------------------------------------

    /// A cheap necessary condition for each preset to match (`advcore.reference._screen`).
    fn screen(&self, ag: &GroupColumns, rtol: f64) -> impl Fn(Preset) -> bool + '_ {
        let full: Vec<usize> =
            (0..self.k()).filter(|&g| ag.count[g] >= 2.0 && ag.count[g] == self.g.count[g]).collect();
        let nanmax = |it: &mut dyn Iterator<Item = f64>| it.filter(|v| !v.is_nan()).fold(f64::NAN, f64::max);
        let mut centred_ok = true;
        let mut ratio: Option<(usize, f64, f64)> = None;
        let any = !full.is_empty();
        if any {
            let top = nanmax(&mut full.iter().map(|&g| ag.max[g].abs().max(ag.min[g].abs())));
            let scale = if top.is_nan() { 1.0 } else { top.max(1.0) };
            centred_ok = nanmax(&mut full.iter().map(|&g| ag.mean[g].abs())) <= 4.0 * rtol * scale;
            // The group with the widest reward range (the first of equals).
            let mut widest: Option<(usize, f64)> = None;
            for &g in full.iter().filter(|&&g| self.spread(g)) {
                let w = self.g.max[g] - self.g.min[g];
                if widest.is_none_or(|(_, best)| w > best) {
                    widest = Some((g, w));
                }
            }
            if let Some((g, width)) = widest {
                let arange = ag.max[g] - ag.min[g];
                if arange > 0.0 {
                    let tol = 8.0 * rtol * 1f64.max(ag.max[g].abs()).max(ag.min[g].abs()) / arange;
                    ratio = Some((g, arange / width, tol));
                }
            }
        }
        move |preset: Preset| {
            if !any {
                return true;
            }
            if preset.family() != Family::Batch && !centred_ok {
                return false;
            }
            let Some((g, rho, tol)) = ratio else { return true };
            let expected = self.range_ratio(g, preset);
            (rho - expected).abs() <= tol * expected
        }
    }

    /// The disagreement of `adv` with `preset` in units of `rtol`; `None` when the preset leaves
    /// every sample out (`advcore.reference._compare`'s loop body).
    fn units<A: Sample>(&self, adv: &[A], preset: Preset, rtol: f64, all_fin: bool, n_max: usize) -> Option<f64> {
        let r = self.reference(preset);
        let n = self.n();
        if all_fin && let (Reference::Affine { f, raw }, Members::Contiguous(size)) = (&r, &self.members) {
            // The common case (GRPO's layout, a group-affine estimator): a scored singleton's
            // `x raw` is `(x - 0) raw`, so every group is `(x - m) f` and the loop vectorises.
            let (mut m, mut fs) = (self.g.mean.clone(), f.clone());
            if let Some(raw) = raw {
                for g in (0..self.k()).filter(|&g| self.single(g)) {
                    (m[g], fs[g]) = (0.0, *raw);
                }
            }
            let (worst, all_ref) = affine_disagreement(self.reward, adv, *size, &m, &fs);
            if all_ref {
                return Some(worst / rtol);
            }
        } else if all_fin {
            // Every sample is compared unless the preset leaves some out.
            let (mut worst, mut all_ref) = (0.0f64, true);
            self.members.each(n, |i, g| {
                let b = self.reference_at(&r, i, g);
                all_ref &= b.is_finite();
                worst = worst.max((adv[i].to_f64() - b).abs() / b.abs().max(1.0));
            });
            if all_ref {
                return Some(worst / rtol);
            }
        }
        let (mut worst, mut left, mut n_ok) = (None::<f64>, None::<f64>, 0usize);
        self.members.each(n, |i, g| {
            let a = adv[i].to_f64();
            if !(a.is_finite() && self.x(i).is_finite()) {
                return;
            }
            let b = self.reference_at(&r, i, g);
            if b.is_finite() {
                n_ok += 1;
                let e = (a - b).abs() / (rtol * b.abs().max(1.0));
                worst = Some(worst.map_or(e, |m| max_nan(m, e)));
            } else {
                let e = a.abs() / rtol;
                left = Some(left.map_or(e, |m| max_nan(m, e)));
            }
        });
        let mut units = worst?;
        if n_ok < n_max
            && let Some(left) = left
            && left > units
        {
            // The samples the preset leaves out must carry no advantage in the log either.
            units = left;
        }
        Some(units)
    }

    /// The best matching preset and its disagreement in units of `rtol`: the presets the screen
    /// passes in order, then, when none of them matches, the rest; the first within tolerance
    /// wins, else the closest (`advcore.reference._compare`). The screen runs lazily.
    fn compare<A: Sample>(&self, adv: &[A], ag: &GroupColumns, rtol: f64, n_max: usize) -> Result<(Preset, f64)> {
        let all_fin = n_max == self.n();
        let possible = self.screen(ag, rtol);
        let mut best: Option<(f64, Preset)> = None;
        let mut rest = Vec::new();
        let try_one = |preset: Preset, best: &mut Option<(f64, Preset)>| -> bool {
            let Some(units) = self.units(adv, preset, rtol, all_fin, n_max) else { return false };
            if best.is_none_or(|(b, _)| units < b) {
                *best = Some((units, preset));
            }
            units <= 1.0
        };
        let mut matched = false;
        for preset in Preset::ALL {
            if possible(preset) {
                if try_one(preset, &mut best) {
                    matched = true;
                    break;
                }
            } else {
                rest.push(preset);
            }
        }
        if !matched {
            for preset in rest {
                if try_one(preset, &mut best) {
                    break;
                }
            }
        }
        best.map(|(u, p)| (p, u)).ok_or_else(|| {
            StatsError::invalid("adv", "`logged_adv` and `rewards` share no sample where both are finite")
        })
    }

    /// Advantages whitened over the batch with weights we do not know: an increasing affine
    /// function of the reward or of the group-centred reward, batch mean within 0.5 of 0 and std
    /// in [0.5, 2] (`advcore.reference._whitened`).
    fn whitened<A: Sample>(&self, adv: &[A], rtol: f64) -> bool {
        let n = self.n();
        let mut kept: Vec<(f64, f64, f64)> = Vec::with_capacity(n); // (a, reward, baseline-centred)
        self.members.each(n, |i, g| {
            let a = adv[i].to_f64();
            if a.is_finite() && self.x(i).is_finite() {
                kept.push((a, self.x(i), self.baseline_centred(i, g)));
            }
        });
        if kept.len() < 3 {
            return false;
        }
        let m = kept.len() as f64;
        let (a_mean, sd) = numpy_mean_std(&mut kept.iter().map(|t| t.0).collect::<Vec<f64>>(), 0);
        if !(a_mean.abs() <= 0.5 && (0.5..=2.0).contains(&sd)) {
            return false;
        }
        let picks: [Pick; 2] = [|t| t.1, |t| t.2];
        for pick in picks {
            let y_mean = pairwise_sum(&kept.iter().map(pick).collect::<Vec<f64>>()) / m;
            let (mut ss, mut sy) = (0.0, 0.0);
            for t in &kept {
                let yc = pick(t) - y_mean;
                ss += yc * yc;
                sy += yc * (t.0 - a_mean);
            }
            if ss <= 0.0 {
                continue;
            }
            let beta = sy / ss;
            if beta > 0.0 {
                let worst = np_max(kept.iter().map(|t| {
                    let (ac, yc) = (t.0 - a_mean, pick(t) - y_mean);
                    (ac - beta * yc).abs() / t.0.abs().max(1.0)
                }));
                if worst.is_some_and(|w| w <= rtol) {
                    return true;
                }
            }
        }
        false
    }

    fn adv_checks<A: Sample>(
        &self,
        adv: &[A],
        groups: Groups<'_>,
        rtol: f64,
        known: Option<&GroupColumns>,
    ) -> Result<AdvChecks> {
        let n = self.n();
        let ok = |i: usize| adv[i].to_f64().is_finite() && self.x(i).is_finite();
        let n_fin = count_finite(adv);
        let n_ok = if n_fin == n && self.n_finite == n { n } else { count_both_finite(self.reward, adv) };
        if n_ok == 0 {
            return Ok(AdvChecks::UNDEFINED);
        }
        let ag = match known {
            Some(cols) if n_ok == n && cols.len() == self.k() => cols.clone(),
            _ if n_ok == n => GroupColumns::of(adv, groups)?,
            _ => {
                let masked: Vec<f64> = (0..n).map(|i| if ok(i) { adv[i].to_f64() } else { f64::NAN }).collect();
                GroupColumns::of(&masked, groups)?
            }
        };
        let (best, units) = self.compare(adv, &ag, rtol, n_ok)?;
        let within = units <= 1.0;
        let batch = (within && best.family() == Family::Batch) || (!within && self.whitened(adv, rtol));
        let k = self.k();
        let g = &self.g;
        let gmax: Vec<f64> = (0..k)
            .map(|j| {
                let v = max_nan(ag.max[j].abs(), ag.min[j].abs());
                if v.is_nan() { 0.0 } else { v }
            })
            .collect();
        let bound = |j: usize| -> f64 {
            let cnt = g.count[j];
            if batch || best.family() == Family::Batch {
                let nb = n_ok as f64;
                if nb > 1.0 { (nb - 1.0) / nb.sqrt() } else { f64::NAN }
            } else {
                match best.family() {
                    Family::Scaled => (cnt - 1.0) / cnt.sqrt(),
                    Family::Centred => (cnt - 1.0) / cnt.max(1.0) * (g.max[j] - g.min[j]),
                    _ => g.max[j] - g.min[j],
                }
            }
        };
        let bound_excess =
            np_max((0..k).filter(|&j| self.spread(j)).map(|j| gmax[j] / bound(j)).filter(|v| v.is_finite()))
                .unwrap_or(f64::NAN);
        // Group means of the advantages, over the batch std of the (finite) advantages.
        let sd = if n_fin > 1 {
            // A thread's kept buffer: a fresh 128 KiB vector is mapped and faulted in on every call.
            with_buffers(n, |finite: &mut [f64], _| {
                let mut len = 0;
                if n_fin == n {
                    for (d, v) in finite.iter_mut().zip(adv) {
                        *d = v.to_f64();
                    }
                    len = n;
                } else {
                    for v in adv.iter().map(|v| v.to_f64()).filter(|v| v.is_finite()) {
                        finite[len] = v;
                        len += 1;
                    }
                }
                numpy_mean_std(&mut finite[..len], 0).1
            })
        } else {
            f64::NAN
        };
        let gmean = np_max((0..k).filter(|&j| ag.count[j] > 0.0 && g.count[j] >= 2.0).map(|j| ag.mean[j].abs()));
        let group_mean_max = match gmean {
            Some(m) if sd > 0.0 => m / sd,
            Some(0.0) => 0.0,
            _ => f64::NAN,
        };
        let tied: Vec<usize> = (0..k).filter(|&j| self.tied(j)).collect();
        let tied_frac = if tied.is_empty() {
            0.0
        } else {
            tied.iter().filter(|&&j| gmax[j] > rtol).count() as f64 / tied.len() as f64
        };
        let noise: Vec<usize> = (0..k)
            .filter(|&j| self.spread(j) && g.max[j] - g.min[j] <= 1e-8 + 1e-5 * g.max[j].abs().max(g.min[j].abs()))
            .collect();
        let noise_max = if noise.is_empty() {
            0.0
        } else {
            np_max(
                noise
                    .iter()
                    .map(|&j| max_nan(ag.max[j] - ag.mean[j], ag.mean[j] - ag.min[j]))
                    .filter(|v| v.is_finite()),
            )
            .unwrap_or(0.0)
        };
        Ok(AdvChecks {
            recompute_err: units,
            batch_normalized: if batch { 1.0 } else { 0.0 },
            bound_excess,
            group_mean_max,
            tied_group_adv_nonzero_frac: tied_frac,
            noise_group_adv_max: noise_max,
            best: Some(best),
        })
    }
}

/// `max_i |a_i - b_i| / max(1, |b_i|)` with `b_i = (x_i - m_g) f_g` over contiguous groups of
/// `size`, and whether every `b_i` is finite. The maximum is kept per lane of [`LANES`] samples, so
/// the divisions vectorise instead of waiting on one chain of maxima (the maximum of values
/// without NaN does not depend on the order it is taken in).
#[crate::simd::dispatch(targets("x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl", "x86_64+avx2+fma"))]
fn affine_disagreement<T: Sample, A: Sample>(xs: &[T], adv: &[A], size: usize, m: &[f64], f: &[f64]) -> (f64, bool) {
    let (mut worst, mut fin) = ([0.0f64; LANES], [true; LANES]);
    for (((xg, ag), &mg), &fg) in xs.chunks_exact(size).zip(adv.chunks_exact(size)).zip(m).zip(f) {
        let lane = |k: usize, x: &T, a: &A| {
            let b = (x.to_f64() - mg) * fg;
            fin[k] &= b.is_finite();
            worst[k] = worst[k].max((a.to_f64() - b).abs() / b.abs().max(1.0));
        };
        by_lane(xg, ag, lane);
    }
    (worst.iter().fold(0.0f64, |w, &v| w.max(v)), fin.iter().all(|&b| b))
}

/// Picks the reward or its baseline-centred value from a kept `(advantage, reward, centred)`.
type Pick = fn(&(f64, f64, f64)) -> f64;

/// Reward levels beyond this many are not a discrete scoring rule's.
const MAX_LEVELS: usize = 8;

/// The largest `d` with every level `levels[0] + k d` (float Euclid on the differences).
fn lattice_step(levels: &[f64]) -> f64 {
    let scale = levels.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut d = levels[1] - levels[0];
    for w in levels.windows(2).skip(1) {
        let x = w[1] - w[0];
        let (mut a, mut b) = (d.max(x), d.min(x));
        while b > 1e-9 * scale {
            let r = a % b;
            a = b;
            b = if r > a - 1e-9 * scale { 0.0 } else { r }; // fmod left the divisor: a multiple
        }
        d = a;
    }
    d
}

/// `x` is a whole number (or infinite), without a libm call (`round` needs SSE4.1, absent from the
/// baseline x86-64 target): below 2^52 in magnitude the truncating conversion to `i64` is exact.
fn is_integral(x: f64) -> bool {
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let whole = x.abs() >= 4_503_599_627_370_496.0 || (x as i64) as f64 == x;
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_integral_agrees_with_rounding() {
        let xs = [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.5,
            -2.5,
            1e15 + 0.5,
            4.5e15,
            2f64.powi(52),
            2f64.powi(52) + 1.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            64.0 * 0.1,
        ];
        for x in xs {
            assert_eq!(is_integral(x), x == x.round_ties_even(), "{x}");
        }
    }
    use crate::trace::{TraceOptions, trace_checked};
    use proptest::prelude::*;

    /// GRPO advantages `(r - m_g) / (s_g + eps)` (std with ddof 1), written out per group; a
    /// singleton or tied group gets 0 (TRL).
    fn grpo(r: &[f64], size: usize, eps: f64) -> Vec<f64> {
        r.chunks(size)
            .flat_map(|g| {
                let n = g.len() as f64;
                let m = g.iter().sum::<f64>() / n;
                let s = (g.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt();
                g.iter().map(move |x| if g.len() < 2 || s == 0.0 { 0.0 } else { (x - m) / (s + eps) })
            })
            .collect()
    }

    fn checks(r: &[f64], ids: &[i64], adv: Option<&[f64]>) -> StepChecks {
        step_checks(r, Groups::Ids(ids), adv, &CheckOptions::default()).unwrap()
    }

    #[test]
    fn the_recipe_batch_by_hand() {
        // Groups a=[1,0,0,0], b=[1,1,1,1.007_812_5], c=[5,5,5] (tied), d=[3] (a singleton).
        let r = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.007_812_5, 5.0, 5.0, 5.0, 3.0];
        let ids = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3];
        let c = checks(&r, &ids, None);
        assert_eq!(c.reward_null_frac, 0.0);
        assert_eq!(c.singleton_group_frac, 0.25);
        assert_eq!(c.uneven_group_frac, 4.0 / 12.0); // sizes 4, 4, 3, 1: the 3 and the 1 are off
        assert_eq!(c.reward_low_precision, 0.0);
        // Group b in float32: u (max|r| + |m|) / s = 2^-24 (1.007_812_5 + 1.001_953_125) / 2^-8.
        let want = 2f64.powi(-24) * (1.007_812_5 + 1.001_953_125) / 2f64.powi(-8);
        assert!((c.reward_rounding_adv_err - want).abs() <= 1e-15 * want, "{}", c.reward_rounding_adv_err);
        assert!(c.adv.is_none());
    }

    #[test]
    fn grpo_advantages_match_trl_and_leave_tied_groups_at_zero() {
        let r: Vec<f64> = (0..64).map(|i| f64::from(u8::from(i * 7 % 5 == 0))).collect();
        let ids: Vec<i64> = (0..64).map(|i| i / 8).collect();
        let adv = grpo(&r, 8, 1e-4);
        let a = checks(&r, &ids, Some(&adv)).adv.unwrap();
        assert_eq!(a.best, Some(Preset::TrlGrpo));
        assert!(a.recompute_err <= 1e-6);
        assert_eq!(a.batch_normalized, 0.0);
        assert_eq!(a.tied_group_adv_nonzero_frac, 0.0);
        assert!(a.bound_excess <= 1.0);
        // Dr. GRPO: the centred rewards; RLOO: scaled by n / (n - 1).
        let centred: Vec<f64> = grpo(&r, 8, 0.0)
            .iter()
            .zip(r.chunks(8).flat_map(|g| {
                let m = g.iter().sum::<f64>() / 8.0;
                let s = (g.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 7.0).sqrt();
                std::iter::repeat_n(s, 8)
            }))
            .map(|(a, s)| a * s)
            .collect();
        assert_eq!(checks(&r, &ids, Some(&centred)).adv.unwrap().best, Some(Preset::DrGrpo));
        let loo: Vec<f64> = centred.iter().map(|a| a * 8.0 / 7.0).collect();
        assert_eq!(checks(&r, &ids, Some(&loo)).adv.unwrap().best, Some(Preset::Rloo));
    }

    #[test]
    fn batch_whitened_advantages_are_recognised() {
        let r: Vec<f64> = (0..48).map(|i| f64::from(i % 5) * 0.5).collect();
        let ids: Vec<i64> = (0..48).map(|i| i / 6).collect();
        let m = r.iter().sum::<f64>() / 48.0;
        let sd = (r.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 47.0).sqrt();
        let rpp: Vec<f64> = r.iter().map(|x| (x - m) / (sd * sd + 1e-8).sqrt()).collect();
        let a = checks(&r, &ids, Some(&rpp)).adv.unwrap();
        assert_eq!((a.best, a.batch_normalized), (Some(Preset::ReinforcePp), 1.0));
        // Token-weighted whitening: affine in the reward with other constants, no preset matches.
        let whitened: Vec<f64> = rpp.iter().map(|a| a * 0.93 + 0.02).collect();
        let w = checks(&r, &ids, Some(&whitened)).adv.unwrap();
        assert!(w.recompute_err > 1.0);
        assert_eq!(w.batch_normalized, 1.0);
    }

    #[test]
    fn unscored_rewards_and_missing_advantages() {
        let r = [f64::NAN, f64::INFINITY, f64::NAN, f64::NEG_INFINITY];
        let c = checks(&r, &[0, 0, 1, 1], Some(&[0.5, 0.5, 0.5, 0.5]));
        assert_eq!(c.reward_null_frac, 1.0);
        assert!(c.reward_imputed_zero_frac.is_nan() && c.reward_rounding_adv_err.is_nan());
        let a = c.adv.unwrap();
        assert!(a.recompute_err.is_nan() && a.noise_group_adv_max.is_nan() && a.best.is_none());
        // One scored reward in each group: singletons by count, not by size.
        let r = [1.0, f64::NAN, 0.0, f64::NAN];
        let c = checks(&r, &[0, 0, 1, 1], Some(&[0.0, 0.0, 0.0, 0.0]));
        assert_eq!((c.reward_null_frac, c.singleton_group_frac), (0.5, 0.0));
        assert_eq!(c.adv.unwrap().best, Some(Preset::TrlGrpo));
    }

    #[test]
    fn imputed_zeros_and_low_precision() {
        let ids: Vec<i64> = (0..12).map(|i| i / 4).collect();
        let signed = [1.0, -1.0, 0.0, 0.0, 1.0, 1.0, -1.0, 0.0, -1.0, 1.0, 1.0, -1.0];
        assert_eq!(checks(&signed, &ids, None).reward_imputed_zero_frac, 3.0 / 12.0);
        let binary = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        assert_eq!(checks(&binary, &ids, None).reward_imputed_zero_frac, 0.0);
        let components = [-1.0, 3.0, 4.0, 0.0, 0.0, 3.0, 4.0, -1.0, 0.0, 3.0, -1.0, 4.0]; // 0 = -1 + 1
        assert_eq!(checks(&components, &ids, None).reward_imputed_zero_frac, 0.0);
        // Eight distinct values on the bfloat16 grid, none a multiple of 1/64.
        let bf16: Vec<f64> = (0..12u32).map(|i| f64::from(f32::from_bits((0x3F81 + 2 * i) << 16))).collect();
        assert_eq!(checks(&bf16, &ids, None).reward_low_precision, 1.0);
        let declared = CheckOptions { reward_dtype: Some(Precision::Float16), ..CheckOptions::default() };
        let c = step_checks::<f64, f64>(&binary, Groups::Ids(&ids), None, &declared).unwrap();
        assert_eq!(c.reward_low_precision, 1.0);
    }

    #[test]
    fn bad_arguments_name_themselves() {
        let o = CheckOptions::default();
        let e = step_checks(&[1.0, 2.0], Groups::Contiguous { size: 2 }, Some(&[1.0][..]), &o).unwrap_err();
        assert_eq!(e.arg(), "adv");
        let empty: [f64; 0] = [];
        assert_eq!(step_checks::<f64, f64>(&empty, Groups::Ids(&[]), None, &o).unwrap_err().arg(), "rewards");
        let bad = CheckOptions { adv_rtol: 0.0, ..o };
        assert_eq!(step_checks::<f64, f64>(&[1.0], Groups::Ids(&[0]), None, &bad).unwrap_err().arg(), "adv_rtol");
        assert_eq!(Precision::parse("fp8", "reward_dtype").unwrap_err().arg(), "reward_dtype");
    }

    #[test]
    fn pairwise_sum_is_numpys() {
        // Below 8 values numpy sums in order; 0.1 + 0.2 + 0.3 rounds differently from 0.3 + 0.2 + 0.1.
        assert_eq!(pairwise_sum(&[0.1, 0.2, 0.3]), 0.1 + 0.2 + 0.3);
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.1).collect();
        let naive: f64 = v.iter().sum();
        assert!((pairwise_sum(&v) - naive).abs() <= 1e-9 * naive);
        // np.std of a constant sample of 0.1s (n = 10): the mean's residue, as numpy has it.
        let mut c = vec![0.1; 10];
        let (m, _) = numpy_mean_std(&mut c, 0);
        assert_eq!(m, ((0.1f64 + 0.1) + (0.1 + 0.1) + ((0.1 + 0.1) + (0.1 + 0.1)) + 0.1 + 0.1) / 10.0);
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![6 => (-4i32..5).prop_map(|v| f64::from(v) * 0.5), 1 => Just(f64::NAN), 2 => -3.0f64..3.0]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// The checks computed with the trace (from its group scans) equal the checks alone.
        #[test]
        fn traced_checks_equal_the_checks_alone(
            rows in prop::collection::vec((value(), value(), 0i64..7), 1..120),
            contiguous in any::<bool>(),
        ) {
            let reward: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let adv: Vec<f64> = rows.iter().map(|r| r.1).collect();
            let ids: Vec<i64> = rows.iter().map(|r| r.2).collect();
            let groups = if contiguous { Groups::Contiguous { size: 1 } } else { Groups::Ids(&ids) };
            let o = CheckOptions::default();
            let alone = step_checks(&reward, groups, Some(&adv[..]), &o).unwrap();
            let (_, traced) = trace_checked(&[&reward, &adv], &reward, groups, &[], &TraceOptions::default(), Some(1), &o).unwrap();
            for ((name, a), (_, b)) in alone.named().into_iter().zip(traced.named()) {
                prop_assert!((a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-12 * a.abs().max(1.0), "{}: {} != {}", name, a, b);
            }
        }
    }
}
