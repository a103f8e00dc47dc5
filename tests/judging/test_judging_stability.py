"""Repeat stability (issue 28 item 6): distinct answers per repeated prompt, and the share of
prompts whose repeats agree, per row of the scorecard."""

from __future__ import annotations

from judging_factories import make_pack, response

from touchstone_ray.scoring import build_scorecard, repeat_stability


def test_distinct_answers_count_byte_for_byte_over_ok_repeats() -> None:
    responses = [
        response("A1", repeat=1, response_text="Ja."),
        response("A1", repeat=2, response_text="Ja."),
        response("A1", repeat=3, response_text="Ja. "),  # one space more: another answer
        response("B1", repeat=1, response_text="Nein."),
        response("B1", repeat=2, response_text="Nein."),
        response("B2", repeat=1, response_text="x"),
        response("B2", repeat=2, ok=False, response_text=""),  # failed: not an answer
        response("A2", repeat=1, response_text="einmal"),  # no repeats
    ]
    got = repeat_stability(responses)
    assert got.distinct_answers == {"A1": 2, "B1": 1}
    assert (got.n_prompts, got.n_stable, got.unstable) == (2, 1, {"A1": 2})
    assert got.stability_pct == 50.0
    none = repeat_stability([response("A1"), response("A2")])
    assert (none.n_prompts, none.stability_pct, none.distinct_answers) == (0, None, {})


def test_the_scorecard_row_carries_the_figures_after_the_contract_fields() -> None:
    responses = [
        response("B1", repeat=1, response_text="a"),
        response("B1", repeat=2, response_text="b"),
        response("B1", repeat=1, variant="none", response_text="c"),
        response("B1", repeat=2, variant="none", response_text="c"),
    ]
    card = build_scorecard(
        make_pack(), responses, [], [], judges=[], vote="majority", simulated=True
    )
    rows = {r.variant: r for r in card.rows}
    assert (rows["baseline"].repeat_stability_pct, rows["none"].repeat_stability_pct) == (
        0.0,
        100.0,
    )
    assert rows["baseline"].distinct_answers == {"B1": 2}
    assert rows["none"].n_repeat_prompts == 1
    keys = list(rows["none"].model_dump())
    assert keys[-8:-4] == [
        "n_contended",
        "repeat_stability_pct",
        "n_repeat_prompts",
        "distinct_answers",
    ]
