"""The unjudged report: every judgement removed, a rating task instead."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from report_factories import MODELS, VARIANTS

from touchstone_ray.cli import main
from touchstone_ray.report import write_report

JUDGEMENT_TRACES = (
    "Urteil j1",  # verdict rationales
    "Q1 von j1",  # holistic rationales
    "Red-Flag bei",  # K.-o. reasons
    "j1-model",
    "85.0",  # quality % of the scorecard
    "/5**",  # answer scores
    "Empfehlung",
    "0.610",  # agreement figures
)


@pytest.mark.parametrize("suffix", ["md", "html"])
def test_unjudged_report_contains_no_score(unjudged_bundle: Path, suffix: str) -> None:
    text = (unjudged_bundle / f"rating-task.{suffix}").read_text(encoding="utf-8")
    for trace in JUDGEMENT_TRACES:
        assert trace not in text, trace
    assert "Bewertungsauftrag" in text


def test_unjudged_report_has_a_fill_in_table_per_row(unjudged_bundle: Path) -> None:
    text = (unjudged_bundle / "rating-task.md").read_text(encoding="utf-8")
    for model, _ in MODELS:
        for variant in VARIANTS:
            assert f"#### {model} / {variant}\n" in text
    assert text.count("| Punkte (1–5) | Begründung | zitierte Prompts |") == 4
    assert "= (3·Q1 + 1·Q2) / 20 × 100" in text
    assert "E1" in text and "Q1 Korrektheit ≤ 2" in text
    assert '"score": 1-5' in text
    assert text.count("`m-fast|baseline|A1|1`") == 1, "each answer has a fill-in line"


def test_unjudged_works_without_any_judgements(fresh_bundle: Path) -> None:
    shutil.rmtree(fresh_bundle / "judgements")
    (fresh_bundle / "scorecard.json").unlink()
    written = write_report(fresh_bundle, unjudged=True)
    assert [p.name for p in written] == ["rating-task.md", "rating-task.html"]
    html = written[1].read_text(encoding="utf-8")
    assert html.count("<svg") >= 2  # TTFT and the memory timelines


def test_unjudged_leaves_the_judged_report_alone(judged_bundle: Path) -> None:
    before = (judged_bundle / "report.md").read_bytes()
    written = write_report(judged_bundle, unjudged=True)
    assert [p.name for p in written] == ["rating-task.md", "rating-task.html"]
    assert (judged_bundle / "report.md").read_bytes() == before
    assert "Bewertungsauftrag" in written[0].read_text(encoding="utf-8")
    assert "Bewertungsauftrag" not in before.decode("utf-8")


def test_judged_report_without_scorecard_is_a_one_line_error(
    fresh_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh_bundle / "scorecard.json").unlink()
    assert main(["report", "--bundle", str(fresh_bundle)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--unjudged" in err and "judge" in err
