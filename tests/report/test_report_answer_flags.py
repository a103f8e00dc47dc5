"""The answer-flag counts per model in the report: exact counts from the records, shown only
where some answer has a flag (the golden report, whose answers are clean, has no such table)."""

from __future__ import annotations

from pathlib import Path

from report_factories import set_answer_flags

from touchstone_ray.report import load_report_data, write_report
from touchstone_ray.report._flags import flag_counts

FLAGS = {
    # m-fast: two answers leak the template, one of them also echoes the prompt
    "m-fast|baseline|A1|1": ["template_leak", "prompt_echo"],
    "m-fast|none|A1|1": ["template_leak"],
    # m-slow: one answer spent its budget in the reasoning
    "m-slow|baseline|E1|2": ["cut_at_limit", "cut_in_reasoning", "reasoning_only"],
}


def _flag(root: Path) -> None:
    set_answer_flags(root, FLAGS)


def test_counts_per_model_and_flag(fresh_bundle: Path) -> None:
    _flag(fresh_bundle)
    counts = flag_counts(load_report_data(fresh_bundle, judged=True))
    assert {m: dict(c) for m, c in counts.items()} == {
        "m-fast": {"template_leak": 2, "prompt_echo": 1},
        "m-slow": {"cut_at_limit": 1, "cut_in_reasoning": 1, "reasoning_only": 1},
    }


def test_the_report_shows_the_table_in_flag_order(fresh_bundle: Path) -> None:
    _flag(fresh_bundle)
    write_report(fresh_bundle, "md")
    text = (fresh_bundle / "report.md").read_text(encoding="utf-8")
    section = text.split("## Prompts und Antworten\n", 1)[1].split("\n### A ", 1)[0]
    section = section.split("\n### Stabilität über Wiederholungen", 1)[0]
    assert "### Antwort-Flags" in section
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[0] == (  # Markdown escapes the underscores of a header cell
        r"| Modell | Antworten | template\_leak | prompt\_echo | cut\_at\_limit "
        r"| cut\_in\_reasoning | reasoning\_only |"
    )
    assert table[2:] == [
        "| `m-fast` | 6 | 2 | 1 | 0 | 0 | 0 |",
        "| `m-slow` | 6 | 0 | 0 | 1 | 1 | 1 |",
    ]


def test_no_flag_no_table(judged_bundle: Path) -> None:
    assert "Antwort-Flags" not in (judged_bundle / "report.md").read_text(encoding="utf-8")
    assert all(not c for c in flag_counts(load_report_data(judged_bundle, judged=True)).values())
