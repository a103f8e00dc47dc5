"""The tools report: ``report --bundle`` on a tools bundle writes summary.json, report.md (with
its chart) and report.html, in the pack's language, with the exact per-model and per-item
tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tools_bundles import mini_pack, record, standard_records, turn, write_tools_bundle

from touchstone_ray.cli import main
from touchstone_ray.report.tools import tools_document, tools_head_tips, write_tools_report
from touchstone_ray.tool_records import WorldReply

MODEL_TABLE = [
    "| Model | Host | passed | pass % | 95 % CI | checks ok/failed/n.m. | length cut-offs | "
    "empty args | schema errors | transport errors | 4xx | missing | completion tok/cell | "
    "completion tok Σ | reasoning tok/cell | reasoning tok Σ | run time Σ s | wall s | "
    "turns/cell | decode tok/s |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
    "| --- | --- | --- | --- | --- |",
    "| alpha | h1 | 3/4 | 75.0 | \\[30.1, 95.4\\] | 7/1/1 | 0 | 0 | 0 | 0 | 0 | 0 | 27.5 | 97 "
    "| 5.0 | 5 | 10.00 | 10.00 | 2.0 | 15.6 |",
    "| beta | h2 | 0/2 | 0.0 | \\[0.0, 65.8\\] | 1/3/0 | 1 | 1 | 1 | 2 | 1 | 0 | 38.0 | 76 | – "
    "| – | 8.10 | 9.00 | 1.5 | 5.6 |",
]
ITEM_MATRIX = [
    "| Item | Title | alpha | beta |",
    "| --- | --- | --- | --- |",
    "| `weather` | Weather in Berlin | 1/2 | ✗ |",
    "| `chat` | No tool needed | ✓ | ✗ |",
    "| `notes` | Read the notes | ✓ | – |",
]
ITEM_DETAIL = [
    "| Item | Model | pass | checks ok | finish reasons | calls per turn | failed checks | "
    "not measured |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    "| `weather` | alpha | 1/2 | 5/6 | stop 2, tool\\_calls 2 | \\[1, 0\\] \\[1, 0\\] | city | – |",
    "| `weather` | beta | ✗ | 1/3 | length 1 | \\[1\\] | schema, city | – |",
    "| `chat` | alpha | ✓ | 1/1 | stop 1 | \\[0\\] | – | – |",
    "| `chat` | beta | ✗ | 0/1 | stop 1, tool\\_calls 1 | \\[1, 0\\] | none | – |",
    "| `notes` | alpha | ✓ | 1/1 | stop 1, tool\\_calls 1 | \\[1, 0\\] | – | code |",
    "| `notes` | beta | – | 0/0 | – | – | – | – |",
]


def block_at(text: str, first: str, n: int) -> list[str]:
    """The ``n`` lines of ``text`` from the line that starts with ``first``."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(first))
    return lines[at : at + n]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_tools_bundle(tmp_path / "b", standard_records())


def test_report_files_and_their_tables(bundle: Path) -> None:
    written = write_tools_report(bundle)
    assert written == [bundle / "summary.json", bundle / "report.md", bundle / "report.html"]
    assert (bundle / "report-charts" / "pass-speed.svg").read_text().startswith("<svg")
    md = (bundle / "report.md").read_text(encoding="utf-8")
    assert "# Tools report · Mini tools" in md
    assert block_at(md, "| Model | Host |", 4) == MODEL_TABLE
    assert block_at(md, "| Item | Title |", 5) == ITEM_MATRIX
    assert block_at(md, "| Item | Model |", 8) == ITEM_DETAIL
    assert "![Pass rate vs speed](report-charts/pass-speed.svg)" in md
    assert "> [!failure]- weather · beta #2 –" in md.replace("\\#", "#")
    assert "> > http\\_4xx: http\\_4xx: failed" in md
    assert "**Turn 1** · finish tool\\_calls · 20 (of them 5 reasoning) tokens" in md
    html = (bundle / "report.html").read_text(encoding="utf-8")
    for css_id in ("tools-models", "tools-items", "tools-item-detail"):
        assert f'id="{css_id}"' in html
    assert '<figure id="chart-pass-speed">' in html
    assert json.loads((bundle / "summary.json").read_text())["models"][0]["passed"] == 3


def test_the_report_speaks_the_packs_language(tmp_path: Path) -> None:
    pack = mini_pack(language="de")
    root = write_tools_bundle(tmp_path / "de", standard_records(pack), pack=pack)
    doc = tools_document(root, cells=False)
    assert (doc.title, doc.lang) == ("Werkzeug-Bericht · Mini tools", "de")
    write_tools_report(root, ["md"])
    md = (root / "report.md").read_text(encoding="utf-8")
    assert md.count("| Modell | Host | bestanden | bestanden % | 95-%-KI |") == 1
    assert "## Je Aufgabe" in md
    assert not (root / "report.html").exists()


def test_head_tips_define_each_figure() -> None:
    tips = tools_head_tips("en")
    assert tips["pass %"] == "passed / scored × 100 (%)."
    assert tips["95 % CI"] == "Wilson's 95 % score interval of the pass share (%)."
    assert tools_head_tips("de")["Schemafehler"] == (
        "Fehlgeschlagene schema_valid-Prüfungen (Prüfungen)."
    )


def test_a_long_world_reply_is_cut(tmp_path: Path) -> None:
    reply = WorldReply(tool_call_id="c0", name="read", content="x" * 2500, source="file")
    t1 = turn("", [("read", {"path": "notes.txt"})], "tool_calls", 5)
    t1 = t1.model_copy(update={"world_replies": [reply]})
    cell = record("alpha", "notes", 1, [("read", "calls", True)], [t1, turn("42")])
    root = write_tools_bundle(tmp_path / "b", [cell])
    write_tools_report(root, ["md"])
    md = (root / "report.md").read_text(encoding="utf-8")
    assert f"> > read (file): {'x' * 2000}\n> > … (2500 characters in all)" in md


def test_report_and_rebuild_dispatch_to_tools_bundles(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--bundle", str(bundle)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        str(bundle / "summary.json"),
        str(bundle / "report.md"),
        str(bundle / "report.html"),
    ]
    assert main(["report", "--bundle", str(bundle), "--unjudged"]) == 2
    assert capsys.readouterr().err == (
        "error: --unjudged: a tools bundle has no judgements; leave it out\n"
    )
    assert main(["report", "--runs", str(tmp_path), "--format", "md"]) == 0
    assert capsys.readouterr().out == f"{bundle}: summary.json, report.md\n"
