"""The judge reply contract (SPEC §10): what parses, what is a judge_error, and why."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from touchstone_ray.judging.parse import (
    ParsedHolistic,
    ParsedVerdict,
    ParseFailure,
    extract_prompt_ids,
    parse_answer_reply,
    parse_holistic_reply,
    parse_score,
)

FENCED = (
    "Here is my evaluation.\n```json\n"
    '{"score": 4, "red_flag": false, "rationale": "Klar und korrekt."}\n```\nThanks.'
)
AFTER_PROSE = (
    'The answer invents a source {see below}. {"score": 2, "red_flag": true, '
    '"rationale": "Erfundene Quelle.", "red_flags_hit": ["erfindet Quelle"]} Done.'
)
TRAILING_COMMAS = (
    '{"score": 3, "red_flag": false, "rationale": "gut, aber {knapp},}", '
    '"green_flags_hit": ["konkret", "freundlich",],}'
)
TRUNCATED = '{"score": 4, "red_flag": false, "rationale": "Die Antwort ist'
REFUSAL = "I'm sorry, but I can't help with evaluating this content."


@pytest.mark.parametrize(
    ("raw", "status", "score"),
    [
        (FENCED, "scored", 4),
        (AFTER_PROSE, "scored", 2),
        ("4/5", "scored", 4),
        ("7/20", "judge_error", None),
        ("85", "judge_error", None),
        ("3", "scored", 3),
        (TRAILING_COMMAS, "scored", 3),
        (REFUSAL, "judge_error", None),
        (TRUNCATED, "judge_error", None),
    ],
    ids=["fenced", "after-prose", "4/5", "7/20", "85", "3", "trailing-commas", "refusal", "trunc"],
)
def test_parse_cases(raw: str, status: str, score: int | None) -> None:
    result = parse_answer_reply(raw)
    assert result.status == status
    assert (result.score if isinstance(result, ParsedVerdict) else None) == score


def test_fenced_json_fields() -> None:
    assert parse_answer_reply(FENCED) == ParsedVerdict(
        score=4, red_flag=False, rationale="Klar und korrekt.", red_flags_hit=[], green_flags_hit=[]
    )


def test_json_after_prose_fields() -> None:
    result = parse_answer_reply(AFTER_PROSE)
    assert isinstance(result, ParsedVerdict)
    assert (result.red_flag, result.red_flags_hit) == (True, ["erfindet Quelle"])


def test_trailing_commas_keep_string_contents() -> None:
    result = parse_answer_reply(TRAILING_COMMAS)
    assert isinstance(result, ParsedVerdict)
    assert result.rationale == "gut, aber {knapp},}"
    assert result.green_flags_hit == ["konkret", "freundlich"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("7/20", "score '7/20': denominator must be 5"),
        ("85", "score 85 out of range 1..5"),
        ("0", "score 0 out of range 1..5"),
        ("6", "score 6 out of range 1..5"),
        ('{"score": 85, "red_flag": false, "rationale": ""}', "score 85 out of range 1..5"),
        ('{"score": 0}', "score 0 out of range 1..5"),
        ('{"score": "7/20"}', "score '7/20': denominator must be 5"),
        ('{"score": 3.5}', "score 3.5 is not an integer"),
        ('{"score": true}', "score True is not a number"),
        ('{"score": "gut"}', "score 'gut' is not a number"),
        ('{"red_flag": true, "rationale": "schlecht"}', "missing 'score'"),
        ('{"score": 3, "red_flag": "maybe"}', "red_flag 'maybe' is not a boolean"),
        (TRUNCATED, "truncated JSON (an object is opened but never closed)"),
        (REFUSAL, "refusal: the judge declined to score"),
        ("Es tut mir leid, das kann ich nicht bewerten.", "refusal: the judge declined to score"),
        ("The answer is pretty good overall.", "no JSON object"),
        ("", "empty reply"),
    ],
)
def test_rejections_name_the_reason(raw: str, reason: str) -> None:
    assert parse_answer_reply(raw) == ParseFailure(reason)


def test_numeric_reply_defaults() -> None:
    assert parse_answer_reply(" 3 ") == ParsedVerdict(score=3)
    assert parse_answer_reply("Score: 5/5") == ParsedVerdict(score=5)
    result = parse_answer_reply("3")
    assert isinstance(result, ParsedVerdict)
    assert (result.red_flag, result.rationale, result.red_flags_hit, result.green_flags_hit) == (
        False,
        "",
        [],
        [],
    )


def test_missing_optional_keys_are_empty_and_red_flag_false() -> None:
    assert parse_answer_reply('{"score": 2, "rationale": "dünn"}') == ParsedVerdict(
        score=2, red_flag=False, rationale="dünn"
    )


@pytest.mark.parametrize(
    ("raw", "score"),
    [
        ('{"score": "4"}', 4),
        ('{"score": "4/5"}', 4),
        ('{"score": 4.0}', 4),
        ('{"Score": 1, "Red_Flag": "true"}', 1),
        ('<think>Hmm {"score": 1}</think>\n{"score": 5, "red_flag": false}', 5),
        ('```\n{"score": 2}\n```', 2),
    ],
)
def test_tolerated_forms(raw: str, score: int) -> None:
    result = parse_answer_reply(raw)
    assert isinstance(result, ParsedVerdict) and result.score == score


def test_parse_score_is_strict() -> None:
    assert parse_score("2/5") == 2
    with pytest.raises(ValueError, match="out of range"):
        parse_score(6)


# --- holistic ------------------------------------------------------------------------------

DIMS = ["Q1", "Q6"]
IDS = ["A1", "A2", "B1", "B2"]


def test_holistic_full_reply_with_cited_ids_from_rationale() -> None:
    raw = '{"Q1": {"score": 4, "rationale": "Stark bei [A1] und B2, schwach bei A2."}, "Q6": 3}'
    result = parse_holistic_reply(raw, DIMS, IDS)
    assert isinstance(result, ParsedHolistic)
    assert result.dim_scores == {"Q1": 4, "Q6": 3}
    assert result.cited_prompts == {"Q1": ["A1", "B2", "A2"], "Q6": []}
    assert result.status == "ok"
    assert result.missing == {}


def test_holistic_missing_dimension_is_degraded_never_zero() -> None:
    result = parse_holistic_reply('{"Q1": {"score": 5, "rationale": "[B1] gut"}}', DIMS, IDS)
    assert isinstance(result, ParsedHolistic)
    assert result.dim_scores == {"Q1": 5}
    assert result.missing == {"Q6": "missing"}
    assert result.status == "degraded"
    report = result.to_report(model="m", variant="baseline", judge="j1")
    assert report.status == "degraded" and "Q6" not in report.dim_scores


def test_holistic_invalid_dimension_score_is_missing_with_reason() -> None:
    result = parse_holistic_reply('{"Q1": {"score": 9}, "Q6": {"score": 2}}', DIMS, IDS)
    assert isinstance(result, ParsedHolistic)
    assert result.missing == {"Q1": "score 9 out of range 1..5"}
    assert result.dim_scores == {"Q6": 2}


def test_holistic_given_cited_prompts_are_kept_when_known() -> None:
    raw = (
        '{"Q1": {"score": 4, "rationale": "siehe [A1]", "cited_prompts": ["B1", "klar"]},'
        ' "Q6": {"score": 2, "rationale": "[B1]", "cited_prompts": ["nix"]}}'
    )
    result = parse_holistic_reply(raw, DIMS, IDS)
    assert isinstance(result, ParsedHolistic)
    assert result.cited_prompts == {"Q1": ["B1"], "Q6": ["B1"]}


def test_holistic_without_any_dimension_is_a_failure() -> None:
    assert parse_holistic_reply('{"score": 4}', DIMS, IDS) == ParseFailure(
        "no dimension scored: Q1: missing; Q6: missing"
    )
    assert parse_holistic_reply("Ich kann das nicht bewerten.", DIMS) == ParseFailure(
        "refusal: the judge declined to score"
    )


def test_extract_prompt_ids() -> None:
    text = "Q6 sinkt wegen [E1] und E4; A10 ist nicht A1, siehe [B3]."
    assert extract_prompt_ids(text) == ["E1", "B3"]  # without known ids: brackets only
    assert extract_prompt_ids(text, ["A1", "E1", "E4", "B3"]) == ["E1", "E4", "A1", "B3"]


# --- properties ------------------------------------------------------------------------------


@given(st.text(max_size=300))
def test_any_text_parses_or_fails_without_raising(raw: str) -> None:
    result = parse_answer_reply(raw)
    assert isinstance(result, ParsedVerdict | ParseFailure)
    if isinstance(result, ParsedVerdict):
        assert 1 <= result.score <= 5


@given(
    score=st.integers(min_value=-10, max_value=100),
    red_flag=st.booleans(),
    rationale=st.text(max_size=80),
    prose=st.text(alphabet=st.characters(exclude_characters="{}`"), max_size=40),
    fenced=st.booleans(),
)
def test_a_wrapped_reply_keeps_its_values(
    score: int, red_flag: bool, rationale: str, prose: str, fenced: bool
) -> None:
    body = json.dumps({"score": score, "red_flag": red_flag, "rationale": rationale})
    raw = f"{prose}\n```json\n{body}\n```" if fenced else f"{prose} {body}"
    result = parse_answer_reply(raw)
    if 1 <= score <= 5:
        assert result == ParsedVerdict(score=score, red_flag=red_flag, rationale=rationale)
    else:
        assert result == ParseFailure(f"score {score} out of range 1..5")
