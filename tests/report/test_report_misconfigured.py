"""A row whose answers mostly show a misconfigured server (``template_leak`` / ``prompt_echo``
on more than half of its ok answers) gets a warning above the ranking and a mark in it, in the
pack's language; a row at exactly half does not."""

from __future__ import annotations

from pathlib import Path

from report_factories import make_bundle, set_answer_flags

from touchstone_ray.report import load_report_data, write_report
from touchstone_ray.report._flags import misconfigured_rows

FLAGS = {
    # m-fast / baseline: 2 of its 3 answers → misconfigured
    "m-fast|baseline|A1|1": ["template_leak", "prompt_echo", "cut_at_limit"],
    "m-fast|baseline|E1|1": ["prompt_echo"],
    # m-fast / none: 1 of its 2 ok answers (E1#2 failed) → exactly half, not "mostly"
    "m-fast|none|A1|1": ["template_leak"],
    # m-slow / baseline: flags that say nothing about the server
    "m-slow|baseline|A1|1": ["cut_at_limit", "repetition_loop"],
    "m-slow|baseline|E1|1": ["wrong_language"],
}


def _flag(root: Path) -> None:
    set_answer_flags(root, FLAGS)


def _overview(root: Path) -> str:
    text = (root / "report.md").read_text(encoding="utf-8")
    return text.split("\n## ", 2)[1]


def test_only_the_mostly_flagged_row_is_misconfigured(fresh_bundle: Path) -> None:
    _flag(fresh_bundle)
    rows = misconfigured_rows(load_report_data(fresh_bundle, judged=True))
    assert rows == {("m-fast", "baseline"): (2, 3)}


def test_the_german_report_warns_above_the_ranking_and_marks_the_row(fresh_bundle: Path) -> None:
    _flag(fresh_bundle)
    write_report(fresh_bundle, "md")
    overview = _overview(fresh_bundle)
    warning = overview.index("> [!warning] Server fehlkonfiguriert")
    assert warning < overview.index("| \\# | Modell |")
    assert (
        "Diese Antworten zeigen eine Fehlkonfiguration des Servers; die Punkte sagen nichts "
        "über das Modell." in overview
    )
    assert (
        "> - `m-fast / baseline`: 2 von 3 Antworten (67 %) mit Chat-Template-Text "
        r"(template\_leak) oder dem wiederholten Prompt (prompt\_echo)" in overview
    )
    ranking = [line for line in overview.splitlines() if line.startswith("| ")]
    marked = [line for line in ranking if "⚠ Server fehlkonfiguriert" in line]
    assert len(marked) == 1 and "| m-fast ⚠ Server fehlkonfiguriert | baseline |" in marked[0]


def test_the_english_report_speaks_english(tmp_path: Path) -> None:
    root = make_bundle(tmp_path, language="en")
    _flag(root)
    write_report(root, "md")
    overview = _overview(root)
    assert "> [!warning] Server misconfigured" in overview
    assert (
        "These answers show a server misconfiguration; the scores say nothing about the "
        "model." in overview
    )
    assert "| m-fast ⚠ server misconfigured | baseline |" in overview


def test_no_misconfigured_row_no_warning(judged_bundle: Path) -> None:
    overview = _overview(judged_bundle)
    assert "fehlkonfiguriert" not in overview and "⚠" not in overview


def test_the_rating_task_warns_and_marks_the_row_too(fresh_bundle: Path) -> None:
    _flag(fresh_bundle)
    write_report(fresh_bundle, "md", unjudged=True)
    text = (fresh_bundle / "rating-task.md").read_text(encoding="utf-8")
    overview = text.split("\n## ", 2)[1]
    assert overview.index("> [!warning] Server fehlkonfiguriert") < overview.index("| Modell |")
    marked = [ln for ln in overview.splitlines() if "⚠ Server fehlkonfiguriert |" in ln]
    assert len(marked) == 1 and marked[0].startswith(
        "| m-fast ⚠ Server fehlkonfiguriert | baseline |"
    )
