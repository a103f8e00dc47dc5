"""The holistic templates on a real judge: Gemma 3 270M on llama.cpp judges the same two answers
with ``judge --template v1`` and then the default v2 (the hardened prompt). The second run asks
no answer again and every holistic report anew; the report names the template of the judge and
shows the A/B of the two templates' holistic scores, as computed here from the stored reports.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer
from test_real_judge import PACK
from test_real_judge import write_bundle as write_answers

from touchstone_ray.judging.runner import run_judge
from touchstone_ray.report import write_report
from touchstone_ray.storage import read_jsonl

pytestmark = [pytest.mark.real, pytest.mark.usefixtures("ray_local")]

ANSWERS = {
    "A1": "12 × 85 € = 1.020 € netto; mit 19 % USt. sind das 1.213,80 € brutto.",
    "A2": "Es wurde ein Budget von 20.000 € beschlossen.",
}


def write_bundle(root: Path) -> Path:
    """The real judge test's pack without calibration (few calls), one model, two answers."""
    pack = {k: v for k, v in PACK.items() if k != "calibration"}
    return write_answers(root, pack, ANSWERS)


def test_gemma_with_both_templates(real_server: LlamaServer, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    judge: dict[str, Any] = {
        "id": "gemma",
        "engine": "openai",
        "base_url": real_server.base_url,
        "model": MODEL_ALIAS,
        "max_tokens": 192,  # room for a two-dimension holistic reply
        "extra_body": {"cache_prompt": False},
        "timeout_s": 600,  # a busy 2-core machine decodes a few tokens/s
        "max_consecutive_failures": 0,
    }
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"judges": [judge]}))

    out = io.StringIO()
    run_judge(bundle, config, out=out, template="v1", allow_unqualified=True)
    assert (
        "2 answers: 0 stored, 0 by rule, 2 to ask; 1 reports (0 stored); holistic template v1"
        in (out.getvalue())
    )
    out = io.StringIO()
    run_judge(bundle, config, out=out, allow_unqualified=True)  # v2, the default
    assert (
        "2 answers: 2 stored, 0 by rule, 0 to ask; 1 reports (0 stored); holistic template v2"
        in (out.getvalue())
    )
    folder = bundle / "judgements" / "gemma"
    assert len(read_jsonl(folder / "verdicts.jsonl").records) == 2  # no verdict asked again
    reports = read_jsonl(folder / "reports.jsonl").records
    assert [r["holistic_template"] for r in reports] == ["v1", "v2"]
    v1, v2 = reports
    assert v1["cache_key"] != v2["cache_key"]
    assert v1["status"] == v2["status"] == "ok", (v1["raw"], v2["raw"])
    card = json.loads((bundle / "scorecard.json").read_text())
    assert card["judges"] == ["gemma"]

    write_report(bundle, "md")
    text = (bundle / "report.md").read_text(encoding="utf-8")
    assert "| Judge | Judge-Modell | Holistische Vorlage |" in text
    assert f"| `gemma` | {MODEL_ALIAS} | v2 |" in text
    assert "### Holistische Vorlagen A/B" in text
    names = {"Q1": "Korrektheit", "Q2": "Vorsicht"}
    for dim, name in names.items():
        a, b = v1["dim_scores"][dim], v2["dim_scores"][dim]
        assert f"| `gemma` | m | baseline | `{dim}` {name} | {a} | {b} | {b - a:+d} |" in text

    def quality(scores: dict[str, int]) -> float:
        return (scores["Q1"] * 3 + scores["Q2"] * 2) / 25 * 100

    qa, qb = quality(v1["dim_scores"]), quality(v2["dim_scores"])
    assert f"| `gemma` | m | baseline | Qualität % | {qa:.1f} | {qb:.1f} | {qb - qa:+.1f} |" in text
