"""The judge section: the judge-checks table first (counted and uncounted judges), judge
warnings beside the ranking, the spread over repeats, and an ingested outside rater's
agreement with each local judge."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from report_factories import make_bundle

from touchstone_ray.report import write_report
from touchstone_ray.scoring.ingest import ingest_reply

CHECKS = {
    "j1": {
        "qualified": True,
        "band_accuracy": 1.0,
        "red_flag_recall": 1.0,
        "score_gap": 3.25,
        "n_calibration": 8,
        "n_unknown_flags": 0,
        "warnings": [],
    },
    "j3": {
        "qualified": False,
        "band_accuracy": 0.4,
        "red_flag_recall": 0.0,
        "score_gap": 0.0,
        "n_calibration": 8,
        "n_unknown_flags": 12,
        "warnings": ["band accuracy 0.40 < 0.80 on 8 calibration items"],
    },
}


def test_judge_section(tmp_path: Path) -> None:
    root = make_bundle(tmp_path)
    card = json.loads((root / "scorecard.json").read_text(encoding="utf-8"))
    card["judge_checks"] = CHECKS
    for d in card["details"]:
        d["judges"]["j1"]["dim_scores"] = {"Q1": 4, "Q2": 3}
        d["judge_spread"] = {"n": 3, "mean": 0.5, "max": 1}
    (root / "scorecard.json").write_text(json.dumps(card), encoding="utf-8")
    rows = [(d["model"], d["variant"]) for d in card["details"]]
    reply = {
        "reports": [
            {"model": m, "variant": v, "scores": {"Q1": {"score": 5}, "Q2": {"score": 3}}}
            for m, v in rows
        ]
    }
    (tmp_path / "reply.yaml").write_text(yaml.safe_dump(reply), encoding="utf-8")
    ingest_reply(root, tmp_path / "reply.yaml", "person")
    text = write_report(root, "md")[0].read_text(encoding="utf-8")
    section = text[text.index("## Judges und Übereinstimmung") :]
    assert section.index("### Prüfung der Judges") < section.index("| Judge | Judge-Modell |")
    assert "| `j1` | ja | ja | 1.00 | 1.00 | 3.25 | 8 | 0 | – |" in section
    assert (
        "| `j3` | **nein** | nein | 0.40 | 0.00 | 0.00 | 8 | 12 | band accuracy 0.40 &lt; 0.80 on "
        "8 calibration items |"
    ) in section
    assert f"| `person` | `j1` | {len(rows)} | Q1 1.00, Q2 0.00 |" in section
    assert "| m-fast | baseline | 3 | 0.50 | 1.00 |" in section
    beside = text[: text.index("## Methode")]  # right after the ranking, before the method
    assert "**Warnungen zu den Judges**" in beside
    assert "- `j3`: nicht qualifiziert (nicht gezählt); band accuracy 0.40 &lt; 0.80" in beside
