"""The detector catalog as a whole: every ID of SPEC section 6 is registered with a valid spec and
a card in the seed's form that documents each knob and its default (the cards are generated from
the specs; tests/detectors/test_cards.py checks that the files match)."""

from __future__ import annotations

import re

import pytest

from advcore.detectors import REGISTRY
from advcore.detectors.cards import render_card

#: SPEC section 6: the seed detectors, DEAD_FROM_START and the measurement contract's catalog.
CATALOG = {
    "ADV_COLLAPSE": "T", "DEGENERATE_GROUPS": "R", "REWARD_STD_DEATH": "R", "DEAD_FROM_START": "R/U",
    "REWARD_SATURATION": "R", "REWARD_FLOOR": "R", "REWARD_MISSING": "R", "COMPONENT_COLLAPSE": "R",
    "TRUNCATION_REWARD": "R", "BASELINE_BROKEN": "A", "NOISE_AMPLIFICATION": "T", "GROUPING_ERROR": "T",
    "ADV_REWARD_DECORRELATION": "T", "PRECISION_LOSS": "T", "UPDATE_SUPPRESSED": "U", "UPDATE_UNSTABLE": "U",
    "ENTROPY_COLLAPSE": "U",
    "NONFINITE": "any",
    # issue 16: the accuracy filter's accounting
    "FILTER_STARVATION": "R", "ALWAYS_FILTERED": "R",
}
SECTIONS = ("What is happening", "What it looks like", "How the detector decides", "Knobs", "What to try",
            "Related detectors")


def test_the_registry_is_the_catalog() -> None:
    assert set(REGISTRY) == set(CATALOG)


@pytest.mark.parametrize("det", sorted(CATALOG))
def test_spec_and_card(det: str) -> None:
    spec = REGISTRY[det]
    assert spec.stage == CATALOG[det]
    assert spec.resolve({}) == spec.defaults()
    assert spec.fn.__doc__
    card = render_card(spec)
    assert card.startswith(f"# {det}")
    for section in SECTIONS:
        assert re.search(rf"^#+ {section}", card, re.M | re.I), section
    for k in spec.knobs:
        assert k.validate(k.default, det) == k.default
        assert f"`{k.name}`" in card and str(k.default) in card, k.name
    for other in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", card.split("Related detectors", 1)[-1]):
        if other in CATALOG or other.endswith(("_COLLAPSE", "_GROUPS", "_DEATH", "_ERROR", "_LOSS")):
            assert other in REGISTRY, f"card names unknown detector {other}"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "nan", "1e400"])
def test_a_non_finite_knob_is_refused_through_the_api_too(value: object) -> None:
    from advcore.detectors import run_detectors
    from advcore.errors import AdvcoreError
    from tests.detectors._fixtures import make_run

    with pytest.raises(AdvcoreError, match="DEGENERATE_GROUPS.tied_above"):
        run_detectors(make_run({"reward_mean": [0.1] * 10}), settings={"DEGENERATE_GROUPS": {"tied_above": value}})


@pytest.mark.parametrize(("trainer", "source", "extra", "control"), [
    ("trl", "reward", None, False),                     # a language model's completions
    ("simplevla", "reward", None, False),               # a VLA trained by verl's code
    ("rl_games", "rewards/step", None, True),           # a control task
    (None, "episode_return", None, True),               # a hand-written loop logging episode returns
    (None, "score", None, False),                       # unknown: the default remedies
    ("wandb", "rollout/ep_rew_mean", None, True),       # a reader's name is no trainer: the return decides
    ("wandb", "episode_reward", "kl", False),           # ... unless a language model's metric sits beside it
])
def test_an_environment_run_gets_the_control_remedies(trainer: str | None, source: str, extra: str | None,
                                                      control: bool) -> None:
    from advcore.detectors import run_detectors
    from advcore.detectors.reward_floor import CONTROL_TRIES, WHAT_TO_TRY
    from tests.detectors._fixtures import make_run

    cols = {"reward_mean": [0.0] * 30, **({extra: [0.1] * 30} if extra else {})}
    run = make_run(cols, trainer=trainer, sources={"reward_mean": source})
    (floor,) = [f for f in run_detectors(run)[0] if f.id == "REWARD_FLOOR"]
    assert floor.what_to_try == (CONTROL_TRIES if control else WHAT_TO_TRY)
    assert "these instead" in render_card(REGISTRY["REWARD_FLOOR"])
