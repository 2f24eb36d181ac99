"""Progress lines that a hand-written training loop prints: a step counter and ``name: value`` pairs.

People who write their own loop (a REINFORCE or PPO notebook, a from-scratch GRPO) print one line
per update or episode in a form of their own. The forms seen in real notebooks:

* ``Update   10 | MeanEpReturn: 7.789 | MaxEpReturn: 17.890 | Entropy: 0.5260`` (PPO on Snake);
* ``step 8 -- mean_reward: (-0.325) -- decoding 5 rand samples:`` (TRL 0.4's gpt2-sentiment example
  adapted in a notebook; a value in parentheses is read);
* ``Episode 10, Avg reward: 29.60`` and ``epoch:   0 \\t loss: 22.992 \\t return: 25.080``;
* ``[Step 020] Loss = -76.3048 -  Avg Reward = 0.562`` and ``[Step 1/50] loss=10.2222
  reward_avg=0.250 avg_resp_len=236.8`` (from-scratch GRPO on GPT-Neo and Qwen3);
* ``轮次   50: 奖励 =  47.00, 最近50轮平均奖励 =  26.62, 损失 = 1.0417`` (a REINFORCE notebook in Chinese);
* ``回合：10/5000，奖励：-1378.73，评估奖励：-1430.15`` and ``步数：200/20000，奖励：15.50`` (the JoyRL book's
  notebooks: full-width ``：`` and ``，`` read as ``:`` and ``,``);
* a block per episode: ``Episode 0, Total Reward: 15.00`` followed by lines of pairs without a step
  (``==> Total Loss: 42.79, Actor Loss: 3.07, Critic Loss: 19.86, Avg Entropy: 0.69``);
* MiniMind's ``Epoch:[1/1](500/9751), Reward: -1.4843, KL_ref: 0.0023, Adv Std: 0.9257`` (step 500 of
  epoch 1's 9,751: the step is ``(epoch - 1) x 9751 + 500``);
* a hyphenated counter and a value named for its step: ``Global-step 3 --Accept update with
  alpha=1.0, kl=8.1e-08`` and ``Total reward in global step 33: 1.37`` (a TF1 TRPO loop; read as
  ``global_step 33, Total reward: 1.37``), and a value followed by its step, ``running reward: 6.16 at episode 10``
  (the Keras actor-critic example, read as ``episode 10, running reward: 6.16``);
* a bare progress counter after a tag: ``[synth100]  12/100 | loss=0.0000 | reward=0.000`` (a Tinker
  GRPO loop), read as ``step 12``, and one alone in brackets: ``[0/1000]  loss: -6.90, entropy:87.13``;
* Lapan's DQN (*Deep Reinforcement Learning Hands-On*) and its copies: ``237: done 1 games, mean
  reward -19.000, eps 1.00, speed 425.32 f/s``, counted by the frame;
* a block headed ``Timestep: 60000`` whose names carry a qualifier in parentheses (``mean reward (100
  episodes): 1.52``, Berkeley CS294 HW3's DQN, read as ``mean_reward_100_episodes``);
* several counters first: ``epoch: 0|step: 33|ppo_ep: 1|act_loss: 0.019|cri_loss: 0.036`` then
  ``average reward score: 0.43`` (DeepSpeed-Chat step 3, RLHF with PPO); the counter that takes the
  most values without going back counts the steps.

A *pair* is a name (words of letters, digits, ``_ . % / -``, up to six separated by single spaces,
not starting with a digit) then ``:`` or ``=``, then a number (``nan`` and ``inf`` too; a ``/N``
after it, as in ``Step 1/50``, is the planned total and dropped; a ``%`` after it makes it a share,
``Success:  13.0%`` read as 0.13); the first pair of a line may be
a step counter's name and its number separated by blanks only (``Update 10``, ``[Step 020]``), as
may every pair of a line made of pairs only (``Episode 1    Reward  -1689``), while elsewhere
``generating 2 candidates`` is prose, not a pair. A *step line* begins with a pair
whose name is a step counter's (:data:`STEP_NAME`: ``step``, ``grpo_step``, ``update``,
``episode``, ``epoch``, ``iteration``, ``frame``, ``轮次`` ...) and holds at least one other pair; the most common kind of step line
(its step word and other names) is the log's; a step line with another step word is not a step,
nor is one with fewer than half of those names whose step goes back (a test episode printed after
training: ``Episode 1 Reward: 500`` after ``Episode 1900, Total Reward: 500.00, Trajectory Length:
500``), while one whose step goes on is (``## step = 1000: Average Return = 1.8`` between
``## step = 1000: loss = ...`` lines: an evaluation at that step, merged into it). The pairs of the lines that
follow a step line, up to the first line without a pair or with another step, belong to its step (a block), and so
does a later line, before the next step, whose names the step lacks and earlier blocks held (ranks interleave their
prints: another rank's loss-scale lines between DeepSpeed-Chat's step line and its reward) or that is made of
one pair only (ManiSkill's PPO baseline prints ``Evaluating``, prose, then ``eval_return_mean=5.66`` lines); a name seen
twice in one step keeps its first value, except under a header line, where the lines are the step's
inner updates (``[Update 1/4] PolicyLoss=0.886 ... KL=0.0074`` four times under ``##########  epoch: 0
##########``, a Dou Dizhu PPO log): their values are averaged and their counter dropped. A name over
pairs in parentheses qualifies them (``Adv(mean=-0.36, std=0.59)`` reads as ``adv_mean``, ``adv_std``), as does
a label before ``=>`` (``Rewards => Avg: -7.7e-04, Min: -5.0e-03`` reads as ``rewards_avg``, ``rewards_min``). Names are read in lower case with blanks as ``_``
(``Avg Reward`` -> ``avg_reward``), so the alias table meets each spelling once; trainer
``printed``, or the trainer whose keys the lines print (a callback printing TRL's log dict as
``[Step 3] loss=0.0 reward=0.3 completions/clipped_ratio=1.0``: ``trl``). Steps printed twice are averaged (a row is a step). Lines longer than
:data:`MAX_LINE` characters are not read (no loop prints one; a pathological line costs itself),
and those longer than the console readers' limit (:func:`advcore.ingest._text.readable_lines`)
are reported too.

A log without a step counter (``Average epoch reward: 19.74   Average episode len: 19.74`` on every
line) is read when at least :data:`MIN_UNCOUNTED_LINES` (6) lines made of pairs only have the same
names; those lines are the steps, numbered in order.

Detection: at least :data:`MIN_STEP_LINES` (3) step lines with the same step word in the file's
head, their steps never decreasing except to start again from the first step or below (a resumed run;
or the 6 lines above). This reader comes after every named format, so a log any of
them knows is read by it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from advcore.model import IngestError, RawLog
from advcore.ingest._text import readable_lines
from advcore.ingest._trainers import trainer_of
from advcore.ingest._text import read_text as read_file
from advcore.ingest._parse import NUMBER, by_step, clean, list_statistics, number, steps_frame
from advcore.ingest._format import Format
from advcore.ingest.formats import tqdm_bar

NAME = "printed"

#: Names of a step counter (lower case, blanks as ``_``): ``step``, ``grpo_step``, ``Update``, ``epoch``, ``轮次``;
#: not a window that ends in one (``mean_reward_100_episodes``); PyMARL's ``t_env``, the environment steps its sacred
#: console prints on each ``Recent Stats | t_env: 50000 | Episode: 50`` line (src/run.py, src/utils/logging.py); a
#: frame count (an ECS 170 Pong DQN's ``#Frame: 20000, Loss: 0.023345``).
STEP_NAME = re.compile(r"^(?:\w*[^\W\d]_)?(?:steps?|timesteps?|updates?|episodes?|ep|epoch|iter|iteration|it|round|frames?)$|^t_env$"
                       r"|^(?:轮次|回合|步|步数|迭代)$")
#: Step lines (same step word) that a file's head needs to be read as printed progress.
MIN_STEP_LINES = 3
#: Longer lines are not read.
MAX_LINE = 8192

# possessive throughout and anchored at the start of a word, so a failed match costs one word: linear
_PAIR = re.compile(
    r"(?<![\w.%/\-])(?P<key>[^\W\d][\w.%/\-]*+(?: [^\W\d][\w.%/\-]*+){0,5}+)[ \t]*+(?:(?P<sep>[:=])[ \t]*+|(?<=[ \t]))"
    rf"(?P<value>{NUMBER})(?:/\d++)?+(?P<unit>s|ms|%)?+(?![\w.])",
    re.IGNORECASE,
)


#: What may stand between the pairs of a line made of pairs only: anything but letters and digits
#: (separators, brackets, emoji: ``🔄 Iteration 1/50``).
_BETWEEN = re.compile(r"[^\w]*+")


#: MiniMind's counters (jingyaogong/minimind trainer/train_*.py): ``Epoch:[e/E](i/N)``, the epoch of E
#: and the step i of the epoch's N
_EPOCH_OF = re.compile(r"^(?P<word>[^\W\d]\w{0,20}+)\s*+:?\s*+\[(?P<e>\d{1,9}+)/\d{1,9}+\]\s*+"
                       r"\((?P<i>\d{1,12}+)/(?P<n>\d{1,12}+)\)[\s,]*+")


#: A bare progress counter that begins a line, after a bracketed tag at most, and a ``|`` after it:
#: ``[synth100]   1/100 | loss=-9.3115 | reward=0.375`` (a Tinker GRPO loop, arvindcr4/tinker-rl-lab),
#: read as ``step 1 | ...`` (the total is the plan, not a value).
_BARE_PROGRESS = re.compile(r"^\s*+(?P<tag>\[[^\]\n]{1,40}+\]\s*+)?(?P<n>\d{1,12}+)/\d{1,12}+\s*+\|")
#: A bare progress counter in brackets that begins a line, a name after it: ``[0/1000]  loss: -6.90,
#: policy_loss: -6.90, kl-penalty: 0.0155, entropy:87.13`` (a from-scratch GRPO notebook,
#: h34-handwritten-grpo-countdown-qwen3b-kl-runaway), read as ``step 0, loss: ...``.
_BRACKETED_PROGRESS = re.compile(r"^\s*+\[(?P<n>\d{1,12}+)/\d{1,12}+\]\s++(?=[^\W\d])")


#: Full-width punctuation that Chinese and Japanese loops print (``回合：10/5000，奖励：-1378.73``),
#: read as its ASCII form.
_FULL_WIDTH = str.maketrans("：，＝（）［］；", ":,=()[];")


#: A name over pairs in parentheses: ``Adv(mean=-0.36, std=0.59)``, ``GradNorm(P=20.32, V=43.04)``.
_GROUPED = re.compile(r"(?<![\w.])(?P<name>[^\W\d]\w{0,40}+)\((?P<inner>[^()=:]{1,40}+[=:][^()]{0,400}+)\)")
_INNER = re.compile(r"(?P<key>[^\W\d]\w{0,40}+)[ \t]*+(?=[=:])")


#: A label over a line of pairs: ``Rewards          => Avg: -7.7e-04, Min: -5.0e-03`` (Madrona's PPO
#: console) reads as ``Rewards_Avg``, ``Rewards_Min``, so that one step's several ``Avg`` stay apart.
_LABELLED = re.compile(r"^\s*+(?P<label>[^\W\d]\w{0,40}+(?: \w{1,40}+){0,3}+)\s*+=>\s*+(?P<inner>.{1,2000})$")


#: A value in parentheses or brackets: ``mean_reward: (-0.28)`` (TRL 0.4's gpt2-sentiment notebook
#: adapted), ``score = [1.30999997]`` (a one-element numpy array printed: a DRLND Reacher notebook).
_PAREN_VALUE = re.compile(rf"([:=])[ \t]*+[(\[]({NUMBER})[)\]]", re.IGNORECASE)


#: A list of numbers printed as a value, a torch tensor or a Python list of at least two:
#: ``rewards: tensor([-1., -1., 0.5], device='cuda:0')`` (lsdefine/simple_GRPO's per-batch line
#: ``time: 7.21s     rewards: tensor([...])``), or of quoted numbers (``rewards=['0.80', '0.01']``, a
#: hand-written GRPO loop printing formatted strings), read as its ``<name>_mean``, ``_std`` (ddof 0),
#: ``_min`` and ``_max``.
_LIST_VALUE = re.compile(
    rf"(?P<key>[^\W\d]\w{{0,40}}+)[ \t]*+(?P<sep>[:=])[ \t]*+(?:tensor\(|array\()?+\[(?P<items>(?:[ \t]*+(?P<q>['\"]?+)(?:{NUMBER})\.?+(?P=q)[ \t]*+,)++"
    rf"[ \t]*+(?P<q2>['\"]?+)(?:{NUMBER})\.?+(?P=q2)[ \t]*+,?+)\](?:,[ \t]*+(?:device|dtype)=[^)]{{0,60}}+)?+\)?+", re.IGNORECASE)


def _list_statistics(m: re.Match[str]) -> str:
    """``rewards: tensor([...])`` as ``rewards_mean: m, rewards_std: s, rewards_min: lo, rewards_max: hi``."""
    stats = list_statistics([float(v) for v in re.findall(NUMBER, m.group("items"), re.IGNORECASE)])
    key, sep = m.group("key"), m.group("sep")
    return ", ".join(f"{key}_{name}{sep} {value!r}" for name, value in stats.items())


#: A counter written ``#N`` (`` episode #64 : score = -0.00``): read as ``episode 64``.
_HASH_COUNTER = re.compile(r"(?<=[^\W\d]) ?#(?=\d)")


#: A count inside a name, after a word that counts a window (``mean score of last 100 episodes =
#: 0.01``; OpenAI baselines' deepq ``mean 100 episode reward: -20.8``, h237-handwritten-dqn-pong-fixed-
#: action-learns-minus-21-to-plus-18): joined to its neighbours so the name stays whole
#: (``mean_score_of_last_100_episodes``, ``mean_100_episode_reward``) and ``episodes = 0.01`` is not read
#: as a counter, nor ``mean 100`` as a pair.
_WINDOW = re.compile(r"(?<![\w.])(last|past|over|previous|recent|first|mean)[ \t](\d{1,9}+)[ \t](?=[^\W\d])",
                     re.IGNORECASE)


#: The progress line of the DQN in Lapan's *Deep Reinforcement Learning Hands-On* (Chapter 6,
#: ``02_dqn_pong.py``) and its many copies: ``237: done 1 games, mean reward -19.000, eps 1.00, speed
#: 425.32 f/s``: the frame count, then ``name value`` items separated by commas, read as ``step: 237,
#: games: 1, mean reward: -19.000, eps: 1.00, speed: 425.32``.
_DONE_GAMES = re.compile(r"^\s*+(?P<frame>\d{1,12}+):[ \t]++done[ \t]++(?P<games>\d{1,12}+)[ \t]++games?\b,?+")
_NAMED_ITEM = re.compile(rf"(?:^|(?<=,))[ \t]*+(?P<name>[^\W\d][\w ]{{0,40}}?)[ \t]++(?=(?:{NUMBER})(?![\w.]))", re.IGNORECASE)


def _done_games(text: str, m: re.Match[str]) -> str:
    return f"step: {m.group('frame')}, games: {m.group('games')}, " + _NAMED_ITEM.sub(
        lambda k: f" {k.group('name')}: ", text[m.end():])


#: Words in parentheses between a name and its ``:`` qualify the name: ``mean reward (100 episodes):
#: 1.52`` (Berkeley CS294 HW3's DQN console, 2017) reads as ``mean_reward_100_episodes``.
_QUALIFIED = re.compile(r"(?<=[^\W\d])[ \t]*+\((?P<words>[^\W_][\w ]{0,40}+)\)(?=[ \t]*+[:=])")


def _qualified(m: re.Match[str]) -> str:
    return "_" + re.sub(r"\s+", "_", m.group("words").strip())


#: A value named for the step it belongs to: ``Total reward in global step 33: 1.368`` (a TF1 TRPO
#: loop), read as ``global step 33, Total reward: 1.368`` when the words before the number name a
#: step counter.
_AT_STEP = re.compile(rf"^\s*+(?P<name>[^\W\d][\w ]{{0,60}}?)[ \t]+(?:in|at|of|for)[ \t]+"
                      rf"(?P<word>[^\W\d][\w\- ]{{0,24}}?)[ \t]+(?P<n>\d{{1,12}}+)[ \t]*+[:=][ \t]*+(?P<value>{NUMBER})",
                      re.IGNORECASE)


def _at_step(m: re.Match[str]) -> str:
    word = re.sub(r"[\s-]+", "_", m.group("word").strip().lower())
    if not STEP_NAME.match(word):
        return m.group(0)
    return f"{word} {m.group('n')}, {m.group('name')}: {m.group('value')}"


#: A value, then the step it was reached at, closing the line: ``running reward: 6.16 at episode 10`` (the Keras
#: actor-critic example, keras.io/examples/rl/actor_critic_cartpole, ``"running reward: {:.2f} at episode {}"``, and
#: its copies: h447-keras-actor-critic-example-cartpole-v1), read as ``episode 10, running reward: 6.16`` when the
#: words after ``at`` name a step counter.
_VALUE_AT_STEP = re.compile(rf"^\s*+(?P<name>[^\W\d][\w ]{{0,60}}?)[ \t]*+[:=][ \t]*+(?P<value>{NUMBER})[ \t]++"
                            rf"(?:in|at|after)[ \t]++(?P<word>[^\W\d][\w\- ]{{0,24}}?)[ \t]++(?P<n>\d{{1,12}}+)"
                            r"[ \t\r]*+$", re.IGNORECASE)


#: A line that begins with a count after ``@``, a tag before it and thousands grouped by commas allowed: ``[eval @
#: 10,000] reward= +250.00± 0.00  completion=0%`` (a hand-written SB3 evaluation callback's console in a Mario DQN
#: study), read as ``step 10000, reward= ...``.
_AT_COUNT = re.compile(r"^\s*+\[?+[ \t]*+(?:[^\W\d]\w{0,20}+[ \t]*+)?@[ \t]*+(?P<n>\d{1,3}+(?:,\d{3})++|\d{1,12}+)(?![\d.,])\]?+,?+")


def _at_count(m: re.Match[str]) -> str:
    return f"step {m.group('n').replace(',', '')}, "


#: An episode's number and one unnamed number, alone on a line: ``Episode 14: 94.0`` (h414's Rainbow-tutorial DQN
#: notebook, ``print(f"Episode {i}: {score}")`` once per episode), read as ``Episode 14, return: 94.0``: the one
#: value such a loop prints per episode is its return.
_UNNAMED_RETURN = re.compile(rf"^\s*+(?P<word>episodes?|ep)[ \t]*+#?(?P<n>\d{{1,12}}+)[ \t]*+[:=][ \t]*+(?P<value>{NUMBER})"
                             r"[ \t\r]*+$", re.IGNORECASE)


def _step_key(key: str) -> str:
    """A hyphenated counter's name as a step word (``Global-step 0``: ``global_step``); other names as
    they are."""
    return key.replace("-", "_") if "-" in key and STEP_NAME.match(key.replace("-", "_")) else key


def _ungroup(m: re.Match[str]) -> str:
    """``Adv(mean=-0.36, std=0.59)`` as ``Adv_mean=-0.36, Adv_std=0.59, `` (the names qualified by the
    group's, so ``ValuePred(mean=...)`` and ``Adv(mean=...)`` stay apart)."""
    return " " + _INNER.sub(lambda k: f"{m.group('name')}_{k.group('key')}", m.group("inner")) + ", "


def _parse(line: str) -> tuple[list[tuple[str, str]], bool]:
    """The pairs of a line, and whether the line is made of pairs only. The first pair may be
    ``Name N`` (a counter: ``Update 10``, ``[Step 020]``), the others need ``:`` or ``=``
    (``generating 2 candidates`` is prose, not a pair) unless the line is made of pairs only
    (``Episode 1    Reward  -1689``). ``Epoch:[e/E](i/N)`` counts step ``(e - 1) N + i``."""
    if len(line) > MAX_LINE:
        return [], False
    text = clean(line).translate(_FULL_WIDTH)
    if "[" in text and "," in text:
        text = _LIST_VALUE.sub(_list_statistics, text)
    if "(" in text or "[" in text:
        text = _QUALIFIED.sub(_qualified, _GROUPED.sub(_ungroup, _PAREN_VALUE.sub(r"\1 \2", text)))
    if "#" in text:
        text = _HASH_COUNTER.sub(" ", text)
    text = _WINDOW.sub(r"\1_\2_", text)
    if " done " in text and (m := _DONE_GAMES.match(text)) is not None:
        text = _done_games(text, m)
    if "|" in text:
        text = _BARE_PROGRESS.sub(r"step \g<n> |", text, count=1)
    if text.lstrip().startswith("["):
        text = _BRACKETED_PROGRESS.sub(r"step \g<n>, ", text, count=1)
    if "@" in text:
        text = _AT_COUNT.sub(_at_count, text, count=1)
    if text.lstrip()[:2].lower() == "ep":
        text = _UNNAMED_RETURN.sub(r"\g<word> \g<n>, return: \g<value>", text, count=1)
    if " in " in text or " at " in text or " of " in text or " for " in text or " after " in text:
        text = _AT_STEP.sub(_at_step, text, count=1)
        text = _VALUE_AT_STEP.sub(_at_step, text, count=1)
    if "=>" in text and (m := _LABELLED.match(text)) is not None:
        label = re.sub(r"\s+", "_", m.group("label"))
        text = _INNER.sub(lambda k: f"{label}_{k.group('key')}", m.group("inner"))
    if (m := _EPOCH_OF.match(text)) is not None and STEP_NAME.match(m.group("word").lower()):
        step = (int(m.group("e")) - 1) * int(m.group("n")) + int(m.group("i"))
        text = f"step: {step}, {m.group('word')}: {m.group('e')}, " + text[m.end():]
    matches = list(_PAIR.finditer(text))
    gaps = [text[a.end():b.start()] for a, b in zip(matches, matches[1:], strict=False)]
    only_pairs = bool(matches) and all(_BETWEEN.fullmatch(g) for g in
                                       [text[:matches[0].start()], *gaps, text[matches[-1].end():]])
    out = []
    for i, m in enumerate(matches):
        # an abbreviation's dot is no part of the name (prime-rl: ``Grad. Norm: 0.31`` is grad_norm)
        key = _step_key(re.sub(r"\s+", "_", re.sub(r"\.(?=\s|$)", "", m.group("key").strip().lower())))
        if m.group("sep") or only_pairs or (i == 0 and STEP_NAME.match(key)):
            # a percentage is a share (``Success:  13.0%`` is 0.13, as success_rate and clip_frac are logged)
            value = m.group("value") if m.group("unit") != "%" else repr(float(m.group("value")) / 100)
            out.append((key, value))
    return out, only_pairs


def _step_word(pairs: list[tuple[str, str]]) -> str | None:
    """The step word of a step line: its first pair is named like a step, and another pair follows."""
    return pairs[0][0] if len(pairs) >= 2 and STEP_NAME.match(pairs[0][0]) else None


class Layout(NamedTuple):
    """The kind of line that starts a step."""

    #: its step word (None: lines without a counter, numbered in order)
    word: str | None
    #: the other names of such a line
    names: frozenset[str]
    #: True: the step line is a header (``********** Iteration 3 ************``) and every pair up to the
    #: next header belongs to its step, one per line (``Train_AverageReturn : 118.67``)
    header: bool = False


#: Lines of one kind without a step counter that make a log (numbered in order, as they come).
MIN_UNCOUNTED_LINES = 6


def _header_word(pairs: list[tuple[str, str]], only: bool) -> str | None:
    """The step word of a header line: a counter alone on its line, among decoration only."""
    return pairs[0][0] if only and len(pairs) == 1 and STEP_NAME.match(pairs[0][0]) else None


Parsed = list[tuple[list[tuple[str, str]], bool]]


def _counters(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The step-named pairs a line begins with (``epoch: 0|step: 33|ppo_ep: 1``)."""
    lead = []
    for key, value in pairs:
        if not STEP_NAME.match(key):
            break
        lead.append((key, value))
    return lead


def _finest_counter_first(lines: Parsed) -> Parsed:
    """Lines that begin with several counters (DeepSpeed-Chat step 3 prints ``epoch: 0|step: 33|ppo_ep:
    1|act_loss: ...``) are counted by the one that takes the most values without ever going back; it is
    moved first, and the others stay as metrics. A counter that restarts (a step within its epoch)
    is not chosen."""
    values: dict[str, list[float]] = {}
    for pairs, _ in lines:
        lead = _counters(pairs)
        if len(lead) < 2:
            continue
        for key, value in lead:
            values.setdefault(key, []).append(number(value) or 0.0)
    chosen = max(((len(set(v)), -i, k) for i, (k, v) in enumerate(values.items())
                  if all(b >= a for a, b in zip(v, v[1:], strict=False))), default=None)
    if chosen is None:
        return lines
    key = chosen[2]
    out: Parsed = []
    for pairs, only in lines:
        at = next((i for i, (k, _) in enumerate(_counters(pairs)) if k == key), 0)
        out.append(([pairs[at], *pairs[:at], *pairs[at + 1:]] if at else pairs, only))
    return out


Kind = tuple[str, frozenset[str]]


def _kinds(parsed: Parsed) -> dict[Kind, list[tuple[int, float]]]:
    """Each kind of step line (its step word and other names), in order of first appearance, with the
    ``(line index, step)`` of its lines."""
    spans: dict[Kind, list[tuple[int, float]]] = {}
    for n, (pairs, _) in enumerate(parsed):
        if (w := _step_word(pairs)) is not None:
            spans.setdefault((w, frozenset(k for k, _ in pairs[1:])), []).append((n, number(pairs[0][1]) or 0.0))
    return spans


def _training_kind(spans: dict[Kind, list[tuple[int, float]]]) -> Kind | None:
    """The most common kind of step line, unless all its lines come after those of another kind (of
    at least :data:`MIN_STEP_LINES` lines) and its steps start below where that kind's stopped: then
    it is an evaluation printed after training (the JoyRL book's ``回合：1/200，奖励：200.00`` after
    ``步数：20000/20000，奖励：193.80``), and the longest such earlier kind is the training's."""
    if not spans:
        return None
    top = max(spans, key=lambda k: len(spans[k]))
    start_line, start_step = spans[top][0]
    before = [k for k, lines in spans.items() if len(lines) >= MIN_STEP_LINES and k != top
              and lines[-1][0] < start_line and lines[-1][1] > start_step]
    return max(before, key=lambda k: len(spans[k])) if before else top


def _layout(lines: Parsed) -> Layout | None:
    """The most common kind of step line (its step word and other names), or header lines with the
    same step word when there are more of them or when that kind's counter goes back (the inner
    updates of a step: ``[Update 1/4] PolicyLoss=...`` four times under each ``#### epoch: 7 ####``);
    without either, the names of the most common kind
    of line made of pairs only when at least :data:`MIN_UNCOUNTED_LINES` lines have them
    (``Average epoch reward: 19.74   Average episode len: 19.74``); or None."""
    parsed = [p for p in lines if p[0]]
    spans = _kinds(parsed)
    headers = Counter(w for pairs, only in parsed if (w := _header_word(pairs, only)) is not None)
    inline = _training_kind(spans)
    header = headers.most_common(1)[0] if headers else None
    if header is not None and header[1] >= MIN_STEP_LINES and (
            inline is None or header[1] > len(spans[inline])
            or any(b < a for (_, a), (_, b) in zip(spans[inline], spans[inline][1:], strict=False))):
        return Layout(header[0], frozenset(), header=True)  # the inline kind's counter goes back: inner updates
    if inline is not None and len(spans[inline]) >= MIN_STEP_LINES:
        return Layout(*inline)
    # lines made of pairs only (not a CSV row or prose that holds a "beta=0.0")
    plain = Counter(frozenset(k for k, _ in pairs) for pairs, only in parsed
                    if only and not any(STEP_NAME.match(k) for k, _ in pairs))
    if plain:
        names, count = plain.most_common(1)[0]
        if count >= MIN_UNCOUNTED_LINES:
            return Layout(None, names)
    # fewer step lines than a log has: a model's completion that reads like one ('is it (odd): 3') is no
    # counter of hundreds of uncounted lines
    return Layout(*inline) if inline is not None else None


def _is_step_line(pairs: list[tuple[str, str]], layout: Layout, only: bool = False) -> bool:
    """A line of the log's kind: its header, or its step word (or none) and at least half of the other
    names (a test episode printed after training, ``Episode 1 Reward: 500``, is not a training step)."""
    if layout.header:
        return _header_word(pairs, only) == layout.word
    if layout.word is None:
        return (bool(pairs) and _step_word(pairs) is None
                and 2 * len(layout.names & {k for k, _ in pairs}) >= len(layout.names))
    return _step_word(pairs) == layout.word and 2 * len(layout.names & {k for k, _ in pairs[1:]}) >= len(layout.names)


def _goes_on(pairs: list[tuple[str, str]], records: list[tuple[int, dict[str, float | None]]]) -> bool:
    """A step line of another kind (``## step = 1000: Average Return = 1.8`` among ``## step = 1000:
    loss = ...`` lines) belongs to the log when its step does not go back: an evaluation printed at
    the step; a test episode counted from 1 after training is not."""
    step = number(pairs[0][1])
    return bool(records) and step is not None and step >= records[-1][0]


def _strays_into(pairs: list[tuple[str, str]], only: bool, last: dict[str, float | None],
                 block_names: set[str]) -> bool:
    """Whether a line of pairs after other output belongs to the last step: every name is one the last
    step lacks, and either blocks of earlier steps held it (ranks interleave their prints: DeepSpeed-Chat's
    ``average reward score`` can come after another rank's loss-scale lines) or the line is one pair and
    nothing else (an evaluation's ``eval_return_mean=5.66`` lines after ``Evaluating`` and prose of its
    own: ManiSkill's PPO baseline; not ``Here are a few rewards: tensor([1., 0., 1.])``, three samples
    of a batch printed among a CS336 GRPO loop's generations)."""
    single = only and len(pairs) == 1
    return _step_word(pairs) is None and all(k not in last and (single or k in block_names) for k, _ in pairs)


def sniff(path: Path, head: str | None) -> bool:
    if head is None:
        return False
    # a tqdm bar whose description holds a step counter (``global_step=151552, episodic_return=-2.79: 8%|``) is
    # the bar's: h257's Squint console
    parsed = _finest_counter_first([_parse(line) for line in head.splitlines() if not tqdm_bar.is_bar(line)])
    layout = _layout(parsed)
    if layout is None:
        return False
    if layout.word is None:
        return sum(_is_step_line(pairs, layout) for pairs, _ in parsed) >= MIN_UNCOUNTED_LINES
    steps = [number(pairs[0][1]) for pairs, only in parsed if _is_step_line(pairs, layout, only)]
    if len(steps) < MIN_STEP_LINES or any(v is None for v in steps):
        return False
    # steps never go back, except to start again from the first step or below (a run resumed from a
    # checkpoint, its counters restarted: danielnbarbosa/angela results/ple/flappybird.md)
    first = steps[0]
    return all(b >= a or b <= first for a, b in zip(steps, steps[1:], strict=False))  # type: ignore[operator]


def read_text(text: str, path: Path) -> RawLog:
    """The progress lines of ``text`` (a file's or a notebook cell's output), errors naming ``path``."""
    errors: list[IngestError] = []
    lines = text.split("\n")
    readable = dict(readable_lines(enumerate(lines, start=1), path, errors))  # a line too long reads as empty
    # a carriage return within a line starts another record on it: a loop that prints its progress with
    # print('\rEpisode {}\tAverage Score: {:.2f}', end='') writes one line per hundred episodes (a survey IQN
    # loop: 'Episode 1\tFrame 20 \tAverage100 Score: 20.00\rEpisode 2\t...'); each keeps its line's number
    segments = [(n, part) for n in range(1, len(lines) + 1)
                for part in (readable.get(n, "").removesuffix("\r").split("\r") or [""])]
    parsed = _finest_counter_first([_parse(part) for _, part in segments])
    layout = _layout(parsed)
    if layout is None:
        return RawLog(NAME, pl.DataFrame(), trainer=NAME, errors=(*errors, IngestError(
            str(path), "printed progress: no line with a step counter and name: value pairs "
                       "(e.g. 'Episode 10, Avg reward: 29.6')")))
    word = layout.word
    records: list[tuple[int, dict[str, float | None]]] = []
    block: dict[str, float | None] | None = None
    block_names: set[str] = set()  # names that earlier steps' blocks held
    tally: dict[str, int] = {}  # under headers: how many numbers of each name the current step has averaged
    for (n, _), (pairs, only) in zip(segments, parsed, strict=True):
        if not pairs:
            if not layout.header:  # under a header, prose between its pairs does not end the step
                block = None
            continue
        if block is None and records and _strays_into(pairs, only, records[-1][1], block_names):
            block = records[-1][1]  # another rank's output came between the step and its block
        step_line = _is_step_line(pairs, layout, only)
        if step_line and word is None:  # lines without a counter: numbered as they come
            block, tally = {}, {}
            records.append((len(records) + 1, block))
        elif step_line or (not layout.header and _step_word(pairs) == word and _goes_on(pairs, records)):
            step = number(pairs[0][1])
            if step is None or not math.isfinite(step) or step != int(step):
                errors.append(IngestError(str(path), f"printed progress: the {word or pairs[0][0]} counter is not a whole "
                                                     f"number ({pairs[0][1]})", n))
                block = None
                continue
            block, tally = {}, {}
            records.append((int(step), block))
            pairs = pairs[1:]
        elif block is None or (_step_word(pairs) is not None and not layout.header):
            block = None
            continue
        if not step_line:
            block_names.update(k for k, _ in pairs)
        if layout.header:  # the inner updates of the step: their counter dropped, their values averaged
            for k, v in (pairs[1:] if _counters(pairs) else pairs):
                value, seen = number(v), tally.get(k, 0)
                if value is None:  # a value that is not a number joins no mean
                    block.setdefault(k, None)
                    continue
                old = block.get(k)
                block[k] = value if not seen or old is None else old + (value - old) / (seen + 1)
                tally[k] = seen + 1
            continue
        for k, v in pairs:
            block.setdefault(k, number(v))
    frame = steps_frame(by_step(records))
    meta: dict[str, Any] = {"step_word": word, "step_lines": len(records)}
    if word is None:
        meta["step_inferred"] = True
    # a callback that prints a trainer's own keys (``[Step 3] loss=0.0 ... completions/clipped_ratio=1.0
    # reward=0.3 reward_std=0.0``, TRL's log dict) is read with that trainer's aliases
    trainer = trainer_of(frame.columns) or NAME
    return RawLog(NAME, frame, trainer=trainer, metadata=meta, errors=tuple(errors))


def read(path: Path) -> RawLog:
    return read_text(read_file(path), path)


FORMAT = Format(NAME, sniff, read)
