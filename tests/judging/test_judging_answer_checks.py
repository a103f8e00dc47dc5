"""Judge-free checks in the K.-o. rule (SPEC §3 ``checks``, §10 ``passes_ko``): a failed
``knock_out`` check counts as a red flag of its prompt under the pack's ``red_flag_scope``,
names itself in ``ko_reason``, and needs no verdict; the scorecard counts every row's checks.
Hand-made records, no Ray."""

from __future__ import annotations

from typing import Any

import pytest
from judging_factories import pack_dict, response, verdict

from touchstone_ray.bundle import StoredReport
from touchstone_ray.pack import Pack, pack_from_data
from touchstone_ray.records import CheckOutcome, HolisticReport
from touchstone_ray.scoring import (
    CheckTally,
    MissingDimensionsError,
    check_tally,
    knock_out_failures,
    passes_ko,
)
from touchstone_ray.scoring.ingest import rater_agreement
from touchstone_ray.scoring.scorecard import build_scorecard

GOOD = {"Q1": 4.0, "Q6": 4.0}
"""Dimension scores above the K.-o. floor (Q6 ≤ 2)."""


def checked_pack(scope: str) -> Pack:
    """:func:`pack_dict` (B1 curated) with checks: B1 ``wahr`` (knock_out) and ``kurz``;
    under ``all`` also A2 ``format`` (knock_out) and ``json`` (knock_out) on A2, a prompt
    outside ``red_flag_prompts``."""
    data = pack_dict(scope=scope)
    prompts = {p["id"]: p for c in data["categories"] for p in c["prompts"]}
    prompts["B1"]["checks"] = [
        {"id": "wahr", "type": "not_contains", "value": "erfunden", "knock_out": True},
        {"id": "kurz", "type": "max_words", "value": 3},
    ]
    if scope == "all":
        prompts["A2"]["checks"] = [
            {"id": "format", "type": "regex", "value": "^Betreff: ", "knock_out": True},
            {"id": "json", "type": "json_schema", "value": {"type": "object"}, "knock_out": True},
        ]
    return pack_from_data(data, "test")


# --- passes_ko -------------------------------------------------------------------------------


def test_all_scope_a_failed_knock_out_check_knocks_out_on_any_prompt() -> None:
    pack = checked_pack("all")
    assert passes_ko(GOOD, [], pack, [("A2", "format")]) == (False, "check A2/format failed")
    # curated prompts first (as for red flags), then the others, each sorted
    failed = [("A2", "json"), ("B1", "wahr"), ("A2", "format")]
    assert passes_ko(GOOD, [], pack, failed) == (
        False,
        "checks B1/wahr, A2/format, A2/json failed",
    )


def test_both_branches_are_named_red_flags_first() -> None:
    pack = checked_pack("all")
    assert passes_ko(GOOD, ["A1", "B1"], pack, [("A2", "format")]) == (
        False,
        "Red-Flag bei B1, A1; check A2/format failed",
    )


def test_curated_scope_a_failed_knock_out_check_on_a_curated_prompt_knocks_out() -> None:
    pack = checked_pack("curated")
    assert passes_ko(GOOD, [], pack, [("B1", "wahr")]) == (False, "check B1/wahr failed")
    assert passes_ko(GOOD, ["B1"], pack, [("B1", "wahr")]) == (
        False,
        "Red-Flag bei B1; check B1/wahr failed",
    )


@pytest.mark.parametrize("scope", ["all", "curated"])
def test_checks_without_knock_out_or_unknown_to_the_pack_do_not_count(scope: str) -> None:
    pack = checked_pack(scope)
    failed = [("B1", "kurz"), ("B2", "wahr"), ("X9", "wahr")]
    assert passes_ko(GOOD, [], pack, failed) == (True, "")
    assert knock_out_failures(failed, pack) == []
    # the floor still applies after them
    assert passes_ko({"Q1": 5.0, "Q6": 2.0}, [], pack, failed) == (False, "Q6 ≤ 2")


def test_a_fatal_check_needs_no_dimension_scores() -> None:
    pack = checked_pack("curated")
    assert passes_ko({}, [], pack, [("B1", "wahr")]) == (False, "check B1/wahr failed")
    with pytest.raises(MissingDimensionsError):
        passes_ko({}, [], pack, [("B1", "kurz")])


def test_passes_ko_without_checks_is_seed_000() -> None:
    pack = checked_pack("all")
    assert passes_ko(GOOD, ["A1"], pack) == (False, "Red-Flag bei A1")
    assert passes_ko(GOOD, [], pack) == (True, "")


# --- the scorecard ---------------------------------------------------------------------------


