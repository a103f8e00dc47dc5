"""report.md: byte-identical golden file, Obsidian structure, and model output kept inert.

Regenerate the golden file after an intended change with
``TOUCHSTONE_UPDATE_GOLDEN=1 pytest tests/report/test_report_markdown.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from touchstone_ray.doc import escape_text, quote_lines

GOLDEN = Path(__file__).parent / "golden" / "report.md"
UPDATE_ENV = "TOUCHSTONE_UPDATE_GOLDEN"


def test_report_md_matches_golden(judged_bundle: Path) -> None:
    text = (judged_bundle / "report.md").read_text(encoding="utf-8")
    if os.environ.get(UPDATE_ENV):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), f"no golden file; run with {UPDATE_ENV}=1 once"
    assert text == GOLDEN.read_text(encoding="utf-8"), (
        f"report.md differs from {GOLDEN}; if intended, regenerate with {UPDATE_ENV}=1"
    )


def test_frontmatter_is_yaml_with_headline_results(judged_bundle: Path) -> None:
    text = (judged_bundle / "report.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n", 2)[1])
    assert front["pack"] == "mini"
    assert front["simulated"] is True
    assert front["best_model"] == "m-fast" and front["best_variant"] == "none"
    assert front["best_quality_pct"] == 85.0
    assert front["rows_ko_passed"] == 3
    assert front["gpus"] == ["NVIDIA H200 (140 GB)"]
    assert front["hosts"] == ["gpu-a", "local"]


def test_simulated_is_said_at_the_top(judged_bundle: Path) -> None:
    body = (judged_bundle / "report.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    first_block = body.strip().split("\n\n")[1]
    assert first_block.startswith("> [!warning] Simuliert")


def test_every_heading_link_has_a_heading(judged_bundle: Path) -> None:
    text = (judged_bundle / "report.md").read_text(encoding="utf-8")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    targets = set(re.findall(r"\[\[#([^|\]\\]+)", text))
    assert targets, "no heading links at all"
    assert targets <= headings, targets - headings


def _callout(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == f"> [!quote]- {title}")
    body = []
    for line in lines[start + 1 :]:
        if not line:
            break
        body.append(line)
    return body


def test_injected_answer_stays_inside_its_callout(judged_bundle: Path) -> None:
    text = (judged_bundle / "report.md").read_text(encoding="utf-8")
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "[!note] gefälschter" not in text
    start = text.index("> Sehr geehrte Damen und Herren,")
    block = text[start : text.index("\n\n", start)].splitlines()
    assert block[-1] == "> Grüße", "the callout ended before the answer did"
    assert all(line == ">" or line.startswith("> ") for line in block)
    body = [line[2:] for line in block if line != ">"]
    assert not any(re.match(r"\s*(```|~~~)", line) for line in body), "a fence could open"
    assert not any(line.lstrip().startswith((">", "#", "[!")) for line in body)
    assert "\\---" in body, "a setext underline could turn a line into a heading"
    assert r"\[\[Geheime Notiz\]\]" in text and r"\%\%versteckt\%\%" in text


def test_system_prompt_is_a_collapsed_callout(judged_bundle: Path) -> None:
    text = (judged_bundle / "report.md").read_text(encoding="utf-8")
    body = _callout(text, "System-Prompt baseline")
    assert body == ["> Sei knapp.", r"> \`\`\`", r"> &gt; \[!note\] bleibt Text"]


def test_quote_lines_neutralise_block_syntax() -> None:
    lines = quote_lines("a\n\n> [!tip] x\n```py\n    code\n===\n| a | b |\n|---|---|\n")
    assert lines == [
        "> a",
        ">",
        r"> &gt; \[!tip\] x",
        r"> \`\`\`py",
        "> \u00a0\u00a0\u00a0\u00a0code",
        r"> \=\=\=",
        r"> \| a \| b \|",
        r"> \|---\|---\|",
    ]


def test_escape_text_keeps_plain_words_readable() -> None:
    assert escape_text("qwen3:8b / sim-fast-good (50 %)") == "qwen3:8b / sim-fast-good (50 %)"
    assert (
        escape_text("a_b *c* <d> &amp; #tag $x$") == r"a\_b \*c\* &lt;d&gt; &amp;amp; \#tag \$x\$"
    )
