"""The alias table: trainer key -> canonical metric name, with the trainer and the version range
where the meaning holds. It is data (``aliases.csv`` next to this module); a user extends or
overrides it with a file of the same columns (``advcore scan --metric-map FILE``), whose rows win.

Columns: ``trainer`` (``trl``, ``verl``, ``openrlhf``, ``sb3``, ... or ``*`` for any), ``key``
(the trainer's key; ``{name}`` matches one path component and carries over to the canonical
name), ``canonical``, ``versions`` (empty, or comma-separated ``<0.27``/``>=0.27`` bounds),
``note``, an optional ``scale`` the values are multiplied by (``-1`` for a logged negative,
such as stable-baselines3's entropy loss) and an optional ``offset`` added after it (``scale -1,
offset 1`` turns a share into its complement: Tinker's share of mixed groups into the tied share).
A key is also tried without a leading ``train/``, ``update/`` or ``metrics/`` (W&B and TensorBoard prefixes).
The canonical name :data:`SET_ASIDE` (``-``) keeps a key unread on purpose: an aggregate that a
``{name}`` row after it would otherwise read as a reward component (Tunix's ``rewards/train/mean``, the
mean over the reward functions, beside ``rewards/train/{name}``).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from advcore._escape import excerpt

__all__ = ["SET_ASIDE", "Alias", "AliasTable", "load_aliases", "reward_by_name"]

_BUILTIN = Path(__file__).with_name("aliases.csv")
#: the canonical name of a key kept unread on purpose
SET_ASIDE = "-"
#: the suffix of a metric's list kept over a run (``win_rate_history``): the list of that metric, not another one
HISTORY_SUFFIX = "_history"


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


@dataclass(frozen=True, slots=True)
class Alias:
    """One row of the table."""

    trainer: str
    key: str
    canonical: str
    versions: str
    note: str
    scale: float = 1.0
    offset: float = 0.0

    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"(\{name\})", self.key)
        body = "".join("(?P<name>[^/]+?)" if p == "{name}" else re.escape(p) for p in parts)
        return re.compile(f"^{body}$")

    def holds_for(self, version: str | None) -> bool:
        """Whether the version range holds; a row with a range never holds for an unknown version."""
        if not self.versions:
            return True
        if version is None:
            return False
        v = _version_tuple(version)
        for bound in self.versions.split(","):
            bound = bound.strip()
            op = re.match(r"(<=|>=|<|>|==)", bound)
            if not op:
                continue
            b = _version_tuple(bound[op.end():])
            ok = {"<": v < b, "<=": v <= b, ">": v > b, ">=": v >= b, "==": v == b}[op.group(1)]
            if not ok:
                return False
        return True


class AliasTable:
    """Rows in priority order (user rows first, then the built-in ones)."""

    def __init__(self, rows: list[Alias]) -> None:
        self.rows = rows
        self._rank = {id(row): i for i, row in enumerate(rows)}
        # exact keys are looked up in a dict, only the rows with {name} are matched as patterns (a log
        # with 16,000 keys must not try every row's pattern on each); both keep the rows' priority order
        self._exact: dict[str, list[tuple[int, Alias]]] = {}
        self._patterns: list[tuple[int, Alias, re.Pattern[str]]] = []
        for i, row in enumerate(rows):
            if "{name}" in row.key:
                self._patterns.append((i, row, row.pattern()))
            else:
                self._exact.setdefault(row.key, []).append((i, row))

    def rank(self, row: Alias) -> int:
        """The row's place in the table: of two keys read as one name, the one whose row comes first wins."""
        return self._rank[id(row)]

    def canonical(self, key: str, trainer: str | None, version: str | None = None) -> tuple[str, Alias] | None:
        """The canonical name of ``key`` for ``trainer`` at ``version``, and the row that said so; None
        when no row names it or the row sets it aside (:data:`SET_ASIDE`)."""
        hit = self._lookup(key, trainer, version)
        return None if hit is None or hit[0] == SET_ASIDE else hit

    def _lookup(self, key: str, trainer: str | None, version: str | None) -> tuple[str, Alias] | None:
        candidates = [key.strip()]
        # a training metric named as such (W&B sections, hand-written loops); tianshou 0.5 and later log the
        # policy's learn() results under update/ (tianshou/utils/logger/base.py, log_update_data); a section named
        # for holding metrics names none (a CleanRL PPO on a learned reward, h447: metrics/episodic_return)
        for prefix in ("train/", "train_", "update/", "metrics/"):
            if key.startswith(prefix):
                candidates.append(key[len(prefix):])
        # a hand-written loop's list of a metric over the run, named for keeping it (h357's tabular Q-learning
        # blackjack: training_results.json's win_rate_history, one win rate per 1,000 hands)
        candidates += [c[:-len(HISTORY_SUFFIX)] for c in candidates if c.endswith(HISTORY_SUFFIX)]
        # last, the spelling the table keeps for hand-written loops: lower case, blanks as _ (a CSV header
        # ``Episode,Score,Steps``: KairSoul's Flappy Bird DQN, ``Score`` read as ``score``)
        candidates += [c for c in (re.sub(r"\s+", "_", c.lower()) for c in candidates) if c not in candidates]
        for cand in candidates:
            exact = next(((i, row) for i, row in self._exact.get(cand, ())
                          if row.trainer in ("*", trainer) and row.holds_for(version)), None)
            for i, row, pattern in self._patterns:
                if exact is not None and i > exact[0]:
                    break
                if row.trainer not in ("*", trainer):
                    continue
                m = pattern.match(cand)
                if m and row.holds_for(version):
                    name = m.group("name")
                    return row.canonical.replace("{name}", name), row
            if exact is not None:
                return exact[1].canonical, exact[1]
        return None