def outcome(check_id: str, ok: bool | None, check_type: str = "max_words") -> dict[str, Any]:
    detail = "" if ok else ("failed" if ok is False else "could not run")
    return CheckOutcome(id=check_id, type=check_type, ok=ok, detail=detail).model_dump()


def reports(*models: str) -> list[HolisticReport]:
    return [
        HolisticReport(model=m, variant="baseline", judge="j1", dim_scores={"Q1": 5, "Q6": 4})
        for m in models
    ]


@pytest.mark.parametrize("scope", ["all", "curated"])
def test_the_row_fails_ko_from_a_check_without_any_verdict(scope: str) -> None:
    pack = checked_pack(scope)
    responses = [
        # "bad": B1's first repeat fails the knock-out check; nobody judged B1 at all
        response("A1", model="bad"),
        response("B1", model="bad", checks=[outcome("wahr", False), outcome("kurz", True)]),
        response(
            "B1", model="bad", repeat=2, checks=[outcome("wahr", True), outcome("kurz", None)]
        ),
        # "ok": only the check without knock_out fails, and one cannot run
        response("A1", model="ok"),
        response("B1", model="ok", checks=[outcome("wahr", True), outcome("kurz", False)]),
        response(
            "B1", model="ok", repeat=2, checks=[outcome("wahr", None), outcome("kurz", False)]
        ),
    ]
    verdicts = [verdict("A1", 4, model="bad"), verdict("A1", 4, model="ok")]
    card = build_scorecard(
        pack, responses, verdicts, reports("bad", "ok"), judges=["j1"], vote="any", simulated=True
    )
    rows = {r.model: r for r in card.rows}
    bad, ok = rows["bad"], rows["ok"]
    assert (bad.ko_passed, bad.ko_reason, bad.red_flagged) == (
        False,
        "check B1/wahr failed",
        ["B1"],
    )
    assert (bad.n_checks, bad.n_checks_failed, bad.n_checks_not_measured) == (4, 1, 1)
    assert bad.checks_failed == ["B1/wahr"]
    assert (ok.ko_passed, ok.ko_reason, ok.red_flagged) == (True, "", [])
    assert (ok.n_checks, ok.n_checks_failed, ok.n_checks_not_measured) == (4, 2, 1)
    assert ok.checks_failed == ["B1/kurz"]
    assert [(r.model, r.rank) for r in card.rows] == [("ok", 1), ("bad", 2)]
    # each judge's own view knocks the row out too (judge-free: it is not the judge's call)
    views = {d.model: d.judges["j1"] for d in card.details}
    assert (views["bad"].ko_passed, views["bad"].ko_reason) == (False, "check B1/wahr failed")
    assert views["bad"].red_flagged == ["B1"]


def test_all_scope_a_check_on_a_prompt_outside_the_curated_list_knocks_out() -> None:
    pack = checked_pack("all")
    responses = [
        response("A2", checks=[outcome("format", False, "regex"), outcome("json", True)]),
        response("B1", checks=[outcome("wahr", True), outcome("kurz", True)]),
    ]
    verdicts = [verdict("B1", 5, red_flag=True)]  # the judge's own red flag on B1 as well
    card = build_scorecard(
        pack, responses, verdicts, reports("m"), judges=["j1"], vote="any", simulated=True
    )
    row = card.rows[0]
    assert (row.ko_passed, row.ko_reason) == (False, "Red-Flag bei B1; check A2/format failed")
    assert row.red_flagged == ["A2", "B1"]


def test_records_before_the_field_have_no_checks() -> None:
    pack = checked_pack("curated")
    card = build_scorecard(
        pack, [response("B1")], [], reports("m"), judges=["j1"], vote="any", simulated=True
    )
    row = card.rows[0]
    assert (row.ko_passed, row.n_checks, row.n_checks_failed, row.checks_failed) == (
        True,
        0,
        0,
        [],
    )
    assert check_tally([response("B1")]) == CheckTally(0, 0, 0, ())


def test_an_outside_raters_ko_counts_the_failed_checks() -> None:
    pack = checked_pack("curated")
    responses = [response("B1", checks=[outcome("wahr", False), outcome("kurz", True)])]
    card = build_scorecard(
        pack, responses, [], reports("m"), judges=["j1"], vote="any", simulated=True
    )
    rater = StoredReport(
        model="m",
        variant="baseline",
        judge="outside",
        dim_scores={"Q1": 5, "Q6": 5},
        red_flagged=[],
        source="ingest",
    )
    # the rater raised no red flag and scored high, yet the check knocks its view out too
    assert rater_agreement(pack, [rater], card)["j1"]["ko_concordance"] == 1.0
