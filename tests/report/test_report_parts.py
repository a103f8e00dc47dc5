"""Charts, labels, aggregates and the scorecard contract, tested on their own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_factories import make_bundle, responses, scorecard

from touchstone_ray.doc import charts
from touchstone_ray.lang import de, en
from touchstone_ray.report import load_report_data, write_report
from touchstone_ray.scoring import row_stats

POINTS = [
    charts.QsPoint("a / x", 80.0, 100.0, 2.0, True),
    charts.QsPoint("b / x", 60.0, 300.0, None, True),
    charts.QsPoint("c / $y$", 50.0, 200.0, 1.0, False),
]


def test_pareto_front_keeps_undominated_points() -> None:
    assert [p.label for p in charts.pareto_front(POINTS)] == ["a / x", "b / x"]


def test_charts_are_deterministic_and_self_contained() -> None:
    labels = {"x": "tok/s", "y": "%", "pareto": "Pareto", "empty": "–"}
    first = charts.quality_speed_svg(POINTS, labels=labels)
    assert first == charts.quality_speed_svg(POINTS, labels=labels)
    assert first.startswith("<svg") and "<metadata" not in first
    assert not re.search(r"(href|src)=\"https?:", first)
    assert re.findall(r'id="([^"]+)"', first)
    assert all(i.startswith("quality-speed-") for i in re.findall(r'id="([^"]+)"', first))
    assert "$y$" in first, "a $ in a label is text, not mathtext"


def test_empty_charts_render() -> None:
    assert charts.forest_svg([], labels={"x": "B − A", "empty": "keine"}).startswith("<svg")
    assert charts.ttft_svg({}, labels={"y": "s", "empty": "keine"}).startswith("<svg")


def test_label_tables_have_the_same_keys() -> None:
    assert set(de.REPORT) == set(en.REPORT)


def test_row_stats_exclude_cold_and_failed_cells() -> None:
    rows = [r for r in responses() if r.model == "m-slow" and r.variant == "baseline"]
    stats = row_stats(rows)
    timed = [r.ttft_s for r in rows if not r.is_cold_start]
    assert stats.n_cold == 1 and stats.n_cells == 3
    assert stats.ttft_p50_s == pytest.approx(sum(timed) / 2)
    fast = row_stats([r for r in responses() if r.model == "m-fast" and r.variant == "none"])
    assert fast.n_failed == 1 and fast.peak_gpu_mem_mb == pytest.approx(20004.0)  # ok cells only
    assert fast.throttled_cells == 0


def test_contract_only_scorecard_renders(tmp_path: Path) -> None:
    root = make_bundle(tmp_path, extras=False)
    md, html = write_report(root)
    text = md.read_text(encoding="utf-8")
    assert "m-slow / baseline" in text
    assert "3.75" in text, "per-category means are computed from the verdicts"
    assert html.read_text(encoding="utf-8").count("<svg") >= 5


def test_scorecard_written_by_the_judging_stage_renders(tmp_path: Path) -> None:
    """The real ``build_scorecard`` output (whatever extra sections it has) renders."""
    scorecard_mod = pytest.importorskip("touchstone_ray.scoring.scorecard")
    root = make_bundle(tmp_path)
    data = load_report_data(root, judged=True)
    verdicts = [v for vs in data.verdicts.values() for v in vs]
    reports = [r for per in data.reports.values() for r in per.values()]
    card = scorecard_mod.build_scorecard(
        data.pack,
        data.responses,
        verdicts,
        reports,
        judges=["j1", "j2"],
        vote="majority",
        simulated=True,
    ).model_dump(mode="json")
    (root / "scorecard.json").write_text(json.dumps(card), encoding="utf-8")
    md, html = write_report(root)
    assert "m-fast" in md.read_text(encoding="utf-8")
    assert html.read_text(encoding="utf-8").count("<svg") >= 5


def test_hand_made_scorecard_has_every_contract_field() -> None:
    contract = {
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
    }
    card = scorecard(extras=False)
    assert set(card) == {
        "schema_version",
        "pack_id",
        "pack_version",
        "judges",
        "simulated",
        "rows",
        "agreement",
    }
    assert all(set(row) == contract for row in card["rows"])


def test_english_pack_gets_english_labels(tmp_path: Path) -> None:
    root = make_bundle(tmp_path, language="en")
    md, _ = write_report(root)
    text = md.read_text(encoding="utf-8")
    assert "## Overview and verdict" in text and "**Recommendation:**" in text
    assert "## Glossary" in text and "Überblick" not in text
    assert "| m-slow | baseline | 45.0 | insufficient | failed: Red-Flag bei E1 |" in text