def _number(row: dict[str, str | None], column: str, default: float, where: str) -> float:
    """The finite number in ``column`` of ``row`` (``default`` when empty); ValueError naming ``where``."""
    text = str(row.get(column) or "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        raise ValueError(f"{where}: `{column}` must be a number, got {excerpt(text)} "
                         "(a note with a comma must be quoted)") from None
    if not math.isfinite(value):
        raise ValueError(f"{where}: `{column}` must be a finite number, got {excerpt(text)}")
    return value


def _read(path: Path) -> list[Alias]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = {"trainer", "key", "canonical"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: the metric map needs the columns {sorted(missing)}")
        rows = []
        for r in reader:
            where = f"{path}:{reader.line_num}"
            empty = [c for c in ("trainer", "key", "canonical") if not (r.get(c) or "").strip()]
            if empty:
                raise ValueError(f"{where}: expected a value in the column(s) {', '.join(empty)}")
            if r["key"].count("{name}") > 1:
                raise ValueError(f"{where}: a key may hold {{name}} once (it names one path component), "
                                 f"got {excerpt(r['key'])}")
            scale, offset = (_number(r, column, default, where) for column, default in (("scale", 1.0), ("offset", 0.0)))
            rows.append(Alias(r["trainer"].strip(), r["key"], r["canonical"].strip(),
                              (r.get("versions") or "").strip(), r.get("note") or "", scale, offset))
        return rows


@lru_cache(maxsize=8)
def load_aliases(extra: Path | None = None) -> AliasTable:
    """The built-in table, with the rows of ``extra`` (same columns) taking precedence."""
    rows = _read(extra) if extra is not None else []
    return AliasTable(rows + _read(_BUILTIN))


#: words that name a reward or return ...
_REWARD_WORDS = frozenset({"reward", "rewards", "return", "returns", "rew",
                           # its plural (a CMPE591 homework's np.save("rews.npy", episode_returns))
                           "rews",
                           # the abbreviation of a hand-written TF DQN's log (yjhong89/DQN: episode.rwd)
                           "rwd",
                           # OpenAI baselines' episode reward, one word (eprew, eprewmean): its forks and
                           # loggers copied it (h14-nsi-ppo-frozenlake-solved-reward-pinned-at-1: eprew_recent)
                           "eprew", "eprewmean",
                           # a game's or an episode's score, the return hand-written loops print (a survey
                           # IQN loop on CartPole: 'Episode 7  Frame 165  Average100 Score: 23.57')
                           "score", "scores",
                           # decision theory's word for the return a course's agent maximises (BU CS440's
                           # Pokemon Q-learning log: 'after cycle=0 avg(utility)=269.99 avg(num_wins)=0.35')
                           "utility"})
#: ... and the words that may qualify it without making it something else (a component, a spread, an
#: evaluation): an average over the step's or the last episodes, from training
_MEAN_WORDS = frozenset({"mean", "avg", "average", "ave"})
_EPISODE_WORDS = frozenset({"ep", "eps", "episode", "episodes", "episodic"})
#: with a mean word: an average since the start of the run
_SINCE_START = frozenset({"cumulative", "cum"})
_QUALIFIERS = _MEAN_WORDS | _EPISODE_WORDS | frozenset({
    "total", "cumulative", "cum", "sum", "train", "training", "rollout", "rollouts", "batch", "per", "info", "t",
    "step", "iter", "iteration", "undiscounted", "raw", "env", "of", "the", "last", "recent", "running", "smoothed",
    "rolling", "moving",
    # the training episodes' reward beside the testing ones' (a survey Keras DQN on Breakout: 'Avg learning
    # reward last 100 episodes: 0.9600', then 'Avg testing reward: 0.1905')
    "learning",
    # the return's textbook symbol, G_t (Sutton and Barto): a tabular agent's TSV header 'episode steps return_G'
    "g",
    # one agent's return in a multi-agent log (light_mappo's per-agent TensorBoard runs:
    # 'agent12/average_episode_rewards'); its number is dropped with the other digits
    "agent",
    # the team's return beside each agent's (MaxMaiche/COCOMA-DeepRL's independent DQN archers:
    # 'Global/Reward' and 'Agent_archer_0/Reward' .. 'Agent_archer_3/Reward')
    "global", "team",
    # the namespace of the metrics an SB3 callback records itself (logger.record("custom/episode_reward_mean"):
    # h12-sb3-ppo-jepa-trading-entropy-to-3pct-learns)
    "custom",
    # the list a loop keeps of its values over the run (andresbecker/Deep_RL_Actor_Critic Models/history.npz:
    # total_episode_reward_history, one return per episode, beside its running mean avg_episode_reward_history)
    "history"})


#: the units of a trailing window a reward is averaged over, after "last" ('Mean Reward (last 1000 steps)': an SB3
#: callback's print in h425-sb3-ppo-cnn-multicarracing-continuous' notebook)
_WINDOW_UNITS = frozenset({"steps", "iterations", "iters", "updates", "games", "rounds"})


#: Names of RL algorithms: a file named by one alone (and a number) is that run's curve of returns.
_ALGORITHMS = frozenset({"ddpg", "td3", "sac", "ppo", "trpo", "a2c", "a3c", "acer", "acktr", "dqn", "ddqn", "qlearning",
                         "sarsa", "reinforce", "vpg", "naf", "grpo", "rloo", "maddpg", "mappo", "ippo", "qmix"})


#: A Gym/Gymnasium environment id (``LunarLander-v2``, ``ALE/Pong-v5``): the env a key is logged for
#: (``step_rewards_LunarLander-v2``, Lizhi-sjtu/DRL-code-pytorch), not a word of what it measures.
_ENV_ID = re.compile(r"(?:[A-Za-z]+/)?[A-Z][A-Za-z0-9]*(?:-[A-Za-z][A-Za-z0-9]*)*-v\d+")


def _words(key: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", _ENV_ID.sub(" ", key))  # camelCase -> camel Case
    words: list[str] = []
    for token in re.split(r"[^a-z0-9]+", spaced.lower()):
        # Average100 -> Average 100 (a window's size), but an algorithm's name keeps its digits (TD3, A2C:
        # sfujim/TD3's learning_curves/Hopper/TD3_Hopper-v1_4.npy is read as td3's returns)
        words += [token] if token in _ALGORITHMS else re.sub(r"(?<=[a-z])(?=\d)", " ", token).split()
    return [w for w in words if not w.isdigit()]


#: words that make a file's name something else than its reward: a spread, an extreme, an evaluation,
#: a loss, a length or another quantity a loop writes to a file of its own (``episode_lengths.csv``)
_NOT_REWARD_WORDS = frozenset({"std", "stdev", "var", "variance", "min", "max", "eval", "evaluation", "test",
                               "val", "validation", "loss", "losses", "length", "lengths", "len", "steps",
                               "time", "times", "entropy", "kl", "lr", "epsilon", "eps", "q", "value",
                               "values", "advantage", "advantages", "success", "component", "components"})


def reward_by_name(keys: list[str], stems: Collection[str] = (), *, run_named: bool = True) -> str | None:
    """The key most likely to hold the mean training reward of a log that no alias maps to
    ``reward_mean``, judged by its words alone: a reward or return word, qualified only by words of
    averaging, episodes or training (``Average Episodic Reward/info``, ``avgReturn``, ``Reward/(t)``),
    never a spread, an extreme, an evaluation or a component (``reward_std``, ``eval/reward``,
    ``reward_format``). Among several, those that say *mean* and *episode* first, then the first in
    ``keys``' order; a cumulative average (``cumulative_avg_reward``, the mean over every episode since
    the start, which hides a change more with each episode) only when nothing else qualifies
    (h96-wandb-history-spaceinvaders-dqn-stuck-285 logs it beside ``episodic_reward``); None when no
    key qualifies. A key in ``stems`` is a file's name (a headerless table's one series): its other words
    are the file's tags, so it qualifies unless one of them names another quantity
    (:data:`_NOT_REWARD_WORDS`: ``rewards_before.csv`` of h223-2048-hand-written-dqn-one-update-per-
    episode-plateau is its returns, ``reward_std.csv`` is not). Without ``run_named``, a file named by its
    run's settings alone (an algorithm, a seed) is not taken for its returns: a TensorBoard download renamed
    after its run holds whichever tag was downloaded (h134-sb3-ppo-minigrid-doorkey's ``PPO_3.csv`` is the
    episode length, its ``PPO_4.csv`` the return)."""
    best: tuple[int, int, str] | None = None
    for i, key in enumerate(keys):
        words = _words(key)
        allowed = _REWARD_WORDS | _QUALIFIERS | (_WINDOW_UNITS if "last" in words else frozenset())
        if key in stems:
            allowed |= set(words) - _NOT_REWARD_WORDS
        # a file named by its run's settings, the seed among them (hanacatic/RL-Project's
        # results/DQN_continous_seed8.npy: np.save of the episodes' returns), or by its algorithm alone
        # (Martyanovst/differential-games-rl's rewards/pendulum/ddpg2021.npy, the seed its number), holds the run's
        # returns
        settings = run_named and key in stems and not set(words) & _NOT_REWARD_WORDS and (
            "seed" in words or (bool(words) and set(words) <= _ALGORITHMS))
        if not settings and (not words or not set(words) & _REWARD_WORDS or not set(words) <= allowed):
            continue
        # an average over every episode since the start lags more with each one: the last choice
        running = bool(set(words) & _SINCE_START and set(words) & _MEAN_WORDS)
        rank = (running * 4 - (2 * bool(set(words) & _MEAN_WORDS) + bool(set(words) & _EPISODE_WORDS)), i, key)
        best = rank if best is None or rank < best else best
    return best[2] if best is not None else None
