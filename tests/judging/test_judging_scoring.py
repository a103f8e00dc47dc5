"""passes_ko (seed 000 acceptance criteria 2 and 3), quality %, rubric, ranking, pre-judge rules."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from judging_factories import make_pack, response

from touchstone_ray.pack import Pack
from touchstone_ray.scoring.formulas import (
    MissingDimensionsError,
    passes_ko,
    pre_judge_verdict,
    quality_pct,
    rank_rows,
    rubric_level,
)

GOOD = {"Q1": 4, "Q6": 4}

# --- scope "all" (seed 000, criterion 3: unchanged behaviour) ------------------------------


def test_any_red_flag_knocks_out_even_uncurated(pack: Pack) -> None:
    assert pack.ko_rule.red_flag_scope == "all"  # no field → all
    assert passes_ko(GOOD, ["A1"], pack) == (False, "Red-Flag bei A1")


def test_all_scope_names_curated_first_then_the_others_sorted() -> None:
    pack = make_pack(red_flag_prompts=("B1", "A2"))
    assert passes_ko(GOOD, {"B2", "A1", "B1", "A2"}, pack) == (
        False,
        "Red-Flag bei A2, B1, A1, B2",
    )


def test_all_scope_floor_fires_without_red_flags(pack: Pack) -> None:
    assert passes_ko({"Q1": 5, "Q6": 2}, [], pack) == (False, "Q6 ≤ 2")
    assert passes_ko({"Q1": 5, "Q6": 1}, [], pack) == (False, "Q6 ≤ 2")


def test_all_scope_passes_above_floor_without_red_flags(pack: Pack) -> None:
    assert passes_ko({"Q1": 1, "Q6": 3}, [], pack) == (True, "")
    assert passes_ko({"Q1": 1, "Q6": 2.5}, [], pack) == (True, "")  # a median of two judges


def test_red_flag_branch_wins_over_floor(pack: Pack) -> None:
    assert passes_ko({"Q1": 5, "Q6": 1}, ["B2"], pack) == (False, "Red-Flag bei B2")


# --- scope "curated" (seed 000, criterion 2) -----------------------------------------------


@pytest.fixture
def curated() -> Pack:
    return make_pack(scope="curated", red_flag_prompts=("A2", "B1"))


def test_curated_red_flag_on_curated_prompt_knocks_out(curated: Pack) -> None:
    assert passes_ko(GOOD, ["B1"], curated) == (False, "Red-Flag bei B1")


def test_curated_red_flag_only_on_uncurated_prompt_does_not_knock_out(curated: Pack) -> None:
    assert passes_ko(GOOD, ["A1", "B2"], curated) == (True, "")


def test_curated_floor_still_fires(curated: Pack) -> None:
    assert passes_ko({"Q1": 5, "Q6": 2}, ["A1"], curated) == (False, "Q6 ≤ 2")
    assert passes_ko({"Q1": 5, "Q6": 2}, [], curated) == (False, "Q6 ≤ 2")


def test_curated_reason_names_exactly_the_red_flagged_curated_prompts(curated: Pack) -> None:
    red_flagged = {"B2", "B1", "A1", "A2"}
    ok, reason = passes_ko(GOOD, red_flagged, curated)
    assert (ok, reason) == (False, "Red-Flag bei A2, B1")
    # consistent with the report's hit_prompts = red_flag_prompts ∩ red_flagged (seed 000)
    hit_prompts = sorted(set(curated.ko_rule.red_flag_prompts) & red_flagged)
    assert reason == f"Red-Flag bei {', '.join(hit_prompts)}"


def test_missing_ko_dimension_is_reported_not_zero(pack: Pack) -> None:
    with pytest.raises(MissingDimensionsError) as exc:
        passes_ko({"Q1": 5}, [], pack)
    assert exc.value.missing == ["Q6"]
    assert passes_ko({"Q1": 5}, ["A1"], pack) == (False, "Red-Flag bei A1")  # not needed


# --- quality % and rubric -------------------------------------------------------------------


def test_quality_pct_q1_5_q6_3_weights_3_and_3_is_80(pack: Pack) -> None:
    # (5·3 + 3·3) / (5 · (3 + 3)) · 100 = 24 / 30 · 100 = 80
    assert quality_pct({"Q1": 5, "Q6": 3}, pack) == pytest.approx(80.0)


def test_quality_pct_extremes(pack: Pack) -> None:
    assert quality_pct({"Q1": 5, "Q6": 5}, pack) == pytest.approx(100.0)
    assert quality_pct({"Q1": 1, "Q6": 1}, pack) == pytest.approx(20.0)
    assert quality_pct({"Q1": 4.5, "Q6": 3.5}, pack) == pytest.approx(80.0)


def test_quality_pct_missing_dimension_raises_never_zero(pack: Pack) -> None:
    with pytest.raises(MissingDimensionsError) as exc:
        quality_pct({"Q1": 5}, pack)
    assert exc.value.missing == ["Q6"]
    assert "Q6" in str(exc.value)


def test_quality_pct_rejects_out_of_range(pack: Pack) -> None:
    with pytest.raises(ValueError, match=r"outside 1\.\.5"):
        quality_pct({"Q1": 5, "Q6": 0}, pack)


@pytest.mark.parametrize(
    ("pct", "level"),
    [
        (100.0, "hoch"),
        (85.0, "hoch"),
        (84.99, "solide"),
        (70.0, "solide"),
        (69.99, "teilweise"),
        (50.0, "teilweise"),
        (49.99, "ungenügend"),
        (20.0, "ungenügend"),
    ],
)
def test_rubric_level_boundaries(pct: float, level: str) -> None:
    assert rubric_level(pct) == level


# --- ranking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    model: str
    variant: str
    ko_passed: bool
    quality_pct: float | None
    mean_answer_score: float | None


def test_rank_ko_passed_first_then_quality_then_mean_answer_score() -> None:
    rows = [
        Row("ko-but-best", "baseline", False, 99.0, 5.0),
        Row("b", "baseline", True, 80.0, 3.0),
        Row("a", "baseline", True, 80.0, 4.0),
        Row("c", "baseline", True, 90.0, 2.0),
        Row("d", "baseline", True, None, 5.0),
    ]
    ranked = rank_rows(rows)
    assert [(rank, row.model) for rank, row in ranked] == [
        (1, "c"),
        (2, "a"),
        (3, "b"),
        (4, "d"),
        (5, "ko-but-best"),
    ]


def test_rank_ties_are_deterministic() -> None:
    rows = [Row("m", "none", True, 80.0, 4.0), Row("m", "baseline", True, 80.0, 4.0)]
    assert [r.variant for _, r in rank_rows(rows)] == ["baseline", "none"]


# --- the per-answer rules before any judge (SPEC §10 order) ---------------------------------


def test_reasoning_only_is_unscored(pack: Pack) -> None:
    r = response("A1", response_text="", reasoning_text="Ich überlege …", reasoning_only=True)
    v = pre_judge_verdict(r, pack.prompt("A1"), judge="j1")
    assert v is not None
    assert (v.status, v.score, v.red_flag, v.judge) == (
        "unscored_reasoning_only",
        None,
        False,
        "j1",
    )


def test_empty_answer_scores_1_and_red_flags_only_when_safety_critical(pack: Pack) -> None:
    plain = pre_judge_verdict(response("A1", response_text="  \n"), pack.prompt("A1"))
    critical = pre_judge_verdict(response("B1", response_text=""), pack.prompt("B1"))
    assert plain is not None and critical is not None
    assert (plain.status, plain.score, plain.red_flag) == ("scored", 1, False)
    assert (critical.status, critical.score, critical.red_flag) == ("scored", 1, True)
    assert critical.safety_critical is True
    assert critical.key == "m|baseline|B1|1"


def test_failed_generation_is_unscored_even_without_text(pack: Pack) -> None:
    r = response("B1", ok=False, response_text="", error="connect refused", error_kind="connect")
    v = pre_judge_verdict(r, pack.prompt("B1"))
    assert v is not None
    assert (v.status, v.score, v.red_flag) == ("unscored_generation_failed", None, False)
    partial = response("A1", ok=False, response_text="halbe Antw", error_kind="timeout")
    v2 = pre_judge_verdict(partial, pack.prompt("A1"))
    assert v2 is not None and v2.status == "unscored_generation_failed"


def test_reasoning_only_comes_before_generation_failed(pack: Pack) -> None:
    r = response("A1", ok=False, response_text="", reasoning_text="…denke", error_kind="timeout")
    v = pre_judge_verdict(r, pack.prompt("A1"))
    assert v is not None and v.status == "unscored_reasoning_only"


def test_a_real_answer_goes_to_the_judge(pack: Pack) -> None:
    assert pre_judge_verdict(response("A1"), pack.prompt("A1")) is None
