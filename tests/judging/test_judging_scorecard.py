"""build_scorecard and its renderings, from hand-made records (no Ray): latency aggregates,
resources, missing dimensions, ranking, votes, labels per language."""

from __future__ import annotations

from pathlib import Path

import pytest
from judging_factories import make_pack, response, verdict

from touchstone_ray.errors import BundleError
from touchstone_ray.records import HolisticReport
from touchstone_ray.scoring.render import ranking_table, render_markdown
from touchstone_ray.scoring.scorecard import build_scorecard, load_scorecard, write_scorecard

CONTRACT_ROW = [
    "rank",
    "model",
    "variant",
    "quality_pct",
    "rubric_level",
    "ko_passed",
    "ko_reason",
    "red_flagged",
    "dim_scores",
    "mean_answer_score",
    "n_scored",
    "n_unscored",
    "n_judge_errors",
    "ttft_p50_s",
    "ttft_p95_s",
    "decode_tps_median",
    "e2e_p50_s",
    "peak_ram_mb",
    "model_delta_mb",
    "ttft_cold_p50_s",
    "n_cached",
    "concurrency",
    "engine_rss_peak_mb",
    "n_contended",
    "repeat_stability_pct",
    "n_repeat_prompts",
    "distinct_answers",
    "n_checks",
    "n_checks_failed",
    "n_checks_not_measured",
    "checks_failed",
]


def report(model: str, judge: str, **scores: int) -> HolisticReport:
    return HolisticReport(model=model, variant="baseline", judge=judge, dim_scores=scores)


def test_rows_latency_resources_and_missing_dimensions(tmp_path: Path) -> None:
    pack = make_pack()
    timed = [0.1, 0.2, 0.3, 0.4]
    responses = [
        response("A1", model="a", ttft_s=timed[0], e2e_s=1.0, decode_tps=10.0, sys_used_mb=500.0),
        response("A2", model="a", ttft_s=timed[1], e2e_s=2.0, decode_tps=30.0),
        response("B1", model="a", ttft_s=timed[2], e2e_s=3.0, decode_tps=20.0),
        response("B1", model="a", repeat=2, ttft_s=timed[3], e2e_s=4.0, sys_used_delta_mb=7.0),
        response("B2", model="a", ttft_s=9.0, e2e_s=9.0, is_cold_start=True, sys_used_mb=900.0),
        response("A1", model="b", ok=False, ttft_s=5.0, response_text=""),
        response("A2", model="b", ttft_s=0.5, e2e_s=0.5),
    ]
    verdicts = [
        verdict("A1", 5, model="a", judge="j1"),
        verdict("A1", 3, model="a", judge="j2"),
        verdict("B1", 4, model="a", judge="j1", red_flag=True),
        verdict("B1", 4, model="a", judge="j2", red_flag=False),
        verdict("A2", None, model="a", judge="j1", status="judge_error"),
        verdict("A1", None, model="b", judge="j1", status="unscored_generation_failed"),
        verdict("A2", 2, model="b", judge="j1", red_flag=True),
    ]
    reports = [
        report("a", "j1", Q1=5, Q6=4),
        report("a", "j2", Q1=4, Q6=3),
        report("b", "j1", Q1=2),  # Q6 missing: not 0, not ranked as if scored
    ]
    scorecard = build_scorecard(
        pack, responses, verdicts, reports, judges=["j1", "j2"], vote="majority", simulated=False
    )
    card = scorecard.model_dump(mode="json")
    assert list(card)[:7] == [
        "schema_version",
        "pack_id",
        "pack_version",
        "judges",
        "simulated",
        "rows",
        "agreement",
    ]
    a, b = card["rows"]
    assert list(a) == CONTRACT_ROW
    assert (a["model"], a["rank"], b["rank"]) == ("a", 1, 2)
    assert a["dim_scores"] == {"Q1": 4.5, "Q6": 3.5}
    assert a["quality_pct"] == pytest.approx((4.5 * 3 + 3.5 * 3) / 30 * 100)
    assert a["rubric_level"] == "solide" and a["ko_passed"] and a["red_flagged"] == []
    assert a["mean_answer_score"] == 4.0
    assert (a["n_scored"], a["n_unscored"], a["n_judge_errors"]) == (4, 0, 1)
    assert a["ttft_p50_s"] == pytest.approx(0.25)
    assert a["ttft_p95_s"] == pytest.approx(0.3 + 0.85 * 0.1)  # linear interpolation
    assert a["e2e_p50_s"] == pytest.approx(2.5) and a["decode_tps_median"] == 20.0
    assert (a["peak_ram_mb"], a["model_delta_mb"]) == (900.0, 7.0)
    assert b["quality_pct"] is None and b["rubric_level"] is None
    assert (b["ko_passed"], b["ko_reason"]) == (False, "Red-Flag bei A2")
    assert b["ttft_p50_s"] == 0.5 and b["peak_ram_mb"] is None and b["model_delta_mb"] is None
    detail_b = card["details"][1]
    assert detail_b["missing_dimensions"] == ["Q6"] and detail_b["n_generation_failed"] == 1
    assert card["details"][0]["judges"]["j1"]["red_flagged"] == ["B1"]

    # with "any" the single B1 flag counts and knocks model a out (B1 is curated)
    anyvote = build_scorecard(
        pack, responses, verdicts, reports, judges=["j1", "j2"], vote="any", simulated=False
    ).model_dump(mode="json")
    row_a = next(r for r in anyvote["rows"] if r["model"] == "a")
    assert (row_a["ko_passed"], row_a["ko_reason"]) == (False, "Red-Flag bei B1")

    path = write_scorecard(tmp_path, scorecard)
    assert load_scorecard(tmp_path) == scorecard and path.name == "scorecard.json"
    md = (tmp_path / "scorecard.md").read_text()
    assert "## Rangliste" in md and "nicht bestanden: Red-Flag bei A2" in md
    assert "Übereinstimmung" in md


def test_english_labels_and_terminal_table() -> None:
    pack = make_pack(language="en")
    scorecard = build_scorecard(
        pack,
        [response("A1", model="a")],
        [verdict("A1", 4, model="a")],
        [report("a", "j1", Q1=5, Q6=5)],
        judges=["j1"],
        vote="majority",
        simulated=True,
    )
    card = scorecard.model_dump(mode="json")
    md = render_markdown(scorecard)
    assert "## Ranking" in md and "| high |" in md and "Simulated" in md
    assert "Judge agreement" not in md  # one judge
    table = ranking_table(scorecard).splitlines()
    assert table[2].split()[:3] == ["#", "Model", "Variant"]
    assert table[4].split()[:5] == ["1", "a", "baseline", "100.0", "high"]
    alpha = card["agreement"]["dimension_alpha"]["Q1"]
    assert alpha["value"] is None and "two judges" in alpha["reason"]


def test_load_scorecard_errors(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="run `touchstone-ray judge"):
        load_scorecard(tmp_path)
    (tmp_path / "scorecard.json").write_text("{")
    with pytest.raises(BundleError, match="not valid JSON"):
        load_scorecard(tmp_path)
