"""The detector cards are generated from the detector modules: every committed card equals its
rendering, every card is complete, and the remedies on a card are the ones its findings carry."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest
from click.testing import CliRunner

from advcore.cli import cli
from advcore.detectors import REGISTRY, Finding
from advcore.detectors.cards import CARDS_DIR, REGENERATE, card_file, render_card
from tests.detectors._fixtures import ROOT, make_run, one


@pytest.mark.parametrize("det", list(REGISTRY))
def test_the_committed_card_is_its_rendering(det: str) -> None:
    path = CARDS_DIR / f"{det}.md"
    assert path.is_file(), f"{path} is missing: run `{REGENERATE}`"
    assert path.read_text(encoding="utf-8") == card_file(REGISTRY[det]), (
        f"{path.name} differs from what {REGISTRY[det].module} renders: edit the module, then run "
        f"`{REGENERATE}`"
    )


def test_no_card_without_a_detector_and_docs_link_to_the_cards() -> None:
    assert {p.stem for p in CARDS_DIR.glob("*.md")} == set(REGISTRY), f"stale cards: run `{REGENERATE}`"
    assert (ROOT / "docs" / "detectors").resolve() == CARDS_DIR


@pytest.mark.parametrize("det", list(REGISTRY))
def test_every_section_and_knob_is_written(det: str) -> None:
    spec = REGISTRY[det]
    card = spec.card
    assert card is not None, f"{det} has no card (DetectorSpec.card)"
    for name in ("tagline", "happening", "looks_like", "decides", "related"):
        assert getattr(card, name).strip(), f"{det}: card.{name} is empty"
    assert spec.knobs or card.knobs_note, f"{det}: no knobs and no knobs_note saying why"
    for knob in spec.knobs:
        assert knob.help.strip() and knob.why.strip(), f"{det}.{knob.name}: help and why (its calibration source)"
    remedies = [spec.what_to_try] if spec.what_to_try else [items for _, items in spec.what_to_try_cases]
    assert bool(spec.what_to_try) != bool(spec.what_to_try_cases), f"{det}: what_to_try or its cases, not both"
    assert remedies and all(remedies) and all(t.strip() for items in remedies for t in items), det


@pytest.mark.parametrize("det", list(REGISTRY))
def test_findings_carry_the_remedies_on_the_card(det: str) -> None:
    # Statically: each Finding the module builds passes a name (not a literal) as its remedies, and
    # every WHAT_TO_TRY constant of the module is one of the lists on the card.
    spec = REGISTRY[det]
    module = importlib.import_module(spec.module)
    lists = [spec.what_to_try] if spec.what_to_try else [items for _, items in spec.what_to_try_cases]
    constants = {name: value for name, value in vars(module).items() if name.startswith("WHAT_TO_TRY")}
    assert constants, f"{det}: no WHAT_TO_TRY constant"
    for name, value in constants.items():
        assert any(value is items for items in lists), f"{det}: {name} is not on the card"
    calls = [node for node in ast.walk(ast.parse(inspect.getsource(module)))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding"]
    assert calls, f"{det}: builds no Finding"
    for call in calls:
        args = [kw.value for kw in call.keywords if kw.arg == "what_to_try"] or call.args[6:7]
        assert len(args) == 1 and isinstance(args[0], ast.Name), f"{det}: a Finding without its remedies"


def test_findings_on_fixtures_carry_the_card_lists() -> None:
    adv = [1.0] * 60 + [0.01] * 40
    f = one(make_run({"adv_std": adv, "reward_std": [0.5] * 100, "reward_mean": [0.5] * 100}), "ADV_COLLAPSE")
    assert isinstance(f, Finding) and f.what_to_try == REGISTRY["ADV_COLLAPSE"].what_to_try
    cases = dict(REGISTRY["BASELINE_BROKEN"].what_to_try_cases)
    nothing = one(make_run({"vf_explained_var": [0.0] * 25}), "BASELINE_BROKEN")
    everything = one(make_run({"vf_explained_var": [0.5, 0.9, 0.99] + [0.9995] * 27}), "BASELINE_BROKEN")
    assert isinstance(nothing, Finding) and nothing.what_to_try == cases["Explains nothing"]
    assert isinstance(everything, Finding) and everything.what_to_try == cases["Explains everything"]


def test_explain_prints_the_rendered_card() -> None:
    # by default the card a user reading a finding needs; --full as docs/detectors/ has it
    result = CliRunner().invoke(cli, ["explain", "adv_collapse"])
    assert result.exit_code == 0, result.output
    assert result.output == render_card(REGISTRY["ADV_COLLAPSE"], full=False)
    assert "## What to try" in result.output and "<!--" not in result.output
    assert "## Knobs" not in result.output and "--full" in result.output
    full = CliRunner().invoke(cli, ["explain", "adv_collapse", "--full"])
    assert full.exit_code == 0 and full.output == render_card(REGISTRY["ADV_COLLAPSE"])
    assert "## How the detector decides" in full.output and "## Knobs" in full.output


def test_the_listing_says_its_severity_is_each_detectors_highest() -> None:
    result = CliRunner().invoke(cli, ["explain"])
    assert result.exit_code == 0, result.output
    assert all(det in result.output for det in REGISTRY) and "a detector's highest" in result.output
