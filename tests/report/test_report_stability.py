"""Repeat stability in the report: per row, the prompts with repeats, the stable ones and the
distinct answers of the others, counted from the records (the fixture's E1 has two repeats)."""

from __future__ import annotations

import json
from pathlib import Path

from touchstone_ray.report import write_report


def _same_answer(root: Path, key_prefix: str) -> None:
    """Give every repeat of ``key_prefix`` (``model|variant|prompt``) the first one's answer."""
    for shard in (root / "responses").glob("*.jsonl"):
        records = [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]
        first = {}
        for record in records:
            if record["key"].startswith(key_prefix + "|"):
                record["response_text"] = first.setdefault("text", record["response_text"])
        lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
        shard.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_table_counts_distinct_answers_from_the_records(fresh_bundle: Path) -> None:
    _same_answer(fresh_bundle, "m-fast|baseline|E1")
    write_report(fresh_bundle, "md")
    text = (fresh_bundle / "report.md").read_text(encoding="utf-8")
    section = text.split("### Stabilität über Wiederholungen\n", 1)[1].split("\n### ", 1)[0]
    assert "llama.cpp" in section and "--parallel &gt; 1" in section  # the note why
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[2:] == [
        "| `m-fast` | baseline | 1 | 1 | 100.0 | – |",
        "| `m-slow` | none | 1 | 0 | 0.0 | E1 (2) |",
        "| `m-slow` | baseline | 1 | 0 | 0.0 | E1 (2) |",
    ]
