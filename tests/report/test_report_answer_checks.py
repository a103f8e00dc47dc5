"""The judge-free checks in the report and the result page (SPEC §3 ``checks``, §7
``checks``): the ranking's checks column, the K.-o. reason naming a failed ``knock_out`` check,
the per-row check table, each prompt's checks and each answer's outcomes beside its verdicts,
in the judged and the unjudged report; nothing of it where no answer had a check."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from report_factories import JUDGES, PACK, _reports, _verdicts, make_bundle

from touchstone_ray.bundle import Bundle
from touchstone_ray.report import load_report_data, write_report
from touchstone_ray.scoring.scorecard import build_scorecard, write_scorecard
from touchstone_ray.ui.result import filter_answers, result_html

A1_CHECKS = [
    {"id": "kurz", "type": "max_words", "value": 50},
    {"id": "json", "type": "json_schema", "value": {"type": "object"}},
]
E1_CHECKS = [{"id": "wahr", "type": "not_contains", "value": "2023", "knock_out": True}]
NOT_JSON = "the answer is not JSON and has no fenced block"
OUTCOMES: dict[str, list[dict[str, Any]]] = {
    "m-fast|baseline|A1|1": [
        {"id": "kurz", "type": "max_words", "ok": True, "detail": ""},
        {"id": "json", "type": "json_schema", "ok": False, "detail": NOT_JSON},
    ],
    "m-fast|none|A1|1": [
        {"id": "kurz", "type": "max_words", "ok": False, "detail": "61 words > 50"},
        {"id": "json", "type": "json_schema", "ok": False, "detail": NOT_JSON},
    ],
    "m-fast|none|E1|1": [
        {"id": "wahr", "type": "not_contains", "ok": False, "detail": "'2023' found: …2023 …"}
    ],
    "m-slow|none|E1|1": [
        {"id": "wahr", "type": "not_contains", "ok": None, "detail": "no answer text"}
    ],
}


def add_checks(root: Path) -> None:
    """Give the fixture pack checks (A1 two, E1 a knock_out one), its records their outcomes
    (:data:`OUTCOMES`, ``[]`` elsewhere) and the bundle a scorecard built from them."""
    pack = copy.deepcopy(PACK)
    pack["categories"][0]["prompts"][0]["checks"] = A1_CHECKS
    pack["categories"][1]["prompts"][0]["checks"] = E1_CHECKS
    text = yaml.safe_dump(pack, allow_unicode=True, sort_keys=False)
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    manifest["pack"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (root / "bundle.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    for shard in (root / "responses").glob("*.jsonl"):
        lines = []
        for line in shard.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            record["checks"] = OUTCOMES.get(record["key"], [])
            lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        shard.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bundle = Bundle.open(root)
    responses = list(load_report_data(root, judged=False).responses)
    card = build_scorecard(
        bundle.pack(),
        responses,
        _verdicts(responses),
        _reports(),
        judges=list(JUDGES),
        vote="any",
        simulated=False,
    )
    write_scorecard(root, card)


def section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


CHECK_TABLE = [
    "| Modell | Variante | Antworten | Checks | ✓ | ✗ | nicht gemessen | Nicht bestandene Checks |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    "| `m-fast` | baseline | 1 | 2 | 1 | 1 | 0 | A1/json |",
    "| `m-slow` | none | 1 | 1 | 0 | 0 | 1 | – |",
    "| `m-fast` | none | 2 | 3 | 0 | 3 | 0 | A1/kurz, A1/json, E1/wahr |",
]
ANSWER_LINES = [
    r"**Checks:** ✓ kurz · ✗ json (json\_schema): the answer is not JSON and has no fenced block",
    r"**Checks:** ✗ kurz (max\_words): 61 words &gt; 50 · ✗ json (json\_schema): the answer is "
    "not JSON and has no fenced block",
    r"**Checks:** – wahr \[K.-o.\] (not\_contains) nicht gemessen: no answer text",
    r"**Checks:** ✗ wahr \[K.-o.\] (not\_contains): '2023' found: …2023 …",
]


def test_the_judged_report_shows_the_checks_and_the_knock_out(fresh_bundle: Path) -> None:
    add_checks(fresh_bundle)
    write_report(fresh_bundle, "md")
    text = (fresh_bundle / "report.md").read_text(encoding="utf-8")
    # the ranking: failed/all check outcomes after the red flags; the check knocks out
    # m-fast / none (no judge raised a red flag on its E1)
    assert table(section(text, "**Empfehlung:**", "## Methode")) == [
        r"| \# | Modell | Variante | Qualität % | Stufe | K.-o. | Red Flags | Checks ✗/alle "
        "| Ø Antwort | TTFT p50 s | Decode tok/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        "| 1 | m-fast | baseline | 80.0 | solide | bestanden | – | 1/2 | 4.00 | 0.060 | 220.0 |",
        "| 2 | m-slow | none | 52.5 | teilweise | bestanden | – | 0/1 | 3.00 | 0.160 | 160.0 |",
        "| 3 | m-fast | none | 82.5 | solide | nicht bestanden: check E1/wahr failed "
        r"| [[#E1 · Fehlende Angabe\|E1]] | 3/3 | 4.33 | 0.055 | 230.0 |",
        "| 4 | m-slow | baseline | 50.0 | teilweise | nicht bestanden: Red-Flag bei E1 "
        r"| [[#E1 · Fehlende Angabe\|E1]] | – | 3.00 | 0.165 | 153.3 |",
    ]
    assert (
        "1. Red-Flag-Zweig (Geltungsbereich curated): nur eine Red Flag auf einem der Prompts E1 "
        "führt zum K.-o.; andere Red Flags kosten nur Punkte. Ebenso ein nicht bestandener "
        r"knock\_out-Check (E1/wahr)." in text
    )
    assert table(section(text, "### Checks\n", "### Stabilität")) == CHECK_TABLE
    # each prompt lists its checks, each answer its outcomes (after its verdicts)
    assert [line for line in text.splitlines() if line.startswith("**Checks:** ")] == [
        r"**Checks:** kurz: max\_words 50 · json: json\_schema",
        *ANSWER_LINES[:2],
        r"**Checks:** wahr: not\_contains '2023' \[K.-o.\]",
        *ANSWER_LINES[2:],
    ]
    first = section(text, "**m-fast / baseline \\#1**", "TTFT ")
    assert first.index("`j2` **4/5**") < first.index(ANSWER_LINES[0])
    scorecard_md = (fresh_bundle / "scorecard.md").read_text(encoding="utf-8")
    assert "| Red Flags | Checks ✗/alle | Ø Antwort |" in scorecard_md
    assert "| nicht bestanden: check E1/wahr failed | E1 | 3/3 |" in scorecard_md


def test_the_unjudged_report_shows_them_too(fresh_bundle: Path) -> None:
    add_checks(fresh_bundle)
    write_report(fresh_bundle, "md", unjudged=True)
    text = (fresh_bundle / "rating-task.md").read_text(encoding="utf-8")
    # rows in matrix order (no ranking without a judge)
    rows = [*CHECK_TABLE[:3], CHECK_TABLE[4], CHECK_TABLE[3]]
    assert table(section(text, "### Checks\n", "### Stabilität")) == rows
    shown = [line for line in text.splitlines() if line in ANSWER_LINES]
    assert shown == [ANSWER_LINES[i] for i in (0, 1, 3, 2)]


def test_no_check_no_column_table_or_line(judged_bundle: Path) -> None:
    assert "Checks" not in (judged_bundle / "report.md").read_text(encoding="utf-8")


def test_the_result_page_filters_answers_with_a_failed_check(fresh_bundle: Path) -> None:
    add_checks(fresh_bundle)
    data = load_report_data(fresh_bundle, judged=True)
    assert [r.key for r in filter_answers(data, {"check_failed": "1"})] == [
        "m-fast|baseline|A1|1",
        "m-fast|none|A1|1",
        "m-fast|none|E1|1",
    ]
    assert len(filter_answers(data, {})) == 12


def test_the_result_page_shows_the_outcomes_and_offers_the_filter(fresh_bundle: Path) -> None:
    add_checks(fresh_bundle)
    _, html = result_html(fresh_bundle, {"check_failed": "1"}, "/runs/x")
    assert '<input type="checkbox" name="check_failed" value="1" checked> ' in html
    assert "Check nicht bestanden</label>" in html
    answers = html.split('<div id="answer-list">', 1)[1]
    assert answers.count("<strong>Checks: </strong>") == 3
    assert "✗ wahr [K.-o.] (not_contains): &#x27;2023&#x27; found: …2023 …" in answers
    _, plain = result_html(make_bundle(fresh_bundle.parent / "plain"), {}, "/runs/y")
    assert 'name="check_failed"' not in plain
